"""`--scylla-stop=decided` end to end: real CLI, real workers, the oracle's effects mode making
the cells that carry the mini project's rules block pass and the others fail. Fewer runs than
the fixed design, every skipped run saying why, and the same decisions at -n 2 and -n 1, and
after a session killed halfway is resumed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

from ..conftest import export_rows

RUNS = 12
SELECT = "alpha and (T0 or T5)"  # T0-00 (the reference), T0-01, T0-02, T5-01, T5-02
EXPECTED = {  # cell: decision (the rules block reaches the model in T0-02, T5-01 and T5-02)
    "alpha-T0-01": "futile",
    "alpha-T0-02": "better",
    "alpha-T5-01": "better",
    "alpha-T5-02": "better",
}


def _command(out: Path, cache: str, workers: int, *more: str) -> list[str]:
    parallel = ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
    return [
        sys.executable,
        "-m",
        "pytest",
        "cases",
        "-k",
        SELECT,
        *parallel,
        "--scylla-oracle",
        cache,
        f"--scylla-runs={RUNS}",
        "--scylla-stop=decided",
        f"--scylla-out={out}",
        "--scylla-progress=0",
        "-rs",
        "-p",
        "no:randomly",
        *more,
    ]


def _env(mini: Path) -> dict[str, str]:
    effects = mini / "effects.json"
    effects.write_text(json.dumps({"base": 0.0, "effects": {"Keep changes small.": 1.0}}))
    env = {**os.environ, "SCYLLA_ORACLE_EFFECTS": str(effects)}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def _decisions(out: Path) -> dict[str, tuple[str, str]]:
    return {r["cell"]: (r["decision"], r["decided_at"]) for r in export_rows(out / "decisions.csv")}


@pytest.mark.slow  # three sessions of about 45 oracle runs each (about 2 minutes)
def test_decided_cells_stop_the_same_way_at_any_worker_count_and_after_a_resume(
    mini: Path, oracle: list[str]
) -> None:
    env, cache = _env(mini), oracle[1]
    first = subprocess.run(
        _command(mini / "n2", cache, 2, "--scylla-report=terminal,md,html"),
        cwd=mini,
        env=env,
        capture_output=True,
        text=True,
    )
    decided = _decisions(mini / "n2")
    assert {cell: d for cell, (d, _) in decided.items()} == EXPECTED, first.stdout[-3000:]
    made = len(list((mini / "n2" / "runs").glob("*/run.json")))
    assert made < 5 * RUNS  # the fixed design's runs
    skipped = [line for line in first.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped
    assert all(
        ("decided after" in s or "undecided after" in s or "every comparison" in s) for s in skipped
    )
    assert "better than alpha-T0-00 on pass rate" in first.stdout
    assert "PARTIAL" not in first.stdout  # stopping by design leaves no gap to resume
    assert "| alpha-T0-02 | alpha-T0-00 | better |" in (mini / "n2" / "tables.md").read_text()
    assert '<section id="decisions">' in (mini / "n2" / "report.html").read_text()
    said = {
        (r["tier"], r["subtest"]): r["decision"] for r in export_rows(mini / "n2" / "subtests.csv")
    }
    assert said[("T0", "00")] == "reference"
    assert said[("T0", "01")].startswith("futile at run ")
    # the terminal's tier table says each tier's decisions
    assert re.search(r"^T0 .*decided: reference; 1 better, 1 futile", first.stdout, re.M)
    assert re.search(r"^T5 .*decided: 2 better", first.stdout, re.M)
    _merged_shards_decide_the_same(mini, decided)

    subprocess.run(_command(mini / "n1", cache, 1), cwd=mini, env=env, capture_output=True)
    assert _decisions(mini / "n1") == decided
    # scylla compare carries both sides' decisions per case x tier
    assert main(["compare", str(mini / "n2"), str(mini / "n1"), "--out", str(mini / "cmp")]) == 0
    compared = (mini / "cmp" / "compare.md").read_text()
    at = decided["alpha-T5-01"][1]
    assert f"alpha T5: T5-01 better at run {at} → better at run {at}" in compared

    # killed once a few runs are stored, then the same command again resumes it
    killed = subprocess.Popen(
        _command(mini / "resumed", cache, 2),
        cwd=mini,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    while len(list((mini / "resumed").glob("runs/*/run.json"))) < 8:
        assert time.monotonic() < deadline
        assert killed.poll() is None
        time.sleep(0.2)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    subprocess.run(_command(mini / "resumed", cache, 2), cwd=mini, env=env, capture_output=True)
    assert _decisions(mini / "resumed") == decided


def _merged_shards_decide_the_same(mini: Path, decided: dict[str, tuple[str, str]]) -> None:
    """The session's runs split in two folders (odd and even runs, as two shards would hold
    them), merged by `scylla report`: the decisions, recomputed from all the runs, are the
    session's."""
    halves = []
    for parity in (0, 1):
        half = mini / f"half-{parity}"
        shutil.copytree(mini / "n2", half)
        (half / "runs.jsonl").unlink()  # the session's log of every run: read the folders
        for run in (half / "runs").iterdir():
            if int(run.name.rsplit("-r", 1)[1]) % 2 != parity:
                shutil.rmtree(run)
        halves.append(str(half))
    assert main(["report", *halves, "--out", str(mini / "merged"), "--report", "md"]) == 0
    assert _decisions(mini / "merged") == decided
    stop = json.loads((mini / "merged" / "manifest.json").read_text())["stop"]
    assert stop["merged"] == 2
