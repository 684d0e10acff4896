"""One run, start to finish: workspace, overlay, gateway route, sandboxed CLI, checks, record.

`Runtime` holds what a pytest process sets up once (gateway, sandbox, CLI, baseline); `execute`
runs one item and returns its record. Every outcome, including infrastructure failures, ends in a
written `run.json`: nothing measured is dropped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_scylla import __version__
from pytest_scylla.core import pricing, record
from pytest_scylla.core.tempdirs import claim_private
from pytest_scylla.formats import provenance
from pytest_scylla.formats.spec import Case, RubricItem
from pytest_scylla.formats.tiers import Subtest, TierSet, front_matter
from pytest_scylla.judging import JudgeSpec, judge_run
from pytest_scylla.operations.ledger import Ledger
from pytest_scylla.run import checks, mcp_install, overlay, workspace
from pytest_scylla.run.agents import claude_code
from pytest_scylla.run.gateway import Gateway, Route, ablation
from pytest_scylla.run.gateway.oracle import Script, mode_for
from pytest_scylla.run.sandbox import Sandbox

COST_TOLERANCE = 0.02  # relative difference between gateway and CLI cost that is still "agreeing"


def timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def slug(case: Case, sub: Subtest, run: int) -> str:
    """The run's folder and gateway name: `test-001-T5-02-r3`."""
    return f"{case.id}-{sub.ref}-r{run}"


@dataclass
class Runtime:
    """What one pytest process sets up once and every run shares."""

    out: Path
    cache_dir: Path
    tiers: TierSet
    gateway: Gateway
    sandbox: Sandbox
    cli: Path
    cli_version: str
    model: str
    oracle: str | None
    keep_workspaces: bool = False
    record_bodies: bool = False
    judges: tuple[JudgeSpec, ...] = ()
    min_judges: int = 2
    fresh: bool = False
    rejudge: bool = False
    budget_usd: float | None = None
    max_run_cost: float | None = None  # overrides every case's max_cost_usd
    max_pause: float = 21600.0
    ledger: Ledger | None = None
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)

    def baseline(self, sub: Subtest) -> dict[str, Any]:
        """The baseline for the subtest's tool configuration."""
        return self.baseline_for(sub.tools_allow, tuple(sorted(sub.tools_deny)))

    def baseline_for(self, allow: tuple[str, ...] | None, deny: tuple[str, ...]
                     ) -> dict[str, Any]:
        """The baseline of a tool configuration, measured once per process (and on disk)."""
        key = json.dumps([allow, deny])
        if key not in self.baselines:
            self.baselines[key] = measure_baseline(self, allow, deny)
        return self.baselines[key]


