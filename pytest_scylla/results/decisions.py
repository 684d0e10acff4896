"""The comparisons of `--scylla-stop=decided` among a selection's runs, and their decisions
read from the run records in an experiment folder (`results.sequential` decides).

A cell is a case under a tier subtest (and a model, on a model axis); each case's cells are
compared with its reference cell (`--scylla-reference`, else the first subtest of the lowest
tier selected). The records in the experiment folder are the one place every worker, a
resumed session and a re-run share: the same stored outcomes give the same decisions, at -n 1
or -n 8, before or after a resume. No decision rests on a run not made, nor on one that ended
in infra_error or judge_error (a resume makes those again): the decisions wait at that run.

Shards decide within their share: a shard's comparisons pair the runs it selects (a run
another shard makes pairs with nothing there), so each shard's decisions hold at alpha on its
own, and the merged report recomputes them from all the runs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from pytest_scylla.core.outcomes import COUNTED, Outcome, StopKind
from pytest_scylla.core.record import RECORD_FILE
from pytest_scylla.core.runspec import RunKey
from pytest_scylla.core.tiers import subtest_key
from pytest_scylla.results.rows import RunRow

if TYPE_CHECKING:  # the decisions' numpy is loaded when a comparison is decided, not with
    # every session (the plugin imports this module; most sessions stop nothing)
    from pytest_scylla.results.sequential import Decision, DecisionStatus


class StopSettings(Protocol):
    """What the decisions read of a session's settings (`config.settings.Settings`)."""

    @property
    def reference(self) -> str | None: ...
    @property
    def runs(self) -> int: ...
    @property
    def alpha(self) -> float: ...
    @property
    def margin(self) -> float: ...


class DecisionRow(TypedDict):
    """A compared cell's decision (`decisions.csv`, the manifest's `stop.decisions`)."""

    cell: str
    reference: str
    decision: DecisionStatus
    decided_at: int | None  # the pairs it was taken at (None: open)
    low: float  # the interval of the difference of pass rates then
    high: float
    runs: int  # made
    runs_saved: int  # against the fixed design
    cost_saved_usd: float | None  # at the cell's mean cost per run (None: no run made)


@dataclass(frozen=True)
class Stop:
    """Why a run is no longer needed: its kind (the typed marker the aggregator counts by,
    `core.record.STOP_PROPERTY`) and the skip reason shown to the user."""

    kind: StopKind
    reason: str


@dataclass(frozen=True)
class Family:
    """The session's comparisons: each cell's selected run numbers and folders, the reference
    of each compared cell, and the most runs a cell may have."""

    runs: Mapping[str, Mapping[int, str]]  # cell -> run number -> run folder
    references: Mapping[str, str]  # compared cell -> its reference cell
    limit: int
    alpha: float
    margin: float

    def decisions(self, out: Path, pending: str = "") -> dict[str, Decision]:
        """Every comparison's decision from the records in `out` (`pending`: the folder of a
        run about to start, never taken as made)."""
        outcomes: dict[str, dict[int, bool | None]] = {}
        for cell, runs in self.runs.items():
            known = outcomes.setdefault(cell, {})
            for number in range(1, self.limit + 1):
                folder = runs.get(number)
                if folder is None:  # not selected here (another shard's, or deselected)
                    known[number] = None  # pairs with nothing
                elif folder != pending and (made := _outcome(out / "runs" / folder)):
                    known[number] = made[0]
        from pytest_scylla.results.sequential import decide_all

        return decide_all(outcomes, self.references, self.limit, self.alpha, self.margin)


