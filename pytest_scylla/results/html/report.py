"""One self-contained HTML file (`report.html`): summary, the tier table, the case x tier matrix
(each cell links to its runs), statistics, figures embedded as images, a sortable and filterable
run table, and a drill-down per run (judges' verdicts per item, checks, diff, the transcript with
tool calls folded and sub-agents nested). Run details sit in `<template>` elements and are only
put into the page when opened, so a report of a thousand runs stays responsive; long texts are
cut. No network, no external files; but past a budget (thousands of runs) the run details are
in files beside the page, loaded when a run is opened (html_details.py)."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.results import cop_interval, metrics, models, text_tables
from pytest_scylla.results.html import details as html_details
from pytest_scylla.results.html.parts import PAGE_END, fmt, page_start, static_table
from pytest_scylla.results.html.runs import run_details, run_table
from pytest_scylla.results.tables import Tables

EXCLUDED_SHOWN = 200  # runs left out named on the page (summary.json names every one)


def _outcomes(summary: dict[str, Any]) -> str:
    """The outcome counts, each a link to those runs in the run table."""
    chips = "".join(
        f'<a href="#outcome={escape(quote(str(k)))}">{escape(str(k))} {v}</a>'
        for k, v in summary["outcomes"].items()
    )
    return f"<span class=chips>{chips}</span>"


def _matrix(tables: Tables, tiers: list[str]) -> str:
    """Pass rate per case × tier; each cell links to its runs in the run table."""
    matrix: dict[str, dict[str, list[bool]]] = {}
    for row in tables.runs:
        if row["outcome"] in COUNTED:
            matrix.setdefault(str(row["case_id"]), {}).setdefault(str(row["tier"]), []).append(
                bool(row["passed"])
            )
    html = [
        "<h2>Pass rate, case × tier</h2><table id=matrix><tr><th class=l>case</th>"
        + "".join(f"<th>{escape(t)}</th>" for t in tiers)
        + "</tr>"
    ]
    for case, cells in sorted(matrix.items()):
        html.append(f"<tr><td class=l>{escape(case)}</td>")
        for t in tiers:
            if t not in cells:
                html.append("<td>-</td>")
                continue
            link = escape(f"#case={quote(case)}&tier={quote(t)}")
            html.append(
                f'<td><a href="{link}">{sum(cells[t]) / len(cells[t]):.0%} '
                f"(n={len(cells[t])})</a></td>"
            )
        html.append("</tr>")
    return "".join(html) + "</table>"


def _models(summary: dict[str, Any]) -> str:
    """Each axis the experiment varies (models; agent CLIs): side by side, then each one's
    tiers."""
    out = []
    for name, tiers, key, title, _ in text_tables.AXIS_TABLES:
        if not summary.get(name):
            continue
        out.append(
            f"<h2>{escape(title)}s</h2>"
            + static_table(
                summary[name],
                [
                    key,
                    "n",
                    "pass_rate",
                    "mean_score",
                    "modal_grade",
                    "mean_cost",
                    "cop",
                    "frontier_tier",
                    "frontier_cop",
                    "mean_tokens",
                    "mean_agent_seconds",
                    "warning",
                ],
                (key, "modal_grade", "frontier_tier", "warning"),
            )
            + f"<h3>Tiers per {escape(title.lower())}</h3><div class=wide>"
            + static_table(
                summary[tiers],
                [
                    key,
                    "tier",
                    "n",
                    "pass_rate",
                    "mean_score",
                    "mean_cost",
                    "cop",
                    "modal_grade",
                    "warning",
                ],
                (key, "tier", "modal_grade", "warning"),
            )
            + "</div>"
        )
    return "".join(out)


def _banners(summary: dict[str, Any]) -> list[str]:
    """The banners above everything: a simulated model, a partial experiment."""
    html = []
    if summary.get("simulated"):
        html.append(
            "<p class=banner>SIMULATED MODEL: these runs used the offline oracle "
            "(scripted agent and judges). Not an evaluation of any model.</p>"
        )
    if summary.get("partial"):
        html.append(f"<p class=banner>PARTIAL: {escape(str(summary['partial']))}.</p>")
    if excluded := summary.get("excluded"):  # runs left out of every number (results/design.py)
        shown = "".join(f"<li>{escape(str(line))}</li>" for line in excluded[:EXCLUDED_SHOWN])
        more = len(excluded) - EXCLUDED_SHOWN
        shown += f"<li>… and {more} more (summary.json lists every one)</li>" if more > 0 else ""
        html.append(
            f"<div class=banner>EXCLUDED: {len(excluded)} run(s) of these folders are not "
            f"counted in any number here:<ul>{shown}</ul></div>"
        )
    return html


def _headline(summary: dict[str, Any]) -> str:
    """The runs and their outcomes, what agent and judges cost, and the frontier."""
    best = summary.get("frontier")
    frontier = f"{escape(str(best['tier']))} {metrics.fmt_cop(best['cop'])}" if best else "none"
    return (
        f"<p>{summary['runs']} runs: {_outcomes(summary)}<br>agent "
        f"${summary['agent_cost_usd']:.4f} + judges ${summary['judge_cost_usd']:.4f}; "
        f"frontier (lowest Cost-of-Pass): {frontier}</p>"
    )


def _tier_table(summary: dict[str, Any]) -> str:
    """The tier table; excluded runs and reward hacks get columns when there are any."""
    heading = f"<h2>Tiers{models.pooled(summary)}</h2>"
    tiers = summary["tiers"]
    excluded = ["excluded"] if any(t.get("excluded") for t in tiers) else []
    hacks = (
        ["reward_hacks", "reward_hacking_rate"] if any(t.get("reward_hacks") for t in tiers) else []
    )
    columns = [
        "tier",
        "n",
        *excluded,
        "passes",
        "pass_rate",
        "mean_score",
        "median_score",
        "consistency",
        "mean_cost",
        "cop",
        "cop_ci",
        "modal_grade",
        *hacks,
        "warning",
        *(["decision"] if "decisions" in summary else []),
    ]
    return (
        heading
        + "<div class=wide>"
        + static_table(
            [{**t, "cop_ci": cop_interval.shown(t)} for t in tiers],
            columns,
            ("tier", "modal_grade", "warning", "decision"),
        )
        + "</div>"
    )


def _statistics(results: dict[str, Any]) -> list[str]:
    """The tiers' tests (omnibus, pairwise) and the judges' agreement."""
    html = ["<h2>Statistics</h2>"]
    html.append(
        static_table(
            results["omnibus"],
            ["metric", "test", "groups", "h", "p", "significant", "note"],
            ("metric", "test", "note"),
        )
    )
    html.append(
        static_table(
            results["pairwise"],
            [
                "metric",
                "group1",
                "group2",
                "n1",
                "n2",
                "u",
                "p_raw",
                "p_holm",
                "significant",
                "cliffs_delta",
                "note",
            ],
            ("metric", "group1", "group2", "note"),
        )
    )
    alpha = results["krippendorff_alpha"]
    ac2 = results.get("gwet_ac2") or {}
    html.append(
        f"<p>Krippendorff's α (interval, judges × runs): {fmt(alpha['alpha'])} "
        f"{escape(alpha['note'])}; Gwet's AC2 (quadratic): {fmt(ac2.get('ac2'))} "
        f"{escape(str(ac2.get('note') or ''))}; over {alpha['runs']} runs</p>"
    )
    html.append(
        static_table(
            results["judge_pairs"],
            ["judge1", "judge2", "n", "spearman", "pearson", "mean_abs_diff", "note"],
            ("judge1", "judge2", "note"),
        )
    )
    return html


def _figures(out: Path, figures: list[str]) -> list[str]:
    """The drawn figures, embedded as images."""
    if not figures:
        return []
    html = ["<h2>Figures</h2>"]
    for stem in figures:
        data = base64.b64encode((out / "figures" / f"{stem}.png").read_bytes()).decode()
        html.append(f"<img alt='{escape(stem)}' src='data:image/png;base64,{data}'>")
    return html


def write(
    out: Path,
    tables: Tables,
    summary: dict[str, Any],
    results: dict[str, Any],
    figures: list[str],
    sources: dict[str, Path],
    components: str = "",
) -> Path:
    """Write `out/report.html` (and `out/report-runs/` when the runs' details are too many
    for the page: html_details.py). `sources` maps run keys to their stored run folders;
    `components` is the section on what each component of an ablated configuration is worth
    (HTML, escaped; "" when the experiment ran no plan), put before the runs."""
    html = [
        f"<h1>pytest-scylla report: {escape(out.name)}</h1>",
        *_banners(summary),
        _headline(summary),
        _models(summary),
        _tier_table(summary),
        _matrix(tables, [str(s["tier"]) for s in summary["tiers"]]),
    ]
    placed = html_details.place(out, run_details(tables, sources))
    html += [components, run_table(tables, placed), *_statistics(results), *_figures(out, figures)]
    path = out / "report.html"
    with path.open("w", encoding="utf-8") as handle:  # part by part: no copy of the whole page
        handle.write(page_start(f"pytest-scylla: {out.name}"))
        handle.writelines(html)
        for number, detail in enumerate(placed.inline):
            handle.write(f"<template id=run-{number}>{detail}</template>")
        handle.write(PAGE_END)
    return path
