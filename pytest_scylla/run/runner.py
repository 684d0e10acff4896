"""One run, start to finish: workspace, overlay, gateway route, sandboxed CLI, checks, judges,
record. Every outcome, including infrastructure failures and interruptions, ends in a written
`run.json`: nothing measured is dropped.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pytest_scylla import __version__
from pytest_scylla.core import pricing, record
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.tempdirs import claim_private
from pytest_scylla.formats.provenance import Conditions
from pytest_scylla.judging import judge_run
from pytest_scylla.run import checks, hostile, integrity, mcp_install, overlay, workspace
from pytest_scylla.run.agents import claude_code
from pytest_scylla.run.baseline import delegates, expectation
from pytest_scylla.run.gateway import Route
from pytest_scylla.run.gateway.oracle import Script, mode_for
from pytest_scylla.run.outcome import classify, costs, settle
from pytest_scylla.run.runtime import Runtime
from pytest_scylla.run.sandbox import Finished, base_env

# what ends a run as an infra_error with the exception as its reason
SETUP_FAILURES = (workspace.WorkspaceError, mcp_install.InstallError, claude_code.SetupError,
                  hostile.HostileDataError, OSError)


def timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Run:
    """One run in progress: where it lives and what has been measured so far."""

    spec: RunSpec
    rt: Runtime
    run_dir: Path
    private: Path  # the agent's: workspace, HOME, TMPDIR (writable in the sandbox)
    harness: Path  # the harness's own (its git copy), never inside the sandbox
    began: float = field(default_factory=time.monotonic)
    route: Route | None = None
    result: claude_code.Result = field(default_factory=claude_code.Result)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ws_path(self) -> Path:
        return self.private / "work"


def execute(spec: RunSpec, rt: Runtime, cond: Conditions) -> RunRecord:
    """Run one item under the given conditions; always returns (and writes) its record."""
    run_dir = rt.run_dir(spec)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    run = _Run(spec, rt, run_dir, claim_private(), claim_private())
    (run.private / "tmp").mkdir()
    rec = _identity(run, cond)
    try:
        ws, ov = _prepare(run, rec)
        finished, stderr_tail = _agent(run, ov, rec)
        _judge(run, rec, ws, ov, finished, stderr_tail)
    except SETUP_FAILURES as exc:
        rec.update({"outcome": "infra_error", "passed": False,
                    "reason": f"{type(exc).__name__}: {exc}"})
    except BaseException as exc:  # interrupted: keep what was measured, mark it unfinished
        rec.update({"outcome": "infra_error", "passed": False,
                    "reason": f"interrupted ({type(exc).__name__}) before the run finished"})
        raise
    finally:
        _finish(run, rec)
    return rec


def _identity(run: _Run, cond: Conditions) -> RunRecord:
    spec, rt = run.spec, run.rt
    case, sub = spec.case, spec.subtest
    return {
        "schema": record.RECORD_SCHEMA, "run_key": spec.key.folder, "case": case.id,
        "category": case.category, "tier": sub.tier, "subtest": sub.ref,
        "subtest_name": sub.name, "run": spec.run, "agent": claude_code.NAME,
        "cli_version": rt.cli_version, "model": rt.model(spec), "oracle": rt.settings.oracle,
        "simulated": rt.settings.oracle is not None, "sandbox": rt.sandbox.name,
        "plugin_version": __version__, "started_at": timestamp(), "outcome": "infra_error",
        "passed": False, "reason": "", "exit_code": None,
        "pass_threshold": case.rubric.pass_threshold, "inputs": cond.inputs,
        "config_hash": cond.config_hash, "judge_hash": cond.judge_hash,
    }


def _prepare(run: _Run, rec: RunRecord) -> tuple[workspace.Workspace, overlay.Overlay]:
    """The workspace at the pinned commit, the tier overlay, the MCP config and the run's
    gateway route, which checks the ablation on the first request."""
    spec, rt = run.spec, run.rt
    case, sub = spec.case, spec.subtest
    ws = workspace.create(case, run.ws_path, rt.settings.cache_dir, run.harness)
    ov = overlay.apply(sub, rt.tiers, run.ws_path, run.private)
    config_file = run.private / "mcp.json"
    declarations = {n: json.loads(rt.tiers.resource_path("mcp_servers", n).read_text("utf-8"))
                    for n in sub.mcp_servers}
    config = mcp_install.localize(json.loads(config_file.read_text("utf-8")), declarations,
                                  rt.settings.cache_dir)
    config_file.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    rec["source"] = {"repo": case.source.repo, "commit": case.source.commit,
                     "path": case.source.path.name if case.source.path else None,
                     "base_commit": ws.base_commit}
    rec["declared"] = ov.declared
    expected = expectation(ov, sub, rt.tiers, run.ws_path, rt.baseline(spec))
    oracle = rt.settings.oracle
    script = (Script.for_case(mode_for(oracle, spec.key.folder), case.solution, run.ws_path,
                              delegates(rt.tiers, sub)) if oracle else None)
    if script is not None:
        rec["oracle_script"] = {"mode": script.mode, "delegates": list(script.delegates),
                                "files": [rel for rel, _ in script.files]}
    max_cost = rt.settings.max_run_cost
    run.route = rt.gateway.open(Route(
        key=f"{spec.key.folder}-{secrets.token_hex(8)}",
        log_path=run.run_dir / "model_calls.jsonl", upstream="oracle" if oracle else "anthropic",
        max_cost_usd=max_cost if max_cost is not None else case.max_cost_usd,
        bodies_dir=run.run_dir / "bodies" if rt.settings.record_bodies else None,
        script=script, expected=expected))
    return ws, ov


def _agent(run: _Run, ov: overlay.Overlay, rec: RunRecord) -> tuple[Finished, str]:
    """The CLI in the sandbox, the prompt on stdin; its transcript parsed."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    argv = claude_code.command(rt.cli, rt.model(spec), spec.case.max_turns, ov.args)
    env = claude_code.environment(base_env(run.private), ov.env, rt.sandbox.base_url(route.key))
    prompt = spec.case.prompt.read_text(encoding="utf-8")
    run.timings["setup_s"] = round(time.monotonic() - run.began, 3)
    transcript = run.run_dir / "transcript.jsonl"
    with open(transcript, "wb") as out, open(run.run_dir / "agent.stderr.txt", "wb") as err:
        finished = rt.sandbox.run(argv, run.ws_path, run.private, env, prompt,
                                  spec.case.timeout_seconds, out, err, bridge=True)
    rt.gateway.close(route.key)
    run.timings["agent_s"] = finished.seconds
    run.result = result = claude_code.parse(transcript)
    with open(run.run_dir / "agent.stderr.txt", "rb") as err:
        err.seek(max(0, err.seek(0, 2) - 4096))  # the tail only, however much was written
        stderr_tail = err.read().decode(errors="replace")[-500:].strip()
    rec.update({"exit_code": finished.exit_code, "timed_out": finished.timed_out,
                "leftover_processes": finished.leftovers,
                "final_message": result.final_message, "num_turns": result.num_turns,
                "stop_reason": result.stop_reason, "terminal_reason": result.terminal_reason,
                "cli_result": result.to_json(), "cli_init": result.init})
    return finished, stderr_tail


