"""Operations: resume, rejudge, session budgets, usage-window pauses, plan and progress, all
through the real CLI against the oracle.

Here the sessions; the in-process tests are in `tests/unit/operations/test_resume.py`."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ..conftest import MINI_ITEMS, Edit, workers

T0 = "alpha and T0"


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def stored_t0(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    sandbox_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """`mini/out` holding the three runs of `pytest cases -k "alpha and T0"` at -n 0, the first
    session of the tests below that go on from stored runs. It runs once per test run and
    sandbox (under xdist in the folder the workers' temp folders share), and each other test
    gets a copy of its folder: a stored folder is read wherever it lies."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "resume-t0"
    shared.mkdir(exist_ok=True)
    out, stored = mini / "out", shared / sandbox_kind
    with open(shared / f"{sandbox_kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stored.is_dir():
            shutil.copytree(stored, out, symlinks=True)
        else:
            first = pytester.runpytest(
                "cases", "-k", T0, *workers(0), *oracle, f"--scylla-out={out}"
            )
            first.assert_outcomes(passed=3)
            shutil.copytree(out, stored, symlinks=True)
    return out


@pytest.mark.each_sandbox
def test_a_second_session_reuses_stored_runs_and_reruns_what_is_missing(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    stored_t0: Path,
) -> None:
    out = stored_t0
    before = records(out)
    calls = {k: lines(out / "runs" / k / "model_calls.jsonl") for k in before}
    # one run cut short (no record), one void (infra_error), a runs.jsonl line cut by a kill
    (out / "runs/alpha-T0-00-r1/run.json").unlink()
    void = json.loads((out / "runs/alpha-T0-01-r1/run.json").read_text())
    void.update(outcome="infra_error", reason="interrupted (KeyboardInterrupt)")
    (out / "runs/alpha-T0-01-r1/run.json").write_text(json.dumps(void))
    with open(out / "runs.jsonl", "a") as handle:
        handle.write('{"run_key": "alpha-T0-02-r1", "outc')
    second = pytester.runpytest(
        "cases", "-k", "alpha and (T0 or T1-01)", "-v", *workers(2), *oracle, f"--scylla-out={out}"
    )
    second.assert_outcomes(passed=4)
    second.stdout.fnmatch_lines(
        [
            "*PASSED (cached)*alpha[[]T0-02-r1[]]*",
            "*resumed out: 3 run now, 1 reused from disk (cached)*",
        ]
    )
    assert second.stdout.str().count("(cached)") == 2  # that run's line, and the summary
    after = records(out)
    assert after["alpha-T0-02-r1"] == before["alpha-T0-02-r1"]  # untouched, not re-run
    assert lines(out / "runs/alpha-T0-02-r1/model_calls.jsonl") == calls["alpha-T0-02-r1"]
    assert after["alpha-T0-01-r1"]["outcome"] == "pass"  # the void run ran again
    assert "alpha-T1-01-r1" in after
    logged = [json.loads(line) for line in lines(out / "runs.jsonl")]  # every line whole
    assert sorted(r["run_key"] for r in logged) == sorted(after)  # each run once
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 4
    assert summary["partial"] is None
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(s["ran"], s["from_disk"]) for s in manifest["sessions"]] == [(3, 0), (3, 1)]


@pytest.mark.each_sandbox
def test_changed_conditions_refuse_to_mix_unless_fresh(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: Edit
) -> None:
    out = mini / "out"
    pytester.runpytest(
        "cases", "-k", "alpha and T0-02", *workers(0), *oracle, f"--scylla-out={out}"
    ).assert_outcomes(passed=1)
    stored = records(out)["alpha-T0-02-r1"]
    edit("tiers/blocks/rules.md", "", "Different rules now.\n")
    again = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0",
        *workers(0),
        *oracle,
        f"--scylla-out={out}",
        "-p",
        "no:randomly",
    )
    again.assert_outcomes(passed=2, errors=1)  # T0-00, T0-01 new; the conflict stops it
    again.stdout.fnmatch_lines(
        [
            "*alpha-T0-02-r1: the stored run was made under other conditions (config hash *"
            "changed: tiers/blocks/rules.md: changed). Run it again with --scylla-fresh*",
            "*Interrupted: pytest-scylla: a stored run conflicts with the current conditions*",
        ]
    )
    assert "Traceback" not in again.stdout.str()
    assert records(out)["alpha-T0-02-r1"] == stored  # nothing lost
    fresh = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-02",
        *workers(0),
        *oracle,
        f"--scylla-out={out}",
        "--scylla-fresh",
    )
    fresh.assert_outcomes(passed=1)
    assert records(out)["alpha-T0-02-r1"]["config_hash"] != stored["config_hash"]


