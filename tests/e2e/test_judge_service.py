"""The judge service: under xdist the controller asks every worker's Anthropic judges, so that
the SDK is imported once per session (see pytest_scylla.judging.service).

Here the sessions; the in-process tests are in `tests/unit/judging/test_judge_service.py`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ..conftest import workers

RECORDER = """
import json, os, pathlib, sys


def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        folder = pathlib.Path(os.environ["SCYLLA_TEST_IMPORTS"])
        (folder / config.workerinput["workerid"]).write_text(
            json.dumps("anthropic" in sys.modules))
"""
UNREACHABLE = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure_node(node):
    node.workerinput["scylla_judge_service"] = "/nonexistent/judges.sock#token"
"""


def _own_service_folders() -> set[Path]:
    """The judge-service folders this process (a pytester session's controller) holds: another
    test process of the suite may hold its own at the same time."""
    return {
        p
        for p in Path(tempfile.gettempdir()).glob("scylla-judge-*")
        if (p / "owner.pid").is_file() and (p / "owner.pid").read_text().strip() == str(os.getpid())
    }


def _session(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    out: str,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[dict[str, Any]], list[bool]]:
    imports = mini / f"imports-{out}"
    imports.mkdir()
    monkeypatch.setenv("SCYLLA_TEST_IMPORTS", str(imports))
    result = pytester.runpytest(
        "cases", "-k", "alpha and T0", *workers(2), *oracle, f"--scylla-out={mini / out}"
    )
    result.assert_outcomes(passed=3)
    records = [json.loads(p.read_text()) for p in sorted((mini / out).glob("runs/*/run.json"))]
    for rec in records:
        calls = (mini / out / "runs" / rec["run_key"] / "judge_calls.jsonl").read_text()
        assert len(calls.splitlines()) == 3  # logged by the worker's own gateway
    return records, [json.loads(p.read_text()) for p in sorted(imports.iterdir())]


@pytest.mark.slow  # its parts have their own tests here; every -n 2 session uses the service
def test_xdist_workers_judge_through_the_controller_and_never_import_the_sdk(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every verdict of a 2-worker session is valid, priced and logged by the run's gateway,
    while neither worker imported the SDK; the positive control hands the workers a service
    they cannot reach: they judge in their own processes (and so import it), with the same
    verdicts."""
    pytester.makeconftest(RECORDER)
    before = _own_service_folders()
    records, imported = _session(mini, pytester, oracle, "served", monkeypatch)
    assert len(records) == 3
    assert imported == [False, False]
    for rec in records:
        assert [j["valid"] for j in rec["judges"]] == [True, True, True]
        assert all(j["cost_usd"] > 0 and j["usage"]["input_tokens"] > 0 for j in rec["judges"])
        assert rec["consensus"]["passed"] is True
    assert _own_service_folders() == before  # removed
    pytester.makeconftest(RECORDER + UNREACHABLE)
    control, imported = _session(mini, pytester, oracle, "unreachable", monkeypatch)
    assert imported == [True, True]
    assert [[j["score"] for j in r["judges"]] for r in control] == [
        [j["score"] for j in r["judges"]] for r in records
    ]
