"""Long campaigns, the promises of docs/campaigns.md not covered elsewhere: how runs reported
from disk look, a stored judge_error judged again, the manifest's changed inputs, merging folders
that share a run, plan estimates from sibling folders, the session budget and a usage-window
pause across xdist workers, and Ctrl-C recording the runs in flight. Real CLI, oracle upstream.

Most of them read one campaign of five sessions into one experiment folder (module fixture):
judges failing, the same command healed (re-scored), again (from disk, `-v`), again (from disk,
progress letters), then after a rubric and tier-file edit one run again with --scylla-fresh.

Here the sessions; the in-process tests are in `tests/unit/operations/test_operations.py`."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ..conftest import FIXTURES, default_sigint, workers

SELECTION = "alpha and (T0-00 or T0-01)"
KEYS = ("alpha-T0-00-r1", "alpha-T0-01-r1")
# Two of the three default judges never answer a valid verdict: 1 valid < --scylla-min-judges=2.
JUDGE_FAULT = "never-valid:claude-opus-4-8,never-valid:claude-sonnet-5"
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")  # its import costs every session (and worker) ~1 s


def _mixed_outcome(key: str) -> str:
    """What `--scylla-oracle=mixed` makes of alpha's run `key`, from its documented rule: bucket
    sha256(key)[:8] mod 20: 0-11 `solution` (passes), 12-16 `wrong` (writes the first half of
    the one-line solution: an empty main.py, so the required `runs` check, stdout "ok", fails),
    17-19 `noop` (main.py still prints "nok": fails too)."""
    bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 20
    return "pass" if bucket < 12 else "fail"


EXPECTED = {key: _mixed_outcome(key) for key in KEYS}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def _epoch(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp).timestamp())


def _environment(tmp: Path, **extra: str) -> dict[str, str]:
    """A user's shell: nothing of this test session's pytest or oracle settings; TMPDIR short,
    since the gateway's unix socket path must stay under 108 bytes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SCYLLA_"))}
    return {**env, "TMPDIR": str(tmp), **extra}


@dataclass(frozen=True)
class Stage:
    """One session's output and what the experiment folder held after it."""

    output: str
    returncode: int
    records: dict[str, dict[str, Any]]
    model_calls: dict[str, str]  # run key -> its model_calls.jsonl
    judge_calls: dict[str, str]
    manifest: dict[str, Any]


@dataclass(frozen=True)
class Campaign:
    root: Path  # a copy of the mini project
    out: Path  # <root>/reports/exp
    cache: Path  # its --scylla-cache-dir (the CLI baseline is measured there)
    stages: dict[str, Stage]
    digests: dict[str, list[str]]  # edited file -> [sha256 before, after the edit]

    def dump(self, path: Path) -> None:
        data = {
            **asdict(self),
            "root": str(self.root),
            "out": str(self.out),
            "cache": str(self.cache),
        }
        path.write_text(json.dumps(data))

    @classmethod
    def load(cls, path: Path) -> Campaign:
        data = json.loads(path.read_text())
        return cls(
            Path(data["root"]),
            Path(data["out"]),
            Path(data["cache"]),
            {k: Stage(**v) for k, v in data["stages"].items()},
            data["digests"],
        )


