"""Promises of a run that no other test holds the plugin to: the forced sandbox is the one used
and said, a sandbox failing mid-session is the harness's error, hidden files stay out of the
agent's sight, an unpriced model costs what the CLI says, a case's max_turns reaches the CLI, a
CLI error result is the agent's failure, numeric options keep to their ranges, and pytest's -x,
--lf and --junitxml work on run items. End to end through the real CLI, with the oracle."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import Edit

ALPHA = "alpha and T0-01"


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def events(out: Path, key: str) -> list[dict[str, Any]]:
    """The CLI's stream-json transcript of a run, event by event."""
    lines = (out / "runs" / key / "transcript.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def calls(out: Path, key: str) -> list[dict[str, Any]]:
    """The agent's model calls as the gateway logged them."""
    lines = (out / "runs" / key / "model_calls.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def fake_bwrap(folder: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `bwrap` first on PATH running `script` (the sandbox program, never the Claude CLI)."""
    folder.mkdir()
    (folder / "bwrap").write_text("#!/bin/sh\n" + script)
    (folder / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


# ---------------------------------------------------------------------------------------------
# 1. the sandbox a session is told to use


HOSTNAME_CHECK = (
    "solution: solution",
    "  - name: where\n"
    "    run: [python, -c, 'import socket; print(socket.gethostname())']\n"
    "solution: solution",
)


@pytest.mark.parametrize(
    ("kind", "hostname"),
    [
        pytest.param("bwrap", "scylla", id="bwrap"),  # its own UTS namespace, named by the sandbox
        pytest.param("local", socket.gethostname(), id="local"),  # this machine's
    ],
)
def test_a_forced_sandbox_is_the_one_the_run_uses_and_the_header_names(
    mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str], kind: str, hostname: str
) -> None:
    """--scylla-sandbox=bwrap|local: the header line, the record's and the manifest's `sandbox`
    say it, and the run's checks (started by the same sandbox as the agent) really ran in it."""
    edit("cases/alpha/test.yaml", *HOSTNAME_CHECK)
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        f"--scylla-sandbox={kind}",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"scylla: sandbox={kind}"])
    rec = records(out)["alpha-T0-01-r1"]
    assert rec["sandbox"] == kind
    where = {c["name"]: c for c in rec["checks"]}["where"]
    assert where["stdout"] == f"{hostname}\n"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sandboxes"] == [kind]
    assert manifest["options"]["sandbox"] == kind


