"""Metrics over run records: pure functions, pandas in and out, no I/O.

Column names follow the paper's exports (`runs.csv`, `judges.csv`, `criteria.csv`) plus ours.
Definitions: ../shared/reference/statistics.md (pass rate CIs, CoP, consistency, grades).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

# the outcomes counted in pass rate and CoP, and every outcome: named once in core.outcomes
from pytest_scylla.core.outcomes import COUNTED as COUNTED
from pytest_scylla.core.outcomes import OUTCOMES as OUTCOMES
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import JudgeEntry, RunRecord
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results.rows import (
    CriterionRow,
    GroupSummary,
    JudgeKeys,
    JudgeRow,
    Place,
    RunRow,
)
from pytest_scylla.results.stats import cop, pass_at_k, pass_hat_k

SMALL_N = 10  # below this many runs a rate's interval is wide: say so
RUN_COLUMNS = [
    "experiment",
    "agent_model",
    "tier",
    "subtest",
    "run_number",
    "score",
    "impl_rate",
    "passed",
    "grade",
    "cost_usd",
    "duration_seconds",
    "agent_duration_seconds",
    "judge_duration_seconds",
    "input_tokens",
    "output_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "total_tokens",
    "exit_code",
    "api_calls",
    "num_turns",
    "case_id",
    "outcome",
    "judge_cost_usd",
    "cost_source",
    "model_usage",
    "config_hash",
    "simulated",
    "run_key",
    "checks_duration_seconds",
    "integrity_findings",
    "leftover_processes",
    "ttft_seconds",
    "regressions",
    "r_prog",
    "agent",
]


MODEL_ID = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?$")


def model_label(model: str | None) -> str | None:
    """'claude-sonnet-4-5-20250929' -> 'Sonnet 4.5': the paper's display names in exports."""
    match = MODEL_ID.match(model or "")
    if not match:
        return model
    family, major, minor = match.groups()
    return f"{family.capitalize()} {major}{'.' + minor if minor else ''}"


def _place(rec: RunRecord, experiment: str) -> Place:
    """The columns that place a run: experiment, model, tier, subtest, run number, case."""
    return {
        "experiment": experiment,
        "agent_model": rec.get("agent_model_label") or model_label(rec.get("model")),
        "tier": rec.get("tier"),
        "subtest": str(rec.get("subtest", "")).split("-", 1)[-1],
        "run_number": rec.get("run"),
        "case_id": rec.get("case"),
    }


def run_row(rec: RunRecord, experiment: str) -> RunRow:
    """One `runs.csv` row from a run record."""
    tokens = rec.get("tokens") or {}
    timings = rec.get("timings") or {}
    return {
        **_place(rec, experiment),
        "score": rec.get("score"),
        "impl_rate": rec.get("impl_rate"),
        "passed": rec.get("outcome") == Outcome.PASS,
        "grade": rec.get("grade"),
        "cost_usd": rec.get("cost_usd"),
        "duration_seconds": timings.get("total_s"),
        "agent_duration_seconds": timings.get("agent_s"),
        "checks_duration_seconds": timings.get("checks_s"),
        "ttft_seconds": timings.get("ttft_s"),
        "regressions": len(regs) if isinstance(regs := rec.get("regressions"), list) else None,
        "r_prog": rec.get("r_prog"),
        "judge_duration_seconds": rec.get("judge_duration_seconds"),
        "input_tokens": tokens.get("input_tokens"),
        "output_tokens": tokens.get("output_tokens"),
        "cache_creation_tokens": tokens.get("cache_creation_input_tokens"),
        "cache_read_tokens": tokens.get("cache_read_input_tokens"),
        "total_tokens": tokens.get("total_tokens"),
        "exit_code": rec.get("exit_code"),
        "api_calls": rec.get("api_calls"),
        "num_turns": rec.get("num_turns"),
        "outcome": rec.get("outcome"),
        "judge_cost_usd": rec.get("judge_cost_usd"),
        "cost_source": rec.get("cost_source"),
        "model_usage": json.dumps(rec.get("usage") or {}, sort_keys=True),
        "config_hash": rec.get("config_hash"),
        "simulated": bool(rec.get("simulated")),
        "run_key": rec.get("run_key"),
        # tampering the harness undid before the checks; 0 for records older than the check
        "integrity_findings": len(rec.get("integrity") or []),
        "leftover_processes": int(rec.get("leftover_processes") or 0),
        "agent": rec.get("agent"),
    }  # the CLI adapter (records before it: claude-code's)


def _judge_keys(rec: RunRecord, judge: JudgeEntry, experiment: str) -> JudgeKeys:
    """The columns that place a judge's row: the run's, then the judge."""
    return {
        **_place(rec, experiment),
        "judge_model": judge.get("judge_model"),
        "judge_number": judge.get("judge_number"),
    }


