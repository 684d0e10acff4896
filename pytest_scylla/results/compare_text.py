"""What `scylla compare` writes: compare.md (short enough for a pull-request comment),
compare.json and compare.html, from `compare.compare`'s result."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from pytest_scylla.results.compare import LABELS, regressions


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
        line = out.setdefault(group, {**dict(zip(keys, group, strict=True)),
                                      "n": f"{r['n_base']} → {r['n_candidate']}"
                                           f"{' (paired)' if r['paired'] else ''}"})
        line[LABELS[r["metric"]]] = (f"{_number(r['metric'], r['base'])} → "
                                     f"{_number(r['metric'], r['candidate'])}: {_change(r)}")
    return list(out.values())


def _md_table(lines: list[dict[str, str]]) -> list[str]:
    if not lines:
        return ["(none)"]
    columns = list(lines[0])

    def cell(value: str) -> str:
        return value.replace("|", "\\|")

    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(cell(line.get(c, "")) for c in columns) + " |"
              for line in lines)]


def markdown(result: dict[str, Any], points: float | None = None) -> str:
    """compare.md: short enough for a pull-request comment."""
    out = [f"## scylla compare: {result['candidate']} vs {result['base']}", ""]
    out += [f"Changes are candidate minus base with a 95% bootstrap interval; p is "
            f"Holm-corrected across each table; * = significant at {result['alpha']}.", ""]
    if result["conditions"]:
        out += ["**What changed in the conditions**", ""]
        out += [f"- {c['what']}: {c['base']} → {c['candidate']}" for c in result["conditions"]]
        out.append("")
    out += [f"- {n}" for n in result["notes"]]
    verdicts = result.get("verdicts") or {}
    if verdicts.get("common_runs"):
        cost = verdicts["judge_cost_per_run"]
        out += [f"- Runs on both sides: {verdicts['common_runs']}; same verdict in "
                f"{verdicts['same_verdict']} ({100 * verdicts['agreement']:.1f}%); judging cost "
                f"per run {_number('cop', cost['base'])} → {_number('cop', cost['candidate'])}",
                ""]
    out += ["### Per tier", "", *_md_table(_wide(result["tiers"], ("tier",))), ""]
    significant = [r for r in result["cases"] if r["significant"]]
    out += ["### Significant changes per case × tier", ""]
    out += [f"- {r['case_id']} {r['tier']} {LABELS[r['metric']]}: {_change(r)}"
            for r in significant] or ["- none"]
    if points is not None:
        found = regressions(result, points)
        out += ["", f"**Gate** (pass-rate drop > {points:g} pts, significant): "
                    f"{'FAILED — ' + str(len(found)) + ' regression(s)' if found else 'passed'}"]
    return "\n".join(out) + "\n"


def html_page(result: dict[str, Any]) -> str:
    """compare.html: one self-contained page with both tables."""
    def table(lines: list[dict[str, str]]) -> str:
        if not lines:
            return "<p>(none)</p>"
        head = "".join(f"<th>{html.escape(c)}</th>" for c in lines[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in line.values())
                       + "</tr>" for line in lines)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    conditions = "".join(f"<li>{html.escape(str(c['what']))}: {html.escape(str(c['base']))} → "
                         f"{html.escape(str(c['candidate']))}</li>"
                         for c in result["conditions"]) or "<li>none</li>"
    return ("<!doctype html><html><head><meta charset='utf-8'><title>scylla compare</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
            f"<h1>{html.escape(result['candidate'])} vs {html.escape(result['base'])}</h1>"
            f"<h2>What changed in the conditions</h2><ul>{conditions}</ul>"
            f"<h2>Per tier</h2>{table(_wide(result['tiers'], ('tier',)))}"
            f"<h2>Per case × tier</h2>{table(_wide(result['cases'], ('case_id', 'tier')))}"
            "</body></html>\n")


def write(out: Path, result: dict[str, Any], points: float | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "compare.md").write_text(markdown(result, points), encoding="utf-8")
    (out / "compare.html").write_text(html_page(result), encoding="utf-8")
