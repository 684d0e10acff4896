"""Interruptions, the way they happen: a session SIGKILLed at random moments and resumed ends
with the same exports as one that ran straight through; Ctrl-C (SIGINT to the whole foreground
process group, as a terminal sends it) ends with a partial report, a clean exit and nothing
left running or lying around. Real CLI, real xdist workers, oracle upstream."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.operations.runner import NOT_JUDGED

from ..conftest import MINI_ITEMS, default_sigint, export_rows, workers

RUNS = 4  # runs per cell: the mini project's 12 items x 4 = 48 runs
ITEMS = len(MINI_ITEMS)


def _session(
    mini: Path, out: Path, oracle: list[str], tmp: Path, n: int = 2, runs: int = RUNS
) -> subprocess.Popen[bytes]:
    """`pytest cases/ --scylla-oracle=mixed -n 2 --scylla-runs=4` as a user starts it, in its
    own process group (so the test can find every process it left behind)."""
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            *workers(n),
            oracle[1],
            "--scylla-oracle=mixed",
            f"--scylla-runs={runs}",
            f"--scylla-out={out}",
            "-p",
            "no:randomly",
            "--scylla-progress=0",
            "--scylla-report=md,json,csv",
        ],
        cwd=mini,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def _alive_or_fail(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        said = proc.communicate()[0].decode(errors="replace")[-6000:]
        pytest.fail(f"the session ended ({proc.returncode}) before it was killed:\n{said}")


def _alive(group: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _wait_gone(group: int, seconds: float = 60) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _alive(group)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _records(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in out.glob("runs/*/run.json"):
        found[path.parent.name] = json.loads(path.read_text())
    return found


def _differences(out: Path, reference: Path) -> dict[str, Any]:
    """For exports that differ: what each side's judges were shown and what their calls
    measured, for every run whose judge cost differs (the evidence a failure needs)."""
    found: dict[str, Any] = {}
    mine, theirs = _records(out), _records(reference)
    for key, rec in mine.items():
        other = theirs.get(key) or {}
        if rec.get("judge_cost_usd") == other.get("judge_cost_usd"):
            continue
        found[key] = {}
        for side, folder, r in (("resumed", out, rec), ("straight", reference, other)):
            calls = folder / "runs" / key / "judge_calls.jsonl"
            found[key][side] = {
                "reason": r.get("reason"),
                "checks": r.get("checks"),
                "final_message": r.get("final_message"),
                "files": (folder / "runs" / key / "files.txt").read_text(errors="replace")
                if (folder / "runs" / key / "files.txt").is_file()
                else None,
                "calls": [
                    {
                        k: c.get(k)
                        for k in ("run", "request_bytes", "usage", "cost_usd", "status", "attempts")
                    }
                    for c in map(json.loads, calls.read_text().splitlines())
                ]
                if calls.is_file()
                else None,
            }
    return found


@pytest.mark.slow
@pytest.mark.each_sandbox
def test_sigkill_at_random_moments_then_resume_gives_the_uninterrupted_exports(
    mini: Path, oracle: list[str], tmp_path: Path, sandbox_kind: str
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="scy-"))  # short: the gateway's unix socket lives here
    # 48 runs and ten kills under the default sandbox; 24 and four under docker (what is
    # docker's own, the containers a kill leaves, shows in the first)
    runs, kills = (2, 4) if sandbox_kind == "docker" else (RUNS, 10)
    reference = mini / "straight" / "exp"
    proc = _session(mini, reference, oracle, tmp, runs=runs)
    output = proc.communicate(timeout=600)[0].decode()
    assert proc.returncode == 1, output  # mixed: some runs fail
    assert re.search(r"\b\d+ failed, \d+ passed in", output), output

    out = mini / "killed" / "exp"
    rng = random.Random(os.environ.get("SCYLLA_KILL_SEED", "6"))
    seen: dict[str, dict[str, Any]] = {}  # every finished run seen after a kill: must stay
    agents: dict[str, str] = {}  # runs seen between agent and judges: when their agent began
    groups = []
    for i in range(kills):
        target = len(_records(out)) + rng.randint(1, 2)
        proc = _session(mini, out, oracle, tmp, runs=runs)
        groups.append(proc.pid)
        deadline = time.monotonic() + 300
        while len(_records(out)) < target and time.monotonic() < deadline:
            _alive_or_fail(proc)
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 1.5))  # somewhere in the next runs: agent, checks, judges
        _alive_or_fail(proc)
        if i % 2:  # SIGKILL to the whole session at once (a crash, the OOM killer)
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # SIGKILL to pytest only: its workers finish their run in flight, then exit
            proc.kill()
        proc.wait()
        for key, rec in _records(out).items():
            if rec["reason"] == NOT_JUDGED:  # the agent's part, kept: resume only judges it
                agents.setdefault(key, rec["started_at"])
            elif rec["outcome"] != "infra_error":
                assert seen.setdefault(key, rec) == rec, f"{key} was run or judged again"
            if key in agents and rec["outcome"] != "infra_error":
                assert rec["started_at"] == agents[key], f"{key}: its agent was run again"
    assert len(seen) < ITEMS * runs  # the experiment was not complete before the resume
    for group in groups:  # stale workers finish their run in flight, then exit by themselves
        assert _wait_gone(group) == [], group

    proc = _session(mini, out, oracle, tmp, runs=runs)
    output = proc.communicate(timeout=600)[0].decode()
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert _wait_gone(proc.pid) == []  # no worker, CLI or sandbox is left running
    records = _records(out)
    assert len(records) == ITEMS * runs
    for key, rec in seen.items():
        assert records[key] == rec, f"{key} was run or judged again"
    for key, rec in records.items():
        assert rec["outcome"] in ("pass", "fail"), (key, rec["outcome"], rec["reason"])
        judged = [
            json.loads(line)["run"].split("-judge")[1][0]
            for line in (out / "runs" / key / "judge_calls.jsonl").read_text().splitlines()
        ]
        if key not in agents:  # judged once; a run killed mid-panel is judged again, and the
            assert len(judged) == 3, key  # paid calls of the cut panel stay in its log
        assert sorted(set(judged)) == ["1", "2", "3"], key
    logged = [json.loads(line)["run_key"] for line in (out / "runs.jsonl").read_text().splitlines()]
    assert sorted(logged) == sorted(records)  # every run exactly once
    for name in ("runs.csv", "judges.csv", "criteria.csv", "subtests.csv"):
        assert export_rows(out / name) == export_rows(reference / name), (
            name,
            _differences(out, reference),
        )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"] is None
    assert summary["runs"] == ITEMS * runs
    assert list(tmp.glob("scylla-*")) == []  # the killed runs' and gateways' folders: cleaned
    assert not list(out.glob("runs/*/workspace"))


@pytest.mark.slow  # at 0 and 2 workers, and under docker at 2 (its -n 0 path is the same code)
@pytest.mark.parametrize(
    ("sandbox_kind", "n"),
    [("default", 2), ("default", 0), ("docker", 2)],
    indirect=["sandbox_kind"],
)
def test_ctrl_c_writes_a_partial_report_and_leaves_nothing_behind(
    mini: Path, oracle: list[str], tmp_path: Path, n: int
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="scy-"))  # short: the gateway's unix socket lives here
    out = mini / "exp"
    runs = 2  # 24 runs: the interrupt comes after 4, the resume does the rest
    proc = _session(mini, out, oracle, tmp, n, runs=runs)
    deadline = time.monotonic() + 300
    while len(_records(out)) < 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, "the session ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "PARTIAL" in output, output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["partial"].startswith("interrupted")
    records = _records(out)
    assert 4 <= len(records) < ITEMS * runs
    assert summary["runs"] == len(records)
    assert _wait_gone(proc.pid, 10) == []  # no CLI, sandbox or worker left running
    assert list(tmp.glob("scylla-run-*")) == []  # no workspace left (a gateway's empty
    # socket folder may outlive a worker that is still stopping: the next start removes it)
    # and the same command again finishes the experiment, reusing what was done
    again = _session(mini, out, oracle, tmp, runs=runs)
    text = again.communicate(timeout=600)[0].decode()
    assert "reused from disk" in text, text
    assert len(_records(out)) == ITEMS * runs
