"""One run, start to finish: workspace, overlay, gateway route, sandboxed CLI, checks, judges,
record. Every outcome, including infrastructure failures and interruptions, ends in a written
`run.json`: nothing measured is dropped.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import statistics
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, cast

from pytest_scylla import __version__
from pytest_scylla.core import pricing, record
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.formats.provenance import Conditions
from pytest_scylla.judging import judge_run
from pytest_scylla.run import (
    account,
    agents,
    checks,
    hostile,
    integrity,
    mcp_install,
    overlay,
    source_checks,
    workspace,
)
from pytest_scylla.run.agents import Result, SetupError, claude_code, overlay_for
from pytest_scylla.run.baseline import delegates, expectation
from pytest_scylla.run.gateway import Route, allowlist
from pytest_scylla.run.gateway.oracle import Script, mode_for
from pytest_scylla.run.gateway.replay import recorded
from pytest_scylla.run.outcome import classify, costs, settle
from pytest_scylla.run.runtime import Runtime
from pytest_scylla.run.sandbox import Finished, SandboxError, base_env
from pytest_scylla.run.transcript import Capture

# what ends a run as an infra_error with the exception as its reason
SETUP_FAILURES = (workspace.WorkspaceError, mcp_install.InstallError, SetupError,
                  hostile.HostileDataError, OSError)


def timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def r_prog(milestones: tuple[str, ...], results: list[checks.CheckResult]) -> float | None:
    """The paper's fine-grained progress rate: the share of the case's ordered milestones
    reached, counting from the first up to the first one whose check failed. None without
    milestones."""
    if not milestones:
        return None
    passed = {r.name: r.passed for r in results}
    reached = next((i for i, name in enumerate(milestones) if not passed.get(name)),
                   len(milestones))
    return reached / len(milestones)


def _ttfts(log: Path) -> list[float]:
    """The time to first byte of each answered model call in a run's gateway log."""
    found = []
    with contextlib.suppress(OSError):
        for line in log.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                call = json.loads(line)
                if call.get("status") == 200 and isinstance(call.get("ttft_s"), (int, float)):
                    found.append(float(call["ttft_s"]))
    return found


