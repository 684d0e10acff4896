"""Shards: `--scylla-shard=I/N` keeps the runs whose key falls to share I of N. The share is a
hash of the run key alone, so the N shards partition any selection exactly, whatever the order
of collection, the machine or the worker count; other tests are left alone. `scylla report`
merges the shards' folders, names the ones missing (`missing`), and counts only the runs of
each folder's own share (`results/design.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_scylla.core.runspec import share as share  # the one owner of a run key's facts


def missing(manifests: Iterable[dict[str, Any]]) -> tuple[int, list[int]] | None:
    """(N, the shards of N not among these folders' manifests), or None when none is a shard.
    Shards of different counts cannot be merged into one session: ValueError."""
    seen = [m["shard"] for m in manifests if isinstance(m.get("shard"), dict)]
    if not seen:
        return None
    counts = {int(s["count"]) for s in seen}
    if len(counts) > 1:
        raise ValueError(
            f"the folders are shards of different splits ({sorted(counts)}); merge "
            "the shards of one split"
        )
    count = counts.pop()
    return count, sorted(set(range(1, count + 1)) - {int(s["index"]) for s in seen})
