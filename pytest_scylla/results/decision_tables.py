"""The decisions of `--scylla-stop=decided` as the reports show them: decisions.csv, the
terminal's lines, a Markdown table for tables.md and a section of report.html (each row: the
cell, its reference, the decision and the run it came at, the interval then, the runs made and
the runs and dollars saved)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pytest_scylla.results.decisions import DecisionRow, runs_text

HEAD = (
    "cell",
    "reference",
    "decision",
    "at run",
    "difference [interval]",
    "runs",
    "runs saved",
    "$ saved",
)
TITLE = "Why n is what it is: sequential decisions on pass rate (--scylla-stop=decided)"


def _cells(row: DecisionRow) -> list[str]:
    saved = row.get("cost_saved_usd")
    return [
        str(row["cell"]),
        str(row["reference"]),
        str(row["decision"]),
        str(row["decided_at"] or "-"),
        f"[{float(row['low']):+.2f}, {float(row['high']):+.2f}]",
        str(row["runs"]),
        str(row["runs_saved"]),
        "-" if saved is None else f"{float(saved):.4f}",
    ]


def markdown(rows: Sequence[DecisionRow]) -> str:
    """The table, after a blank line; "" without decisions."""
    if not rows:
        return ""
    lines = [f"### {TITLE}", "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n" + "\n".join(lines) + "\n"


def html(rows: Sequence[DecisionRow]) -> str:
    """The section (escaped); "" without decisions."""
    if not rows:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEAD)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in _cells(r)) + "</tr>" for r in rows
    )
    return (
        f'<section id="decisions"><h2>{escape(TITLE)}</h2>'
        f"<table class=tool><tr>{head}</tr>{body}</table></section>"
    )


def with_decisions(
    rows: Sequence[Mapping[str, Any]], decisions: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """subtests.csv's rows with each cell's decision (`better at run 9`; `reference` for the
    cells the others are compared with)."""
    by_cell = {str(d["cell"]): d for d in decisions}
    references = {str(d["reference"]) for d in decisions}
    out = []
    for row in rows:
        cell = f"{row.get('case_id')}-{row.get('tier')}-{row.get('subtest')}"
        found = by_cell.get(cell) or next(
            (d for c, d in by_cell.items() if c.startswith(f"{cell}-")), None
        )
        if found is not None:
            at = found.get("decided_at")
            said = f"{found['decision']} at run {at}" if at else str(found["decision"])
        else:
            said = (
                "reference"
                if any(r == cell or r.startswith(f"{cell}-") for r in references)
                else ""
            )
        out.append({**row, "decision": said})
    return out


_TIER = re.compile(r"-(T\d+)-\d+(?:-|$)")


def tier_of(cell: str) -> str:
    found = _TIER.search(cell)
    return found.group(1) if found else ""


def tier_decisions(decisions: Sequence[DecisionRow]) -> dict[str, str]:
    """Each tier's decisions in a few words (`reference; 1 futile`, `2 better, 1 open`): the
    tier tables' decision column."""
    counts: dict[str, Counter[str]] = {}
    references: set[str] = set()
    for d in decisions:
        counts.setdefault(tier_of(str(d["cell"])), Counter())[str(d["decision"])] += 1
        references.add(tier_of(str(d["reference"])))
    out = {}
    for tier in sorted(set(counts) | references):
        said = [f"{n} {status}" for status, n in sorted(counts.get(tier, Counter()).items())]
        out[tier] = "; ".join([*(["reference"] if tier in references else []), ", ".join(said)])
    return {tier: text.strip("; ") for tier, text in out.items()}


COLUMNS = (
    "cell",
    "reference",
    "decision",
    "decided_at",
    "low",
    "high",
    "runs",
    "runs_saved",
    "cost_saved_usd",
)


def write_decisions(out: Path, rows: Sequence[DecisionRow]) -> None:
    """decisions.csv in the experiment folder."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    with (out / "decisions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS))
        writer.writeheader()
        writer.writerows(rows)


def decision_lines(rows: Sequence[DecisionRow], stopped: int) -> list[str]:
    """The terminal's account of why n is what it is."""
    if not rows:
        return []
    saved = sum(int(r["runs_saved"]) for r in rows)
    dollars = sum(float(r["cost_saved_usd"] or 0) for r in rows)
    lines = [
        f"stopped when decided: {stopped} runs skipped, {saved} runs (about ${dollars:.4f}) "
        "saved against the fixed design; decisions on pass rate (anytime-valid):"
    ]
    for r in rows:
        when = f" after {runs_text(int(r['decided_at']))}" if r["decided_at"] else ""
        lines.append(
            f"  {r['cell']} vs {r['reference']}: {r['decision']}{when}, difference "
            f"[{r['low']:+.2f}, {r['high']:+.2f}], {runs_text(int(r['runs']))} made"
        )
    return lines