def judge_rows(rec: RunRecord, experiment: str) -> list[JudgeRow]:
    """`judges.csv` rows (one per judge of the run)."""
    return [
        {
            **_judge_keys(rec, j, experiment),
            "judge_score": j.get("score"),
            "judge_impl_rate": j.get("impl_rate"),
            "judge_passed": j.get("passed"),
            "judge_grade": j.get("grade"),
            "judge_is_valid": j.get("valid"),
            "judge_reasoning": (j.get("verdict") or {}).get("reasoning", ""),
            "judge_cost_usd": j.get("cost_usd"),
            "judge_seconds": j.get("seconds"),
            "judge_input_tokens": (j.get("usage") or {}).get("input_tokens"),
            "judge_output_tokens": (j.get("usage") or {}).get("output_tokens"),
            "run_key": rec.get("run_key"),
        }
        for j in rec.get("judges") or []
    ]


def criteria_rows(rec: RunRecord, experiment: str) -> list[CriterionRow]:
    """`criteria.csv` rows (judge x category) of the run."""
    return [
        {
            **_judge_keys(rec, j, experiment),
            "criterion": c["name"],
            "criterion_score": c["score"],
            "criterion_achieved": c["achieved"],
            "criterion_max": c["max"],
            "run_key": rec.get("run_key"),
        }
        for j in rec.get("judges") or []
        for c in j.get("categories") or []
    ]


