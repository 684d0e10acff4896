"""End to end through the real Claude Code CLI, the gateway and the sandbox, with the oracle
upstream: outcomes, records, the ablation check, secrets, faults and setup errors."""

from __future__ import annotations

import fcntl
import http.server
import json
import os
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..conftest import MINI_ITEMS, Edit, workers

ALPHA = "alpha and T0-01"


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def calls(out: Path, key: str) -> list[dict[str, Any]]:
    path = out / "runs" / key / "model_calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


CANARY_KEY = "sk-ant-canary-0123456789-do-not-leak"
CANARY_MD = "CANARY-USER-CLAUDE-MD-7f3a"

# a conftest.py noting, on the controller, each report's record and its JUnit property
SEEN = r"""
import json

CONFIG = []

def pytest_configure(config):
    CONFIG.append(config)

def pytest_runtest_logreport(report):
    if report.when == "call" and not hasattr(CONFIG[0], "workerinput"):  # the controller
        with open("seen.jsonl", "a") as f:
            f.write(json.dumps(report.scylla_record) + "\n")
            f.write(dict(report.user_properties)["scylla_run"] + "\n")  # what JUnit writes
"""


@dataclass(frozen=True)
class Session:
    """What a finished session left: its folder, output, outcomes and the reports' records."""

    out: Path
    output: str
    outcomes: dict[str, int]
    seen: Path  # the conftest's seen.jsonl