def _outcome(run_dir: Path) -> tuple[bool] | None:
    """(passed,) for a counted run; None for one not made yet, being judged (its record says
    judge_error until the panel answers) or not counted (infra_error, judge_error: a resume
    makes it again), so a decision never rests on an outcome that may still come."""
    if run_dir in _COUNTED:
        return (_COUNTED[run_dir],)
    try:
        record = json.loads((run_dir / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # not made yet (or its record is being written)
    outcome = record.get("outcome") if isinstance(record, dict) else None
    if outcome not in COUNTED:
        return None
    _COUNTED[run_dir] = outcome == Outcome.PASS  # final: a resume reuses a counted run as it is
    return (outcome == Outcome.PASS,)


# counted outcomes read by this process: each run item asks before it starts, and reading every
# record of the experiment each time would grow with the square of the runs
_COUNTED: dict[Path, bool] = {}


def cell_of(key: RunKey) -> str:
    """`test-001-T5-02` (and `-<model>` on a model axis): a run's cell."""
    return f"{key.case}-{key.subtest}" + (f"-{key.model}" if key.model else "")


def plan(
    keys: Iterable[RunKey],
    reference: str | None,
    limit: int,
    alpha: float,
    margin: float,
) -> Family:
    """The family of comparisons among the selected runs; a reference missing from a case's
    selection is a ValueError saying which to select."""
    runs: dict[str, dict[int, str]] = {}
    groups: dict[tuple[str, str], dict[str, str]] = {}  # (case, model) -> subtest -> cell
    for key in keys:
        cell = cell_of(key)
        runs.setdefault(cell, {})[key.run] = key.folder
        groups.setdefault((key.case, key.model), {})[key.subtest] = cell
    references: dict[str, str] = {}
    for (case, model), cells in sorted(groups.items()):
        ref = reference or min(cells, key=subtest_key)
        if ref not in cells:
            chosen = ", ".join(sorted(cells, key=subtest_key))
            raise ValueError(
                f"--scylla-reference={ref}: case {case}{f' ({model})' if model else ''} runs "
                f"no {ref} in this selection ({chosen}); select it or name one of these"
            )
        references |= {cell: cells[ref] for sub, cell in cells.items() if sub != ref}
    return Family(runs, references, limit, alpha, margin)


def stop(cell: str, ref: str, d: Decision) -> Stop:
    """The skip of a run of `cell`, whose comparison with `ref` closed with `d`."""
    return Stop("futile" if d.status == "futile" else "decided", said(cell, ref, d))


def said(cell: str, ref: str, d: Decision) -> str:
    interval = f"difference of pass rates in [{d.low:+.2f}, {d.high:+.2f}]"
    if d.status == "futile":
        return (
            f"undecided after {runs_text(d.at)} and no decision reachable within the maximum: "
            f"{cell} against {ref}, {interval}"
        )
    return (
        f"decided after {runs_text(d.at)}: {cell} {WORDS[d.status]} {ref} on pass rate ({interval})"
    )


def runs_text(n: int) -> str:
    """`1 run`, `3 runs`."""
    return f"{n} run" if n == 1 else f"{n} runs"


WORDS: dict[DecisionStatus, str] = {
    "better": "better than",
    "worse": "worse than",
    "equivalent": "equivalent to",
}


def table(family: Family, out: Path) -> list[DecisionRow]:
    """One row per compared cell: its runs made, the decision and the run it came at, the
    interval then, and the runs (and their estimated cost, at the cell's mean cost per run)
    saved against the fixed design of `family.limit` runs."""
    costs = {
        cell: [c for folder in runs.values() if (c := _cost(out / "runs" / folder)) is not None]
        for cell, runs in family.runs.items()
    }
    return _rows(family.decisions(out), family.references, costs, family.limit)


def _rows(
    found: Mapping[str, Decision],
    references: Mapping[str, str],
    costs: Mapping[str, Sequence[float]],
    limit: int,
) -> list[DecisionRow]:
    rows: list[DecisionRow] = []
    for cell, ref in references.items():
        d, made = found[cell], costs.get(cell, ())
        saved = max(0, limit - len(made))
        rows.append(
            {
                "cell": cell,
                "reference": ref,
                "decision": d.status,
                "decided_at": d.at if d.closed else None,
                "low": round(d.low, 4),
                "high": round(d.high, 4),
                "runs": len(made),
                "runs_saved": saved,
                "cost_saved_usd": round(saved * sum(made) / len(made), 6) if made else None,
            }
        )
    return rows


def recomputed(runs: Sequence[RunRow], stop: Mapping[str, Any]) -> list[DecisionRow]:
    """The decisions of merged experiment folders (shards of one session's selection, run with
    the same `stop` settings), from all their runs (`runs.csv` rows) together. Every run is
    final here: a run not counted, or not made while a later run of its cell was (its shard
    had decided, or a budget stopped it), pairs with nothing; whether it was made rests only on
    runs before it, so leaving it out keeps the e-processes valid. The runs after a cell's
    last are not made yet, as in the session: the rule never looks ahead to where a sequence
    ends. A ValueError when the runs lack the reference."""
    keys: list[RunKey] = []
    passed: dict[RunKey, bool] = {}
    costs: dict[str, list[float]] = {}
    axis = len({str(r.get("agent_model") or "") for r in runs}) > 1  # a model axis
    for r in runs:
        key = RunKey(
            str(r.get("case_id")),
            str(r.get("tier")),
            str(r.get("subtest")),
            int(float(r.get("run_number") or 0)),
            str(r.get("agent_model") or "") if axis else "",
        )
        keys.append(key)
        if r.get("outcome") in COUNTED:
            passed[key] = bool(r.get("passed")) and str(r.get("passed")) != "False"
        costs.setdefault(cell_of(key), []).append(float(r.get("cost_usd") or 0))
    limit = int(stop.get("max_runs") or max((k.run for k in keys), default=0))
    family = plan(keys, stop.get("reference"), limit, float(stop["alpha"]), float(stop["margin"]))
    outcomes: dict[str, dict[int, bool | None]] = {
        cell: dict.fromkeys(range(1, max(made) + 1)) for cell, made in family.runs.items()
    }
    for key, value in passed.items():
        outcomes[cell_of(key)][key.run] = value
    from pytest_scylla.results.sequential import decide_all

    found = decide_all(outcomes, family.references, limit, family.alpha, family.margin)
    return _rows(found, family.references, costs, limit)


SETTINGS = ("alpha", "margin", "reference", "max_runs")


def stored(stop: Any) -> list[DecisionRow]:
    """The decisions of a manifest's `stop` (none when it has no `stop`)."""
    return cast(
        list[DecisionRow], list(stop.get("decisions") or []) if isinstance(stop, dict) else []
    )


def merged_stop(stops: Sequence[Any], runs: Sequence[RunRow]) -> tuple[dict[str, Any] | None, str]:
    """The manifest `stop` of merged folders (`stops`: each folder's, None where it has none),
    its decisions recomputed from all the runs; else None and why not ("" when no folder
    stopped by decision)."""
    given = [s for s in stops if isinstance(s, dict)]
    if not given:
        return None, ""
    settings = {tuple(str(s.get(k)) for k in SETTINGS) for s in given}
    if len(given) < len(stops) or len(settings) > 1:
        return None, (
            "the merged folders did not all stop by decision with the same settings "
            "(--scylla-stop, alpha, margin, reference, runs): no decisions are recomputed"
        )
    stop = {k: given[0].get(k) for k in SETTINGS}
    try:
        return {**stop, "decisions": recomputed(runs, stop), "merged": len(stops)}, ""
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"the merged decisions cannot be recomputed: {exc}"


def _cost(run_dir: Path) -> float | None:
    """A made run's cost (0 when unknown); None for a run not made."""
    try:
        record = json.loads((run_dir / RECORD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cost = record.get("cost_usd") if isinstance(record, dict) else None
    return float(cost) if isinstance(cost, int | float) else 0.0


def session_decisions(
    settings: StopSettings, keys: Iterable[RunKey], out: Path
) -> list[DecisionRow]:
    """The decisions of a session's runs (every run item it reported), for its reports; none
    when its selection has no comparison to make."""
    try:
        family = plan(keys, settings.reference, settings.runs, settings.alpha, settings.margin)
    except ValueError:
        return []
    return table(family, out)


def manifest_entry(settings: StopSettings, rows: Sequence[DecisionRow]) -> dict[str, Any]:
    """The manifest's `stop`: the rule's settings and the session's decisions."""
    return {
        "alpha": settings.alpha,
        "margin": settings.margin,
        "reference": settings.reference,
        "max_runs": settings.runs,
        "decisions": list(rows),
    }


def replay(
    rows: Sequence[Mapping[str, Any]],
    by: str = "subtest",
    alpha: float = 0.05,
    margin: float = 0.10,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """A stored experiment (its `runs.csv` rows) replayed as a sequence of its own runs, run 1
    of every cell first: each comparison's decision and the run it came at, and what the rule
    would have spent against what the experiment spent. `by`: `subtest` (each tier subtest a
    cell, against the case's first subtest of its lowest tier) or `tier` (a tier's runs pooled,
    in run-major order, against the case's lowest tier)."""
    runs: dict[tuple[str, int, str], list[tuple[bool, float]]] = {}
    for row in sorted(rows, key=lambda r: (int(r["run_number"]), str(r["subtest"]))):
        case = str(row.get("case_id") or row.get("experiment"))
        tier, subtest = (
            int(str(row["tier"]).lstrip("T")),
            "" if by == "tier" else str(row["subtest"]),
        )
        passed = str(row["passed"]).strip().lower() in ("true", "1", "1.0")
        runs.setdefault((case, tier, subtest), []).append((passed, float(row.get("cost_usd") or 0)))
    name = {k: f"{k[0]}-T{k[1]}" + (f"-{k[2]}" if k[2] else "") for k in runs}
    first: dict[str, tuple[str, int, str]] = {}
    for key in sorted(runs):
        first.setdefault(key[0], key)
    refs = {name[k]: name[first[k[0]]] for k in runs if k != first[k[0]]}
    series = {name[k]: rs for k, rs in runs.items()}
    limit = max(len(rs) for rs in series.values())
    outcomes: dict[str, dict[int, bool | None]] = {  # a cell's runs end where its series does
        c: {n: (rs[n - 1][0] if n <= len(rs) else None) for n in range(1, limit + 1)}
        for c, rs in series.items()
    }
    from pytest_scylla.results.sequential import decide_all

    found = decide_all(outcomes, refs, limit, alpha, margin)
    used = {c: (found[c].at if found[c].closed else len(series[c])) for c in refs}
    for ref in set(refs.values()):
        longest = max(
            found[c].at if found[c].closed else limit for c, r in refs.items() if r == ref
        )
        used[ref] = min(len(series[ref]), longest)
    table = [
        {
            "cell": c,
            "reference": r,
            "decision": found[c].status,
            "decided_at": found[c].at if found[c].closed else None,
            "runs": len(series[c]),
            "runs_used": used[c],
        }
        for c, r in refs.items()
    ]
    counts = {
        "runs": sum(len(rs) for rs in series.values()),
        "runs_used": sum(used.get(c, len(rs)) for c, rs in series.items()),
        "cost_usd": round(sum(cost for rs in series.values() for _, cost in rs), 4),
        "cost_used_usd": round(
            sum(cost for c, rs in series.items() for _, cost in rs[: used.get(c, len(rs))]), 4
        ),
    }
    return table, counts