class Run:
    """One run in progress, whose phases the item's fixtures drive: `provision` (the workspace,
    `scylla_workspace`), `act` (the agent and the checks, `scylla_run`), `judge` (the panel, in
    the test body), `finish` (the record) and `release` (the private folders). A phase that
    fails ends the run as an `infra_error`; an interruption marks it unfinished; every path
    writes `run.json`, so nothing measured is dropped. After `act` the record on disk says "not
    judged yet", so a session stopped before the panel keeps the agent's work for resume."""

    def __init__(self, spec: RunSpec, rt: Runtime, cond: Conditions) -> None:
        self.spec, self.rt, self.cond = spec, rt, cond
        self.run_dir = rt.run_dir(spec)
        self.began = time.monotonic()
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

    @property
    def workspace(self) -> Path | None:
        """The live workspace (until `release`); None when there is none."""
        path = self.private / "work" if self.private else None
        return path if path is not None and path.is_dir() else None

    @contextlib.contextmanager
    def _phase(self) -> Iterator[None]:
        """A setup failure ends the run as infra_error; an interruption marks it unfinished;
        either way the record is written."""
        try:
            yield
        except SETUP_FAILURES as exc:
            self.void = True
            self.record.update({"outcome": "infra_error", "passed": False,
                                "reason": f"{type(exc).__name__}: {exc}"})
            self.finish()
        except BaseException as exc:
            self.void = True
            self.record.update({"outcome": "infra_error", "passed": False,
                                "reason": f"interrupted ({type(exc).__name__}) before the run "
                                          "finished"})
            self.finish()
            raise

    def provision(self) -> None:
        """A fresh run folder, the workspace at the pinned commit, the overlay, the route."""
        if self.run_dir.exists():
            shutil.rmtree(self.run_dir)
        self.run_dir.mkdir(parents=True)
        self.private, self.harness = claim_private(), claim_private()
        (self.private / "tmp").mkdir()
        self.record = _identity(self)
        with self._phase():
            self.rt.sandbox.assign(self.private, self.rt.image(self.spec))
            self._ws, self._ov = _prepare(self, self.record)

    def act(self) -> None:
        """The agent in its sandbox, then what it left: diff, files, integrity, checks, and
        the outcome classified before judging. Writes the not-yet-judged record."""
        if self.void:
            return
        assert self._ws is not None
        assert self._ov is not None
        with self._phase():
            finished, stderr_tail = _agent(self, self._ov, self.record)
            _inspect(self, self.record, self._ws, self._ov, finished, stderr_tail)
            self._measure()
            outcome = self.record["classified"]["outcome"]
            if outcome == "infra_error":
                self.void = True
                settle(self.record, self.spec.case, outcome, self.record["classified"]["reason"])
            else:
                self.record.update({"outcome": "judge_error", "passed": False,
                                    "reason": NOT_JUDGED})
            self.finish()

    def rescore(self, stored: RunRecord, evidence: judge_run.Evidence) -> None:
        """Make this a stored run to be judged again (no workspace, no agent)."""
        self.record, self.evidence, self.rescoring = stored, evidence, True

    def judge(self) -> None:
        """The panel's verdict and the run's outcome (a void run is not worth a judge)."""
        if self.void or self.evidence is None:
            return
        classified = self.record.get("classified") or {"outcome": None, "reason": ""}
        try:
            self.record.update(judge_run.judge(self.spec.case, self.spec.key.folder,
                                               self.run_dir, self.rt, self.evidence))
        except BaseException:  # the agent's work stands: resume asks the judges again
            self.record.update({"outcome": "judge_error", "passed": False,
                                "reason": NOT_JUDGED})
            self.finish()
            raise
        settle(self.record, self.spec.case, classified["outcome"], classified["reason"])

    def _measure(self) -> None:
        """What the gateway measured of the agent, and its cost."""
        route = self.route
        if route is None:
            return
        self.rt.gateway.close(route.key)
        ttfts = _ttfts(self.run_dir / "model_calls.jsonl")
        if ttfts:  # time to the first byte of each answered call, as the gateway saw it
            self.timings["ttft_s"] = round(statistics.fmean(ttfts), 4)
            self.timings["ttft_first_s"] = ttfts[0]
        self.record.update({"usage": route.usage, "tokens": pricing.token_totals(route.usage),
                            "api_calls": route.calls, "refused_calls": route.refused,
                            "infra_events": route.infra,
                            "budget": {"max_cost_usd": route.max_cost_usd,
                                       "exceeded": route.budget_exceeded},
                            "models_refused": sorted(route.models_refused),
                            "ablation": route.ablation or {"checked": False}})
        self.record.update(costs(route, self.result))

    def finish(self) -> None:
        """Write the record as it stands (timings and, once, the gateway's measures)."""
        if not self.record:
            return
        if self.rescoring:  # the agent's timings stand
            record.write_json(self.run_dir / record.RECORD_FILE, self.record)
            return
        if "usage" not in self.record:
            self._measure()
        self.timings["total_s"] = round(time.monotonic() - self.began, 3)
        self.record["timings"] = dict(self.timings)
        self.record["finished_at"] = timestamp()
        record.write_json(self.run_dir / record.RECORD_FILE, self.record)

    def release(self) -> None:
        """The workspace kept (--scylla-keep-workspaces) or removed; the private folders go."""
        ws = self.workspace
        if ws is not None and self.rt.settings.keep_workspaces:
            shutil.move(str(ws), str(self.run_dir / "workspace"))
        if self.private is not None:
            self.rt.sandbox.close(self.private)
        for folder in (self.private, self.harness):
            if folder is not None:
                release_private(folder)
        self.private = self.harness = None


NOT_JUDGED = "not judged yet: the session stopped before the panel was asked"


def execute(spec: RunSpec, rt: Runtime, cond: Conditions) -> Run:
    """The built-in run of an item (not started: the fixtures drive its phases)."""
    return Run(spec, rt, cond)


def run_through(run: Run) -> RunRecord:
    """Every phase of a run in one go, outside pytest (benchmarks, tools): its record."""
    try:
        run.provision()
        run.act()
        run.judge()
        if not run.void:
            run.finish()
    finally:
        run.release()
    return run.record


