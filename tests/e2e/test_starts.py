"""The machine's start slots in a session (`--scylla-starts`): with one slot and two workers,
the second CLI starts only once the first has made its first model call, and the two agents
then work at once (the slot came back at that call, not at the CLI's end).

Here the session; the in-process tests (limits across processes, the hold limit, a killed
holder, no inheritance) are in `tests/unit/operations/test_starts.py`."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from pytest_scylla.run.gateway import latency


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def test_one_slot_serializes_the_starts_and_not_the_agents(
    mini: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(latency.ENV, "2")  # every model call takes two seconds
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-n",
        "2",
        "-k",
        "alpha and (T0-00 or T0-01)",
        "--scylla-oracle",
        "--scylla-starts=1",
        f"--scylla-cache-dir={mini / 'cache'}",  # its own slots: no other session's starts
        f"--scylla-out={out}",
    )
    result.assert_outcomes(passed=2)
    phases = []  # (the CLI's start, its first model call, its end) of each run
    for folder in sorted((out / "runs").iterdir()):
        rec = json.loads((folder / "run.json").read_text())
        t = rec["timings"]
        assert t["start_wait_s"] >= 0
        cli = _at(rec["started_at"]) + t["setup_s"] + t["start_wait_s"]
        calls = [json.loads(x) for x in (folder / "model_calls.jsonl").read_text().splitlines()]
        phases.append((cli, _at(calls[0]["ts"]), cli + t["agent_s"]))
    first, second = sorted(phases)
    assert second[0] >= first[1] - 0.05  # the second started after the first one's first call
    assert second[0] < first[2]  # and before the first agent ended: they worked at once
