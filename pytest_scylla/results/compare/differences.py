"""`scylla compare BASE CANDIDATE`: did a change help, and at what cost? Per tier and per case ×
tier, the change in pass rate, mean score, cost per run and Cost-of-Pass, each with a bootstrap
interval of the difference and a test, Holm-corrected across its table. Paired on case ×
subtest when both sides have the same cells with as many runs each: the k-th run of a cell is
paired with the k-th on the other side (resampled together; the cells are the strata of the
pass-rate test). What else changed between the two (models, CLI versions, inputs) is listed
from the manifests."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import COUNTED
from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results import models
from pytest_scylla.results.compare import decisions as compare_decisions
from pytest_scylla.results.compare.conditions import conditions
from pytest_scylla.results.inputs import ReportInputError
from pytest_scylla.results.stats import ALPHA, RESAMPLES, cop, holm, percentile_bootstrap
from pytest_scylla.results.tables import Tables, load

METRICS = ("pass_rate", "mean_score", "cost_per_run", "cop")
LABELS = {
    "pass_rate": "pass rate",
    "mean_score": "mean score",
    "cost_per_run": "cost/run",
    "cop": "CoP",
}
Runs = Sequence[Mapping[str, Any]]  # RunRow, with PAIR_MODEL when both sides vary an axis
PAIR_MODEL = "pair_model"  # set on both sides' rows when both vary a model or agent axis
AXIS_WORDS = {"agent_model": "model", "agent": "agent CLI"}


class CompareError(ReportInputError):
    """Two experiments that cannot be compared as they are (a usage error, exit 2)."""


@dataclass(frozen=True)
class Side:
    name: str
    tables: Tables
    manifests: list[dict[str, Any]]  # those its folders have
    folders: int = 1


def _side(folders: Sequence[Path]) -> Side:
    manifests = []
    for folder in folders:
        path = folder / "manifest.json"
        if path.is_file():  # what changed is read from it when it can be: never fatal
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                found = None
            manifests.append(found if isinstance(found, dict) else {})
    name = " + ".join(str(f) for f in folders)
    return Side(name, load(list(folders)), manifests, len(folders))


def _counted(tables: Tables) -> Runs:
    return [r for r in tables.runs if r.get("outcome") in COUNTED]


def _values(runs: Runs, metric: str) -> list[float]:
    column = {"pass_rate": "passed", "mean_score": "score", "cost_per_run": "cost_usd"}[metric]
    return [
        float(bool(r[column])) if metric == "pass_rate" else float(r[column])
        for r in runs
        if r.get(column) not in (None, "")
    ]


def _estimate(runs: Runs, metric: str) -> float | None:
    if metric == "cop":
        passes, costs = _values(runs, "pass_rate"), _values(runs, "cost_per_run")
        if not passes or not costs:
            return None
        return cop(statistics.fmean(costs), statistics.fmean(passes))
    found = _values(runs, metric)
    return statistics.fmean(found) if found else None


def _delta(base: Runs, cand: Runs, metric: str) -> float:
    """The candidate's value minus the base's (NaN where undefined: no value, or a CoP of a
    side that never passed)."""
    b, c = _estimate(base, metric), _estimate(cand, metric)
    if b is None or c is None or math.isinf(b) or math.isinf(c):
        return math.nan
    return c - b


def _cells(runs: Runs) -> dict[tuple[str, str, str], list[Mapping[str, Any]]]:
    """The runs of each case × subtest cell (× model, when both sides have a model axis)."""
    cells: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in runs:
        cells.setdefault(
            (str(r.get("case_id")), str(r.get("subtest")), str(r.get(PAIR_MODEL, ""))), []
        ).append(r)
    return cells


def _units(runs: Runs) -> dict[tuple[str, str, str, int], Mapping[str, Any]]:
    """Each run keyed by its cell and its place among the cell's runs (by run number): the
    units paired across the two sides (the k-th run of a cell with the k-th on the other)."""
    units = {}
    for (case, subtest, model), cell in _cells(runs).items():
        ordered = sorted(cell, key=lambda r: int(float(r.get("run_number") or 0)))
        units.update({(case, subtest, model, k): r for k, r in enumerate(ordered)})
    return units


def _interval(
    base: Runs, cand: Runs, metric: str, paired: bool
) -> tuple[float | None, float | None]:
    """A percentile bootstrap interval (95 %) of the difference: the cells resampled when
    paired, else each side's runs independently. None when the difference is undefined in
    resamples (a CoP whose side did not pass) or there is too little to resample."""
    import numpy as np

    statistic: Callable[..., float]
    if paired:
        b_units, c_units = _units(base), _units(cand)
        keys = sorted(b_units)

        def statistic(index: Any) -> float:
            chosen = [keys[int(i)] for i in index]
            return _delta([b_units[k] for k in chosen], [c_units[k] for k in chosen], metric)

        data: tuple[Any, ...] = (np.arange(len(keys)),)
    else:
        if len(base) < 2 or len(cand) < 2:
            return None, None

        def statistic(ib: Any, ic: Any) -> float:
            return _delta([base[int(i)] for i in ib], [cand[int(i)] for i in ic], metric)

        data = (np.arange(len(base)), np.arange(len(cand)))
    if math.isnan(statistic(*data)):
        return None, None
    low, high = percentile_bootstrap(data, statistic, vectorized=False)
    return (None, None) if low is None or high is None else (low, high)


def _test(base: Runs, cand: Runs, metric: str, paired: bool) -> tuple[float | None, str]:
    """(p, the test's name): pass rate — Cochran-Mantel-Haenszel with the cells as strata when
    paired, else Fisher's exact test; score and cost — Wilcoxon signed-rank on the paired
    runs' differences when paired, else Mann-Whitney U. CoP is not tested (a ratio: its parts
    are)."""
    from scipy import stats as sps

    if metric == "cop":
        return None, "-"
    if metric == "pass_rate":
        counts = []
        c_cells = _cells(cand)
        pairs = (
            [(b, c_cells[k]) for k, b in sorted(_cells(base).items())] if paired else [(base, cand)]
        )
        for b_runs, c_runs in pairs:
            bp, cp = sum(_values(b_runs, metric)), sum(_values(c_runs, metric))
            counts.append([[cp, len(c_runs) - cp], [bp, len(b_runs) - bp]])
        informative = [t for t in counts if 0 < t[0][0] + t[1][0] < sum(map(sum, t))]
        if not informative:
            return 1.0, "no difference to test"
        if paired:
            import numpy as np
            from statsmodels.stats.contingency_tables import StratifiedTable

            table = StratifiedTable([np.array(t, dtype=float) for t in informative])
            return float(table.test_null_odds(correction=True).pvalue), "CMH"
        return float(sps.fisher_exact(counts[0]).pvalue), "Fisher"
    if paired:
        b_units, c_units = _units(base), _units(cand)
        diffs = []
        for key in sorted(b_units):
            b, c = _values([b_units[key]], metric), _values([c_units[key]], metric)
            if b and c:
                diffs.append(c[0] - b[0])
        if len(diffs) < 2:
            return None, "too few pairs"
        if not any(diffs):
            return 1.0, "no difference to test"
        return float(sps.wilcoxon(diffs, zero_method="zsplit").pvalue), "Wilcoxon"
    b, c = _values(base, metric), _values(cand, metric)
    if len(b) < 2 or len(c) < 2:
        return None, "too few runs"
    if len(set(b) | set(c)) < 2:
        return 1.0, "no difference to test"
    return float(sps.mannwhitneyu(c, b, alternative="two-sided").pvalue), "Mann-Whitney"


def _rows(base: Runs, cand: Runs, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]] = {}
    for side, runs in ((0, base), (1, cand)):
        for r in runs:
            group = tuple(str(r.get(k)) for k in keys)
            groups.setdefault(group, ([], []))[side].append(r)
    rows = []
    for group in sorted(groups, key=lambda g: (tier_key(g[-1]), g)):
        b, c = groups[group]
        paired = bool(b) and set(_units(b)) == set(_units(c)) and len(b) >= 2
        for metric in METRICS:
            low, high = _interval(b, c, metric, paired)
            p, test = _test(b, c, metric, paired)
            delta = _delta(b, c, metric)
            rows.append(
                {
                    **dict(zip(keys, group, strict=True)),
                    "metric": metric,
                    "n_base": len(b),
                    "n_candidate": len(c),
                    "paired": paired,
                    "base": _estimate(b, metric),
                    "candidate": _estimate(c, metric),
                    "delta": None if math.isnan(delta) else delta,
                    "ci_low": low,
                    "ci_high": high,
                    "test": test,
                    "p": p,
                }
            )
    _holm(rows)
    return rows


def _holm(rows: list[dict[str, Any]]) -> None:
    tested = [r for r in rows if r["p"] is not None]
    for r in rows:
        r["p_holm"], r["significant"] = None, False
    for r, (significant, p) in zip(tested, holm([r["p"] for r in tested]), strict=True):
        r["p_holm"], r["significant"] = p, significant


def _verdicts(base: Runs, cand: Runs) -> dict[str, Any]:
    """The runs both sides have (same run key: the same case, subtest and run number) — e.g.
    one experiment judged by a full panel and by an adaptive one — how often their verdicts
    agree, and what judging cost per run on each side."""

    def key(r: Mapping[str, Any]) -> tuple[str, ...]:  # not the folder-made run key
        return tuple(
            str(r.get(k)) for k in ("case_id", "tier", "subtest", "run_number", PAIR_MODEL)
        )

    b, c = {key(r): r for r in base}, {key(r): r for r in cand}
    common = sorted(set(b) & set(c))
    same = sum(bool(b[k].get("passed")) == bool(c[k].get("passed")) for k in common)

    def judging(runs: Runs) -> float | None:
        found = [
            float(r["judge_cost_usd"]) for r in runs if r.get("judge_cost_usd") not in (None, "")
        ]
        return statistics.fmean(found) if found else None

    return {
        "common_runs": len(common),
        "same_verdict": same,
        "agreement": same / len(common) if common else None,
        "judge_cost_per_run": {"base": judging(base), "candidate": judging(cand)},
    }


def compare(
    base_dirs: Sequence[Path], cand_dirs: Sequence[Path], intersect: bool = False
) -> dict[str, Any]:
    """The comparison of two experiments (each one folder, or several: shards)."""
    base, cand = _side(base_dirs), _side(cand_dirs)
    b_runs, c_runs = _counted(base.tables), _counted(cand.tables)
    if not b_runs or not c_runs:
        empty = base.name if not b_runs else cand.name
        raise CompareError(f"{empty}: no counted runs (pass or fail) to compare")
    notes = [  # forged or stray runs of shard folders (results/design.py)
        f"EXCLUDED from {side.name}: {len(side.tables.excluded)} run(s) not counted; the first: "
        f"{side.tables.excluded[0]}"
        for side in (base, cand)
        if side.tables.excluded
    ]
    for what, key in (("cases", "case_id"), ("tiers", "tier")):
        b_set = {str(r.get(key)) for r in b_runs}
        c_set = {str(r.get(key)) for r in c_runs}
        if b_set == c_set:
            continue
        only = (
            f"only in the base: {', '.join(sorted(b_set - c_set)) or '-'}; only in the "
            f"candidate: {', '.join(sorted(c_set - b_set)) or '-'}"
        )
        if not intersect:
            raise CompareError(
                f"{cand.name}: its {what} differ from {base.name}'s ({only}); "
                "pass --intersect to compare the ones both have"
            )
        common = b_set & c_set
        if not common:
            raise CompareError(f"{cand.name}: no {what} in common with {base.name}")
        b_runs = [r for r in b_runs if str(r.get(key)) in common]
        c_runs = [r for r in c_runs if str(r.get(key)) in common]
        notes.append(f"{what} compared: those both have ({only})")
    # an axis both sides vary (models, agent CLIs): each value against itself (paired within)
    axis = tuple(k for k in models.axes(b_runs) if k in models.axes(c_runs))
    if axis:
        b_runs, c_runs = (
            [{**r, PAIR_MODEL: "/".join(str(r.get(k)) for k in axis)} for r in runs]
            for runs in (b_runs, c_runs)
        )
        notes.append(
            f"both sides vary the {' and the '.join(AXIS_WORDS[k] for k in axis)}: "
            "each is compared with itself"
        )
    cases = _rows(b_runs, c_runs, (*axis, "case_id", "tier"))
    decided = _decided(base, cand, cases, notes)
    return {
        "base": base.name,
        "candidate": cand.name,
        "notes": notes,
        "conditions": conditions(base.manifests, cand.manifests),
        "verdicts": _verdicts(b_runs, c_runs),
        "tiers": _rows(b_runs, c_runs, (*axis, "tier")),
        "cases": cases,
        "decisions": decided,
        "alpha": ALPHA,
        "resamples": RESAMPLES,
    }


def _decided(
    base: Side, cand: Side, cases: list[dict[str, Any]], notes: list[str]
) -> dict[str, list[dict[str, Any]]]:
    sides = {
        side: compare_decisions.of_side(
            one.name, one.manifests, one.folders, one.tables.runs, notes
        )
        for side, one in (("base", base), ("candidate", cand))
    }
    return compare_decisions.both(sides, cases, notes)


def regressions(result: dict[str, Any], points: float) -> list[dict[str, Any]]:
    """Significant pass-rate drops of more than `points` percentage points."""
    return [
        r
        for table in ("tiers", "cases")
        for r in result[table]
        if r["metric"] == "pass_rate"
        and r["significant"]
        and r["delta"] is not None
        and -100 * r["delta"] > points
    ]