def _identity(run: Run) -> RunRecord:
    spec, rt, cond = run.spec, run.rt, run.cond
    case, sub = spec.case, spec.subtest
    ident: RunRecord = {
        "schema": record.RECORD_SCHEMA, "run_key": spec.key.folder, "case": case.id,
        "category": case.category, "tier": sub.tier, "subtest": sub.ref,
        "subtest_name": sub.name, "run": spec.run, "agent": rt.agent.name,
        "cli_version": rt.cli_version_of(spec), "model": rt.model(spec),
        "oracle": rt.settings.oracle, "simulated": rt.settings.oracle is not None,
        "sandbox": rt.sandbox.name,
        "plugin_version": __version__, "started_at": timestamp(), "outcome": "infra_error",
        "passed": False, "reason": "", "exit_code": None,
        "pass_threshold": case.rubric.pass_threshold, "inputs": cond.inputs,
        "config_hash": cond.config_hash, "judge_hash": cond.judge_hash,
        "conditions": cond.config,
    }
    container = rt.sandbox.describe(rt.image(spec))
    if container:  # docker: the image and the limits
        ident["image"], ident["limits"] = container["image"], container["limits"]
        ident["transfer"] = container["transfer"]
    return ident


def _prepare(run: Run, rec: RunRecord) -> tuple[workspace.Workspace, overlay.Overlay]:
    """The workspace at the pinned commit, the tier overlay, the MCP config and the run's
    gateway route, which checks the ablation on the first request."""
    spec, rt = run.spec, run.rt
    case, sub = spec.case, spec.subtest
    assert run.private is not None
    assert run.harness is not None
    work = run.private / "work"
    ws = workspace.create(case, work, rt.settings.cache_dir, run.harness)
    declarations = {n: json.loads(rt.tiers.resource_path("mcp_servers", n).read_text("utf-8"))
                    for n in sub.mcp_servers}
    mcp = mcp_install.localize(overlay.mcp_config(sub, rt.tiers, work, run.private),
                               declarations, rt.settings.cache_dir)
    ov = overlay_for(rt.agent)(sub, rt.tiers, work, run.private, mcp)
    rec["source"] = {"repo": case.source.repo, "commit": case.source.commit,
                     "path": case.source.path.name if case.source.path else None,
                     "base_commit": ws.base_commit}
    rec["declared"] = ov.declared
    expected = expectation(ov, sub, rt.tiers, work, rt.baseline(spec))
    oracle = rt.settings.oracle
    script = (Script.for_case(mode_for(oracle, spec.key.folder), case.solution, work,
                              delegates(rt.tiers, sub), sub.skills, sub.mcp_servers)
              if oracle else None)
    if script is not None:
        rec["oracle_script"] = {"mode": script.mode, "delegates": list(script.delegates),
                                "files": [rel for rel, _ in script.files]}
    max_cost = rt.settings.max_run_cost
    run.route = rt.gateway.open(Route(
        key=f"{spec.key.folder}-{secrets.token_hex(8)}",
        log_path=run.run_dir / "model_calls.jsonl",
        upstream="oracle" if oracle else getattr(rt.agent, "upstream", "anthropic"),
        upstream_url=None if oracle else getattr(rt.agent, "upstream_url", None),
        max_cost_usd=max_cost if max_cost is not None else case.max_cost_usd,
        bodies_dir=run.run_dir / "bodies" if rt.settings.record_bodies else None,
        replay=recorded(rt.settings.replay, run.run_dir.name, "bodies"),
        private=run.private.name, models=allowlist.run_models(rt.agent, rt.model(spec)),
        script=script, expected=expected))
    return ws, ov


