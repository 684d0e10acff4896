"""One self-contained HTML file (`report.html`): summary, the tier table, the case x tier matrix
(each cell links to its runs), statistics, figures embedded as images, a sortable and filterable
run table, and a drill-down per run (judges' verdicts per item, checks, diff, the transcript with
tool calls folded and sub-agents nested). Run details sit in `<template>` elements and are only
put into the page when opened, so a report of a thousand runs stays responsive; long texts are
cut. No network, no external files."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results import html_transcript, metrics, models, text_tables
from pytest_scylla.results.html_parts import Column, Row, cell, filters, fmt, page, tool_table
from pytest_scylla.results.tables import Tables
from pytest_scylla.run.checks import truncate

REASON_LIMIT = 200  # characters of a judge's reason per item
TEXT_LIMIT = 4_000  # characters of a diff shown per run (the full one stays in the run folder)
RUN_COLUMNS = [Column("run", "run"), Column("case", "case"), Column("tier", "tier"),
               Column("subtest", "subtest"), Column("outcome", "outcome"),
               Column("grade", "grade"), Column("score", "score", True),
               Column("cost", "cost ($)", True), Column("tokens", "tokens", True),
               Column("seconds", "seconds", True)]


HEADERS = {"n": "runs", "pass_rate": "pass rate [95% CI]", "mean_score": "score",
           "median_score": "median score", "modal_grade": "grade", "mean_cost": "cost/run",
           "cop": "Cost-of-Pass", "frontier_tier": "frontier", "frontier_cop": "frontier CoP",
           "mean_tokens": "tokens/run", "mean_agent_seconds": "agent s/run",
           "reward_hacks": "hacks", "reward_hacking_rate": "hacking rate", "warning": "note",
           "agent_model": "model"}


def _table(rows: list[dict[str, Any]], columns: list[str], left: tuple[str, ...] = ()) -> str:
    """A static table with readable headers; a pass rate carries its interval in its cell (the
    interval's method in the header's tooltip), so the table stays narrow."""
    methods = sorted({str(r["ci_method"]) for r in rows if r.get("ci_method")})
    tip = f" title='interval: {escape(', '.join(methods))}'" if methods else ""
    head = "".join(f"<th{' class=l' if c in left else ''}{tip if c == 'pass_rate' else ''}>"
                   f"{escape(HEADERS.get(c, c.replace('_', ' ')))}" for c in columns)
    body = "".join("<tr>" + "".join(f"<td{' class=l' if c in left else ''}>{_value(r, c)}"
                                    for c in columns) for r in rows)
    return f"<table><tr>{head}{body}</table>"


def _value(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if column == "pass_rate" and isinstance(value, int | float):
        low, high = row.get("ci_low"), row.get("ci_high")
        ci = f" [{low:.0%}, {high:.0%}]" if isinstance(low, int | float) and \
            isinstance(high, int | float) else ""
        return f"{value:.0%}{ci}" if row.get("n") else "no counted runs"
    return fmt(value)


def _trajectory(rec: dict[str, Any]) -> str:
    """What the agent used: calls per tool, and each declared component, used or not."""
    traj = rec.get("trajectory")
    if not isinstance(traj, dict):
        return ""
    per_tool = ", ".join(f"{escape(str(k))} ×{v}" for k, v in (traj.get("per_tool") or {}).items())
    used = [f"{escape(kind)} {escape(name)}: {'used' if on else '<b class=fail>not used</b>'}"
            for kind, names in (traj.get("used") or {}).items() for name, on in names.items()]
    return (f"<p>{traj.get('tool_calls', 0)} tool calls ({per_tool or 'none'}), "
            f"{traj.get('tool_errors', 0)} failed, {traj.get('sub_agent_calls', 0)} sub-agent "
            f"calls, {fmt(traj.get('turns'))} turns</p>"
            + (f"<p>declared components: {'; '.join(used)}</p>" if used else ""))


def _run_detail(row: dict[str, Any], rec: dict[str, Any], folder: Path | None) -> str:
    facts = ", ".join(f"{k} {fmt(row.get(k))}" for k in (
        "score", "grade", "cost_usd", "total_tokens", "duration_seconds", "ttft_seconds",
        "regressions", "r_prog") if row.get(k) not in (None, ""))
    parts = [f"<h3>{escape(str(row['run_key']))}</h3>",
             f"<p><b>{escape(str(row.get('outcome')))}</b>"
             f"{': ' + escape(str(rec['reason'])) if rec.get('reason') else ''}</p>"
             f"<p class=muted>{facts}</p>",
             _trajectory(rec)]
    if rec.get("integrity"):
        parts.append("<h4>integrity findings (undone before the checks)</h4>" + _table(
            rec["integrity"], ["kind", "path", "detail"], ("kind", "path", "detail")))
    for judge in rec.get("judges") or []:
        items = (judge.get("verdict") or {}).get("items", {})
        rows = [{"item": i, "achieved": v.get("achieved"),
                 "reason": truncate(str(v.get("reason")), REASON_LIMIT)} for i, v in items.items()]
        state = "valid" if judge.get("valid") else f"INVALID: {judge.get('errors')}"
        parts.append(f"<h4>{escape(str(judge.get('judge_model')))} — score "
                     f"{fmt(judge.get('score'))} ({escape(state)})</h4>"
                     + _table(rows, ["item", "achieved", "reason"], ("item", "reason")))
    checks = [{"check": c["name"], "passed": c["passed"], "exit": c["exit_code"],
               "seconds": c["seconds"], "reason": c["reason"]} for c in rec.get("checks") or []]
    if checks:
        parts.append("<h4>checks</h4>" + _table(checks, ["check", "passed", "exit", "seconds",
                                                         "reason"], ("check", "reason")))
    if folder is not None and (folder / "diff.patch").is_file():
        diff = (folder / "diff.patch").read_text("utf-8", errors="replace")
        parts.append(f"<h4>diff</h4><pre>{escape(truncate(diff, TEXT_LIMIT))}</pre>")
    if folder is not None and (folder / "transcript.jsonl").is_file():
        parts.append("<h4>transcript</h4>"
                     + html_transcript.render(folder / "transcript.jsonl"))
    return "".join(parts)


def _outcomes(summary: dict[str, Any]) -> str:
    """The outcome counts, each a link to those runs in the run table."""
    chips = "".join(f"<a href=\"#outcome={escape(quote(str(k)))}\">{escape(str(k))} {v}</a>"
                    for k, v in summary["outcomes"].items())
    return f"<span class=chips>{chips}</span>"


def _matrix(tables: Tables, tiers: list[str]) -> str:
    """Pass rate per case × tier; each cell links to its runs in the run table."""
    matrix: dict[str, dict[str, list[bool]]] = {}
    for row in tables.runs:
        if row["outcome"] in metrics.COUNTED:
            matrix.setdefault(str(row["case_id"]), {}).setdefault(str(row["tier"]), []).append(
                bool(row["passed"]))
    html = ["<h2>Pass rate, case × tier</h2><table id=matrix><tr><th class=l>case</th>"
            + "".join(f"<th>{escape(t)}</th>" for t in tiers) + "</tr>"]
    for case, cells in sorted(matrix.items()):
        html.append(f"<tr><td class=l>{escape(case)}</td>")
        for t in tiers:
            if t not in cells:
                html.append("<td>-</td>")
                continue
            link = escape(f"#case={quote(case)}&tier={quote(t)}")
            html.append(f"<td><a href=\"{link}\">{sum(cells[t]) / len(cells[t]):.0%} "
                        f"(n={len(cells[t])})</a></td>")
        html.append("</tr>")
    return "".join(html) + "</table>"


def _run_table(tables: Tables, sources: dict[str, Path]) -> tuple[str, list[str]]:
    """The run table with its filters, and the drill-down templates (one per run)."""
    records = {str(r.get("run_key")): r for r in tables.records}
    axes = models.axes(tables.runs)  # each axis: a column and a filter
    rows, templates = [], []
    for number, row in enumerate(tables.runs):
        key, outcome = str(row["run_key"]), str(row.get("outcome"))
        mark = {"pass": "pass", "fail": "fail"}.get(outcome, "err")
        rows.append(Row({
            "run": (f"<a href=\"#open={number}\">{escape(key)}</a>", None),
            "case": cell(row.get("case_id")), "tier": cell(row.get("tier")),
            "subtest": cell(row.get("subtest")),
            "outcome": (f"<span class={mark}>{escape(outcome)}</span>", None),
            "grade": cell(row.get("grade")), "score": cell(row.get("score"), 2),
            "cost": cell(row.get("cost_usd"), 4),
            "tokens": cell(_number(row.get("total_tokens")), 0),
            "seconds": cell(_number(row.get("duration_seconds")), 1),
            "model": cell(row.get("agent_model")), "agent": cell(row.get("agent"))},
            {"case": str(row.get("case_id")), "tier": str(row.get("tier")), "outcome": outcome,
             **{models.NAMES[k]: str(row.get(k)) for k in axes}}, run=number))
        templates.append(f"<template id=run-{number}>"
                         f"{_run_detail(row, records.get(key, {}), sources.get(key))}"
                         "</template>")

    def values(field: str) -> list[str]:
        return sorted({str(r.get(field)) for r in tables.runs},
                      key=tier_key if field == "tier" else str)

    selects = {models.NAMES[k]: (models.NAMES[k], values(k)) for k in axes}
    controls = filters("runs", {**selects, "tier": ("tier", values("tier")),
                                "case": ("case", values("case_id")),
                                "outcome": ("outcome", values("outcome"))})
    columns = [RUN_COLUMNS[0], *(Column(models.NAMES[k], models.NAMES[k]) for k in axes),
               *RUN_COLUMNS[1:]]
    return (f"<h2>Runs</h2><p class=muted>Click a header to sort, a row to open the run."
            f"</p>{controls}{tool_table('runs', columns, rows)}<div id=detail hidden></div>",
            templates)


def _models(summary: dict[str, Any]) -> str:
    """Each axis the experiment varies (models; agent CLIs): side by side, then each one's
    tiers."""
    out = []
    for name, tiers, key, title, _ in text_tables.AXIS_TABLES:
        if not summary.get(name):
            continue
        out.append(f"<h2>{escape(title)}s</h2>" + _table(summary[name], [
            key, "n", "pass_rate", "mean_score", "modal_grade",
            "mean_cost", "cop", "frontier_tier", "frontier_cop", "mean_tokens",
            "mean_agent_seconds", "warning"], (key, "modal_grade", "frontier_tier", "warning"))
            + f"<h3>Tiers per {escape(title.lower())}</h3><div class=wide>" + _table(
                summary[tiers], [key, "tier", "n", "pass_rate",
                                 "mean_score", "mean_cost", "cop", "modal_grade", "warning"],
                (key, "tier", "modal_grade", "warning")) + "</div>")
    return "".join(out)


def _number(value: Any) -> float | None:
    """A stored number (the paper's CSVs hold text), or None."""
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


def write(out: Path, tables: Tables, summary: dict[str, Any], results: dict[str, Any],
          figures: list[str], sources: dict[str, Path]) -> Path:
    """Write `out/report.html`. `sources` maps run keys to their stored run folders."""
    html = [f"<h1>pytest-scylla report: {escape(out.name)}</h1>"]
    if summary.get("simulated"):
        html.append("<p class=banner>SIMULATED MODEL: these runs used the offline oracle "
                    "(scripted agent and judges). Not an evaluation of any model.</p>")
    if summary.get("partial"):
        html.append(f"<p class=banner>PARTIAL: {escape(str(summary['partial']))}.</p>")
    best = summary.get("frontier")
    frontier = f"{escape(str(best['tier']))} {metrics.fmt_cop(best['cop'])}" if best else "none"
    html.append(f"<p>{summary['runs']} runs: {_outcomes(summary)}<br>agent "
                f"${summary['agent_cost_usd']:.4f} + judges ${summary['judge_cost_usd']:.4f}; "
                f"frontier (lowest Cost-of-Pass): {frontier}</p>")
    html.append(_models(summary))
    html.append(f"<h2>Tiers{models.pooled(summary)}</h2>"
                "<div class=wide>" + _table(summary["tiers"], [
        "tier", "n", *(["excluded"] if any(t.get("excluded") for t in summary["tiers"]) else []),
        "passes", "pass_rate", "mean_score", "median_score", "consistency", "mean_cost", "cop",
        "modal_grade", *(["reward_hacks", "reward_hacking_rate"] if any(
            t.get("reward_hacks") for t in summary["tiers"]) else []), "warning"],
        ("tier", "modal_grade", "warning")) + "</div>")
    tiers = [str(s["tier"]) for s in summary["tiers"]]
    html.append(_matrix(tables, tiers))
    runs, templates = _run_table(tables, sources)
    html.append(runs)
    html.append("<h2>Statistics</h2>")
    html.append(_table(results["omnibus"], ["metric", "test", "groups", "h", "p", "significant",
                                            "note"], ("metric", "test", "note")))
    html.append(_table(results["pairwise"], ["metric", "group1", "group2", "n1", "n2", "u",
                                             "p_raw", "p_holm", "significant", "cliffs_delta",
                                             "note"], ("metric", "group1", "group2", "note")))
    alpha = results["krippendorff_alpha"]
    ac2 = results.get("gwet_ac2") or {}
    html.append(f"<p>Krippendorff's α (interval, judges × runs): {fmt(alpha['alpha'])} "
                f"{escape(alpha['note'])}; Gwet's AC2 (quadratic): {fmt(ac2.get('ac2'))} "
                f"{escape(str(ac2.get('note') or ''))}; over {alpha['runs']} runs</p>")
    html.append(_table(results["judge_pairs"], ["judge1", "judge2", "n", "spearman", "pearson",
                                                "mean_abs_diff", "note"],
                       ("judge1", "judge2", "note")))
    if figures:
        html.append("<h2>Figures</h2>")
        for stem in figures:
            data = base64.b64encode((out / "figures" / f"{stem}.png").read_bytes()).decode()
            html.append(f"<img alt='{escape(stem)}' src='data:image/png;base64,{data}'>")
    html += templates
    path = out / "report.html"
    path.write_text(page(f"pytest-scylla: {out.name}", html), encoding="utf-8")
    return path
