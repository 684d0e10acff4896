"""`--scylla-stop=decided` in a session: the runs in run-major order, and, before each run
starts, whether its cell is still needed (`results.decisions` holds the comparisons and reads
their decisions from the experiment folder's records). A run no longer needed is skipped with
the reason, its kind marked on its reports (`core.record.STOP_PROPERTY`); a run skipped for
any other reason (a spent budget, a pause) was never made, and no decision is taken from its
absence."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_scylla.core.runspec import RunKey
from pytest_scylla.results.decisions import Family, Stop, cell_of, stop

FAMILY_KEY = pytest.StashKey[Family]()


def run_major(items: list[pytest.Item], keys: Mapping[pytest.Item, RunKey]) -> list[pytest.Item]:
    """Run 1 of every cell, then run 2, ...: stopping then saves runs under -n too. Other
    tests go first, in their order."""
    place = {item: i for i, item in enumerate(items)}
    return sorted(items, key=lambda it: (keys[it].run if it in keys else 0, place[it]))


def skip_reason(family: Family, out: Path, key: RunKey) -> Stop | None:
    """Why the run with `key` is no longer needed, or None while its cell is."""
    cell = cell_of(key)
    found = family.decisions(out, pending=key.folder)
    if cell in family.references:
        decision = found[cell]
        if decision.closed:
            return stop(cell, family.references[cell], decision)
        return None
    compared = [c for c, ref in family.references.items() if ref == cell]
    if compared and all(found[c].closed for c in compared):
        last = max(found[c].at for c in compared)
        return Stop(
            "reference_closed",
            f"every comparison with {cell} is decided (the last after {last} runs)",
        )
    return None
