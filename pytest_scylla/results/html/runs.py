"""The report's run table (sortable, filterable: a column and a filter per axis the experiment
varies) and each run's drill-down: its facts, what it used, integrity findings, the judges'
verdicts per item, the checks, the diff and the transcript. Long texts are cut. The drill-downs
are rendered one at a time, for html_details.py to place in the page or beside it."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results import models, run_files
from pytest_scylla.results.html import details as html_details
from pytest_scylla.results.html import transcript as html_transcript
from pytest_scylla.results.html.parts import (
    Column,
    Row,
    cell,
    filters,
    fmt,
    static_table,
    tool_table,
)
from pytest_scylla.results.inputs import ReportInputError
from pytest_scylla.results.rows import RunRow
from pytest_scylla.results.tables import Tables
from pytest_scylla.run.checks import truncate

REASON_LIMIT = 200  # characters of a judge's reason per item
TEXT_LIMIT = 4_000  # characters of a diff shown per run (the full one stays in the run folder)
DIFF_BYTES = 64_000  # bytes of a diff read to show its start
RUN_COLUMNS = [
    Column("run", "run"),
    Column("case", "case"),
    Column("tier", "tier"),
    Column("subtest", "subtest"),
    Column("outcome", "outcome"),
    Column("grade", "grade"),
    Column("score", "score", True),
    Column("cost", "cost ($)", True),
    Column("tokens", "tokens", True),
    Column("seconds", "seconds", True),
]


def _trajectory(rec: RunRecord) -> str:
    """What the agent used: calls per tool, and each declared component, used or not."""
    traj = rec.get("trajectory")
    if not isinstance(traj, dict):
        return ""
    per_tool = ", ".join(f"{escape(str(k))} ×{v}" for k, v in (traj.get("per_tool") or {}).items())
    used = [
        f"{escape(kind)} {escape(name)}: {'used' if on else '<b class=fail>not used</b>'}"
        for kind, names in (traj.get("used") or {}).items()
        for name, on in names.items()
    ]
    return (
        f"<p>{traj.get('tool_calls', 0)} tool calls ({per_tool or 'none'}), "
        f"{traj.get('tool_errors', 0)} failed, {traj.get('sub_agent_calls', 0)} sub-agent "
        f"calls, {fmt(traj.get('turns'))} turns</p>"
        + (f"<p>declared components: {'; '.join(used)}</p>" if used else "")
    )


def _run_heading(row: RunRow, rec: RunRecord) -> str:
    """A run's key, outcome (with its reason) and facts."""
    facts = ", ".join(
        f"{k} {fmt(row.get(k))}"
        for k in (
            "score",
            "grade",
            "cost_usd",
            "total_tokens",
            "duration_seconds",
            "ttft_seconds",
            "regressions",
            "r_prog",
        )
        if row.get(k) not in (None, "")
    )
    return (
        f"<h3>{escape(str(row['run_key']))}</h3>"
        f"<p><b>{escape(str(row.get('outcome')))}</b>"
        f"{': ' + escape(str(rec['reason'])) if rec.get('reason') else ''}</p>"
        f"<p class=muted>{facts}</p>"
    )


def _judge_tables(rec: RunRecord) -> list[str]:
    """Each judge's score and validity, then its verdict per rubric item."""
    parts = []
    for judge in rec.get("judges") or []:
        items = (judge.get("verdict") or {}).get("items", {})
        rows = [
            {
                "item": i,
                "achieved": v.get("achieved"),
                "reason": truncate(str(v.get("reason")), REASON_LIMIT),
            }
            for i, v in items.items()
        ]
        state = "valid" if judge.get("valid") else f"INVALID: {judge.get('errors')}"
        parts.append(
            f"<h4>{escape(str(judge.get('judge_model')))} — score "
            f"{fmt(judge.get('score'))} ({escape(state)})</h4>"
            + static_table(rows, ["item", "achieved", "reason"], ("item", "reason"))
        )
    return parts


def _checks_table(rec: RunRecord) -> list[str]:
    """The run's checks (none: nothing)."""
    checks = [
        {
            "check": c["name"],
            "passed": c["passed"],
            "exit": c["exit_code"],
            "seconds": c["seconds"],
            "reason": c["reason"],
        }
        for c in rec.get("checks") or []
    ]
    if not checks:
        return []
    return [
        "<h4>checks</h4>"
        + static_table(
            checks, ["check", "passed", "exit", "seconds", "reason"], ("check", "reason")
        )
    ]