@pytest.mark.each_sandbox
def test_rejudge_rescores_stored_runs_after_a_rubric_edit_without_agent_calls(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    edit: Edit,
    capsys: pytest.CaptureFixture[str],
    stored_t0: Path,
) -> None:
    out = stored_t0
    before = records(out)
    agent_calls = {k: lines(out / "runs" / k / "model_calls.jsonl") for k in before}
    judge_calls = {k: len(lines(out / "runs" / k / "judge_calls.jsonl")) for k in before}
    # the edit: Q1 now worth 0.3 points; the oracle judges score in quarter points (0.25 of it)
    edit(
        "rubrics/basic.yaml",
        "the change is minimal\n        points: 1",
        "the change is minimal\n        points: 0.3",
    )
    stale = pytester.runpytest("cases", "-k", T0, *workers(0), *oracle, f"--scylla-out={out}")
    stale.stdout.fnmatch_lines(
        [
            "*the rubric or the judge panel changed since this run was "
            "scored. Re-score stored runs with --scylla-rejudge*"
        ]
    )
    result = pytester.runpytest(
        "cases", "-k", T0, "-v", *workers(2), *oracle, f"--scylla-out={out}", "--scylla-rejudge"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*PASSED (rejudged)*", "*3 re-scored*"])
    after = records(out)
    for key, rec in after.items():
        assert lines(out / "runs" / key / "model_calls.jsonl") == agent_calls[key]  # no agent
        assert len(lines(out / "runs" / key / "judge_calls.jsonl")) == judge_calls[key] + 3
        assert (before[key]["grade"], before[key]["score"]) == ("S", 1.0)
        assert rec["score"] == pytest.approx(0.6 + 0.4 * 0.25 / 0.3)  # under the edited rubric
        assert rec["grade"] != "S"
        assert rec["rejudged"][0]["previous"]["grade"] == "S"
        assert rec["judge_hash"] != before[key]["judge_hash"]
        # the record names the rubric it was scored under now (the manifest reads it)
        assert (
            rec["inputs"]["rubrics/basic.yaml"]
            == hashlib.sha256((mini / "rubrics/basic.yaml").read_bytes()).hexdigest()
        )
        assert rec["inputs"]["rubrics/basic.yaml"] != before[key]["inputs"]["rubrics/basic.yaml"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rejudges"][0]["runs"] == sorted(after)
    assert main(["report", str(out), "--report", "none"]) == 0  # and the report reflects it
    assert " 0.93 " in capsys.readouterr().out
    with (out / "runs.csv").open() as handle:
        scores = {row["score"] for row in csv.DictReader(handle)}
    assert scores == {str(after["alpha-T0-00-r1"]["score"])}


def test_the_session_budget_skips_new_runs_with_the_reason(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """A run starts only while the session's spend plus its average run cost fits the budget;
    the runs that would not are skipped, saying why. Checked against the spend the records
    show, whatever the oracle's prices."""
    out, budget = mini / "out", 0.3
    result = pytester.runpytest(
        "cases",
        *workers(0),
        *oracle,
        f"--scylla-out={out}",
        f"--scylla-budget-usd={budget}",
        "-rs",
        "-p",
        "no:randomly",
    )
    outcomes = result.parseoutcomes()
    # at -n 0 runs go one after the other, and runs.jsonl gets each record as its run ends
    ran = [json.loads(line) for line in lines(out / "runs.jsonl")]
    costs = [float(r["cost_usd"] or 0) + float(r["judge_cost_usd"] or 0) for r in ran]
    started = len(ran)
    assert started >= 1  # the first run always starts: nothing has been spent
    assert outcomes.get("passed", 0) == started  # the oracle solves every run it starts
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == len(MINI_ITEMS) == 12
    assert outcomes.get("skipped", 0) >= 1  # the budget did stop something
    spent = 0.0
    for done, cost in enumerate(costs[:-1], start=1):  # run done+1 was allowed to start:
        spent += cost
        assert spent + spent / done <= budget  # its expected cost (the average) still fitted
    spent += costs[-1]
    assert spent + spent / started > budget  # and one more run would not have
    skipped = len(MINI_ITEMS) - started
    result.stdout.fnmatch_lines(
        [f"PARTIAL: not every run was run: {skipped} skipped (session budget $0.30 reached)*"]
    )
    said = re.findall(
        r"SKIPPED \[(\d+)\] cases/\w+/test.yaml:\d+: session budget \$0.30 "
        rf"reached: \${spent:.4f} spent on {started} runs .*not started",
        result.stdout.str(),
    )
    assert sum(map(int, said)) == skipped  # each skip points at its case's file
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == started
    assert "skipped" in summary["partial"]
    assert sorted(records(out)) == sorted(r["run_key"] for r in ran)


@pytest.mark.slow  # ~20 s: a long wait by design
def test_a_usage_window_limit_pauses_new_runs_then_they_go_on(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SCYLLA_ORACLE_FAULT", "usage-limit")
    monkeypatch.setenv("SCYLLA_ORACLE_LIMIT_SECONDS", "6")
    out = mini / "out"
    result = pytester.runpytest_subprocess(
        "cases",
        "-k",
        T0,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        "--scylla-retry-wait=2",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "scylla: PAUSED by an upstream usage limit (usage limit reached for the current window "
            "(oracle fault)); new runs wait *s, until *UTC",
            "*infra_error: upstream failure*upstream usage limit*",
        ]
    )
    first, *rest = sorted(records(out).values(), key=lambda r: r["started_at"])
    assert first["outcome"] == "infra_error"
    assert all(r["outcome"] == "pass" for r in rest)
    # and a pause longer than --scylla-max-pause skips the rest, saying why
    out2 = mini / "out2"
    skipped = pytester.runpytest_subprocess(
        "cases",
        "-k",
        T0,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out2}",
        "--scylla-retry-wait=2",
        "--scylla-max-pause=1",
        "-rs",
    )
    skipped.assert_outcomes(errors=1, skipped=2)
    skipped.stdout.fnmatch_lines(
        [
            "*upstream usage limit (*): new runs paused for *s, longer "
            "than --scylla-max-pause=1; resume later with the same "
            "--scylla-out*"
        ]
    )


def test_plan_estimates_from_history_and_runs_nothing(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    stored_t0: Path,
) -> None:
    out = stored_t0
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scylla.cli",
            "plan",
            "cases",
            *oracle,
            f"--scylla-out={out}",
            "--scylla-runs=2",
            "-n",
            "2",
            "--scylla-budget-usd=100",
        ],
        cwd=mini,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "scylla plan (nothing has run)" in text
    assert "T0        12       3       9" in text
    assert "total: 24 runs, 3 stored" in text
    assert "21 to run: about $" in text
    assert "from 3 stored runs of history" in text
    assert "budget $100.00: the estimate fits" in text
    assert len(records(out)) == 3  # nothing ran


@pytest.mark.slow
def test_progress_lines_count_runs_and_spend(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While runs go on, a status line counts the runs done and passed and what they spent
    (agent plus judges) against the budget."""
    monkeypatch.setenv("SCYLLA_ORACLE_JUDGE_DELAY", "1")
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        T0,
        *workers(2),
        *oracle,
        f"--scylla-out={out}",
        "--scylla-progress=0.5",
        "--scylla-budget-usd=50",
    )
    result.assert_outcomes(passed=3)
    shown = [
        (int(done), int(passes), spend)
        for done, passes, spend in re.findall(
            r"^scylla: (\d+)/3 runs, (\d+) pass, spend \$([0-9.]+) of \$50\.00 budget",
            result.stdout.str(),
            re.MULTILINE,
        )
    ]
    progressed = [line for line in shown if line[0] >= 1]
    assert progressed, shown  # a line after a run had finished, not only "0/3 runs"
    costs = [float(r["cost_usd"]) + float(r["judge_cost_usd"]) for r in records(out).values()]
    assert len(costs) == 3
    for done, passes, spend in progressed:
        assert done <= 3
        assert passes == done  # every oracle run passes
        # the spend shown is that of `done` of the runs (whichever finished first)
        assert spend in {f"{sum(c):.4f}" for c in itertools.combinations(costs, done)}, spend
    assert [d for d, _, _ in shown] == sorted(d for d, _, _ in shown)  # it only counts up
