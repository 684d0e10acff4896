"""What `scylla compare` writes: compare.md (short enough for a pull-request comment),
compare.json and compare.html, from `compare.compare`'s result."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from pytest_scylla.results import models
from pytest_scylla.results.compare.differences import LABELS, regressions
from pytest_scylla.results.html.parts import Column, Row, cell, filters, page, tool_table


def _number(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "∞"
    if metric == "pass_rate":
        return f"{100 * value:.1f}%"
    return f"${value:.4f}" if metric in ("cost_per_run", "cop") else f"{value:.3f}"


def _change(row: dict[str, Any]) -> str:
    """`+12.5 pts [+4.0, +20.0] p=0.01 *`: the change, its interval, Holm's p."""
    if row["delta"] is None:
        return "-"
    metric = row["metric"]
    scale = 100 if metric == "pass_rate" else 1
    money = "$" if metric in ("cost_per_run", "cop") else ""
    digits = 4 if money else 1 if scale == 100 else 3

    def shown(value: float) -> str:
        return f"{'-' if value < 0 else '+'}{money}{abs(scale * value):.{digits}f}"

    text = shown(row["delta"]) + (" pts" if scale == 100 else "")
    if row["ci_low"] is not None:
        text += f" [{shown(row['ci_low'])}, {shown(row['ci_high'])}]"
    if row["p_holm"] is not None:
        text += f" p={row['p_holm']:.3g}{' *' if row['significant'] else ''}"
    return text


def _wide(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, str]]:
    """One line per group: n, then each metric's base → candidate and change."""
    out: dict[tuple[str, ...], dict[str, str]] = {}
    for r in rows:
        group = tuple(str(r[k]) for k in keys)
        line = out.setdefault(
            group,
            {
                **dict(zip(keys, group, strict=True)),
                "n": f"{r['n_base']} → {r['n_candidate']}{' (paired)' if r['paired'] else ''}",
            },
        )
        line[LABELS[r["metric"]]] = (
            f"{_number(r['metric'], r['base'])} → "
            f"{_number(r['metric'], r['candidate'])}: {_change(r)}"
        )
    return list(out.values())


def _md_table(lines: list[dict[str, str]]) -> list[str]:
    if not lines:
        return ["(none)"]
    columns = list(lines[0])

    def cell(value: str) -> str:
        return value.replace("|", "\\|")

    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cell(line.get(c, "")) for c in columns) + " |" for line in lines),
    ]


def plain(value: Any) -> str:
    """A condition's value as a reader writes it: items joined by commas, a mapping as
    `key=value` pairs, nothing as `none` (never a Python repr)."""
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={plain(v)}" for k, v in sorted(value.items(), key=str))
    if isinstance(value, list | tuple | set):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def markdown(result: dict[str, Any], points: float | None = None) -> str:
    """compare.md: short enough for a pull-request comment."""
    out = [f"## scylla compare: {result['candidate']} vs {result['base']}", ""]
    out += [
        f"Changes are candidate minus base with a 95% bootstrap interval; p is "
        f"Holm-corrected across each table; * = significant at {result['alpha']}.",
        "",
    ]
    if result["conditions"]:
        out += ["**What changed in the conditions**", ""]
        out += [
            f"- {c['what']}: {plain(c['base'])} → {plain(c['candidate'])}"
            for c in result["conditions"]
        ]
        out.append("")
    out += [f"- {n}" for n in result["notes"]]
    verdicts = result.get("verdicts") or {}
    if verdicts.get("common_runs"):
        cost = verdicts["judge_cost_per_run"]
        out += [
            f"- Runs on both sides: {verdicts['common_runs']}; same verdict in "
            f"{verdicts['same_verdict']} ({100 * verdicts['agreement']:.1f}%); judging cost "
            f"per run {_number('cop', cost['base'])} → {_number('cop', cost['candidate'])}",
            "",
        ]
    axis = tuple(k for k in ("agent", "agent_model") if any(k in r for r in result["tiers"]))
    out += ["### Per tier", "", *_md_table(_wide(result["tiers"], (*axis, "tier"))), ""]
    significant = [r for r in result["cases"] if r["significant"]]
    out += ["### Significant changes per case × tier", ""]
    out += [
        f"- {''.join(str(r[k]) + ' ' for k in axis)}{r['case_id']} {r['tier']} "
        f"{LABELS[r['metric']]}: {_change(r)}"
        for r in significant
    ] or ["- none"]
    decided = [r for r in result["cases"] if r.get("decision") and r["metric"] == "pass_rate"]
    if decided:
        out += ["", "### Sequential decisions (--scylla-stop=decided): base → candidate", ""]
        out += [
            f"- {''.join(str(r[k]) + ' ' for k in axis)}{r['case_id']} {r['tier']}: {r['decision']}"
            for r in decided
        ]
    if points is not None:
        found = regressions(result, points)
        out += [
            "",
            f"**Gate** (pass-rate drop > {points:g} pts, significant): "
            f"{'FAILED — ' + str(len(found)) + ' regression(s)' if found else 'passed'}",
        ]
    return "\n".join(out) + "\n"