def base_env(private: Path) -> dict[str, str]:
    """The environment every sandboxed process starts from: nothing of the user's own."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", os.defpath)
    return {"PATH": os.pathsep.join([bindir, path]), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "TERM": "dumb", "USER": os.environ.get("USER", "scylla"), "HOME": str(private / "home"),
            "TMPDIR": str(private / "tmp"), "NO_COLOR": "1"}


# ---------------------------------------------------------------------------------------------
# the ablation expectation


def measure_baseline(rt: Runtime, allow: tuple[str, ...] | None = None,
                     deny: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the CLI brings with nothing declared but a tool configuration: its built-in tools,
    skills and agents and the size of its default system prompt. (The tool configuration matters:
    this CLI offers Glob and Grep when Bash is denied, and lists skills only with the Skill tool.)
    Measured once per CLI version, sandbox and tool configuration, cached on disk; the gateway
    answers the single call itself, so it costs nothing."""
    tools_key = hashlib.sha256(json.dumps([allow, list(deny)]).encode()).hexdigest()[:10]
    cache = rt.cache_dir / (f"baseline-{claude_code.NAME}-{_safe(rt.cli_version)}-"
                            f"{rt.sandbox.name}-{tools_key}.json")
    with workspace.locked(rt.cache_dir / "baseline.lock"):
        if cache.exists():
            return _baseline(json.loads(cache.read_text(encoding="utf-8")))
        private = Path(tempfile.mkdtemp(prefix="scylla-baseline-"))
        try:
            ws = private / "work"
            ws.mkdir()
            (ws / "README.md").write_text("baseline\n", encoding="utf-8")
            workspace.git(["init", "-q"], ws)
            workspace.git(["add", "-A"], ws)
            workspace.git(["commit", "-q", "-m", "baseline"], ws)
            (private / "home" / ".claude").mkdir(parents=True)
            (private / "tmp").mkdir()
            (private / "mcp.json").write_text('{"mcpServers": {}}\n', encoding="utf-8")
            flags: tuple[str, ...] = ("--mcp-config", str(private / "mcp.json"),
                                      "--strict-mcp-config")
            if allow is not None:
                flags += ("--tools", ",".join(allow))
            if deny:
                (ws / ".claude").mkdir()
                (ws / ".claude" / "settings.json").write_text(json.dumps(
                    {"permissions": {"deny": list(deny)}}), encoding="utf-8")
            key = f"baseline-{secrets.token_hex(4)}"
            route = rt.gateway.open(Route(key=key, log_path=private / "calls.jsonl",
                                          script=Script.for_case("noop", None, ws),
                                          capture_first=True))
            env = claude_code.environment(base_env(private), {
                "HOME": str(private / "home"),
                "CLAUDE_CONFIG_DIR": str(private / "home" / ".claude")},
                rt.sandbox.base_url(key))
            argv = claude_code.command(rt.cli, rt.model, 1, flags)
            with open(private / "out.jsonl", "wb") as out, open(private / "err.txt", "wb") as err:
                finished = rt.sandbox.run(argv, ws, private, env, "Say OK.", 120, out, err,
                                          bridge=True)
            rt.gateway.close(key)
            if not route.first_request:
                said = claude_code.parse(private / "out.jsonl").final_message
                raise claude_code.SetupError(
                    f"could not measure the CLI's baseline request (exit {finished.exit_code}): "
                    + (said or (private / "err.txt").read_text(errors="replace")[-500:]))
            data = {"cli_version": rt.cli_version, "sandbox": rt.sandbox.name,
                    "measured_at": timestamp(), "request": route.first_request}
            record.write_json(cache, data)
            return _baseline(data)
        finally:
            shutil.rmtree(private, ignore_errors=True)


def _baseline(data: dict[str, Any]) -> dict[str, Any]:
    """The built-ins of a stored baseline request (parsed on load, so the parser can improve)."""
    seen = ablation.observe(data["request"])
    return {"cli_version": data["cli_version"], "tools": sorted(seen.tools),
            "skills": sorted(seen.skills), "agents": sorted(seen.agents),
            "system_chars": len(seen.system)}


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-" else "_" for c in text)[:60]


def expectation(ov: overlay.Overlay, sub: Subtest, tiers: TierSet, ws: Path,
                baseline: dict[str, Any]) -> ablation.Expected:
    declared = ov.declared
    tools = set(baseline["tools"])
    blocks_dir = tiers.dir / "blocks"
    library = sorted(p.stem for p in blocks_dir.glob("*.md")) if blocks_dir.is_dir() else []
    prompt = sub.system_prompt
    return ablation.Expected(
        tools=frozenset(tools), mcp_servers=frozenset(declared["mcp_servers"]),
        skills=frozenset(baseline["skills"]) | frozenset(declared["skills"]),
        agents=frozenset(baseline["agents"]) | frozenset(declared["agents"]),
        tools_allow=(frozenset(declared["tools_allow"]) if declared["tools_allow"] is not None
                     else None),
        tools_deny=frozenset(declared["tools_deny"]),
        claude_md_path=str(ws / "CLAUDE.md"),
        claude_md_blocks=tuple((b, tiers.resource_path("claude_md", b).read_text("utf-8"))
                               for b in declared["claude_md"]),
        other_blocks=tuple((b, tiers.resource_path("claude_md", b).read_text("utf-8"))
                           for b in library if b not in declared["claude_md"]),
        descriptions=tuple(_description(tiers, kind, name) for kind in ("skills", "agents")
                           for name in declared[kind]),
        system_mode=declared["system_prompt"],
        system_text=(prompt.file.read_text("utf-8") if prompt is not None
                     and prompt.file is not None else None),
        default_system_chars=int(baseline["system_chars"]))


