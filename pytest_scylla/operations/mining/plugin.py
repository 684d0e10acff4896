"""A pytest plugin that `scylla cases mine` copies into the sandbox beside a verification run:
each test's outcome as a JSON line in `outcomes.jsonl` next to this file, read back on the host
by `mine_outcomes` (never from pytest's printed text). It imports nothing of pytest-scylla:
the sandbox may not see the package.

One line per report that matters: every failure (setup, call, teardown, a subtest's, a
collection error), every test's call that passed or was skipped (a passing subtest's is left
out: more-itertools' tests pass 20,000), then the session's exit status."""

from __future__ import annotations

import json
import os
from typing import IO, Any

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "outcomes.jsonl")
_handle: list[IO[str]] = []


def _write(record: dict[str, Any]) -> None:
    if not _handle:
        _handle.append(open(OUT, "a", encoding="utf-8"))  # noqa: SIM115 (open for the session)
    _handle[0].write(json.dumps(record) + "\n")
    _handle[0].flush()


def pytest_runtest_logreport(report: Any) -> None:
    sub = type(report).__name__ != "TestReport"  # pytest 9's SubtestReport, pytest-subtests'
    if report.passed and (report.when != "call" or sub):  # a passing subtest tells nothing
        return
    outcome = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = {"skipped": "xfailed", "passed": "xpassed"}.get(outcome, outcome)
    _write({"node": report.nodeid, "when": report.when, "outcome": outcome, "sub": sub})


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write({"node": report.nodeid, "when": "collect", "outcome": "failed", "sub": False})


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    _write({"exit": int(exitstatus)})