def test_forcing_an_unusable_bwrap_is_one_setup_error_and_nothing_runs(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """--scylla-sandbox=bwrap where bubblewrap cannot create a sandbox: the header says so, the
    first run errors with the reason and the fix, and the session stops there: no fallback to
    an unisolated run, no wall of errors."""
    fake_bwrap(
        tmp_path / "bin",
        "echo 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
        monkeypatch,
    )
    out = mini / "out"
    result = pytester.runpytest(
        "cases", "-p", "no:xdist", *oracle, f"--scylla-out={out}", "--scylla-sandbox=bwrap"
    )
    from pytest_scylla.run.sandbox.probe import bwrap_advice

    problem = (
        "--scylla-sandbox=bwrap: bubblewrap cannot create a sandbox here: bwrap: setting "
        "up uid map: Permission denied; to fix: " + bwrap_advice("uid map")
    )
    assert "AppArmor" in problem  # what blocks it here, not "install it"
    result.stdout.fnmatch_lines([f"scylla: sandbox problem: {problem}"])
    result.stdout.fnmatch_lines(["*ERROR at setup of alpha[[]T0-00-r1]*", f"setup: {problem}"])
    result.assert_outcomes(errors=1)
    assert [ln for ln in result.outlines if ln.startswith("setup:")] == [f"setup: {problem}"]
    assert not (out / "runs").exists()
    assert "Traceback" not in result.stdout.str()


# ---------------------------------------------------------------------------------------------
# 2. a sandbox that fails once the session is set up

BWRAP_GONE = """
import os
import shutil
import tempfile

import pytest

from pytest_scylla.session import collect

_PATH = os.environ["PATH"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    collect.runtime(item)  # the session's setup, bubblewrap probed and working
    tools = tempfile.mkdtemp(dir=item.config.rootpath)
    os.symlink(shutil.which("git"), os.path.join(tools, "git"))
    os.environ["PATH"] = tools  # ... then bubblewrap is gone (git stays: the workspace needs it)


def pytest_unconfigure(config):
    os.environ["PATH"] = _PATH
"""

# A bubblewrap that passes the session's probe and baseline, then fails to set up each run's
# sandbox (a run's private folder is scylla-run-*), as when the kernel runs out of namespaces.
BWRAP_FAILS_AT_RUNS = """case "$*" in
  *"--max-turns 1 "*) exec /usr/bin/bwrap "$@";;  # the baseline's request (one turn)
  *scylla-run-*) cat >/dev/null
    echo 'bwrap: Creating new namespace failed: No space left on device' >&2
    exit 1;;
esac
exec /usr/bin/bwrap "$@"
"""


def test_a_sandbox_that_cannot_start_after_setup_is_an_infra_error_with_its_record(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bubblewrap disappears between the session's setup and a run: the run is an infra_error
    (pytest ERROR, not FAIL) whose reason names the missing program, and its record is written
    although the agent never started."""
    pytester.makeconftest(BWRAP_GONE)
    monkeypatch.setenv("PATH", os.environ["PATH"])  # put back after the session, whatever happens
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        "--scylla-sandbox=bwrap",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of alpha[[]T0-01-r1]*",
            "infra_error: FileNotFoundError: [[]Errno 2] No such file or directory: 'bwrap'",
            f"run folder: {out}/runs/alpha-T0-01-r1",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    rec = records(out)["alpha-T0-01-r1"]
    assert (rec["outcome"], rec["passed"], rec["sandbox"]) == ("infra_error", False, "bwrap")
    assert rec["reason"] == "FileNotFoundError: [Errno 2] No such file or directory: 'bwrap'"
    assert rec["api_calls"] == 0  # nothing reached the model
    assert "agent_s" not in rec["timings"]
    logged = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [(r["run_key"], r["outcome"]) for r in logged] == [("alpha-T0-01-r1", "infra_error")]


def test_a_sandbox_that_fails_to_set_up_a_run_is_an_infra_error(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """bubblewrap works for the session's setup, then exits 1 setting up a run's sandbox: that
    is the harness failing (infra_error, pytest ERROR) with bubblewrap's message, not a FAIL."""
    fake_bwrap(tmp_path / "bin", BWRAP_FAILS_AT_RUNS, monkeypatch)
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        "--scylla-sandbox=bwrap",
    )
    rec = records(out)["alpha-T0-01-r1"]
    assert rec["api_calls"] == 0  # the CLI never started
    assert rec["outcome"] == "infra_error", rec["reason"]
    assert rec["reason"] == (
        "the sandbox could not start the CLI: bwrap: Creating new "
        "namespace failed: No space left on device"
    )
    result.assert_outcomes(errors=1)


# ---------------------------------------------------------------------------------------------
# 3. hidden files

LIST_FIRST = """
import pytest_scylla.run.gateway.oracle.model as oracle

_plan = oracle.plan


def plan(script, tools):
    # the oracle's own turns, after one that lists every file the agent can see
    listing = ("Bash", {"command": "find . -path ./.git -prune -o -type f -print | sort",
                        "description": "List the workspace"})
    return [[listing]] + _plan(script, tools)


oracle.plan = plan


def pytest_unconfigure(config):  # inline runs share this process's modules: put it back
    oracle.plan = _plan
"""


def test_hidden_files_are_out_of_the_agents_sight_and_there_for_the_checks(
    mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str]
) -> None:
    """A case's hidden/ folder is copied in only after the agent finished: the agent's own
    listing of its workspace (a Bash call of the real CLI, in its sandbox) lacks the hidden
    files, so do the file list and diff handed to the judges; the checks then find them."""
    hidden = mini / "cases" / "alpha" / "hidden"
    (hidden / "deep").mkdir(parents=True)
    (hidden / "check_hidden.py").write_text("print(open('deep/expected.txt').read().strip())\n")
    (hidden / "deep" / "expected.txt").write_text("hidden check ran\n")
    edit(
        "cases/alpha/test.yaml",
        "solution: solution",
        "  - name: hidden\n    run: [python, check_hidden.py]\n"
        '    expect_stdout: {exact: "hidden check ran\\n"}\nhidden: hidden\nsolution: solution',
    )
    pytester.makeconftest(LIST_FIRST)
    out = mini / "out"
    result = pytester.runpytest(
        "cases", "-k", ALPHA, "-p", "no:xdist", *oracle, f"--scylla-out={out}"
    )
    result.assert_outcomes(passed=1)
    key = "alpha-T0-01-r1"
    listing_id = next(
        b["id"]
        for e in events(out, key)
        if e["type"] == "assistant"
        for b in e["message"]["content"]
        if b["type"] == "tool_use" and b["name"] == "Bash"
    )
    [listing] = [
        b
        for e in events(out, key)
        if e["type"] == "user"
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("tool_use_id") == listing_id
    ]
    seen = (
        listing["content"]
        if isinstance(listing["content"], str)
        else "".join(part.get("text", "") for part in listing["content"])
    )
    assert not listing.get("is_error"), seen
    assert "./main.py" in seen.splitlines()  # the listing works: it shows the source
    assert "check_hidden.py" not in seen
    assert "expected.txt" not in seen
    files = (out / "runs" / key / "files.txt").read_text().splitlines()
    assert "main.py" in files
    assert not any("check_hidden" in f or "expected.txt" in f for f in files)
    diff = (out / "runs" / key / "diff.patch").read_text()
    assert "main.py" in diff
    assert "check_hidden" not in diff
    assert "expected.txt" not in diff
    checks = {c["name"]: c for c in records(out)[key]["checks"]}
    assert checks["hidden"]["passed"] is True
    assert checks["hidden"]["stdout"] == "hidden check ran\n"


