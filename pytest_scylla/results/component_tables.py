"""What each component of an ablated configuration is worth, as tables (`scylla ablate
report`): components.csv, the markdown table for a pull-request comment, the terminal's lines and
components.html, one row per factor, largest effect on pass first, each with the notes on what
the runs cannot support (`effect_limits`) before it. The effects are `component_effects`'."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.results.component_effects import (
    MEASURES,
    Design,
    Effect,
    design_beside,
    for_experiment,
)
from pytest_scylla.results.component_html import HEAD, cell_text, interval_text, measure_text, page
from pytest_scylla.results.effect_limits import arm_notes, reasons_of
from pytest_scylla.results.hook_notes import for_report

COLUMNS = (
    "factor",
    "verdict",
    "n_with",
    "n_without",
    "pass_with",
    "pass_without",
    "delta_pass",
    "low",
    "high",
    "p_adjusted",
    *(f"delta_{m}{end}" for m in MEASURES for end in ("", "_low", "_high")),
    "delta_cop",
    "delta_cop_low",
    "delta_cop_high",
    "needed_n",
    "needed_note",
    "note",
    "by_case",  # the effect on pass in each case: `case +20%; other -5%`
)


def for_session(
    folder: Path, runs: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]
) -> tuple[list[Effect], Design, list[str]] | None:
    """`for_experiment`'s effects and design, with the notes on the arms without a counted run
    (their reasons from the run `records`) and on whether each hook factor's hook ran
    (`hook_notes`), for the session's own reports; None as there."""
    planned = for_experiment(folder, runs)
    if planned is None:
        return None
    notes = arm_notes(runs, planned[1], reasons_of(records))
    notes += for_report(records, runs, design_beside(folder), planned[1].arms)  # did hooks run
    return planned[0], planned[1], notes


def rows_of(found: Sequence[Effect]) -> list[dict[str, Any]]:
    """One row per factor, largest effect on pass first, those without one last (the CSV's
    and the tables' order)."""
    out = []
    for e in sorted(found, key=lambda e: (e.delta_pass is None, -(e.delta_pass or 0.0))):
        row: dict[str, Any] = {k: getattr(e, k) for k in COLUMNS if hasattr(e, k)}
        row.update({f"delta_{k}": v for k, v in e.deltas.items()})
        row["by_case"] = "; ".join(f"{c} {d:+.0%}" for c, d in e.by_case.items()) or None
        out.append({k: row.get(k) for k in COLUMNS})
    return out


def write_csv(path: Path, found: Sequence[Effect]) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows_of(found))


def write_outputs(
    folder: Path, found: Sequence[Effect], design: Design, notes: Sequence[str] = ()
) -> list[Path]:
    """components.csv, components.md and components.html in `folder`; the paths written."""
    written = [folder / f"components.{ext}" for ext in ("csv", "md", "html")]
    write_csv(written[0], found)
    written[1].write_text(markdown(found, design, notes), encoding="utf-8")
    written[2].write_text(page(rows_of(found), title(design), notes), encoding="utf-8")
    return written


def title(design: Design) -> str:
    """The tables' heading: the design and the configuration it ablated."""
    return f"Which components earn their cost ({design.kind}, configuration {design.configuration})"


def markdown(found: Sequence[Effect], design: Design, notes: Sequence[str] = ()) -> str:
    """The table for a pull-request comment, after the notes (one bullet each)."""
    said = [f"- {note}" for note in notes] + ([""] if notes else [])
    lines = [f"### {title(design)}", "", *said]
    lines += ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows_of(found):
        cells = [
            f"`{r['factor']}`",
            r["verdict"] + (f" ({r['note']})" if r["note"] else ""),
            f"{cell_text('pass_with', r['pass_with'])} / "
            f"{cell_text('pass_without', r['pass_without'])}",
            interval_text(r),
            *(
                measure_text(r, key)
                for key in ("p_adjusted", "delta_cost_usd", "delta_cop", "delta_total_tokens")
            ),
            r["needed_note"] or cell_text("needed_n", r["needed_n"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def terminal(found: Sequence[Effect], notes: Sequence[str] = ()) -> list[str]:
    """The notes, then the table's lines."""
    width = max([9, *(len(e.factor) for e in found)])
    lines = [
        *notes,
        f"{'component':<{width}}  {'pass with/out':>13}  {'Δ pass [95% CI]':<22}{'p':>7}"
        f"  {'Δ cost/run':>11}{'Δ CoP':>10}  verdict",
    ]
    for r in rows_of(found):
        cost, cop, p = (cell_text(k, r[k]) for k in ("delta_cost_usd", "delta_cop", "p_adjusted"))
        rates = "/".join(cell_text(k, r[k]) for k in ("pass_with", "pass_without"))
        lines.append(
            f"{r['factor']:<{width}}  {rates:>13}  {interval_text(r):<22}{p:>7}"
            f"  {cost:>11}{cop:>10}  {r['verdict']}{_needed(r)}"
            + (f"; {r['note']}" if r["note"] else "")
        )
    return lines


def _needed(row: dict[str, Any]) -> str:
    """` (about 40 runs per arm would)`, ` (no difference observed)`, or ""."""
    if row["needed_n"]:
        return f" (about {row['needed_n']} runs per arm would)"
    return f" ({row['needed_note']})" if row["needed_note"] else ""
