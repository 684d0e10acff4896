"""The steps of one run's phases, on the state the phases share (`RunState`): the record's
identity, the workspace and route prepared, the agent run in its sandbox, and what it left
inspected and checked. `runner.Run` drives them and writes the record."""

from __future__ import annotations

import json
import os
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from pytest_scylla import __version__
from pytest_scylla.core import record
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.formats.provenance import Conditions
from pytest_scylla.judging import judge_run
from pytest_scylla.operations import forfeit
from pytest_scylla.operations.cpu import CpuMeter
from pytest_scylla.operations.runtime import Runtime
from pytest_scylla.run import (
    account,
    agents,
    checks,
    hooks,
    hostile,
    integrity,
    mcp_install,
    overlay,
    pinned,
    source_checks,
    workspace,
)
from pytest_scylla.run.agents import Result, SetupError, claude_code, overlay_for
from pytest_scylla.run.baseline import delegates, expectation
from pytest_scylla.run.gateway import Route, allowlist
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway.oracle import effects as oracle_effects
from pytest_scylla.run.gateway.oracle.model import Script, mode_for
from pytest_scylla.run.gateway.replay import recorded
from pytest_scylla.run.outcome import bound_findings, classify
from pytest_scylla.run.sandbox import Finished, SandboxError, base_env
from pytest_scylla.run.transcript import Capture

# what ends a run as an infra_error with the exception as its reason
SETUP_FAILURES = (
    workspace.WorkspaceError,
    mcp_install.InstallError,
    SetupError,
    hostile.HostileDataError,
    oracle_effects.EffectsFileError,
    OSError,
)


def timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class RunState:
    """What one run holds while its phases go: its spec, folders, route, the agent's result,
    the record being written and the evidence for the judges."""

    def __init__(self, spec: RunSpec, rt: Runtime, cond: Conditions) -> None:
        self.spec, self.rt, self.cond = spec, rt, cond
        self.run_dir = rt.run_dir(spec)
        self.began = time.monotonic()
        self.cpu = CpuMeter()
        self.private: Path | None = None  # the agent's: workspace, HOME, TMPDIR
        self.harness: Path | None = None  # the harness's own (its git copy), never sandboxed
        self.route: Route | None = None
        self.result = Result()
        self.account: list[integrity.Finding] = []  # what `account.check` found in `result`
        self.timings: dict[str, float] = {}
        self.record: RunRecord = {}
        self.evidence: judge_run.Evidence | None = None
        self._ws: workspace.Workspace | None = None
        self._ov: overlay.Overlay | None = None
        self.void = False  # ended as an infra_error: nothing further is done
        self.rescoring = False  # a stored run scored again: its agent's record stands
        self.pin: pinned.Pin | None = None  # the workspace held by identity from before the agent

    @property
    def workspace(self) -> Path | None:
        """The live workspace (until `release`); None when there is none, or when the agent
        replaced it (`pinned`: the name is then not followed)."""
        if self.private is None or self.pin is None or self.pin.check():
            return None
        return self.private / "work"


def identity(run: RunState) -> RunRecord:
    """The record's opening fields: which run this is, and under which conditions."""
    spec, rt, cond = run.spec, run.rt, run.cond
    case, sub = spec.case, spec.subtest
    ident: RunRecord = {
        "schema": record.RECORD_SCHEMA,
        "run_key": spec.key.folder,
        "case": case.id,
        "category": case.category,
        "tier": sub.tier,
        "subtest": sub.ref,
        "subtest_name": sub.name,
        "run": spec.run,
        "agent": rt.agent.name,
        "cli_version": rt.cli_version_of(spec),
        "model": rt.model(spec),
        "oracle": rt.settings.oracle,
        "simulated": rt.settings.oracle is not None,
        "sandbox": rt.sandbox.name,
        "plugin_version": __version__,
        "started_at": timestamp(),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
        "outcome": Outcome.INFRA_ERROR,
        "passed": False,
        "reason": "",
        "exit_code": None,
        "pass_threshold": case.rubric.pass_threshold,
        "inputs": cond.inputs,
        "config_hash": cond.config_hash,
        "judge_hash": cond.judge_hash,
        "conditions": cond.config,
    }
    container = rt.sandbox.describe(rt.image(spec))
    if container:  # docker: the image and the limits
        ident["image"], ident["limits"] = container["image"], container["limits"]
        ident["transfer"] = container["transfer"]
    return ident