# ---------------------------------------------------------------------------------------------
# 4. a model the price table does not know

UNPRICED = "claude-sonnet-6"


def test_an_unpriced_model_costs_what_the_cli_says(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """--scylla-model with an id missing from the price table: the run's cost is the CLI's own
    figure from its result line (cost_source cli), the model is flagged unpriced, and the
    gateway's estimate (priced as the dearest model in the table, $15/$75 per Mtok in, out) is
    kept beside it; the session's agent spend is the CLI's figure."""
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        f"--scylla-model={UNPRICED}",
    )
    result.assert_outcomes(passed=1)
    key = "alpha-T0-01-r1"
    rec = records(out)[key]
    [cli_result] = [e for e in events(out, key) if e["type"] == "result"]
    assert cli_result["total_cost_usd"] > 0
    assert rec["model"] == UNPRICED
    assert rec["unpriced_models"] == [UNPRICED]
    assert rec["cost_source"] == "cli"
    assert rec["cost_usd"] == rec["cli_cost_usd"] == cli_result["total_cost_usd"]
    usages = [c["usage"] for c in calls(out, key)]
    assert {c["model"] for c in calls(out, key)} == {UNPRICED}
    dearest = (
        sum(
            u["input_tokens"] * 15
            + u["output_tokens"] * 75
            + u["cache_creation_input_tokens"] * 15 * 1.25
            + u["cache_read_input_tokens"] * 15 * 0.1
            for u in usages
        )
        / 1e6
    )
    assert rec["gateway_cost_usd"] == pytest.approx(dearest, abs=2e-6)
    assert rec["gateway_cost_usd"] != pytest.approx(rec["cost_usd"])  # the source decides
    summary = json.loads((out / "summary.json").read_text())
    assert summary["agent_cost_usd"] == pytest.approx(cli_result["total_cost_usd"])


# ---------------------------------------------------------------------------------------------
# 5. max_turns


def test_the_cases_max_turns_stops_the_cli_and_the_run_is_still_judged(
    mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str]
) -> None:
    """max_turns: 2 in the case reaches the CLI: the oracle needs three model calls for alpha
    (read main.py, write it, sum up) and the CLI stops after two with error_max_turns. That end
    is judged on what the agent left (here: the written fix passes), not an agent_error."""
    edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\nmax_turns: 2")
    out = mini / "out"
    result = pytester.runpytest(
        "cases", "-k", ALPHA, "-p", "no:xdist", *oracle, f"--scylla-out={out}"
    )
    result.assert_outcomes(passed=1)
    key = "alpha-T0-01-r1"
    rec = records(out)[key]
    [cli_result] = [e for e in events(out, key) if e["type"] == "result"]
    assert (cli_result["subtype"], cli_result["is_error"]) == ("error_max_turns", True)
    assert rec["exit_code"] != 0
    main = [c for c in calls(out, key) if c["role"] == "main"]
    assert [c["stop_reason"] for c in main] == ["tool_use", "tool_use"]  # no third call
    assert rec["classified"] == {"outcome": None, "reason": ""}
    assert rec["outcome"] == "pass"
    assert {c["name"]: c["passed"] for c in rec["checks"]} == {"runs": True}
    assert rec["consensus"]["passed"] is True


# ---------------------------------------------------------------------------------------------
# 6. the CLI ends with an error result


