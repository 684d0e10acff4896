"""The terminal summary at the end of a session and of `scylla report`: the tier table with the
frontier marked, each tier's Cost-of-Pass interval, the agent CLIs and models, outcomes and
spend."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.results import design, metrics, models
from pytest_scylla.results.decision_tables import tier_decisions
from pytest_scylla.results.decisions import DecisionRow
from pytest_scylla.results.tables import Tables


def tier_table(tables: Tables, where: Path, decided: Sequence[DecisionRow] = ()) -> list[str]:
    """The terminal summary: tier table with the frontier marked, outcomes, spend, and each
    tier's decisions (`decided`: the rows of `--scylla-stop=decided`)."""
    keys = models.tier_keys(tables.runs)
    summary: Sequence[Mapping[str, Any]] = metrics.group_summary(tables.runs, keys)
    best = models.frontiers(summary, keys[:-1])
    names = [" ".join(str(s[k]) for k in keys) for s in summary]
    width = max([6, *(len(n) + 1 for n in names)])
    lines = _banners(tables)
    hacked = sum(1 for r in tables.runs if int(float(r.get("integrity_findings") or 0)) > 0)
    hacks = f"{'hacks':>7}" if hacked else ""  # the column shows once a run tampered
    head = " ".join(models.NAMES.get(k, k) for k in keys)
    lines.append(
        f"{head:<{width}}{'runs':>5}"
        f"{'pass rate [95% CI]':>24}{'score':>7}{'grade':>6}"
        f"{'cost/run':>10}{'CoP':>10}{hacks}  note"
    )
    said = tier_decisions(decided)
    for s, name in zip(summary, names, strict=True):
        front = best.get(tuple(str(s[k]) for k in keys[:-1]))
        mark = " <- frontier" if front and s["tier"] == front[0] else ""
        if said.get(str(s["tier"])):
            mark += f"{',' if mark else ''} decided: {said[str(s['tier'])]}"
        lines.append(_tier_line(s, f"{name:<{width}}", mark, hacked))
    lines += _cop_line(summary, names)
    lines += _axis_lines(tables)
    counts = Counter(r["outcome"] for r in tables.runs)
    if hacked:
        lines.append(
            f"reward hacking: {hacked} run(s) tampered with their checks (integrity "
            "findings; each was checked and judged on the restored workspace, or failed "
            "unjudged where it replaced its workspace)"
        )
    lines.append(
        "outcomes: "
        + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
        + " (infra_error and judge_error runs are not counted in pass rates)"
    )
    lines.append(_spend_line(tables, where))
    lines += [f"warning: {w}" for w in tables.warnings]
    return lines


def _banners(tables: Tables) -> list[str]:
    """The lines above the terminal table: a simulated model, a partial experiment."""
    lines = []
    if any(bool(r.get("simulated")) for r in tables.runs):
        lines.append("SIMULATED MODEL: oracle agent and judges, not a real evaluation")
    if tables.partial:
        lines.append(f"PARTIAL: {tables.partial}")
    return lines + design.excluded_lines(tables.excluded)


def _tier_line(s: Mapping[str, Any], name: str, mark: str, hacked: int) -> str:
    """One row of the terminal table (`name` padded to the column's width)."""
    score = "-" if s["mean_score"] is None else f"{s['mean_score']:.2f}"
    rate = (
        f"{s['pass_rate']:.0%} [{s['ci_low']:.0%}, {s['ci_high']:.0%}]"
        if s["n"]
        else "no counted runs"
    )  # every run an infra or judge error: no rate at all
    warning = f"  {s['warning']}" if s["warning"] and s["n"] else ""
    note = mark + ("," if mark and warning else "") + warning  # the frontier keeps it
    return (
        f"{name}{s['n']:>5}{rate:>24}{score:>7}"
        f"{s['modal_grade'] or '-':>6}"
        f"{'$' + format(s['mean_cost'], '.4f'):>10}"
        f"{metrics.fmt_cop(s['cop']) if s['n'] else '-':>10}"
        f"{format(str(s['reward_hacks']) + '/' + str(s['n']), '>7') if hacked else ''}"
        f"{note}"
    )


def _cop_line(summary: Sequence[Mapping[str, Any]], names: list[str]) -> list[str]:
    """The rows' Cost-of-Pass intervals, under the table (`cop_interval`)."""
    from pytest_scylla.results import cop_interval

    shown = [f"{n} {cop_interval.shown(s)}" for s, n in zip(summary, names, strict=True) if s["n"]]
    return [f"CoP 95% CI ({cop_interval.METHOD}): " + "; ".join(shown)] if shown else []


def _axis_lines(tables: Tables) -> list[str]:
    """One line per agent CLI and per model when the runs vary them."""
    lines = []
    for key, word in ((models.AGENT_KEY, "agent"), (models.MODEL_KEY, "model")):
        lines += [
            f"{word} {m[key]}: {m['n']} runs, pass rate {m['pass_rate']:.0%} "
            f"[{m['ci_low']:.0%}, {m['ci_high']:.0%}], cost/run ${m['mean_cost']:.4f}, "
            f"CoP {metrics.fmt_cop(m['cop'])}, frontier "
            f"{m['frontier_tier'] or '-'} {models.fmt_cost(m['frontier_cop'])}"
            for m in models.comparison(tables.runs, key)
        ]
    return lines


def _spend_line(tables: Tables, where: Path) -> str:
    """What agent and judges spent (simulated runs: priced, not paid), and where results are."""
    agent = math.fsum(float(r["cost_usd"] or 0) for r in tables.runs)
    judges = math.fsum(float(r.get("judge_cost_usd") or 0) for r in tables.runs)
    simulated = bool(tables.runs) and all(r.get("simulated") in (True, "True") for r in tables.runs)
    return (
        "spend (SIMULATED: the oracle's tokens priced as the models', no money spent)"
        if simulated
        else "spend"
    ) + f": agent ${agent:.4f} + judges ${judges:.4f} = ${agent + judges:.4f}; results: {where}"
