"""What each component of an ablated configuration is worth, shown in HTML: a section for
report.html and a standalone page (components.html). Each effect on pass rate is drawn with its
95 % interval on an axis from -100 % to +100 %. Every text is escaped (component names come from
a project's own files); no script, no external file. Also the cells' text, which the markdown
and terminal tables of `component_tables` share.

The rows are `component_tables.rows_of`'s (largest effect on pass first), given in; this module
imports nothing of the package."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

HEAD = (
    "component",
    "verdict",
    "pass with / without",
    "Δ pass [95% CI]",
    "p (Bonferroni)",
    "Δ cost/run [95% CI]",
    "Δ CoP",
    "Δ tokens [95% CI]",
    "runs/arm to detect",
)
COLOURS = {"helps": "#1a7f37", "hurts": "#b42318"}  # anything else: no detectable effect
NEUTRAL = "#6b7280"
WIDTH, HEIGHT, PAD = 160, 16, 5
ZERO_X = WIDTH / 2  # the axis runs from -100 % at PAD to +100 % at WIDTH - PAD
STYLE = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1240px;color:#222;"
    "padding:0 1rem}table{border-collapse:collapse;margin:.6rem 0}td,th{border:1px solid #ccc;"
    "padding:.2rem .5rem;text-align:right;vertical-align:middle}th{background:#f3f3f3}"
    "td.l,th.l{text-align:left}svg{vertical-align:middle}"
)


def cell_text(key: str, value: Any) -> str:
    """A value of a `rows_of` row as the tables show it; a zero never signed (`-0%`), a value
    that is not a number as "-"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return _unsigned_zero(_text(key, value))


def _text(key: str, value: Any) -> str:
    if key in ("pass_with", "pass_without"):
        return f"{value:.0%}"
    if key in ("delta_pass", "low", "high"):
        return f"{value:+.0%}"
    if key == "p_adjusted":
        return f"{value:.3f}"
    if key in ("delta_cost_usd", "delta_cop"):
        return f"{value:+}" if math.isinf(value) else f"{value:+.4f}"
    if key == "delta_total_tokens" and math.isfinite(value):
        return f"{value:+,.0f}"
    if isinstance(value, float):
        return f"{value:+.3g}"
    return str(value)


def _unsigned_zero(text: str) -> str:
    """`-0%`, `+0.0000` -> `0%`, `0.0000`: a difference that rounds to nothing has no sign."""
    if text[:1] in "+-" and not any(c in "123456789" for c in text) and "inf" not in text:
        return text[1:]
    return text


def measure_text(row: Mapping[str, Any], key: str) -> str:
    """A cell of `row`, with its 95 % interval where the row has one (`<key>_low`, `_high`)."""
    text = cell_text(key, row[key])
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    if low is None or high is None:
        return text
    return f"{text} [{cell_text(key, low)}, {cell_text(key, high)}]"


def interval_text(row: Mapping[str, Any]) -> str:
    """`+40% [+20%, +60%]`: the effect on pass with its interval; "-" when it has none
    (the verdict says why)."""
    if row["delta_pass"] is None:
        return "-"
    if row["low"] is None or row["high"] is None:
        return cell_text("delta_pass", row["delta_pass"])
    low, high = cell_text("low", row["low"]), cell_text("high", row["high"])
    return f"{cell_text('delta_pass', row['delta_pass'])} [{low}, {high}]"


def _x(value: Any) -> float | None:
    """Where a difference of pass rates lies on the axis (clamped to it); None if not a number."""
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return round(ZERO_X + max(-1.0, min(1.0, float(value))) * (ZERO_X - PAD), 1)


def bar(row: Mapping[str, Any]) -> str:
    """The effect on pass drawn: the axis, its zero, the interval as a bar, the point as a dot,
    in the verdict's colour."""
    colour = COLOURS.get(str(row["verdict"]), NEUTRAL)
    label = escape(f"Δ pass {interval_text(row)}")
    parts = [
        f'<svg class="effect" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{label}"><title>{label}</title>',
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{HEIGHT / 2}" y2="{HEIGHT / 2}" '
        'stroke="#d1d5db"/>',
        f'<line x1="{ZERO_X}" x2="{ZERO_X}" y1="1" y2="{HEIGHT - 1}" stroke="#6b7280"/>',
    ]
    low, high, point = _x(row["low"]), _x(row["high"]), _x(row["delta_pass"])
    if low is not None and high is not None:
        left, right = min(low, high), max(low, high)
        parts.append(
            f'<rect class="ci" x="{left}" y="{HEIGHT / 2 - 3}" width="{round(right - left, 1)}" '
            f'height="6" fill="{colour}" fill-opacity="0.35"/>'
        )
    if point is not None:
        parts.append(f'<circle cx="{point}" cy="{HEIGHT / 2}" r="3.5" fill="{colour}"/>')
    return "".join(parts) + "</svg>"


def _cells(row: Mapping[str, Any]) -> list[str]:
    """A row's cells, as HTML (escaped)."""
    verdict = str(row["verdict"]) + (f" ({row['note']})" if row["note"] else "")
    colour = COLOURS.get(str(row["verdict"]), NEUTRAL)
    with_ = cell_text("pass_with", row["pass_with"])
    without = cell_text("pass_without", row["pass_without"])
    return [
        f'<td class="l"><code>{escape(str(row["factor"]))}</code></td>',
        f'<td class="l" style="color:{colour}">{escape(verdict)}</td>',
        f"<td>{escape(with_)} / {escape(without)}</td>",
        f'<td class="l" style="white-space:nowrap">{bar(row)} {escape(interval_text(row))}</td>',
        *(
            f"<td>{escape(measure_text(row, key))}</td>"
            for key in ("p_adjusted", "delta_cost_usd", "delta_cop", "delta_total_tokens")
        ),
        f"<td>{escape(row.get('needed_note') or cell_text('needed_n', row['needed_n']))}</td>",
    ]


def section(rows: Sequence[Mapping[str, Any]], title: str, notes: Sequence[str] = ()) -> str:
    """`<section id="components">`: the heading, the notes on what the runs cannot support
    (a list) and one table row per component, in the rows' order (give `rows_of`'s: largest
    effect on pass first)."""
    left = ' class="l"'
    head = "".join(
        f"<th{left if i in (0, 1, 3) else ''}>{escape(h)}</th>" for i, h in enumerate(HEAD)
    )
    body = "".join(
        f'<tr data-component="{escape(str(r["factor"]))}">{"".join(_cells(r))}</tr>' for r in rows
    )
    note = (
        "<p>Δ: with the component minus without it; the bar is the 95 % interval of the "
        "difference in pass rate on an axis from -100 % to +100 %, the dot the estimate. "
        "p-values are Holm-adjusted over the components.</p>"
    )
    if notes:
        note += '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
    return (
        f'<section id="components"><h2>{escape(title)}</h2>{note}'
        f'<div class="wide"><table id="components-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div></section>"
    )


def page(rows: Sequence[Mapping[str, Any]], title: str, notes: Sequence[str] = ()) -> str:
    """components.html: the section as a page of its own (inline style, nothing external)."""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{STYLE}</style></head><body>{section(rows, title, notes)}</body></html>\n"
    )