GOOD_WHEN_HIGHER = {"pass_rate": True, "mean_score": True, "cost_per_run": False, "cop": False}
COMPARE_COLUMNS = [
    Column("case", "case"),
    Column("tier", "tier"),
    Column("metric", "metric"),
    Column("n", "n base → candidate"),
    Column("base", "base", True),
    Column("candidate", "candidate", True),
    Column("delta", "change", True),
    Column("ci", "95% interval"),
    Column("p", "p (Holm)", True),
    Column("test", "test"),
]
DECISION = Column("decision", "decision (base → candidate)")


def _tool_rows(rows: list[dict[str, Any]]) -> list[Row]:
    """One row per group and metric; a significant change is marked better or worse."""
    out = []
    for r in rows:
        metric, delta = r["metric"], r["delta"]
        css = ""
        if r["significant"] and delta:
            css = "better" if (delta > 0) == GOOD_WHEN_HIGHER[metric] else "worse"
        ci = (
            "-"
            if r["ci_low"] is None
            else f"[{_number(metric, r['ci_low'])}, {_number(metric, r['ci_high'])}]"
        )
        out.append(
            Row(
                {
                    "case": cell(r.get("case_id")),
                    "tier": cell(r["tier"]),
                    "model": cell(r.get("agent_model")),
                    "agent": cell(r.get("agent")),
                    "metric": cell(LABELS[metric]),
                    "n": cell(
                        f"{r['n_base']} → {r['n_candidate']}{' (paired)' if r['paired'] else ''}"
                    ),
                    "base": (html.escape(_number(metric, r["base"])), _sortable(r["base"])),
                    "candidate": (
                        html.escape(_number(metric, r["candidate"])),
                        _sortable(r["candidate"]),
                    ),
                    "delta": (html.escape(_change(r)), _sortable(delta)),
                    "ci": cell(ci),
                    "p": cell(r["p_holm"]),
                    "test": cell(r.get("test")),
                    "decision": cell(r.get("decision")),
                },
                {
                    "tier": str(r["tier"]),
                    "metric": LABELS[metric],
                    "sig": "yes" if r["significant"] else "no",
                    **({"case": str(r["case_id"])} if "case_id" in r else {}),
                    **{name: str(r[key]) for key, name in models.NAMES.items() if key in r},
                },
                css,
            )
        )
    return out


def _sortable(value: float | None) -> str | None:
    if value is None:
        return None
    return "Infinity" if value == math.inf else "-Infinity" if value == -math.inf else repr(value)


def html_page(result: dict[str, Any]) -> str:
    """compare.html: the tier and case × tier tables, sortable and filterable (significant
    changes only, one metric, one tier or case), what changed in the conditions, the notes."""
    conditions = (
        "".join(
            f"<li>{html.escape(str(c['what']))}: {html.escape(plain(c['base']))} "
            f"→ {html.escape(plain(c['candidate']))}</li>"
            for c in result["conditions"]
        )
        or "<li>none</li>"
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in result["notes"])
    cases = sorted({str(r["case_id"]) for r in result["cases"]})
    tiers = list(dict.fromkeys(str(r["tier"]) for r in result["tiers"]))
    axes = {
        name: sorted({str(r[key]) for r in result["tiers"] if key in r})
        for key, name in models.NAMES.items()
    }
    axes = {name: found for name, found in axes.items() if found}  # the axes compared within
    controls = filters(
        "cells",
        {
            "sig": ("significant", ["yes", "no"]),
            "metric": ("metric", list(LABELS.values())),
            **{name: (name, found) for name, found in axes.items()},
            "tier": ("tier", tiers),
            "case": ("case", cases),
        },
    )
    columns = [*(Column(name, name) for name in axes), *COMPARE_COLUMNS]
    body = [
        f"<h1>{html.escape(result['candidate'])} vs {html.escape(result['base'])}</h1>",
        f"<p>Changes are candidate minus base with a 95% bootstrap interval; p is "
        f"Holm-corrected across each table; significant at {result['alpha']}: "
        "<span class=chips><a href='#sig=yes'>significant changes only</a></span> "
        "(green: better, red: worse).</p>",
        f"<h2>What changed in the conditions</h2><ul>{conditions}{notes}</ul>",
        controls,
        "<h2>Per tier</h2>",
        tool_table("tiers", [c for c in columns if c.key != "case"], _tool_rows(result["tiers"])),
        "<h2>Per case × tier</h2>",
        tool_table(
            "cells",
            [*columns, *([DECISION] if any(r.get("decision") for r in result["cases"]) else [])],
            _tool_rows(result["cases"]),
        ),
    ]
    return page(f"scylla compare: {result['candidate']} vs {result['base']}", body)


def write(out: Path, result: dict[str, Any], points: float | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "compare.md").write_text(markdown(result, points), encoding="utf-8")
    (out / "compare.html").write_text(html_page(result), encoding="utf-8")