@pytest.fixture
def every_item(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    sandbox_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Session:
    """Every item of the mini project end to end through the real CLI on two workers, with the
    user's API key and their own Claude configuration (a CLAUDE.md and a skill in their home)
    as canaries, bodies recorded, workspaces kept and the reports' records noted (`SEEN`). The
    tests below only read it: it runs once per test run and sandbox (under xdist in the folder
    the workers' temp folders share)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "every-item"
    shared.mkdir(exist_ok=True)
    stored = shared / sandbox_kind
    with open(shared / f"{sandbox_kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stored.is_dir():
            home = tmp_path_factory.mktemp("userhome")
            (home / ".claude" / "skills" / "canaryskill").mkdir(parents=True)
            (home / ".claude" / "CLAUDE.md").write_text(f"Always say {CANARY_MD}.\n")
            (home / ".claude" / "skills" / "canaryskill" / "SKILL.md").write_text(
                f"---\nname: canaryskill\ndescription: {CANARY_MD}\n---\nbody\n"
            )
            monkeypatch.setenv("HOME", str(home))
            monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY_KEY)
            pytester.makeconftest(SEEN)
            result = pytester.runpytest(
                "cases",
                *workers(2),
                *oracle,
                f"--scylla-out={mini / 'out'}",
                "--scylla-record-bodies",
                "--scylla-keep-workspaces",
            )
            made = stored.with_suffix(".partial")
            shutil.rmtree(made, ignore_errors=True)
            shutil.copytree(mini / "out", made / "out", symlinks=True)
            shutil.copy(mini / "seen.jsonl", made / "seen.jsonl")
            (made / "output.txt").write_text(result.stdout.str())
            (made / "outcomes.json").write_text(json.dumps(result.parseoutcomes()))
            made.rename(stored)
    return Session(
        stored / "out",
        (stored / "output.txt").read_text(),
        json.loads((stored / "outcomes.json").read_text()),
        stored / "seen.jsonl",
    )


@pytest.mark.each_sandbox
def test_every_run_has_a_record_and_a_call_log_and_no_secret_reaches_a_file(
    every_item: Session,
) -> None:
    """Every item of the mini project end to end through the real CLI, on two workers (the
    records travel from the workers to the controller). The user's API key and their own
    Claude configuration (a CLAUDE.md and a skill in their home) reach no file the session
    writes, recorded request bodies and kept workspaces included."""
    done = every_item
    out = done.out
    assert done.outcomes == {"passed": len(MINI_ITEMS)}, done.output[-3000:]
    pytest.LineMatcher(done.output.splitlines()).fnmatch_lines(
        ["scylla: SIMULATED MODEL (oracle=solution)*"]
    )
    recs = records(out)
    assert len(recs) == len(MINI_ITEMS)
    for key, rec in recs.items():
        assert rec["outcome"] == "pass"
        assert rec["passed"] is True
        assert rec["simulated"] is True
        assert rec["run_key"] == key
        assert rec["exit_code"] == 0
        assert rec["ablation"]["checked"] is True
        assert rec["ablation"]["problems"] == []
        assert rec["tokens"]["total_tokens"] > 0
        assert rec["api_calls"] >= 2
        assert rec["cost_source"] == "gateway"
        assert rec["cost_usd"] > 0
        assert rec["costs_agree"] is True, (rec["gateway_cost_usd"], rec["cli_cost_usd"])
        assert rec["timings"]["agent_s"] > 0
        assert rec["timings"]["start_wait_s"] >= 0  # for a start slot (--scylla-starts)
        assert "checks_s" in rec["timings"]
        assert all(c["passed"] for c in rec["checks"])
        main = [c for c in calls(out, key) if c["role"] == "main"]
        assert main
        assert all(c["status"] == 200 and c["usage"]["output_tokens"] > 0 for c in main)
        answered = [c["ttft_s"] for c in calls(out, key) if c["status"] == 200]
        assert rec["timings"]["ttft_first_s"] == answered[0]  # the gateway's first byte
        assert rec["timings"]["ttft_s"] == pytest.approx(sum(answered) / len(answered), abs=1e-4)
        diff = (out / "runs" / key / "diff.patch").read_text()
        assert diff.startswith("diff --git"), diff[:200]
        assert ".claude/" not in diff
        assert "CLAUDE.md" not in diff
        # the trajectory from the transcript: the oracle writes the solution with Write, and
        # invokes none of the skills, sub-agents or MCP servers the mini tiers declare
        assert "Write" in rec["trajectory"]["sequence"]
        assert rec["trajectory"]["tool_errors"] == 0
        assert {kind: sorted(used) for kind, used in rec["trajectory"]["used"].items()} == {
            kind: sorted(rec["declared"][kind]) for kind in ("skills", "agents", "mcp_servers")
        }
        assert not any(v for used in rec["trajectory"]["used"].values() for v in used.values())
    stats = json.loads((out / "statistical_results.json").read_text())
    assert {(u["tier"], u["kind"]): (u["used"], u["note"]) for u in stats["utilisation"]}[
        "T1", "skill"
    ] == (0, "never used: not an ablation of it")
    alpha = recs["alpha-T5-02-r1"]
    assert alpha["declared"]["mcp_servers"] == ["notes"]
    assert "notes" in alpha["ablation"]["observed"]["mcp_servers"]
    assert "review" in alpha["ablation"]["observed"]["skills"]
    assert "WebFetch" not in alpha["ablation"]["observed"]["tools"]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".request.json") for p in files)  # bodies were recorded
    assert any("workspace" in p.parts for p in files)  # workspaces were kept
    for path in files:
        data = path.read_bytes()
        assert CANARY_KEY.encode() not in data, path
        assert CANARY_MD.encode() not in data, path


@pytest.mark.parametrize(
    ("mode", "n"),
    [
        pytest.param("noop", 0, marks=pytest.mark.slow),
        pytest.param("wrong", 2, marks=pytest.mark.slow),
    ],
)
@pytest.mark.each_sandbox
def test_noop_and_wrong_oracles_fail_as_judged_runs(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], mode: str, n: int
) -> None:
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-m",
        "T0",
        *workers(n),
        oracle[1],
        f"--scylla-oracle={mode}",
        f"--scylla-out={out}",
    )
    result.assert_outcomes(failed=6)
    assert "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "fail: consensus * is below the pass threshold 0.60; required items not met: F1",
            "*FAIL check runs*",
        ]
    )
    assert {r["outcome"] for r in records(out).values()} == {"fail"}


BREAKS = {
    "dropped-skill": (
        "shutil.rmtree(ws / '.claude' / 'skills' / 'review')",
        "declared skill or agent 'review' is not the one in the request*",
    ),
    "extra-agent": (
        "(ws / '.claude' / 'agents').mkdir(parents=True, exist_ok=True); "
        "(ws / '.claude' / 'agents' / 'stray.md').write_text("
        "'---\\nname: stray\\ndescription: An agent nobody declared.\\n---\\nHi\\n')",
        "agent 'stray' is in the request but not declared",
    ),
    "home-claude-md": (
        "(run_dir / 'home' / '.claude' / 'CLAUDE.md').write_text('Leaked rule.')",
        "CLAUDE.md from */home/.claude/CLAUDE.md is in the request but not declared",
    ),
}


@pytest.mark.parametrize("kind", sorted(BREAKS))
@pytest.mark.each_sandbox
def test_a_broken_overlay_is_an_infra_error_naming_the_difference(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], kind: str
) -> None:
    action, message = BREAKS[kind]
    pytester.makeconftest(f"""
import shutil
import pytest_scylla.run.overlay as overlay

_apply = overlay.apply

def broken(sub, tiers, ws, run_dir, mcp=None):
    made = _apply(sub, tiers, ws, run_dir, mcp)
    if sub.ref == "T1-01":
        {action}
    return made

overlay.apply = broken

def pytest_unconfigure(config):  # inline runs share this process's modules: put it back
    overlay.apply = _apply
""")
    out = mini / "out"
    result = pytester.runpytest(
        "cases", "-k", "alpha and T1", *workers(0), *oracle, f"--scylla-out={out}"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of alpha[[]T1-01-r1]*",
            f"infra_error: ablation check failed: *{message}*",
        ]
    )
    rec = records(out)["alpha-T1-01-r1"]
    assert rec["outcome"] == "infra_error"
    assert rec["ablation"]["problems"]
    assert rec["api_calls"] == 1  # refused at the first request: nothing spent on a void run
    assert "Traceback" not in result.stdout.str()


class _Upstream(http.server.BaseHTTPRequestHandler):
    """Stands in for the vendor API behind the gateway (the CLI itself stays real)."""

    seen: ClassVar[list[dict[str, Any]]] = []
    status = 200
    fail_first = 0  # with status 200: answer this many first requests with a 429

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append(
            {"path": self.path, "key": self.headers.get("x-api-key"), "model": body.get("model")}
        )
        failing = type(self).status != 200 or len(type(self).seen) <= type(self).fail_first
        if failing:
            data = json.dumps(
                {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
            ).encode()
            self.send_response(429 if type(self).status == 200 else type(self).status)
            self.send_header("retry-after", "1")
        elif body.get("tool_choice"):  # a judge: a zero-point verdict for every required item
            schema = body["tools"][0]["input_schema"]["properties"]["items"]
            verdict = {
                "items": {i: {"achieved": 0, "reason": "stand-in"} for i in schema["required"]},
                "reasoning": "stand-in",
            }
            data = json.dumps(
                {
                    "id": "msg_j",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "stop_reason": "tool_use",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_j",
                            "name": body["tools"][0]["name"],
                            "input": verdict,
                        }
                    ],
                    "usage": {"input_tokens": 500, "output_tokens": 50},
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
        else:
            from pytest_scylla.run.gateway import sse

            data = b"".join(
                sse.message_events(
                    "msg_up",
                    body["model"],
                    [{"type": "text", "text": "Nothing to do."}],
                    "end_turn",
                    {
                        "input_tokens": 1000,
                        "output_tokens": 10,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                )
            )
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def upstream() -> Iterator[tuple[str, type[_Upstream]]]:
    handler = type("Upstream", (_Upstream,), {"seen": [], "status": 200, "fail_first": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()


@pytest.mark.parametrize(
    ("status", "fail_first"), [(200, 0), pytest.param(200, 1, marks=pytest.mark.slow), (429, 0)]
)
def test_the_real_upstream_path_injects_the_key_and_classifies_rate_limits(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    upstream: tuple[str, type[_Upstream]],
    status: int,
    fail_first: int,
) -> None:
    url, handler = upstream
    handler.status, handler.fail_first = status, fail_first
    key = "sk-ant-real-key-held-by-the-gateway-only"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("SCYLLA_UPSTREAM_URL", url)
    out = mini / "out"
    result = pytester.runpytest_subprocess(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        oracle[1],
        "--scylla-model=claude-haiku-4-5",
        "--scylla-judges=claude-haiku-4-5",
        "--scylla-min-judges=1",
        "--scylla-retries=2",
        f"--scylla-out={out}",
    )
    assert handler.seen
    assert {s["key"] for s in handler.seen} == {key}
    assert {s["model"] for s in handler.seen} == {"claude-haiku-4-5"}
    rec = records(out)["alpha-T0-01-r1"]
    assert not rec["simulated"]
    assert "SIMULATED" not in result.stdout.str()
    if status == 200:  # a real answer that changes nothing: judged, and it fails
        result.assert_outcomes(failed=1)
        assert rec["outcome"] == "fail"
        assert rec["cost_source"] == "gateway"
        assert rec["usage"]["claude-haiku-4-5"]["input_tokens"] >= 1000
        assert rec["costs_agree"] is True
        assert rec["judges"][0]["valid"] is True  # the judge went the same way
        assert rec["judge_cost_usd"] == pytest.approx((500 * 1 + 50 * 5) / 1e6)
        if fail_first:  # the gateway waited out the 429 itself: the CLI never saw it
            [event] = rec["infra_events"]
            assert (event["status"], event["retried_by_gateway"]) == (429, True)
            first = calls(out, "alpha-T0-01-r1")[0]
            assert (first["status"], first["attempts"]) == (200, 2)
            assert first["retry_wait_s"] >= 1
        else:
            assert rec["infra_events"] == []
    else:  # a persistent 429: two gateway attempts per call, then the CLI gives up
        result.assert_outcomes(errors=1)
        assert rec["outcome"] == "infra_error"
        assert rec["infra_events"][0]["status"] == 429
        assert rec["infra_events"][0]["retry_after"] == "1"
        assert [e["retried_by_gateway"] for e in rec["infra_events"][:2]] == [True, False]
        assert len(handler.seen) == 2 * rec["api_calls"]
    for path in out.rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("fault", "outcome", "pytest_outcome"),
    [
        pytest.param("stall", "timeout", "failed", marks=pytest.mark.slow),  # waits by design
        ("crash", "agent_error", "failed"),
        ("overloaded", "infra_error", "errors"),
        pytest.param("rate-limited", "pass", "passed", marks=pytest.mark.slow),
    ],
)
@pytest.mark.each_sandbox
def test_faults_end_in_the_right_outcome_and_keep_what_was_measured(
    mini: Path,
    pytester: pytest.Pytester,
    edit: Edit,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    fault: str,
    outcome: str,
    pytest_outcome: str,
) -> None:
    timeout = 5 if fault == "stall" else 60
    edit("cases/alpha/test.yaml", "rubric: basic", f"rubric: basic\ntimeout_seconds: {timeout}")
    monkeypatch.setenv("SCYLLA_ORACLE_FAULT", fault)
    out = mini / "out"
    result = pytester.runpytest_subprocess(
        "cases", "-k", ALPHA, "-p", "no:xdist", *oracle, "--scylla-retries=2", f"--scylla-out={out}"
    )
    result.assert_outcomes(**{pytest_outcome: 1})
    assert "Traceback" not in result.stdout.str()
    rec = records(out)["alpha-T0-01-r1"]
    assert rec["outcome"] == outcome, rec["reason"]
    assert rec["api_calls"] >= 1
    assert (out / "runs/alpha-T0-01-r1/model_calls.jsonl").stat().st_size
    assert [c["name"] for c in rec.get("checks", [])] == ["runs"]  # judged on what it left
    if fault == "stall":
        assert 5 <= rec["timings"]["agent_s"] < 30
        assert rec["timed_out"] is True
    if fault == "crash":
        assert "killed by signal 9" in rec["reason"]
        assert rec["tokens"]["total_tokens"] > 0  # the call made before the crash is counted
    if fault == "overloaded":  # persistent: each call tried twice by the gateway, then failed
        assert {e["status"] for e in rec["infra_events"]} == {529}
        assert len(rec["infra_events"]) == 2 * rec["api_calls"]
        assert rec["api_calls"] == 3  # the CLI's own two retries
        result.stdout.fnmatch_lines(["*infra_error*"])
        # the tier's only run counts in no rate: said so, not a 0% like a model failure
        result.stdout.fnmatch_lines(["T0 * 0 * no counted runs * - * - * $0.0000 * -"])
    if fault == "rate-limited":  # each agent call: a 429, then the gateway's retry succeeds
        main = [c for c in calls(out, "alpha-T0-01-r1") if c["role"] == "main"]
        assert main
        assert {(c["status"], c.get("attempts")) for c in main} == {(200, 2)}
        assert all(e["retried_by_gateway"] for e in rec["infra_events"])
        assert rec["passed"] is True


@pytest.mark.parametrize("where", ["case", "option"])
@pytest.mark.each_sandbox
def test_the_run_budget_is_enforced_by_the_gateway(
    mini: Path, pytester: pytest.Pytester, edit: Edit, oracle: list[str], where: str
) -> None:
    if where == "case":
        edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\nmax_cost_usd: 0.01")
    out = mini / "out"
    option = ["--scylla-max-run-cost=0.01"] if where == "option" else []
    result = pytester.runpytest(
        "cases", "-k", ALPHA, "-p", "no:xdist", *oracle, f"--scylla-out={out}", *option
    )
    result.assert_outcomes(failed=1)
    rec = records(out)["alpha-T0-01-r1"]
    assert rec["outcome"] == "budget_exceeded"
    assert rec["budget"] == {"max_cost_usd": 0.01, "exceeded": True}
    assert rec["refused_calls"] >= 1
    assert rec["cost_usd"] >= 0.01
    logged = calls(out, "alpha-T0-01-r1")
    assert logged[0]["status"] == 200
    assert "budget" in logged[-1]["refused"]
    result.stdout.fnmatch_lines(["budget_exceeded: gateway refused calls over the run budget*"])


@pytest.mark.each_sandbox
def test_each_report_carries_its_run_record(every_item: Session) -> None:
    """On the controller, each run item's report carries its whole record (`scylla_record`)
    and a bounded summary as the JUnit property `scylla_run`, in the session of two workers
    above (the records travel from the workers)."""
    done = every_item
    assert done.outcomes == {"passed": len(MINI_ITEMS)}, done.output[-3000:]
    lines = [json.loads(line) for line in done.seen.read_text().splitlines()]
    seen, summaries = lines[::2], lines[1::2]
    on_disk = records(done.out)
    assert len(on_disk) == len(MINI_ITEMS)
    assert sorted(r["run_key"] for r in seen) == sorted(on_disk)
    for rec, summary in zip(seen, summaries, strict=True):
        assert rec == on_disk[rec["run_key"]]  # the whole record, at report.scylla_record
        # the JUnit property: a bounded summary pointing at the whole record
        assert len(json.dumps(summary)) < 1000 < len(json.dumps(rec))
        assert summary["record"] == f"runs/{rec['run_key']}/run.json"
        assert {k: summary[k] for k in ("run_key", "outcome", "score", "cost_usd")} == {
            k: rec[k] for k in ("run_key", "outcome", "score", "cost_usd")
        }


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--scylla-oracle", "--scylla-cli=/nonexistent/claude"],
            {},
            "setup: Claude Code CLI '/nonexistent/claude' not found on PATH; install it with*",
        ),
        (
            [],
            {"ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""},
            "setup: no model credential: set ANTHROPIC_API_KEY*--scylla-oracle*",
        ),
    ],
)
def test_setup_problems_are_one_clear_error(
    mini: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest("cases", "-p", "no:xdist", *args)
    result.stdout.fnmatch_lines([message])
    result.assert_outcomes(errors=1)  # the session stops after the first: no wall of errors
    assert "Traceback" not in result.stdout.str()


@pytest.mark.each_sandbox
def test_a_check_that_passed_on_the_source_and_fails_after_the_agent_is_a_regression(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: Edit
) -> None:
    """The checks run once per case on the untouched source (hidden files in place, in the
    runs' sandbox): a check passing there and failing after the agent is a regression, and a
    tier's CFP is the share of runs with one. `wrong` empties main.py; `solution` keeps a
    print in it; the task's own check fails on the source and is no regression either way."""
    edit(
        "cases/alpha/test.yaml",
        "solution: solution",
        "  - name: prints\n    run: [grep, -q, print, main.py]\nsolution: solution\n"
        "milestones: [prints, runs]",
    )
    found = {}
    for mode in ("wrong", "solution"):
        out = mini / mode
        done = pytester.runpytest(
            "cases",
            "-k",
            "alpha and T0-01",
            *workers(0),
            f"--scylla-oracle={mode}",
            *oracle[1:],
            f"--scylla-out={out}",
        )
        assert done.ret in (0, 1)
        (rec,) = records(out).values()
        assert rec["source_checks"] == {"runs": False, "prints": True}
        tier = json.loads((out / "summary.json").read_text())["tiers"][0]
        found[mode] = (
            rec["regressions"],
            tier["cfp"],
            tier["cfp_n"],
            rec["r_prog"],
            tier["r_prog"],
        )
        assert len(list((out / ".baselines").glob("alpha-*.json"))) == 1
    # R_Prog over the milestones [prints, runs]: wrong fails the first, solution passes both
    assert found == {"wrong": (["prints"], 1.0, 1, 0.0, 0.0), "solution": ([], 0.0, 1, 1.0, 1.0)}