def delegates(tiers: TierSet, sub: Subtest) -> tuple[str, ...]:
    """Whom the oracle hands the work to, so sub-agent paths run for real: an orchestrator
    (an agent with the Agent tool) if the subtest has one, then an agent that can write."""
    def tools(name: str) -> set[str] | None:
        meta, _, _ = front_matter(tiers.resource_path("agents", name))
        raw = (meta or {}).get("tools")
        return None if raw is None else {t.strip() for t in str(raw).split(",")}

    lead = next((a for a in sub.agents if "Agent" in (tools(a) or set())), None)
    writer = next((a for a in sub.agents if tools(a) is None or "Write" in (tools(a) or set())),
                  None)
    return tuple(a for a in (lead, writer) if a)


def _description(tiers: TierSet, kind: str, name: str) -> tuple[str, str]:
    meta, _, _ = front_matter(tiers.resource_path(kind, name))  # type: ignore[arg-type]
    return name, str((meta or {}).get("description", ""))


# ---------------------------------------------------------------------------------------------
# scoring from checks (until the judge panel exists)


def check_items(case: Case, results: list[checks.CheckResult]) -> list[dict[str, Any]]:
    by_name = {r.name: r for r in results}
    items: list[RubricItem] = [i for i in case.rubric.items if i.kind == "check"]
    rows = []
    for item in items:
        result = by_name.get(item.check or "")
        met = bool(result and result.passed)
        rows.append({"id": item.id, "category": item.category, "check": item.check,
                     "points": item.points, "achieved": item.points if met else 0.0,
                     "required": item.required, "met": met})
    return rows


def check_score(rows: list[dict[str, Any]]) -> float | None:
    """The share of check-item points achieved (None without check items)."""
    total = sum(r["points"] for r in rows)
    return sum(r["achieved"] for r in rows) / total if total else None


# ---------------------------------------------------------------------------------------------
# one run


def subtest_conditions(sub: Subtest, tiers: TierSet) -> dict[str, Any]:
    """The resolved subtest as it reaches the CLI (where it is written down left out)."""
    fields = dataclasses.asdict(sub)
    for name in ("file", "line", "description", "extends", "name"):
        fields.pop(name, None)
    if sub.system_prompt is not None:
        prompt = sub.system_prompt.file
        fields["system_prompt"] = {
            "mode": sub.system_prompt.mode,
            "file": None if prompt is None else provenance.content_hash(tiers.dir / prompt)}
    return fields


def config_hash(case: Case, sub: Subtest, model: str, rt: Runtime) -> str:
    """A short hash of everything that decides how the agent's run goes (not its outcome, not
    its scoring): the content of its inputs (`provenance.run_inputs`), the resolved subtest,
    model, CLI version, oracle mode, sandbox, limits. No paths: the same conditions hash the
    same in every run and on every machine. Resume compares it."""
    parts = {
        "inputs": provenance.run_inputs(case, sub, rt.tiers),
        "subtest": subtest_conditions(sub, rt.tiers), "model": model, "cli": rt.cli_version,
        "oracle": rt.oracle, "sandbox": rt.sandbox.name, "max_turns": case.max_turns,
        "timeout": case.timeout_seconds, "plugin": __version__}
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def judge_hash(case: Case, rt: Runtime) -> str:
    """A short hash of what decides a run's scoring: the rubric's content and the panel."""
    parts = {"rubric": provenance.content_hash(case.rubric.path),
             "judges": [j.label for j in rt.judges], "min_judges": rt.min_judges,
             "oracle": rt.oracle}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def settle(rec: dict[str, Any], case: Case, outcome: str | None, reason: str) -> None:
    """The run's outcome: the one `classify` gave (timeout, agent_error, ...), else the panel's
    (pass, fail, or judge_error without enough valid judges)."""
    if outcome is None and rec.get("consensus") is None:
        outcome, reason = "judge_error", (
            f"only {rec['valid_judges']} valid judge(s), {rec['min_judges']} needed: "
            + "; ".join(f"{j['judge_model']}: {j['errors'][-1] if j['errors'] else '?'}"
                        for j in rec["judges"] if not j["valid"]))
    elif outcome is None:
        passed = rec["consensus"]["passed"]
        outcome = "pass" if passed else "fail"
        reason = "" if passed else judge_run.judged_reason(rec, case.rubric.pass_threshold)
    rec.update(outcome=outcome, passed=outcome == "pass", reason=reason)