def _agent(run: Run, ov: overlay.Overlay, rec: RunRecord) -> tuple[Finished, str]:
    """The CLI in the sandbox, the prompt on stdin; its transcript parsed."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    assert run.private is not None
    cli = rt.sandbox.cli(rt.cli, rt.image(spec))
    argv = rt.agent.command(cli, rt.model(spec), spec.case.max_turns, ov.args)
    env = agents.environment(rt.agent, base_env(run.private), ov.env,
                             rt.sandbox.base_url(route.key), rt.model(spec))
    prompt = spec.case.prompt.read_text(encoding="utf-8")
    run.timings["setup_s"] = round(time.monotonic() - run.began, 3)
    transcript = run.run_dir / "transcript.jsonl"
    with Capture(transcript) as stdout, Capture(run.run_dir / "agent.stderr.txt") as stderr:
        finished = rt.sandbox.run(argv, run.private / "work", run.private, env, prompt,
                                  spec.case.timeout_seconds, cast("IO[bytes]", stdout),
                                  cast("IO[bytes]", stderr), bridge=True)
    rec["output_dropped"] = {"stdout": stdout.kept.dropped, "stderr": stderr.kept.dropped}
    rt.gateway.close(route.key)
    run.timings["agent_s"] = finished.seconds
    run.result = result = rt.agent.parse(transcript)
    # the gateway's account wins (the final message compared for Claude Code's own adapter)
    run.account = account.check(result, route.said, rt.agent.name == claude_code.NAME)
    with open(run.run_dir / "agent.stderr.txt", "rb") as err:
        err.seek(max(0, err.seek(0, 2) - 4096))  # the tail only, however much was written
        stderr_tail = err.read().decode(errors="replace")[-500:].strip()
    if finished.refused:  # docker copy: links out, escapes, devices the agent left behind
        rec["copy_refused"] = list(finished.refused)
    rec.update({"exit_code": finished.exit_code, "timed_out": finished.timed_out,
                "leftover_processes": finished.leftovers,
                "final_message": result.final_message, "num_turns": result.num_turns,
                "stop_reason": result.stop_reason, "terminal_reason": result.terminal_reason,
                "cli_result": result.to_json(), "cli_init": result.init,
                "trajectory": result.trajectory(rec.get("declared") or {})})
    return finished, stderr_tail


def _inspect(run: Run, rec: RunRecord, ws: workspace.Workspace, ov: overlay.Overlay,
             finished: Finished, stderr_tail: str) -> None:
    """What the agent left (diff, file list), the integrity of the pinned files, the checks on
    it in the sandbox, and the outcome as far as it is known before judging."""
    spec, rt, route = run.spec, run.rt, run.route
    assert route is not None
    assert run.private is not None
    work = run.private / "work"
    entries, cut = hostile.walk(work)
    diff = workspace.diff(ws, ov.written, entries)
    files = workspace.file_list(work, entries, cut)
    (run.run_dir / "diff.patch").write_text(diff, encoding="utf-8")
    (run.run_dir / "files.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
    check_began = time.monotonic()
    rec["integrity"] = [f.to_json() for f in integrity.secure(spec.case, ws.tree(), entries, cut)]
    rec["integrity"] += [f.to_json() for f in run.account]
    private = run.private

    def wrap(cmd: list[str]) -> list[str]:
        return rt.sandbox.wrap(cmd, work, private)

    fresh = run.private / f"checks-{secrets.token_hex(8)}"  # a name the agent could not guess
    execute = rt.sandbox.executor(private)

    def between(after: str) -> None:  # the agent's code ran: the next check's ground put back
        rec["integrity"] += [f.to_json() for f in integrity.recheck(spec.case, ws.tree(), after)]

    results = checks.run_checks(spec.case, work, base_env(run.private), fresh, wrap, execute,
                                rt.bytecode, between)
    run.timings["checks_s"] = round(time.monotonic() - check_began, 3)
    run.evidence = evidence = judge_run.Evidence(run.result.final_message, diff, files, results)
    rec.update({"checks": [r.to_json() for r in results],
                "check_items": evidence.check_rows(spec.case),
                "check_score": evidence.check_score(spec.case),
                "r_prog": r_prog(spec.case.milestones, results)})
    try:  # the same checks on the untouched source (once per case): what the agent broke
        before = source_checks.source_checks(rt, spec, run.run_dir.parent.parent)
    except (*SETUP_FAILURES, SandboxError, ValueError) as exc:  # the run stands without it
        rec.update({"regressions": None, "source_checks": None,
                    "source_checks_error": f"{type(exc).__name__}: {exc}"[:500]})
    else:
        rec.update({"source_checks": before, "regressions": source_checks.regressions(
            before, {r.name: r.passed for r in results})})
    outcome, reason = classify(finished, run.result, route, stderr_tail,
                               rt.sandbox.failed_to_start(stderr_tail))
    rec["classified"] = {"outcome": outcome, "reason": reason}  # before judging
