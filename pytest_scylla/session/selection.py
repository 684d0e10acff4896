"""The runs a session keeps after collection, and their order: `--scylla-shard=I/N` keeps
the runs whose key falls to this share (other tests stay); `--scylla-stop=decided` plans the
comparisons among the runs kept and orders them run-major."""

from __future__ import annotations

import pytest

from pytest_scylla.config import settings
from pytest_scylla.session import collect


def shard_and_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    s = config.stash[settings.SETTINGS_KEY]
    keys = {it: spec.key for it in items if (spec := it.stash.get(collect.RUN_KEY, None))}
    if s.shard is not None:
        from pytest_scylla.operations.shard import share

        drop = {it for it, key in keys.items() if share(key.folder, s.shard[1]) != s.shard[0]}
        if drop:
            config.hook.pytest_deselected(items=[it for it in items if it in drop])
            items[:] = [it for it in items if it not in drop]
            keys = {it: key for it, key in keys.items() if it not in drop}
    if s.stop == "decided":
        from pytest_scylla.operations import stopping
        from pytest_scylla.results.decisions import plan

        try:
            family = plan(keys.values(), s.reference, s.runs, s.alpha, s.margin)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[stopping.FAMILY_KEY] = family
        items[:] = stopping.run_major(items, keys)