def classify(finished: Any, result: claude_code.Result, route: Route,
             stderr_tail: str) -> tuple[str | None, str]:
    """(outcome, reason) for runs that are not judged normally; (None, '') to judge them."""
    if route.ablation_failed():
        assert route.ablation is not None
        return "infra_error", "ablation check failed: " + "; ".join(route.ablation["problems"])
    if finished.timed_out:
        return "timeout", f"agent killed at the case timeout ({finished.seconds:.0f}s)"
    if route.budget_exceeded:
        return "budget_exceeded", (f"gateway refused calls over the run budget "
                                   f"${route.max_cost_usd:.2f}")
    ended_well = finished.exit_code == 0 and result.found and not result.is_error
    if ended_well or result.subtype == "error_max_turns":
        return None, ""
    if route.infra:
        last = route.infra[-1]
        return "infra_error", (f"upstream failure: {len(route.infra)} call(s) failed, last "
                               f"status {last['status']} retry-after {last['retry_after']} "
                               f"({last['detail']})")
    code = finished.exit_code
    what = (f"killed by signal {code - 128}" if code is not None and code > 128
            else f"exit code {code}")
    if not result.found:
        return "agent_error", f"CLI ended without a result ({what}): {stderr_tail}"
    return "agent_error", (f"CLI reported an error ({what}, {result.subtype}): "
                           f"{result.final_message[:300]}")


def costs(route: Route, result: claude_code.Result) -> dict[str, Any]:
    gateway_cost = round(route.spent_usd, 6) if route.usage else None
    cli_cost = result.total_cost_usd
    cost: float | None
    if gateway_cost is not None and not route.unpriced_models:
        cost, source = gateway_cost, "gateway"
    elif cli_cost is not None:
        cost, source = cli_cost, "cli"
    else:
        cost, source = gateway_cost, "unknown"
    agree = None
    if gateway_cost is not None and cli_cost is not None:
        agree = abs(gateway_cost - cli_cost) <= COST_TOLERANCE * max(cli_cost, gateway_cost, 1e-9)
    return {"cost_usd": cost, "cost_source": source, "gateway_cost_usd": gateway_cost,
            "cli_cost_usd": cli_cost, "costs_agree": agree,
            "unpriced_models": sorted(route.unpriced_models),
            "prices_as_of": pricing.PRICES_AS_OF}