def _judge(run: _Run, rec: RunRecord, ws: workspace.Workspace, ov: overlay.Overlay,
           finished: Finished, stderr_tail: str) -> None:
    """What the agent left (diff, file list), the checks on it in the sandbox, the outcome,
    and the panel's verdict unless the run is void."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    entries, cut = hostile.walk(run.ws_path)
    diff = workspace.diff(ws, ov.written, entries)
    files = workspace.file_list(run.ws_path, entries, cut)
    (run.run_dir / "diff.patch").write_text(diff, encoding="utf-8")
    (run.run_dir / "files.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
    check_began = time.monotonic()
    rec["integrity"] = [f.to_json() for f in integrity.secure(spec.case, ws.tree(), entries, cut)]

    def wrap(cmd: list[str]) -> list[str]:
        return rt.sandbox.wrap(cmd, run.ws_path, run.private)

    fresh = run.private / f"checks-{secrets.token_hex(8)}"  # a name the agent could not guess
    results = checks.run_checks(spec.case, run.ws_path, base_env(run.private), fresh, wrap)
    run.timings["checks_s"] = round(time.monotonic() - check_began, 3)
    evidence = judge_run.Evidence(run.result.final_message, diff, files, results)
    rec.update({"checks": [r.to_json() for r in results],
                "check_items": evidence.check_rows(spec.case),
                "check_score": evidence.check_score(spec.case)})
    outcome, reason = classify(finished, run.result, route, stderr_tail,
                               rt.sandbox.failed_to_start(stderr_tail))
    rec["classified"] = {"outcome": outcome, "reason": reason}  # before judging
    if outcome != "infra_error":  # a void run is not worth a judge's tokens
        rec.update(judge_run.judge(spec.case, spec.key.folder, run.run_dir, rt, evidence))
    settle(rec, spec.case, outcome, reason)


def _finish(run: _Run, rec: RunRecord) -> None:
    """What the gateway measured, timings, the workspace kept or removed, the record written."""
    route = run.route
    if route is not None:
        run.rt.gateway.close(route.key)
        rec.update({"usage": route.usage, "tokens": pricing.token_totals(route.usage),
                    "api_calls": route.calls, "refused_calls": route.refused,
                    "infra_events": route.infra,
                    "budget": {"max_cost_usd": route.max_cost_usd,
                               "exceeded": route.budget_exceeded},
                    "ablation": route.ablation or {"checked": False}})
        rec.update(costs(route, run.result))
    run.timings["total_s"] = round(time.monotonic() - run.began, 3)
    rec["timings"] = run.timings
    rec["finished_at"] = timestamp()
    if run.rt.settings.keep_workspaces and run.ws_path.exists():
        shutil.move(str(run.ws_path), str(run.run_dir / "workspace"))
    shutil.rmtree(run.private, ignore_errors=True)
    shutil.rmtree(run.harness, ignore_errors=True)
    record.write_json(run.run_dir / record.RECORD_FILE, rec)
