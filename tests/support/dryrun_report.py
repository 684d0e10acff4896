"""The paper's dry run (`tests/fixtures/dryrun`) through `scylla report` with its default
reports (markdown, and HTML with its figures): made once per test run (under xdist in the folder
the workers' temp folders share) for the tests that only read it, since drawing the figures is
most of a report's time."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

DRYRUN = Path(__file__).parents[1] / "fixtures" / "dryrun"


def dryrun_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """`scylla report <dryrun> --out <folder>`: its exit code, what it printed, the folder."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "dryrun-report"
    shared.mkdir(exist_ok=True)
    said = shared / "said.json"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not said.is_file():
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = main(["report", str(DRYRUN), "--out", str(shared / "out")])
            said.write_text(json.dumps([code, printed.getvalue()]))
    code, text = json.loads(said.read_text())
    return code, text, shared / "out"