class _Rejecting(http.server.BaseHTTPRequestHandler):
    """The vendor API behind the gateway: a 400 for every agent request, a zero-point verdict
    for every judge request (forced tool choice). The CLI in front of it stays real."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if body.get("tool_choice"):
            required = body["tools"][0]["input_schema"]["properties"]["items"]["required"]
            verdict = {
                "items": {i: {"achieved": 0, "reason": "stand-in"} for i in required},
                "reasoning": "stand-in",
            }
            status, answer = (
                200,
                {
                    "id": "msg_j",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 100, "output_tokens": 10},
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_j",
                            "name": body["tools"][0]["name"],
                            "input": verdict,
                        }
                    ],
                },
            )
        else:
            status, answer = (
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": REJECTION}},
            )
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


REJECTION = "messages.0.content.0.type: unsupported block type for this model"


@pytest.fixture
def rejecting_upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The gateway's real-upstream path pointed at `_Rejecting`, with a stand-in API key."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Rejecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stand-in-key")
    monkeypatch.setenv("SCYLLA_UPSTREAM_URL", url)
    yield url
    server.shutdown()


def test_a_cli_error_result_is_an_agent_error_counted_as_a_fail(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], rejecting_upstream: str
) -> None:
    """The API answers the agent's request with a 400 and the CLI ends with `is_error: true` in
    its result line: the run is an agent_error, a pytest FAIL (not an ERROR) carrying the CLI's
    message, and it counts in the tier's pass rate as a failed run."""
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        oracle[1],
        f"--scylla-out={out}",
        "--scylla-model=claude-haiku-4-5",
        "--scylla-judges=claude-haiku-4-5",
        "--scylla-min-judges=1",
    )
    result.assert_outcomes(failed=1)
    key = "alpha-T0-01-r1"
    [cli_result] = [e for e in events(out, key) if e["type"] == "result"]
    assert cli_result["is_error"] is True
    assert cli_result["api_error_status"] == 400
    assert REJECTION in cli_result["result"]
    rec = records(out)[key]
    assert rec["outcome"] == "agent_error"
    assert rec["passed"] is False
    assert rec["exit_code"] == 1
    assert rec["infra_events"] == []  # a 400 is no outage: nothing for the harness to retry
    assert rec["reason"].startswith("CLI reported an error (exit code 1, ")
    assert REJECTION in rec["reason"]
    result.stdout.fnmatch_lines(
        [
            "*_ alpha[[]T0-01-r1] (01-vanilla) _*",
            f"agent_error: CLI reported an error (exit code 1, *{REJECTION}*",
        ]
    )
    assert "ERROR at setup" not in result.stdout.str()
    [tier] = json.loads((out / "summary.json").read_text())["tiers"]
    assert (tier["tier"], tier["n"], tier["excluded"], tier["passes"]) == ("T0", 1, 0, 0)
    assert tier["pass_rate"] == 0.0


# ---------------------------------------------------------------------------------------------
# 7. numeric options and their ranges

# option: (Settings field, {rejected value: what its error line says is allowed},
#          {accepted value at or inside a bound: the value the session then uses})
RUNS = "runs per cell must be between 1 and 1000"
WHOLE_RUNS = "expected a whole number of runs from 1 to 1000"
JUDGES = "expected a whole number of judges >= 1"
ATTEMPTS = "expected a number of attempts from 1 to 20"
SECONDS = "expected a number of seconds >= 0"
DOLLARS = "expected a number of dollars > 0"
RANGES: dict[str, tuple[str, dict[str, str], dict[str, float]]] = {
    "runs": (
        "runs",
        {"0": RUNS, "1001": RUNS, "2.5": WHOLE_RUNS, "ten": WHOLE_RUNS},
        {"1": 1, "1000": 1000},
    ),
    "min-judges": (
        "min_judges",
        {"0": JUDGES, "-1": JUDGES, "two": JUDGES},
        {"1": 1, "5": 3},
    ),  # at most the panel: the default one has three judges
    "retries": ("retries", {"0": ATTEMPTS, "21": ATTEMPTS, "four": ATTEMPTS}, {"1": 1, "20": 20}),
    "retry-wait": (
        "retry_wait",
        {"-0.5": SECONDS, "soon": SECONDS, "nan": SECONDS, "inf": SECONDS},
        {"0": 0.0, "7.5": 7.5},
    ),
    "max-pause": ("max_pause", {"-1": SECONDS, "6h": SECONDS, "inf": SECONDS}, {"0": 0.0}),
    "progress": ("progress", {"-1": SECONDS, "often": SECONDS, "nan": SECONDS}, {"0": 0.0}),
    "budget-usd": (
        "budget_usd",
        {"0": DOLLARS, "-5": DOLLARS, "$5": DOLLARS, "inf": DOLLARS},
        {"0.01": 0.01, "25": 25.0},
    ),
    "max-run-cost": (
        "max_run_cost",
        {"0": DOLLARS, "-0.1": DOLLARS, "lots": DOLLARS},
        {"0.01": 0.01},
    ),
}