def _run_campaign(root: Path, cache: str) -> Campaign:
    """The five sessions, each snapshotted."""
    shutil.copytree(FIXTURES / "mini", root)
    (root / "pytest.ini").write_text(
        f"[pytest]\naddopts = -p no:cacheprovider -p no:benchmark {' '.join(NO_HYPOTHESIS)}\n"
    )
    out = root / "reports" / "exp"
    tmp = Path(tempfile.mkdtemp(prefix="scy-"))
    stages: dict[str, Stage] = {}

    def session(name: str, *args: str, **env: str) -> None:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "cases",
                "-p",
                "no:xdist",
                "--scylla-oracle=mixed",
                cache,
                f"--scylla-out={out}",
                "--scylla-progress=0",
                *args,
            ],
            cwd=root,
            env=_environment(tmp, **env),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert (out / "manifest.json").is_file(), proc.stdout + proc.stderr
        runs = out / "runs"
        stages[name] = Stage(
            proc.stdout + proc.stderr,
            proc.returncode,
            _records(out),
            {k: (runs / k / "model_calls.jsonl").read_text() for k in KEYS},
            {k: (runs / k / "judge_calls.jsonl").read_text() for k in KEYS},
            json.loads((out / "manifest.json").read_text()),
        )

    try:
        session("judge_error", "-k", SELECTION, "-v", SCYLLA_ORACLE_JUDGE_FAULT=JUDGE_FAULT)
        session("rejudged", "-k", SELECTION, "-v")
        session("quiet", "-k", SELECTION, "-rA")  # letters, and the summary's words
        rubric, tier = root / "rubrics" / "basic.yaml", root / "tiers" / "T0.yaml"
        before = [_sha256(rubric), _sha256(tier)]
        rubric.write_text(rubric.read_text().replace("pass_threshold: 0.6", "pass_threshold: 0.5"))
        tier.write_text(
            tier.read_text().replace("the default system prompt", "the CLI's own system prompt")
        )
        after = [_sha256(rubric), _sha256(tier)]
        session("fresh", "-k", "alpha and T0-01", "--scylla-fresh")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Campaign(
        root,
        out,
        Path(cache.partition("=")[2]),
        stages,
        {"rubrics/basic.yaml": [before[0], after[0]], "tiers/T0.yaml": [before[1], after[1]]},
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory, oracle: list[str]) -> Campaign:
    """The campaign, run once per test run: under xdist the first worker to need it runs it
    (in the folder the workers' temp folders share) and the others read its snapshot, since
    each worker would otherwise run its own copy of a module fixture."""
    base = tmp_path_factory.getbasetemp()
    home = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "scylla-campaign"
    home.mkdir(exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = home / "campaign.json"
        if not saved.is_file():
            _run_campaign(home / "project", oracle[1]).dump(saved)
        return Campaign.load(saved)


def test_a_stored_judge_error_has_only_its_judges_asked_again(campaign: Campaign) -> None:
    """A judge_error run is re-scored by the next session (the judges again, never the agent)
    and ends pass or fail."""
    assert EXPECTED == {"alpha-T0-00-r1": "fail", "alpha-T0-01-r1": "pass"}  # one of each
    failed, healed = campaign.stages["judge_error"], campaign.stages["rejudged"]
    assert failed.returncode == 1, failed.output
    assert {k: r["outcome"] for k, r in failed.records.items()} == dict.fromkeys(
        KEYS, "judge_error"
    )
    assert re.search(r"alpha\[T0-00-r1\] ERROR", failed.output), failed.output
    assert "judge_error: only 1 valid judge(s), 2 needed" in failed.output
    for key in KEYS:
        # two judges x three attempts (an invalid verdict is sent back twice) + one valid call
        assert failed.judge_calls[key].count("\n") == 2 * 3 + 1
        assert healed.model_calls[key] == failed.model_calls[key]  # no agent call
        assert healed.judge_calls[key].startswith(failed.judge_calls[key])  # appended to
        assert healed.judge_calls[key].count("\n") == 7 + 3  # each judge once, valid at once
        rec = healed.records[key]
        assert rec["outcome"] == EXPECTED[key]
        assert rec["started_at"] == failed.records[key]["started_at"]  # the same agent run
        assert rec["rejudged"][0]["previous"]["outcome"] == "judge_error"
        assert rec["valid_judges"] == 3
    assert re.search(r"alpha\[T0-00-r1\] FAILED \(rejudged\)", healed.output), healed.output
    assert re.search(r"alpha\[T0-01-r1\] PASSED \(rejudged\)", healed.output), healed.output
    assert "0 run now, 0 reused from disk (cached), 2 re-scored" in healed.output


def test_runs_from_disk_say_cached_in_words_and_c_letters(campaign: Campaign) -> None:
    """The same command again reports a passing and a failing stored run from disk: `c` / `C`
    as progress letters, `PASSED (cached)` / `FAILED (cached)` in the summary (and in -v's
    lines: the same status words)."""
    healed, quiet = campaign.stages["rejudged"], campaign.stages["quiet"]
    assert quiet.returncode == 1, quiet.output  # the stored failure still fails
    assert quiet.records == healed.records  # nothing re-run or re-scored
    assert quiet.judge_calls == healed.judge_calls
    assert "1 failed, 1 passed" in quiet.output
    assert "0 run now, 2 reused from disk (cached), 0 re-scored" in quiet.output
    assert "FAILED (cached) cases/alpha/test.yaml::alpha[T0-00-r1]" in quiet.output
    assert "PASSED (cached) cases/alpha/test.yaml::alpha[T0-01-r1]" in quiet.output
    # items in file order: T0-00 (failed, from disk) then T0-01 (passed, from disk)
    assert re.search(r"^cases/alpha/test\.yaml Cc\s+\[100%\]$", quiet.output, re.M), quiet.output


def test_the_manifest_flags_inputs_that_changed_between_runs(campaign: Campaign) -> None:
    """After a rubric and a tier file changed and one run ran again (--scylla-fresh), the
    manifest lists both digests of each and names them as changed between runs."""
    unchanged, fresh = campaign.stages["quiet"], campaign.stages["fresh"]
    rubric, tier = campaign.digests["rubrics/basic.yaml"], campaign.digests["tiers/T0.yaml"]
    assert rubric[0] != rubric[1]
    assert tier[0] != tier[1]
    assert unchanged.manifest["inputs_changed_between_runs"] == []
    assert unchanged.manifest["inputs"]["rubrics/basic.yaml"] == rubric[0]
    assert unchanged.manifest["inputs"]["tiers/T0.yaml"] == tier[0]
    assert fresh.returncode == 0, fresh.output
    assert fresh.records["alpha-T0-00-r1"] == unchanged.records["alpha-T0-00-r1"]  # kept
    assert (
        fresh.records["alpha-T0-01-r1"]["started_at"]
        != unchanged.records["alpha-T0-01-r1"]["started_at"]
    )  # ran again
    manifest = fresh.manifest
    assert manifest["inputs_changed_between_runs"] == ["rubrics/basic.yaml", "tiers/T0.yaml"]
    assert manifest["inputs"]["rubrics/basic.yaml"] == sorted(rubric)
    assert manifest["inputs"]["tiers/T0.yaml"] == sorted(tier)
    assert isinstance(manifest["inputs"]["cases/alpha/"], str)  # the case did not change
    assert [(s["ran"], s["from_disk"], s["rejudged"]) for s in manifest["sessions"]] == [
        (2, 0, 0),
        (0, 0, 2),
        (0, 2, 0),
        (1, 0, 0),
    ]


def test_a_run_in_two_merged_folders_is_kept_twice_with_a_warning(
    campaign: Campaign, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`scylla report A B`: a run key in both folders counts as two runs (the second renamed
    `B/<key>`) and says so, naming both folders; the same folder given twice is read once."""
    a, b = tmp_path / "A", tmp_path / "B"
    for folder, keys in ((a, KEYS), (b, ("alpha-T0-01-r1",))):
        for key in keys:
            shutil.copytree(campaign.out / "runs" / key, folder / "runs" / key)
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "C"), "--report", "none"]) == 0
    warning = (
        f"run alpha-T0-01-r1 is in {a.resolve()} and {b.resolve()}: both kept as separate runs"
    )
    assert f"warning: {warning}" in capsys.readouterr().out
    summary = json.loads((tmp_path / "C" / "summary.json").read_text())
    assert summary["warnings"] == [warning]
    assert summary["runs"] == 3
    assert summary["outcomes"] == {"fail": 1, "pass": 2}
    assert summary["tiers"][0]["pass_rate"] == pytest.approx(2 / 3)
    with (tmp_path / "C" / "runs.csv").open() as handle:
        keys = sorted(row["run_key"] for row in csv.DictReader(handle))
    assert keys == ["B/alpha-T0-01-r1", "alpha-T0-00-r1", "alpha-T0-01-r1"]
    assert main(["report", str(a), str(a), "--out", str(tmp_path / "D"), "--report", "none"]) == 0
    once = json.loads((tmp_path / "D" / "summary.json").read_text())
    assert (once["runs"], once["warnings"]) == (2, [])


def _plan(
    root: Path,
    out: Path,
    oracle: list[str],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """`scylla plan` for alpha's three T0 runs into `out`; what it printed."""
    monkeypatch.chdir(root)
    code = main(
        [
            "plan",
            "cases",
            "-k",
            "alpha and T0",
            "--scylla-oracle=mixed",
            oracle[1],
            f"--scylla-out={out}",
        ]
    )
    text = capfd.readouterr().out
    assert code == 0, text
    return text


def test_plan_estimates_from_runs_stored_in_sibling_folders(
    campaign: Campaign,
    oracle: list[str],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new folder beside reports/exp is planned from exp's two runs: alpha x T0 costs their
    mean (agent + judges) per run."""
    text = _plan(campaign.root, campaign.root / "reports" / "next", oracle, capfd, monkeypatch)
    stored = campaign.stages["fresh"].records
    mean = sum(r["cost_usd"] + r["judge_cost_usd"] for r in stored.values()) / len(stored)
    row = re.search(r"^T0\s+3\s+0\s+3\s+\$(\d+\.\d\d)\s", text, re.M)
    assert row is not None, text
    assert float(row[1]) == pytest.approx(3 * mean, abs=0.005)
    assert f"3 to run: about ${3 * mean:.2f}" in text
    assert "from 2 stored runs of history" in text
    assert "no history" not in text
    assert not (campaign.root / "reports" / "next").exists()  # nothing ran


def test_plan_without_history_says_so(
    campaign: Campaign,
    oracle: list[str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no stored run in the folder or beside it, the plan says it has no history and
    bounds the runs by their per-run limits (alpha: the default max_cost_usd, $2.00)."""
    (tmp_path / "empty").mkdir()  # a sibling without runs
    text = _plan(campaign.root, tmp_path / "next", oracle, capfd, monkeypatch)
    assert re.search(r"^T0\s+3\s+0\s+3\s+\?\s", text, re.M), text  # never a made-up $0.00
    assert "$0.00" not in text
    assert "3 to run: no estimate (no stored runs of history)" in text
    assert (
        "no history for 3 runs (? above): not estimated; their per-run limits "
        "(max_cost_usd) add up to $6.00 of agent spend at most"
    ) in text


# ---------------------------------------------------------------------------------------------
# xdist: one ledger for the whole session


def test_the_session_budget_holds_across_xdist_workers(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """Two workers share the session's spend: it ends within the budget plus one run per
    worker (the runs in flight), later runs are skipped saying why."""
    out, budget = mini / "out", 0.45
    result = pytester.runpytest(
        "cases",
        *workers(2),
        *NO_HYPOTHESIS,
        *oracle,
        f"--scylla-out={out}",
        f"--scylla-budget-usd={budget}",
        "-rs",
    )
    recs = _records(out)
    costs = [r["cost_usd"] + r["judge_cost_usd"] for r in recs.values()]
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == len(recs)
    assert outcomes["skipped"] == 12 - len(recs) > 0
    assert sum(costs) <= budget + 2 * max(costs)
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED [[]*[]] *session budget ${budget:.2f} reached: $* "
            "spent on * runs (about $* a run); not started"
        ]
    )
    ledgers = [json.loads(p.read_text()) for p in out.glob(".session/*/*.json")]
    assert len(ledgers) == 2  # each worker counted its own runs, in the session's one folder
    assert all(entry["runs"] >= 1 for entry in ledgers)
    assert sum(entry["runs"] for entry in ledgers) == len(recs)
    assert sum(entry["spent_usd"] for entry in ledgers) == pytest.approx(sum(costs))
    # a worker's refusal counted the other worker's runs too: more than any one worker ran
    said = [int(n) for n in re.findall(r"spent on (\d+) runs", result.stdout.str())]
    assert max(said) > max(entry["runs"] for entry in ledgers), said
    assert "skipped (session budget" in json.loads((out / "summary.json").read_text())["partial"]


@pytest.mark.slow
def test_a_usage_window_pause_on_one_worker_holds_new_runs_on_the_other(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only gw0's upstream answers a usage-window 429: gw1 finishes its run in flight, then
    starts nothing until the pause written to the session's pause.json is over."""
    seconds = 8  # longer than gw1's run in flight, so gw1 has to wait out the rest
    pytester.makeconftest("""
        import os

        def pytest_configure(config):
            if getattr(config, "workerinput", {}).get("workerid") == "gw0":
                os.environ["SCYLLA_ORACLE_FAULT"] = "usage-limit"
    """)
    monkeypatch.setenv("SCYLLA_ORACLE_LIMIT_SECONDS", str(seconds))
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        "alpha and (T0 or T1)",
        "-v",
        *workers(2),
        *NO_HYPOTHESIS,
        *oracle,
        f"--scylla-out={out}",
        "--scylla-retry-wait=2",
        "--scylla-progress=1",
    )
    result.assert_outcomes(passed=4, errors=1)
    worker = {
        f"alpha-{m[2]}-r1": m[1]
        for m in re.finditer(
            r"\[(gw\d)\] \[ *\d+%\] \w+ cases/alpha/test\.yaml::alpha\[(T\d-\d\d)-r1\]",
            result.stdout.str(),
        )
    }
    recs = _records(out)
    assert sorted(worker) == sorted(recs)
    (pause_file,) = out.glob(".session/*/pause.json")
    until = json.loads(pause_file.read_text())["until"]
    began = until - seconds  # when gw0's gateway met the limit
    (void,) = (k for k, r in recs.items() if r["outcome"] == "infra_error")
    assert worker[void] == "gw0"
    assert "upstream usage limit" in recs[void]["reason"]
    for key, rec in recs.items():  # started before the pause began, or once it was over
        start = _epoch(rec["started_at"])
        assert start <= began or start >= int(until), (key, rec["started_at"], until)
    other = sorted(
        (r for k, r in recs.items() if worker[k] == "gw1"), key=lambda r: r["started_at"]
    )
    assert _epoch(other[0]["finished_at"]) < int(until) - 1  # gw1 was free during the pause
    assert any(_epoch(r["started_at"]) >= int(until) for r in other[1:])  # and was held
    stamp = datetime.fromtimestamp(until, UTC)
    result.stdout.fnmatch_lines(
        [f"scylla: */5 runs*PAUSED until {stamp:%H:%M:%S} UTC by an upstream usage limit*"]
    )


# ---------------------------------------------------------------------------------------------
# Ctrl-C


@pytest.mark.slow  # ~20 s: a long wait by design
def test_ctrl_c_records_the_run_in_flight_as_interrupted(mini: Path, campaign: Campaign) -> None:
    """SIGINT to the session while its run's agent waits on the model: the run's run.json says
    infra_error, "interrupted", so the next session runs it again. (The stall fault would stall
    the CLI baseline measurement too, so the session uses the campaign's cache, which holds
    the baseline already.)"""
    tmp = Path(tempfile.mkdtemp(prefix="scy-"))  # short: the gateway's unix socket lives here
    out, key = mini / "exp", "alpha-T0-01-r1"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-k",
            "alpha and T0-01",
            *workers(0),
            *NO_HYPOTHESIS,
            "--scylla-oracle",
            f"--scylla-cache-dir={campaign.cache}",
            f"--scylla-out={out}",
            "--scylla-progress=0",
        ],
        cwd=mini,
        env=_environment(tmp, SCYLLA_ORACLE_FAULT="stall"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    try:
        transcript = out / "runs" / key / "transcript.jsonl"
        deadline = time.monotonic() + 60
        while (
            proc.poll() is None
            and time.monotonic() < deadline
            and not (transcript.is_file() and transcript.stat().st_size)
        ):
            time.sleep(0.05)  # the CLI has started and stalls on its first model call
        assert proc.poll() is None, "the session ended before it could be interrupted"
        assert transcript.is_file(), "the CLI did not start"
        assert transcript.stat().st_size, "the CLI did not start"
        assert not (out / "runs" / key / "run.json").exists()  # in flight
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        output = proc.communicate(timeout=120)[0].decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    rec = json.loads((out / "runs" / key / "run.json").read_text())
    assert (rec["outcome"], rec["passed"]) == ("infra_error", False)
    assert "interrupted" in rec["reason"], rec["reason"]
    assert rec["finished_at"] >= rec["started_at"]