def prepare(run: RunState, rec: RunRecord) -> tuple[workspace.Workspace, overlay.Overlay]:
    """The workspace at the pinned commit, the tier overlay (folded into the commit the agent
    starts from, so its checkout is clean: `workspace.start`), the MCP config and the run's
    gateway route, which checks the ablation on the first request."""
    spec, rt = run.spec, run.rt
    case, sub = spec.case, spec.subtest
    assert run.private is not None
    assert run.harness is not None
    work = run.private / "work"
    task = workspace.checkout(case, work, rt.settings.cache_dir)
    mcp = _mcp_config(run, work)
    ov = overlay_for(rt.agent)(sub, rt.tiers, work, run.private, mcp)
    ws = workspace.start(work, task, run.harness)
    rec["source"] = {
        "repo": case.source.repo,
        "commit": case.source.commit,
        "path": case.source.path.name if case.source.path else None,
        "task_commit": ws.task_commit,  # the source as pinned, before the overlay
        "base_commit": ws.base_commit,  # what the agent started from (diffs are against it)
    }
    rec["declared"] = ov.declared
    if rt.agent.name == claude_code.NAME:  # the hooks as written, before the agent (`hooks`)
        rec["hooks"] = hooks.record(hooks.declared(work), [])
    expected = expectation(ov, sub, rt.tiers, work, rt.baseline(spec))
    _open_route(run, _oracle_script(run, work, rec), expected)
    run.pin = pinned.Pin(run.private, "work", copies_back=rec.get("transfer") == "copy")
    return ws, ov


def _mcp_config(run: RunState, work: Path) -> dict[str, Any]:
    """The subtest's MCP servers, declared by the tier set, installed from the cache."""
    assert run.private is not None
    sub, rt = run.spec.subtest, run.rt
    declarations = {
        n: json.loads(rt.tiers.resource_path("mcp_servers", n).read_text("utf-8"))
        for n in sub.mcp_servers
    }
    return mcp_install.localize(
        overlay.mcp_config(sub, rt.tiers, work, run.private), declarations, rt.settings.cache_dir
    )


def _oracle_script(run: RunState, work: Path, rec: RunRecord) -> Script | None:
    """The oracle's script for the run (None with a real model), noted in the record."""
    spec, rt = run.spec, run.rt
    oracle = rt.settings.oracle
    script = (
        Script.for_case(
            mode_for(oracle, spec.key.folder),
            spec.case.solution,
            work,
            delegates(rt.tiers, spec.subtest),
            spec.subtest.skills,
            spec.subtest.mcp_servers,
            oracle_effects.for_run(spec.key.folder),
        )
        if oracle
        else None
    )
    if script is not None:
        rec["oracle_script"] = {
            "mode": script.mode,
            "delegates": list(script.delegates),
            "files": [rel for rel, _ in script.files],
        }
    return script