def _stored_files(folder: Path | None) -> list[str]:
    """The diff (cut) and the transcript the run folder holds (`folder/runs/<key>`), each read
    inside it without following a link (`run_files`); one that is not is named, not shown."""
    if folder is None:
        return []
    parts = []
    try:
        diff = run_files.text(folder, "diff.patch", DIFF_BYTES)
        if diff is not None:
            parts.append(f"<h4>diff</h4><pre>{escape(truncate(diff, TEXT_LIMIT))}</pre>")
        with run_files.lines(folder, "transcript.jsonl") as transcript:
            if transcript is not None:
                parts.append("<h4>transcript</h4>" + html_transcript.render(transcript))
    except (ReportInputError, OSError) as exc:
        parts.append(f"<p class=muted>{escape(str(exc))}</p>")
    return parts


def run_detail(row: RunRow, rec: RunRecord, folder: Path | None) -> str:
    """One run's drill-down, from its `runs.csv` row, its record and its stored folder."""
    parts = [_run_heading(row, rec), _trajectory(rec)]
    if rec.get("integrity"):
        parts.append(
            "<h4>integrity findings (undone before the checks)</h4>"
            + static_table(rec["integrity"], ["kind", "path", "detail"], ("kind", "path", "detail"))
        )
    parts += _judge_tables(rec)
    parts += _checks_table(rec)
    parts += _stored_files(folder)
    return "".join(parts)


def _run_row(number: int, row: RunRow, axes: tuple[str, ...]) -> Row:
    """One run's row of the run table: its cells and its filter values."""
    key, outcome = str(row["run_key"]), str(row.get("outcome"))
    mark = outcome if outcome in (Outcome.PASS, Outcome.FAIL) else "err"  # its css class
    return Row(
        {
            "run": (f'<a href="#open={number}">{escape(key)}</a>', None),
            "case": cell(row.get("case_id")),
            "tier": cell(row.get("tier")),
            "subtest": cell(row.get("subtest")),
            "outcome": (f"<span class={mark}>{escape(outcome)}</span>", None),
            "grade": cell(row.get("grade")),
            "score": _lean(cell(row.get("score"), 2)),
            "cost": _lean(cell(row.get("cost_usd"), 4)),
            "tokens": _lean(cell(_number(row.get("total_tokens")), 0)),
            "seconds": _lean(cell(_number(row.get("duration_seconds")), 1)),
            "model": cell(row.get("agent_model")),
            "agent": cell(row.get("agent")),
        },
        {
            "case": str(row.get("case_id")),
            "tier": str(row.get("tier")),
            "outcome": outcome,
            **{models.NAMES[k]: str(row.get(k)) for k in axes},
        },
        run=number,
    )


def _run_filters(runs: list[RunRow], axes: tuple[str, ...]) -> str:
    """The run table's selects: one per axis, then tier, case and outcome."""

    def values(field: str) -> list[str]:
        return sorted({str(r.get(field)) for r in runs}, key=tier_key if field == "tier" else str)

    selects = {models.NAMES[k]: (models.NAMES[k], values(k)) for k in axes}
    return filters(
        "runs",
        {
            **selects,
            "tier": ("tier", values("tier")),
            "case": ("case", values("case_id")),
            "outcome": ("outcome", values("outcome")),
        },
    )


def run_details(tables: Tables, sources: dict[str, Path]) -> Iterator[str]:
    """Each run's drill-down in the run table's order (the N-th is run N's), rendered one at a
    time as they are asked for."""
    records = {str(r.get("run_key")): r for r in tables.records}
    for row in tables.runs:
        key = str(row["run_key"])
        yield run_detail(row, records.get(key, {}), sources.get(key))


def run_table(tables: Tables, placed: html_details.Placed) -> str:
    """The run table with its filters, and the box a run opens in (`placed`: where the runs'
    details went, so the page can say so when they are beside it)."""
    axes = models.axes(tables.runs)  # each axis: a column and a filter
    rows = [_run_row(number, row, axes) for number, row in enumerate(tables.runs)]
    controls = _run_filters(tables.runs, axes)
    columns = [
        RUN_COLUMNS[0],
        *(Column(models.NAMES[k], models.NAMES[k]) for k in axes),
        *RUN_COLUMNS[1:],
    ]
    return (
        f"<h2>Runs</h2><p class=muted>Click a header to sort, a row to open the run."
        f"</p>{html_details.note(placed)}{controls}{tool_table('runs', columns, rows)}"
        f"{html_details.detail_box(placed)}"
    )


def _lean(shown_and_value: tuple[str, Any]) -> tuple[str, Any]:
    """A numeric cell without its sort value when its text is that number already (the
    page's script sorts by the text then): a run table can have tens of thousands of rows."""
    shown, value = shown_and_value
    try:
        same = value is not None and float(shown) == float(value)
    except ValueError:
        same = False
    return (shown, None) if same else (shown, value)


def _number(value: Any) -> float | None:
    """A stored number (the paper's CSVs hold text), or None."""
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None
