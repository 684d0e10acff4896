"""`scylla compare` and the decisions of `--scylla-stop=decided`: each side's (its session's, or
recomputed from the runs of its shards), shown per case × tier, base → candidate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from pytest_scylla.results.decision_tables import tier_of
from pytest_scylla.results.decisions import DecisionRow, merged_stop, stored
from pytest_scylla.results.rows import RunRow


def of_side(
    name: str,
    manifests: Sequence[Mapping[str, Any]],
    folders: int,
    runs: Sequence[RunRow],
    notes: list[str],
) -> list[dict[str, Any]]:
    """A side's decisions (`manifests`: those of its `folders` that have one)."""
    stops = [m.get("stop") for m in manifests]
    stops += [None] * (folders - len(stops))  # a folder without a manifest did not stop
    if len(stops) == 1:
        return _rows(stored(stops[0]))
    stop, why = merged_stop(stops, runs)
    if why:
        notes.append(f"{name}: {why}")
    return _rows(stored(stop))


def _rows(decided: list[DecisionRow]) -> list[dict[str, Any]]:
    """The decision rows as the comparison's tables hold them (rows of any columns)."""
    return cast(list[dict[str, Any]], decided)


def both(
    decided: dict[str, list[dict[str, Any]]], cases: list[dict[str, Any]], notes: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """`decided` (base, candidate) shown on the case × tier rows, with a note on what the
    decisions mean for the tests beside them."""
    if decided["base"] or decided["candidate"]:
        with_decisions(cases, decided)
        notes.append(
            "runs stopped by decision (--scylla-stop=decided) on the "
            + " and the ".join(side for side, rows in decided.items() if rows)
            + ": its cells' n follow their decisions (column decision); the intervals and "
            "tests here take each n as fixed, the decisions are anytime-valid"
        )
    return decided


def with_decisions(
    rows: list[dict[str, Any]], decided: Mapping[str, Sequence[Mapping[str, Any]]]
) -> None:
    """Each case × tier row's `decision`: its cells' decisions on each side, `T5-02 better at
    run 9 → futile at run 4` (`-` where a side has none)."""
    said: dict[tuple[str, str], dict[str, list[str]]] = {}
    for side, made in decided.items():
        for d in made:
            cell = str(d["cell"])
            tier = tier_of(cell)
            case, _, rest = cell.partition(f"-{tier}-")
            at = f" at run {d['decided_at']}" if d.get("decided_at") else ""
            entry = said.setdefault((case, tier), {}).setdefault(f"{tier}-{rest}", ["-", "-"])
            entry[side == "candidate"] = f"{d['decision']}{at}"
    for row in rows:
        found = said.get((str(row.get("case_id")), str(row.get("tier"))), {})
        row["decision"] = "; ".join(f"{c} {b} → {a}" for c, (b, a) in sorted(found.items()))
