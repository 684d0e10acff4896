"""One self-contained HTML file (`report.html`): summary, tier x case matrix, statistics, figures
embedded as images, and a drill-down per run (judges' verdicts per item, checks, diff,
transcript). Run details sit in `<template>` elements and are only put into the page when opened,
so a report of a thousand runs stays responsive; long texts are cut. No network, no external
files."""

from __future__ import annotations

import base64
import json
import math
from html import escape
from pathlib import Path
from typing import Any

from pytest_scylla.results import metrics
from pytest_scylla.results.tables import Tables
from pytest_scylla.run.checks import truncate

REASON_LIMIT = 200  # characters of a judge's reason per item
TEXT_LIMIT = 4_000  # characters of a diff or transcript shown per run (the full ones stay in
# the run folder); keeps a 1,000-run report near 10 MB

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.6rem 0}td,th{border:1px solid #ccc;padding:.2rem .5rem;
text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.banner{background:#fff3cd;border:2px solid #d39e00;padding:.6rem 1rem;font-weight:bold}
.pass{color:#1a7f37}.fail{color:#b42318}.err{color:#9a6700}
details{border:1px solid #ddd;margin:.2rem 0;padding:.2rem .5rem}summary{cursor:pointer}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;max-height:28rem;white-space:pre-wrap}
img{max-width:100%;border:1px solid #eee;margin:.4rem 0}
"""

SCRIPT = """
document.querySelectorAll('details[data-run]').forEach(function (d) {
  d.addEventListener('toggle', function () {
    if (!d.open || d.dataset.filled) return;
    var t = document.getElementById('run-' + d.dataset.run);
    if (t) { d.appendChild(t.content.cloneNode(true)); d.dataset.filled = '1'; }
  });
});
"""


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.{digits}f}"
    return escape(str(value))


def _table(rows: list[dict[str, Any]], columns: list[str], left: tuple[str, ...] = ()) -> str:
    """A table; right-aligned cells carry no markup of their own (1,000 runs add up)."""
    head = "".join(f"<th{' class=l' if c in left else ''}>{escape(c)}" for c in columns)
    body = "".join("<tr>" + "".join(f"<td{' class=l' if c in left else ''}>{_fmt(r.get(c))}"
                                    for c in columns) for r in rows)
    return f"<table><tr>{head}{body}</table>"


def _transcript(path: Path) -> str:
    """The agent's turns from a stream-json transcript: text and tool calls, one line each."""
    lines = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if event.get("type") != "assistant":
            continue
        for block in event.get("message", {}).get("content", []):
            if block.get("type") == "text":
                lines.append(f"assistant: {block.get('text', '')}")
            elif block.get("type") == "tool_use":
                lines.append(f"tool {block.get('name')}: "
                             f"{json.dumps(block.get('input'))[:2000]}")
    return "\n".join(lines)


def _run_detail(rec: dict[str, Any], folder: Path | None) -> str:
    parts = [f"<p>{escape(str(rec.get('outcome')))}: {escape(str(rec.get('reason') or ''))}</p>"]
    if rec.get("integrity"):
        parts.append("<h4>integrity findings (undone before the checks)</h4>" + _table(
            rec["integrity"], ["kind", "path", "detail"], ("kind", "path", "detail")))
    for judge in rec.get("judges") or []:
        items = (judge.get("verdict") or {}).get("items", {})
        rows = [{"item": i, "achieved": v.get("achieved"),
                 "reason": truncate(str(v.get("reason")), REASON_LIMIT)} for i, v in items.items()]
        state = "valid" if judge.get("valid") else f"INVALID: {judge.get('errors')}"
        parts.append(f"<h4>{escape(str(judge.get('judge_model')))} — score "
                     f"{_fmt(judge.get('score'))} ({escape(state)})</h4>"
                     + _table(rows, ["item", "achieved", "reason"], ("item", "reason")))
    checks = [{"check": c["name"], "passed": c["passed"], "exit": c["exit_code"],
               "seconds": c["seconds"], "reason": c["reason"]} for c in rec.get("checks") or []]
    if checks:
        parts.append("<h4>checks</h4>" + _table(checks, ["check", "passed", "exit", "seconds",
                                                         "reason"], ("check", "reason")))
    if folder is not None:
        for name, title, read in (("diff.patch", "diff", None),
                                  ("transcript.jsonl", "transcript", _transcript)):
            path = folder / name
            if path.is_file():
                text = read(path) if read else path.read_text("utf-8", errors="replace")
                parts.append(f"<h4>{title}</h4><pre>{escape(truncate(text, TEXT_LIMIT))}</pre>")
    return "".join(parts)


def write(out: Path, tables: Tables, summary: dict[str, Any], results: dict[str, Any],
          figures: list[str], sources: dict[str, Path]) -> Path:
    """Write `out/report.html`. `sources` maps run keys to their stored run folders."""
    html = ["<!doctype html><html><head><meta charset=utf-8>",
            f"<title>pytest-scylla: {escape(out.name)}</title><style>{STYLE}</style></head>"
            "<body>", f"<h1>pytest-scylla report: {escape(out.name)}</h1>"]
    if summary.get("simulated"):
        html.append("<p class=banner>SIMULATED MODEL: these runs used the offline oracle "
                    "(scripted agent and judges). Not an evaluation of any model.</p>")
    if summary.get("partial"):
        html.append(f"<p class=banner>PARTIAL: {escape(str(summary['partial']))}.</p>")
    best = summary.get("frontier")
    frontier = f"{escape(str(best['tier']))} {metrics.fmt_cop(best['cop'])}" if best else "none"
    html.append(f"<p>{summary['runs']} runs; outcomes "
                f"{escape(json.dumps(summary['outcomes']))}; agent "
                f"${summary['agent_cost_usd']:.4f} + judges ${summary['judge_cost_usd']:.4f}; "
                f"frontier (lowest Cost-of-Pass): {frontier}</p>")
    html.append("<h2>Tiers</h2>" + _table(summary["tiers"], [
        "tier", "n", "excluded", "passes", "pass_rate", "ci_low", "ci_high", "ci_method",
        "mean_score", "median_score", "consistency", "mean_cost", "cop", "modal_grade",
        "reward_hacks", "reward_hacking_rate", "warning"],
        ("tier", "ci_method", "modal_grade", "warning")))
    matrix: dict[str, dict[str, list[bool]]] = {}
    for row in tables.runs:
        if row["outcome"] in metrics.COUNTED:
            matrix.setdefault(str(row["case_id"]), {}).setdefault(str(row["tier"]), []).append(
                bool(row["passed"]))
    tiers = [s["tier"] for s in summary["tiers"]]
    html.append("<h2>Pass rate, case × tier</h2><table><tr><th class=l>case</th>"
                + "".join(f"<th>{escape(t)}</th>" for t in tiers) + "</tr>")
    for case, cells in sorted(matrix.items()):
        html.append(f"<tr><td class=l>{escape(case)}</td>" + "".join(
            f"<td>{sum(cells[t]) / len(cells[t]):.0%} (n={len(cells[t])})</td>" if t in cells
            else "<td>-</td>" for t in tiers) + "</tr>")
    html.append("</table><h2>Statistics</h2>")
    html.append(_table(results["omnibus"], ["metric", "test", "groups", "h", "p", "significant",
                                            "note"], ("metric", "test", "note")))
    html.append(_table(results["pairwise"], ["metric", "group1", "group2", "n1", "n2", "u",
                                             "p_raw", "p_holm", "significant", "cliffs_delta",
                                             "note"], ("metric", "group1", "group2", "note")))
    alpha = results["krippendorff_alpha"]
    ac2 = results.get("gwet_ac2") or {}
    html.append(f"<p>Krippendorff's α (interval, judges × runs): {_fmt(alpha['alpha'])} "
                f"{escape(alpha['note'])}; Gwet's AC2 (quadratic): {_fmt(ac2.get('ac2'))} "
                f"{escape(str(ac2.get('note') or ''))}; over {alpha['runs']} runs</p>")
    html.append(_table(results["judge_pairs"], ["judge1", "judge2", "n", "spearman", "pearson",
                                                "mean_abs_diff", "note"],
                       ("judge1", "judge2", "note")))
    if figures:
        html.append("<h2>Figures</h2>")
        for stem in figures:
            data = base64.b64encode((out / "figures" / f"{stem}.png").read_bytes()).decode()
            html.append(f"<img alt='{escape(stem)}' src='data:image/png;base64,{data}'>")
    html.append("<h2>Runs</h2>")
    templates = []
    for number, rec in enumerate(tables.records):
        mark = {"pass": "pass", "fail": "fail"}.get(str(rec.get("outcome")), "err")
        html.append(f"<details data-run={number}><summary><span class={mark}>"
                    f"{escape(str(rec.get('outcome')))}</span> {escape(str(rec['run_key']))} "
                    f"score {_fmt(rec.get('score'), 2)} grade {escape(str(rec.get('grade')))} "
                    f"cost ${float(rec.get('cost_usd') or 0):.4f}</summary></details>")
        templates.append(f"<template id=run-{number}>"
                         f"{_run_detail(rec, sources.get(rec['run_key']))}</template>")
    html += templates
    html.append(f"<script>{SCRIPT}</script></body></html>")
    path = out / "report.html"
    path.write_text("".join(html), encoding="utf-8")
    return path
