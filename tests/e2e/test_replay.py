"""Replay: an experiment recorded with `--scylla-record-bodies` re-runs with `--scylla-replay`,
every model call (agent and judges) answered from the recording and nothing else: the exports
are the original's, timings apart; a request the recording does not have ends its run as an
infra_error naming the call and the difference.

Here the sessions; the in-process tests are in `tests/unit/run/gateway/test_replay.py`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ..conftest import TIMINGS, export_rows, workers

SELECTION = "alpha and (T0-01 or T1-01)"


def _exports(out: Path) -> dict[str, list[dict[str, str]]]:
    """The csv exports without timings and the experiment's own name."""
    return {
        name: [
            {k: v for k, v in row.items() if k not in TIMINGS | {"experiment"}}
            for row in export_rows(out / name)
        ]
        for name in ("runs.csv", "subtests.csv", "criteria.csv", "judges.csv")
    }


def _records(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


@pytest.mark.slow  # 4 real runs at -n 0; the replay's matching and hostile recordings below
def test_a_recorded_experiment_replays_to_the_same_exports(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["cases", *workers(0), *oracle, "--scylla-report=csv"]
    pytester.runpytest(
        *args, "-k", SELECTION, "--scylla-record-bodies", f"--scylla-out={mini / 'rec'}"
    ).assert_outcomes(passed=2)
    bodies = mini / "rec" / "runs" / "alpha-T1-01-r1" / "bodies"
    assert sorted(p.name for p in bodies.iterdir() if p.is_dir()) == [
        "judge1",
        "judge2",
        "judge3",
    ]  # the judges' calls too
    # an oracle that only answers 529 now: every answer must come from the recording
    monkeypatch.setenv("SCYLLA_ORACLE_FAULT", "overloaded")
    pytester.runpytest(
        *args, "-k", SELECTION, f"--scylla-replay={mini / 'rec'}", f"--scylla-out={mini / 'rep'}"
    ).assert_outcomes(passed=2)
    assert _exports(mini / "rep") == _exports(mini / "rec")
    for key, rec in _records(mini / "rep").items():
        calls = [
            json.loads(line)
            for name in ("model_calls.jsonl", "judge_calls.jsonl")
            for line in (mini / "rep" / "runs" / key / name).read_text().splitlines()
        ]
        assert calls
        assert all(c["status"] == 200 and c["replayed"] >= 1 for c in calls), key
        assert rec["ablation"]["problems"] == []  # the live CLI's requests still checked


@pytest.mark.slow  # the replay itself is in the default suite; this records again (5 runs)
def test_a_replay_that_diverges_from_its_recording_ends_the_run_as_infra_error(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """Tampered: one recorded request of T0-01 no longer what the CLI sends; T0-02 not
    recorded. Each of those runs is an infra_error naming the call; T1-01 replays."""
    args = ["cases", *workers(0), *oracle, "--scylla-report=csv"]
    pytester.runpytest(
        *args, "-k", SELECTION, "--scylla-record-bodies", f"--scylla-out={mini / 'rec'}"
    ).assert_outcomes(passed=2)
    shutil.copytree(mini / "rec", mini / "tampered")
    first = mini / "tampered" / "runs" / "alpha-T0-01-r1" / "bodies" / "0001.request.json"
    request = json.loads(first.read_text())
    request["max_tokens"] = 7
    first.write_text(json.dumps(request))
    done = pytester.runpytest(
        *args,
        "-k",
        "alpha and (T0-01 or T0-02 or T1-01)",
        f"--scylla-replay={mini / 'tampered'}",
        f"--scylla-out={mini / 'again'}",
    )
    done.assert_outcomes(passed=1, errors=2)
    recs = _records(mini / "again")
    assert recs["alpha-T1-01-r1"]["outcome"] == "pass"
    assert (recs["alpha-T0-01-r1"]["outcome"], recs["alpha-T0-02-r1"]["outcome"]) == (
        "infra_error",
        "infra_error",
    )
    assert recs["alpha-T0-01-r1"]["reason"].startswith(
        "replay diverged at call 1: recorded call 1 differs: $.max_tokens"
    )
    assert recs["alpha-T0-02-r1"]["reason"] == (
        "replay diverged at call 1: the recording has no more calls (0 recorded)"
    )
    done.stdout.fnmatch_lines(["*infra_error: replay diverged at call 1: *$.max_tokens*"])


def test_replay_of_a_folder_without_recordings_is_one_usage_error(
    mini: Path, pytester: pytest.Pytester
) -> None:
    (mini / "empty").mkdir()
    done = pytester.runpytest("cases", "-p", "no:xdist", f"--scylla-replay={mini / 'empty'}")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(
        [
            "*--scylla-replay=*empty: no recorded model calls there "
            "(runs/<run>/bodies/); record an experiment with "
            "--scylla-record-bodies first*"
        ]
    )
    assert "Traceback" not in done.stderr.str()