@pytest.mark.parametrize("name", sorted(RANGES))
def test_numeric_options_reject_out_of_range_values_and_accept_their_bounds(
    pytester: pytest.Pytester, name: str
) -> None:
    """Each numeric --scylla-* option: a value out of its range or not a number is one usage
    error line naming the option, the value and what is allowed; the bounds are accepted and
    used."""
    from pytest_scylla.config.settings import SETTINGS_KEY

    field, rejected, accepted = RANGES[name]
    quick = ("-p", "no:unraisableexception")  # its gc passes at each unconfigure cost ~0.2 s
    for value, expected in rejected.items():
        result = pytester.runpytest(*quick, "--collect-only", f"--scylla-{name}={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (value, result.stdout.str())
        [line] = [ln for ln in result.errlines if ln.strip()]
        assert line.startswith(
            (f"ERROR: --scylla-{name}={value}: ", f"ERROR: --scylla-{name}={value!r}: ")
        ), line
        assert expected in line, line
        assert result.outlines == []  # no traceback, no session
    for value, used in accepted.items():
        config = pytester.parseconfigure(*quick, f"--scylla-{name}={value}")
        assert getattr(config.stash[SETTINGS_KEY], field) == used, value


# ---------------------------------------------------------------------------------------------
# 8. pytest's own run selection and reporting on run items


WITH_CACHE = "[pytest]\naddopts = -p no:benchmark\n"  # mini's ini, the cache provider kept
BETA_FAILED = "cases/beta/test.yaml::beta[T0-01-r1]"


def test_x_stops_after_the_first_failing_run_and_junitxml_has_each_run(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """-x stops the session after the first failing run (the next is never started);
    --junitxml holds one testcase per run that ran, under its node id, with its record, the
    failure carrying the run's verdict; pytest's cache notes the failed run's node id."""
    pytester.makeini(WITH_CACHE)
    (mini / "cases" / "beta" / "solution" / "README.md").write_text("# Beta\n\nNothing here.\n")
    out, junit = mini / "out", mini / "junit.xml"
    result = pytester.runpytest(
        "cases",
        "-k",
        "T0-01 or beta and T0-02",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        "-x",
        f"--junitxml={junit}",
    )
    # in order: alpha[T0-01] passes, beta[T0-01] fails (its README lacks "mod"), beta[T0-02]
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*! stopping after 1 failures !*"])
    assert sorted(records(out)) == ["alpha-T0-01-r1", "beta-T0-01-r1"]
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("cases.alpha.test.yaml", "alpha[T0-01-r1]"),
        ("cases.beta.test.yaml", "beta[T0-01-r1]"),
    ]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("Failed: fail: consensus ")
    assert (failure.text or "").startswith(
        "fail: consensus 0.00 (grade F) is below the pass "
        "threshold 0.60; required items not met: D1"
    )
    assert "FAIL check readme" in (failure.text or "")
    for case, key in zip(cases, ["alpha-T0-01-r1", "beta-T0-01-r1"], strict=True):
        [record] = [p.get("value") for p in case.iter("property") if p.get("name") == "scylla_run"]
        assert json.loads(record or "{}")["run_key"] == key  # a summary, not the record
        assert len(record or "") < 1000
        rec = records(out)[key]
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert {
            n: props[f"scylla_{n}"]
            for n in ("tier", "subtest", "outcome", "score", "grade", "cost_usd")
        } == {
            "tier": "T0",
            "subtest": rec["subtest"],
            "outcome": rec["outcome"],
            "score": str(rec["score"]),
            "grade": rec["grade"],
            "cost_usd": str(rec["cost_usd"]),
        }
    lastfailed = mini / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert json.loads(lastfailed.read_text()) == {BETA_FAILED: True}


def test_lf_selects_only_the_run_that_failed_last_time(
    mini: Path, pytester: pytest.Pytester
) -> None:
    """--lf after a session whose one failure was beta[T0-01] (pytest's cache as the test above
    shows that session leaves it) selects just that run out of the -k selection."""
    pytester.makeini(WITH_CACHE)
    cache = mini / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True)
    (cache / "lastfailed").write_text(json.dumps({BETA_FAILED: True}))
    result = pytester.runpytest(
        "cases", "-k", "T0-01 or beta and T0-02", "-p", "no:xdist", "--lf", "--collect-only", "-q"
    )
    assert result.ret == pytest.ExitCode.OK
    assert [ln for ln in result.outlines if "test.yaml::" in ln] == [BETA_FAILED]