def execute(case: Case, sub: Subtest, run: int, rt: Runtime) -> dict[str, Any]:
    """Run one item; always returns (and writes) its record."""
    began = time.monotonic()
    key = slug(case, sub, run)
    run_dir = rt.out / "runs" / key
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    private = claim_private()
    ws_path = private / "work"
    (private / "tmp").mkdir()
    model = sub.model or rt.model
    rec: dict[str, Any] = {
        "schema": record.RECORD_SCHEMA, "run_key": key, "case": case.id,
        "category": case.category, "tier": sub.tier, "subtest": sub.ref,
        "subtest_name": sub.name, "run": run, "agent": claude_code.NAME,
        "cli_version": rt.cli_version, "model": model, "oracle": rt.oracle,
        "simulated": rt.oracle is not None, "sandbox": rt.sandbox.name,
        "plugin_version": __version__, "started_at": timestamp(), "outcome": "infra_error",
        "passed": False, "reason": "", "exit_code": None,
        "pass_threshold": case.rubric.pass_threshold,
    }
    route: Route | None = None
    result = claude_code.Result()
    timings: dict[str, float] = {}
    try:
        ws = workspace.create(case, ws_path, rt.cache_dir)
        ov = overlay.apply(sub, rt.tiers, ws_path, private)
        config_file = private / "mcp.json"
        declarations = {n: json.loads(rt.tiers.resource_path("mcp_servers", n).read_text("utf-8"))
                        for n in sub.mcp_servers}
        config = mcp_install.localize(json.loads(config_file.read_text("utf-8")), declarations,
                                      rt.cache_dir)
        config_file.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        rec["inputs"] = provenance.input_hashes(case, sub, rt.tiers)
        rec["source"] = {"repo": case.source.repo, "commit": case.source.commit,
                         "path": case.source.path.name if case.source.path else None,
                         "base_commit": ws.base_commit}
        rec["config_hash"] = config_hash(case, sub, model, rt)
        rec["judge_hash"] = judge_hash(case, rt)
        rec["declared"] = ov.declared
        expected = expectation(ov, sub, rt.tiers, ws_path, rt.baseline(sub))
        script = (Script.for_case(mode_for(rt.oracle, key), case.solution, ws_path,
                                  delegates(rt.tiers, sub)) if rt.oracle else None)
        if script is not None:
            rec["oracle_script"] = {"mode": script.mode, "delegates": list(script.delegates),
                                    "files": [rel for rel, _ in script.files]}
        route = rt.gateway.open(Route(
            key=f"{key}-{secrets.token_hex(3)}", log_path=run_dir / "model_calls.jsonl",
            upstream="oracle" if rt.oracle else "anthropic",
            max_cost_usd=rt.max_run_cost if rt.max_run_cost is not None else case.max_cost_usd,
            bodies_dir=run_dir / "bodies" if rt.record_bodies else None, script=script,
            expected=expected))
        argv = claude_code.command(rt.cli, model, case.max_turns, ov.args)
        env = claude_code.environment(base_env(private), ov.env, rt.sandbox.base_url(route.key))
        prompt = case.prompt.read_text(encoding="utf-8")
        timings["setup_s"] = round(time.monotonic() - began, 3)
        transcript = run_dir / "transcript.jsonl"
        with open(transcript, "wb") as out, open(run_dir / "agent.stderr.txt", "wb") as err:
            finished = rt.sandbox.run(argv, ws_path, private, env, prompt, case.timeout_seconds,
                                      out, err, bridge=True)
        rt.gateway.close(route.key)
        timings["agent_s"] = finished.seconds
        result = claude_code.parse(transcript)
        stderr_tail = (run_dir / "agent.stderr.txt").read_text(errors="replace")[-500:].strip()
        rec.update(exit_code=finished.exit_code, timed_out=finished.timed_out,
                   final_message=result.final_message, num_turns=result.num_turns,
                   stop_reason=result.stop_reason, terminal_reason=result.terminal_reason,
                   cli_result=result.to_json(), cli_init=result.init)

        diff = workspace.diff(ws, exclude=ov.written)
        files = workspace.file_list(ws_path)
        (run_dir / "diff.patch").write_text(diff, encoding="utf-8")
        (run_dir / "files.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
        check_began = time.monotonic()

        def wrap(cmd: list[str]) -> list[str]:
            return rt.sandbox.wrap(cmd, ws_path, private)

        results = checks.run_checks(case, ws_path, base_env(private), wrap)
        timings["checks_s"] = round(time.monotonic() - check_began, 3)
        rows = check_items(case, results)
        rec.update(checks=[r.to_json() for r in results], check_items=rows,
                   check_score=check_score(rows))
        outcome, reason = classify(finished, result, route, stderr_tail)
        rec["classified"] = {"outcome": outcome, "reason": reason}  # before judging
        if outcome != "infra_error":  # a void run is not worth a judge's tokens
            rec.update(judge_run.judge(case, key, run_dir, rt, result.final_message, diff, files,
                             results, rows))
        settle(rec, case, outcome, reason)
    except (workspace.WorkspaceError, mcp_install.InstallError, claude_code.SetupError,
            OSError) as exc:
        rec.update(outcome="infra_error", passed=False, reason=f"{type(exc).__name__}: {exc}")
    except BaseException as exc:  # interrupted: keep what was measured, mark it unfinished
        rec.update(outcome="infra_error", passed=False,
                   reason=f"interrupted ({type(exc).__name__}) before the run finished")
        raise
    finally:
        if route is not None:
            rt.gateway.close(route.key)
            rec.update(usage=route.usage, tokens=pricing.token_totals(route.usage),
                       api_calls=route.calls,
                       refused_calls=route.refused, infra_events=route.infra,
                       budget={"max_cost_usd": route.max_cost_usd,
                               "exceeded": route.budget_exceeded},
                       ablation=route.ablation or {"checked": False})
            rec.update(costs(route, result))
        timings["total_s"] = round(time.monotonic() - began, 3)
        rec["timings"] = timings
        rec["finished_at"] = timestamp()
        if rt.keep_workspaces and ws_path.exists():
            shutil.move(str(ws_path), str(run_dir / "workspace"))
        shutil.rmtree(private, ignore_errors=True)
        record.write_json(run_dir / record.RECORD_FILE, rec)
    return rec