def _open_route(run: RunState, script: Script | None, expected: ablation.Expected) -> None:
    """The run's route through the gateway: its upstream, budget, logs and allowed models."""
    spec, rt, case = run.spec, run.rt, run.spec.case
    assert run.private is not None
    oracle = rt.settings.oracle
    max_cost = rt.settings.max_run_cost
    run.route = rt.gateway.open(
        Route(
            key=f"{spec.key.folder}-{secrets.token_hex(8)}",
            log_path=run.run_dir / "model_calls.jsonl",
            upstream="oracle" if oracle else getattr(rt.agent, "upstream", "anthropic"),
            upstream_url=None if oracle else getattr(rt.agent, "upstream_url", None),
            max_cost_usd=max_cost if max_cost is not None else case.max_cost_usd,
            bodies_dir=run.run_dir / "bodies" if rt.settings.record_bodies else None,
            replay=recorded(rt.settings.replay, run.run_dir.name, "bodies"),
            private=run.private.name,
            models=allowlist.run_models(rt.agent, rt.model(spec)),
            script=script,
            expected=expected,
        )
    )


def run_agent(run: RunState, ov: overlay.Overlay, rec: RunRecord) -> tuple[Finished, str]:
    """The CLI in the sandbox, the prompt on stdin; its transcript parsed."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    assert run.private is not None
    cli = rt.sandbox.cli(rt.cli, rt.image(spec))
    argv = rt.agent.command(cli, rt.model(spec), spec.case.max_turns, ov.args)
    env = agents.environment(
        rt.agent, base_env(run.private), ov.env, rt.sandbox.base_url(route.key), rt.model(spec)
    )
    prompt = spec.case.prompt.read_text(encoding="utf-8")
    run.timings["setup_s"] = round(time.monotonic() - run.began, 3)
    transcript = run.run_dir / "transcript.jsonl"
    with (
        Capture(transcript) as stdout,
        Capture(run.run_dir / "agent.stderr.txt") as stderr,
        rt.starts.slot(route.called) as wait,
        run.cpu.agent(),
    ):
        run.timings["start_wait_s"] = wait.seconds  # for a free start slot (`starts`)
        if wait.note:  # started without one (every slot held too long, a link planted there)
            rec["start_note"] = wait.note
        finished = rt.sandbox.run(
            argv,
            run.private / "work",
            run.private,
            env,
            prompt,
            spec.case.timeout_seconds,
            cast("IO[bytes]", stdout),
            cast("IO[bytes]", stderr),
            bridge=True,
        )
    rec["output_dropped"] = {"stdout": stdout.kept.dropped, "stderr": stderr.kept.dropped}
    rt.gateway.close(route.key)
    run.timings["agent_s"] = finished.seconds
    run.result = result = rt.agent.parse(transcript)
    # the gateway's account wins (the final message compared for Claude Code's own adapter)
    run.account = account.check(result, route.said, rt.agent.name == claude_code.NAME)
    run.account += bound_findings(finished)  # docker copy: its relay, its copy-back
    with open(run.run_dir / "agent.stderr.txt", "rb") as err:
        err.seek(max(0, err.seek(0, 2) - 4096))  # the tail only, however much was written
        stderr_tail = err.read().decode(errors="replace")[-500:].strip()
    _agent_fields(rec, finished, result)
    return finished, stderr_tail


def _agent_fields(rec: RunRecord, finished: Finished, result: Result) -> None:
    """What the sandbox and the CLI said of the agent's run, in the record; the hooks the
    stream reported matched to those declared before it ran (informational: `run.hooks`)."""
    if finished.refused:  # docker copy: links out, escapes, devices the agent left behind
        rec["copy_refused"] = list(finished.refused)
    rec.update(
        {
            "exit_code": finished.exit_code,
            "timed_out": finished.timed_out,
            "leftover_processes": finished.leftovers,
            "final_message": result.final_message,
            "num_turns": result.num_turns,
            "stop_reason": result.stop_reason,
            "terminal_reason": result.terminal_reason,
            "cli_result": result.to_json(),
            "cli_init": result.init,
            "trajectory": result.trajectory(rec.get("declared") or {}),
        }
    )
    if "hooks" in rec:
        rec["hooks"] = hooks.record(rec["hooks"]["declared"], result.hook_events)


def inspect_work(
    run: RunState,
    rec: RunRecord,
    ws: workspace.Workspace,
    finished: Finished,
    stderr_tail: str,
) -> None:
    """What the agent left (diff, file list), the integrity of the pinned files, the checks on
    it in the sandbox, and the outcome as far as it is known before judging. Every step works
    on the workspace held from before the agent (`pinned`); a workspace the agent replaced
    fails the run, and nothing more is read from it (`forfeit`)."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    assert run.pin is not None
    outcome, reason = classify(
        finished, run.result, route, stderr_tail, rt.sandbox.failed_to_start(stderr_tail)
    )
    rec["classified"] = {"outcome": outcome, "reason": reason}  # before judging
    rec["integrity"] = [f.to_json() for f in run.account]
    if forfeit.replaced(run.pin, rec):  # in the agent's turn: no diff, scan, checks or judges
        forfeit.forfeit(spec, rec, [])  # (run.evidence stays None)
        return
    root = run.pin.root  # the workspace by its descriptor, whatever its name has become
    entries, cut = hostile.walk(root)
    diff = workspace.diff(ws, (), entries, root)  # the overlay is in ws.base_commit
    files = workspace.file_list(root, entries, cut)
    (run.run_dir / "diff.patch").write_text(diff, encoding="utf-8")
    (run.run_dir / "files.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
    results = _run_checks(run, rec, ws, entries, cut)
    if forfeit.replaced(run.pin, rec):  # by the agent's code, while a check ran
        forfeit.forfeit(spec, rec, results)
        return
    run.evidence = judge_run.Evidence(run.result.final_message, diff, files, results)
    rec.update(forfeit.check_fields(spec, results))
    _compare_with_source(run, rec, results)


def _run_checks(
    run: RunState, rec: RunRecord, ws: workspace.Workspace, entries: list[hostile.Entry], cut: bool
) -> list[checks.CheckResult]:
    """The integrity of the pinned files, then the case's checks in the sandbox (the ground
    put back between them); their time is the run's `checks_s`."""
    spec, rt, pin = run.spec, run.rt, run.pin
    assert run.private is not None
    assert pin is not None
    work = run.private / "work"  # the name, for the sandbox: checked before each check
    check_began = time.monotonic()
    found = integrity.secure(spec.case, ws.tree(pin.root), entries, cut)
    rec["integrity"] += [f.to_json() for f in found]
    private = run.private

    def wrap(cmd: list[str]) -> list[str]:
        return rt.sandbox.wrap(cmd, work, private)

    fresh = run.private / f"checks-{secrets.token_hex(8)}"  # a name the agent could not guess
    execute = rt.sandbox.executor(private)

    def between(after: str) -> None:  # the agent's code ran: the next check's ground put back
        if forfeit.replaced(pin, rec):  # (or the workspace itself swapped: no further check)
            raise checks.Halt
        tree = ws.tree(pin.root)
        rec["integrity"] += [f.to_json() for f in integrity.recheck(spec.case, tree, after)]

    results = checks.run_checks(
        spec.case, work, base_env(run.private), fresh, wrap, execute, rt.bytecode, between
    )
    run.timings["checks_s"] = round(time.monotonic() - check_began, 3)
    return results


def _compare_with_source(run: RunState, rec: RunRecord, results: list[checks.CheckResult]) -> None:
    """The same checks on the untouched source (once per case): what the agent broke."""
    try:
        before = source_checks.source_checks(run.rt, run.spec, run.run_dir.parent.parent)
    except (*SETUP_FAILURES, SandboxError, ValueError) as exc:  # the run stands without it
        rec.update(
            {
                "regressions": None,
                "source_checks": None,
                "source_checks_error": f"{type(exc).__name__}: {exc}"[:500],
            }
        )
    else:
        rec.update(
            {
                "source_checks": before,
                "regressions": source_checks.regressions(
                    before, {r.name: r.passed for r in results}
                ),
            }
        )