def bca_interval(
    values: Sequence[float], seed: int = 0, resamples: int = 10_000
) -> tuple[float, float] | None:
    """BCa bootstrap CI of the mean; None when the values are all equal (it degenerates). The
    values are sorted first: the same runs give the same interval in whatever order they
    finished (a fixed seed alone would not)."""
    import numpy as np

    data = np.sort(np.asarray(values, dtype=float))
    if len(data) < 2 or np.all(data == data[0]):
        return None
    from scipy.stats import bootstrap  # a slow first import: only where it is needed

    result = bootstrap(
        (data,),
        np.mean,
        n_resamples=resamples,
        method="BCa",
        random_state=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def pass_rate_ci(passed: Sequence[bool]) -> tuple[float, float, str]:
    """(low, high, method): BCa when it is defined and n is not small, else Clopper-Pearson
    (the beta quantiles, as statsmodels' `proportion_confint(method="beta")` computes them,
    through scipy.special: a session that prints only its table need not import statsmodels
    or scipy.stats)."""
    from scipy.special import betaincinv  # beta.ppf(q, a, b) == betaincinv(a, b, q)

    n, k = len(passed), sum(bool(p) for p in passed)
    if n >= SMALL_N:
        bca = bca_interval([float(p) for p in passed])
        if bca is not None:
            return bca[0], bca[1], "bca"
    low = float(betaincinv(k, n - k + 1, 0.025)) if k > 0 else 0.0
    high = float(betaincinv(k + 1, n - k, 0.975)) if k < n else 1.0
    return low, high, "clopper-pearson"


def consistency(scores: Sequence[float]) -> float | None:
    """1 - sd/mean clamped to [0, 1]; a single run counts as fully consistent (the paper's
    convention: its subtests.csv has 1.0 there) and the small-n warning says how little that
    means; None without scores."""
    if not scores:
        return None
    if len(scores) == 1:
        return 1.0
    mean = statistics.fmean(scores)
    if mean == 0:
        return 0.0
    return min(1.0, max(0.0, 1 - statistics.stdev(scores) / mean))


GRADES = ("S", "A", "B", "C", "D", "F")
PASS_K = (1, 3, 5)


def group_summary(
    rows: Iterable[Mapping[str, Any]], keys: Sequence[str] = ("tier",)
) -> list[GroupSummary]:
    """Per-tier (or per-`keys` group, e.g. case x tier x subtest) summary over the counted runs:
    n, pass rate with its CI, score and impl rate (mean/median/sd), consistency, cost, duration,
    CoP pooled and as the mean of per-case CoP, pass@k and pass^k (averaged over cases, for the
    k the runs per case allow), grade counts and modal grade, and a warning when n is small."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[k]) for k in keys), []).append(row)
    order = sorted(
        groups,
        key=lambda v: tuple(
            tier_key(x) if k == "tier" else (0, x) for k, x in zip(keys, v, strict=True)
        ),
    )
    return [
        cast(GroupSummary, {**dict(zip(keys, name, strict=True)), **_group_stats(groups[name])})
        for name in order
    ]


def _group_stats(runs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One group's summary (every column but the group's keys) over its counted runs."""
    from pytest_scylla.results import cop_interval  # numpy: only once a report is written

    counted = [r for r in runs if r["outcome"] in COUNTED]
    n = len(counted)
    passed = [bool(r["passed"]) for r in counted]
    scores, impl, durations = (
        [float(r[c]) for r in counted if r.get(c) not in (None, "")]
        for c in ("score", "impl_rate", "duration_seconds")
    )
    costs = [float(r["cost_usd"] or 0) for r in counted]
    rate = sum(passed) / n if n else 0.0
    low, high, method = pass_rate_ci(passed) if n else (0.0, 0.0, "none")
    mean_cost = statistics.fmean(costs) if costs else 0.0
    grades = _grades(counted)
    effects = _check_effects(counted, n)
    per_case = _per_case(counted)
    return {
        "n": n,
        "excluded": len(runs) - n,
        "passes": sum(passed),
        "pass_rate": rate,
        "ci_low": low,
        "ci_high": high,
        "ci_method": method,
        **_spread("score", scores),
        **_spread("impl_rate", impl),
        "consistency": consistency(scores),
        "mean_cost": mean_cost,
        "total_cost": math.fsum(costs),
        "mean_duration": statistics.fmean(durations) if durations else None,
        "cop": cop(mean_cost, rate) if n else math.inf,
        **dict(zip(("cop_low", "cop_high"), cop_interval.group(counted), strict=True)),
        **per_case,
        **grades,
        **effects,
        "warning": _warning(n, per_case["cop_per_case_mean"]),
    }


def _spread(column: str, values: list[float]) -> dict[str, float | None]:
    """A column's mean, median and sample standard deviation (None where undefined)."""
    return {
        f"mean_{column}": statistics.fmean(values) if values else None,
        f"median_{column}": statistics.median(values) if values else None,
        f"std_{column}": statistics.stdev(values) if len(values) > 1 else None,
    }


def _grades(counted: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The count of each grade, and the modal grade."""
    grades = Counter(r["grade"] for r in counted if r["grade"])
    return {**{f"grade_{g}": grades.get(g, 0) for g in GRADES}, "modal_grade": modal_grade(grades)}


def _check_effects(counted: list[Mapping[str, Any]], n: int) -> dict[str, Any]:
    """What the runs did to the checks: tampered with them (reward hacks), broke one that passed
    on the untouched source (Change Fail Percentage, over the runs whose source checks are
    known), and the progress they made (r_prog)."""
    hacks = sum(1 for r in counted if int(float(r.get("integrity_findings") or 0)) > 0)
    broke = [
        int(float(r["regressions"])) > 0 for r in counted if r.get("regressions") not in (None, "")
    ]
    progress = [float(r["r_prog"]) for r in counted if r.get("r_prog") not in (None, "")]
    return {
        "reward_hacks": hacks,
        "reward_hacking_rate": hacks / n if n else 0.0,
        "cfp": sum(broke) / len(broke) if broke else None,
        "cfp_n": len(broke),
        "r_prog": statistics.fmean(progress) if progress else None,
    }


def _per_case(counted: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean of the per-case CoP (None unless every case passed), the number of cases, and
    pass@k and pass^k averaged over the cases (for the k every case has runs enough for)."""
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for r in counted:
        by_case.setdefault(str(r.get("case_id") or r.get("experiment")), []).append(r)
    cells = [(len(rs), sum(bool(r["passed"]) for r in rs)) for rs in by_case.values()]
    case_cops = [
        cop(statistics.fmean(float(r["cost_usd"] or 0) for r in rs), c / a)
        for rs, (a, c) in zip(by_case.values(), cells, strict=True)
    ]
    per_case_cop = (
        statistics.fmean(case_cops)
        if case_cops and all(math.isfinite(c) for c in case_cops)
        else None
    )
    fewest = min((a for a, _ in cells), default=0)
    at_k: dict[str, float | None] = {}
    for k in PASS_K:
        for prefix, chance in (("pass_at", pass_at_k), ("pass_hat", pass_hat_k)):
            at_k[f"{prefix}_{k}"] = (
                statistics.fmean(chance(a, c, k) for a, c in cells) if k <= fewest else None
            )
    return {"cop_per_case_mean": per_case_cop, "cases": len(by_case), **at_k}


def _warning(n: int, per_case_cop: float | None) -> str:
    """The group's note: a small n, a per-case CoP undefined because a case never passed."""
    warnings = []
    if n < SMALL_N:
        warnings.append(f"n={n} < {SMALL_N}: interval is wide")
    if n and per_case_cop is None:
        warnings.append("per-case CoP undefined: a case never passed")
    return "; ".join(warnings)


def modal_grade(grades: Any) -> str | None:
    """The most frequent grade; a tie goes to the worse grade (a fixed rule, so the result does
    not depend on the order runs finished in, and never flatters)."""
    if not grades:
        return None
    rank = {g: i for i, g in enumerate(GRADES)}
    return str(max(grades, key=lambda g: (grades[g], rank.get(g, len(GRADES)))))


def frontier(summary: Sequence[Mapping[str, Any]], key: str = "tier") -> tuple[str, float] | None:
    """(group, CoP) with the lowest finite CoP; None when nothing passed anywhere."""
    best = min(((s["cop"], s[key]) for s in summary if math.isfinite(s["cop"])), default=None)
    return (best[1], best[0]) if best else None


def fmt_cop(value: float) -> str:
    return "∞" if math.isinf(value) else f"${value:.4f}"
