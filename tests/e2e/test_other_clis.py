"""Codex, Gemini CLI and opencode through the same tiers, end to end with the real binaries and
the oracle speaking each one's wire format (OpenAI Responses, Gemini streamGenerateContent, Chat
Completions): the
subtests a CLI can express pass with the ablation check holding (its instructions file, skills
in its own home, appended instructions where it has them), the ones it cannot are collected as
skipped with the reason, and the check fails on a real request that lost a declared part.

Here the sessions; the in-process tests are in `tests/unit/run/agents/test_other_clis.py`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.agents import claude_code, codex, gemini_cli, opencode, unsupported
from pytest_scylla.run.gateway import reached as ablation

from ..conftest import FIXTURES, needs_bwrap, require, shipped_session, workers
from ..support.docs import docs_page

CLIS: dict[str, dict[str, Any]] = {
    "codex": {
        "module": codex,
        "package": "@openai/codex",
        "binary": "codex",
        "passed": ["T0-01", "T0-02", "T1-01", "T5-01"],
        "tool": "exec_command",
        "endpoint": "/responses",
        "model": "gpt-5",
        "instructions": "AGENTS.md",
        "skipped": {
            "T0-00": "Codex refuses an empty system prompt",
            "T1-02": "Codex has no sub-agents declared by file",
            "T5-02": "Codex has no sub-agents declared by file",
        },
    },
    "gemini-cli": {
        "module": gemini_cli,
        "package": "@google/gemini-cli",
        "binary": "gemini",
        "passed": ["T0-01", "T1-01", "T1-02"],
        "tool": "write_file",
        "endpoint": "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        "model": "gemini-2.5-pro",
        "instructions": "GEMINI.md",
        "skipped": {
            "T0-00": "Gemini CLI has no 'none' system prompt mode",
            "T0-02": "Gemini CLI has no 'append' system prompt mode",
            "T5-01": "Gemini CLI has no 'append' system prompt mode",
            "T5-02": "Gemini CLI has no 'append' system prompt mode",
        },
    },
    "opencode": {
        "module": opencode,
        "package": "opencode-ai",
        "binary": "opencode",
        "passed": ["T0-01", "T1-01", "T1-02"],
        "tool": "bash",
        "endpoint": "/chat/completions",
        "model": "gpt-5",
        "instructions": "AGENTS.md",
        "skipped": {
            "T0-00": "opencode has no 'none' system prompt mode",
            "T0-02": "opencode has no 'append' system prompt mode",
            "T5-01": "opencode has no 'append' system prompt mode",
            "T5-02": "opencode has no 'append' system prompt mode",
        },
    },
}
CONFIG = {
    "codex": "config.toml",
    "gemini-cli": ".gemini/settings.json",  # what the harness
    "opencode": ".config/opencode/package.json",
}  # wrote for the CLI, in its home


def _needs(agent: str) -> None:
    cli = CLIS[agent]
    if shutil.which(cli["binary"]) is None:
        require(
            f"the {agent} CLI is not on PATH (npm install -g "
            f"{cli['package']}@{cli['module'].PINNED_VERSION})"
        )


@pytest.fixture(scope="module", params=sorted(CLIS))
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, str]:
    """One session of case alpha under a CLI with bodies recorded: the CLI, the experiment
    folder and the session's output (shared by the tests that read them)."""
    agent: str = request.param
    _needs(agent)
    root = tmp_path_factory.mktemp(agent)
    shutil.copytree(FIXTURES / "mini", root, dirs_exist_ok=True)
    cache = tmp_path_factory.getbasetemp() / "scylla-cache"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-p",
            "no:cacheprovider",
            *workers(0),
            "--scylla-oracle",
            f"--scylla-cache-dir={cache}",
            f"--scylla-agent={agent}",
            "-rs",
            "-k",
            "alpha",
            "--scylla-record-bodies",
            f"--scylla-out={root / 'out'}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return agent, root, done.stdout + done.stderr


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {
        json.loads(p.read_text())["subtest"]: json.loads(p.read_text())
        for p in out.glob("runs/*/run.json")
    }


@pytest.mark.slow  # a session per CLI (~15-45 s); the default suite runs each CLI
# in its hostile-agent test, the slow tier every shipped subtest under it
def test_a_cli_runs_the_subtests_it_can_express(session: tuple[str, Path, str]) -> None:
    agent, root, said = session
    cli = CLIS[agent]
    assert f"{len(cli['passed'])} passed, {len(cli['skipped'])} skipped" in said, said[-3000:]
    for why in cli["skipped"].values():  # each not-applicable subtest is listed with its reason
        assert f"not applicable to {agent}: {why}" in said
    recs = _records(root / "out")
    assert sorted(recs) == cli["passed"]
    for ref, rec in recs.items():
        assert (rec["agent"], rec["outcome"], rec["model"]) == (agent, "pass", cli["model"]), ref
        assert (rec["ablation"]["checked"], rec["ablation"]["problems"]) == (True, []), ref
        assert rec["cost_source"] == "gateway"
        assert rec["cost_usd"] > 0
        assert rec["cli_result"]["usage"]["input_tokens"] > 0  # read from the transcript
        assert rec["trajectory"]["per_tool"] == {cli["tool"]: 1}  # the write, as the CLI has it
        assert rec["final_message"].startswith("Done.")
        calls = (root / "out" / "runs" / rec["run_key"] / "model_calls.jsonl").read_text()
        assert {json.loads(c)["endpoint"] for c in calls.splitlines()} == {cli["endpoint"]}
    observed = {ref: rec["ablation"]["observed"] for ref, rec in recs.items()}
    if "T0-02" in observed:
        assert [Path(p).name for p in observed["T0-02"]["claude_md_files"]] == [cli["instructions"]]
    assert observed["T0-01"]["claude_md_files"] == []
    assert "review" in observed["T1-01"]["skills"]
    assert "review" not in observed["T0-01"]["skills"]
    if "T1-02" in observed:  # the sub-agent, as the CLI lists it to the model
        assert "helper" in observed["T1-02"]["agents"]
        assert "helper" not in observed["T1-01"]["agents"]


def _without(value: Any, dropped: str) -> Any:
    """A request without the text parts that start with `dropped`, and without `dropped` among
    any list's choices or in a Gemini skills listing (a skill name)."""
    if isinstance(value, dict):
        return {k: _without(v, dropped) for k, v in value.items()}
    if isinstance(value, list):
        return [
            _without(v, dropped)
            for v in value
            if v != dropped
            and not (isinstance(v, dict) and str(v.get("text", "")).startswith(dropped))
        ]
    if isinstance(value, str):
        return value.replace(f"<name>{dropped}</name>", "<name>other</name>").replace(
            f"- {dropped}: ", "- other: "
        )
    return value


@pytest.mark.slow  # a session per CLI (~15-45 s); the default suite runs each CLI
# in its hostile-agent test, the slow tier every shipped subtest under it
def test_the_ablation_check_reads_a_real_request(session: tuple[str, Path, str]) -> None:
    """The first request of T1-01 (and of T0-02 where it runs) as the CLI sent it passes the
    check; the same request without the declared skill, the instructions file or the appended
    instructions fails it (negative controls)."""
    agent, root, _ = session
    request = json.loads(
        (root / "out" / "runs" / "alpha-T1-01-r1" / "bodies" / "0001.request.json").read_text()
    )
    seen = ablation.observe(request)
    expected = ablation.Expected(
        tools=frozenset(seen.tools),
        mcp_servers=frozenset(),
        skills=frozenset(seen.skills),
        agents=frozenset(seen.agents),
        claude_md_path="",
        claude_md_blocks=(),
        other_blocks=(),
        system_mode="default",
        system_text=None,
        default_system_chars=len(seen.system),
    )
    assert "review" in expected.skills
    assert ablation.compare(expected, seen) == []
    assert "declared skill 'review' is missing from the request" in ablation.compare(
        expected, ablation.observe(_without(request, "review"))
    )
    if agent != "codex":
        return
    request = json.loads(
        (root / "out" / "runs" / "alpha-T0-02-r1" / "bodies" / "0001.request.json").read_text()
    )
    rule = (root / "tiers" / "blocks" / "rules.md").read_text()
    terse = (root / "tiers" / "prompts" / "terse.md").read_text()
    seen = ablation.observe(request)
    expected = ablation.Expected(
        tools=frozenset(seen.tools),
        mcp_servers=frozenset(),
        skills=frozenset(seen.skills),
        agents=frozenset(),
        claude_md_path=next(iter(seen.claude_md)),
        claude_md_blocks=(("rules", rule),),
        other_blocks=(),
        system_mode="append",
        system_text=terse,
        default_system_chars=len(seen.system) - len(terse),
    )
    assert ablation.compare(expected, seen) == []
    for dropped, problem in (
        (
            "# AGENTS.md instructions",
            "declared CLAUDE.md block 'rules' is missing from the request",
        ),
        (terse.strip()[:30], "the declared system prompt text (append) is missing"),
    ):
        assert problem in ablation.compare(expected, ablation.observe(_without(request, dropped)))


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "everything",
    [
        pytest.param(False, id="sample", marks=pytest.mark.slow),
        pytest.param(True, id="all", marks=pytest.mark.campaign),
    ],
)
@pytest.mark.parametrize("agent", ["claude-code", *sorted(CLIS)])
def test_every_shipped_case_passes_where_applicable(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    oracle: list[str],
    agent: str,
    everything: bool,
) -> None:
    """`pytest cases/<...> --scylla-oracle --scylla-agent=<cli> -n 2` over the slow tier's sample
    of shipped cases (every case in the campaign tier): every case x subtest the CLI can express
    passes with the ablation holding, every other one is skipped with the reason; the noop
    oracle fails."""
    from pytest_scylla.formats.tiers import TierSet

    module = CLIS[agent]["module"] if agent in CLIS else claude_code
    if agent in CLIS:
        _needs(agent)
    tiers = TierSet(ROOT / "tiers")
    subs = [tiers.resolve(s.ref) for t in tiers.tiers.values() for s in t.subtests]
    out, said, cases = shipped_session(agent, tmp_path_factory.getbasetemp(), oracle[1], everything)
    applicable = {s.ref for s in subs if unsupported(module.ADAPTER, s, tiers) is None}
    cells = [(c, s.ref) for c, tier in cases.items() for s in subs if tier in (None, s.tier)]
    passed = sum(ref in applicable for _, ref in cells)
    skipped = len(cells) - passed
    assert f" {passed} passed" + (f", {skipped} skipped" if skipped else "") in said, said[-3000:]
    recs = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    assert sorted((r["case"], r["subtest"]) for r in recs) == sorted(
        cell for cell in cells if cell[1] in applicable
    )
    for rec in recs:
        assert (rec["outcome"], rec["ablation"]["problems"]) == ("pass", []), rec["run_key"]
        assert len(rec["ablation"]["observed"]["mcp_servers"]) == len(
            rec["declared"]["mcp_servers"]
        ), rec["run_key"]
        handed = rec["oracle_script"]["delegates"]  # the work went down to a sub-agent: the
        if handed:  # CLI's own transcript shows the call
            assert rec["trajectory"]["used"]["agents"][handed[0]] is True, rec["run_key"]
    noop = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-p",
            "no:cacheprovider",
            oracle[1],
            f"--scylla-agent={agent}",
            "--scylla-oracle=noop",
            "-p",
            "no:xdist",
            "-k",
            "test-001 and T0-01",
            f"--scylla-out={tmp_path}/noop",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "1 failed" in noop.stdout, noop.stdout[-3000:]


MATRIX = re.compile(r"<!-- support-matrix: .*? -->\n(.*?)<!-- /support-matrix -->", re.DOTALL)


@pytest.mark.slow
def test_the_readme_support_matrix_is_the_measured_one(
    tmp_path_factory: pytest.TempPathFactory, oracle: list[str]
) -> None:
    """The docs' CLI support matrix is `scylla matrix` over case test-001 under every tier
    and CLI, as measured here: each component a CLI expresses passed the ablation check of every
    run that declared it, the rest are the adapters' own reasons. Not written by hand."""
    from pytest_scylla.results.support import matrix
    from pytest_scylla.run.agents import claude_code

    records = []
    for agent in ("claude-code", *sorted(CLIS)):
        if agent in CLIS:
            _needs(agent)
        out, _, _ = shipped_session(agent, tmp_path_factory.getbasetemp(), oracle[1])
        records += [
            r
            for r in map(json.loads, (p.read_text() for p in out.glob("runs/*/run.json")))
            if r["case"] == "test-001"
        ]
    adapters = {
        a.name: a
        for a in (claude_code.ADAPTER, codex.ADAPTER, gemini_cli.ADAPTER, opencode.ADAPTER)
    }
    found = MATRIX.search(docs_page("other-clis"))
    assert found is not None, "docs/other-clis.md has no support-matrix block"
    assert found.group(1) == matrix(records, adapters)


PROBE = """python3 - <<'PY' > loot.txt 2>&1
import os, pathlib
def attempt(name, action):
    try:
        print(name, "OK", action())
    except Exception as exc:
        print(name, "BLOCKED", type(exc).__name__)
attempt("read-home", lambda: pathlib.Path("{secret}").read_text().strip())
attempt("write-outside", lambda: pathlib.Path("{outside}").write_text("escaped"))
attempt("config", lambda: len(pathlib.Path(os.environ.get("CODEX_HOME") or os.environ["HOME"],
                                           "{config}").read_text()))
found = set()
for proc in pathlib.Path("/proc").iterdir():
    try:
        found |= {{v for v in (proc / "environ").read_bytes().split(b"\\0") if b"{canary}" in v}}
    except OSError:
        pass
print("canary-proc", len(found))
print("canary-env", sum("{canary}" in v for v in os.environ.values()))
PY
echo probed"""


@pytest.mark.parametrize(
    ("agent", "sandbox"),
    [  # the positive control (local) once: what
        # it shows is the host's; Codex in the default suite, the others in the slow tier (each
        # CLI's own session runs there too)
        *(
            pytest.param(agent, "bwrap", marks=() if agent == "codex" else pytest.mark.slow)
            for agent in sorted(CLIS)
        ),
        ("codex", "local"),
    ],
)
def test_a_hostile_agent_of_another_cli_stays_in_its_sandbox(
    tmp_path: Path, oracle: list[str], sandbox: str, agent: str
) -> None:
    """The red-team attack through the CLI's own shell tool: under bubblewrap it cannot read
    the user's files or write outside the run, and no process it can see holds the user's
    OpenAI, Gemini or Anthropic key; without a sandbox (`local`, the positive control) the same
    probes succeed. The configuration the harness wrote for the CLI is the agent's to read: it
    holds no key."""
    if sandbox == "bwrap":
        needs_bwrap()
    _needs(agent)
    config = CONFIG[agent]
    shutil.copytree(FIXTURES / "mini", tmp_path / "p")
    canary = "sk-canary-scylla-cli-key"
    secret, outside = tmp_path / "secret.txt", tmp_path / "outside.txt"
    secret.write_text("not for the agent\n")
    attack = tmp_path / "attack.json"
    attack.write_text(
        json.dumps(
            {
                "final": "Done.",
                "steps": [
                    [
                        {
                            "name": "Bash",
                            "input": {
                                "command": PROBE.format(
                                    secret=secret, outside=outside, canary=canary, config=config
                                )
                            },
                        }
                    ]
                ],
            }
        )
    )
    env = {
        **os.environ,
        "OPENAI_API_KEY": canary,
        "ANTHROPIC_API_KEY": canary,
        "GEMINI_API_KEY": canary,
        "SCYLLA_ORACLE_ATTACK": str(attack),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-k",
            "alpha and T0-01",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            *oracle,
            f"--scylla-agent={agent}",
            f"--scylla-sandbox={sandbox}",
            "--scylla-keep-workspaces",
            f"--scylla-out={tmp_path / 'out'}",
        ],
        cwd=tmp_path / "p",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    loot_file = tmp_path / "out" / "runs" / "alpha-T0-01-r1" / "workspace" / "loot.txt"
    assert loot_file.is_file(), done.stdout[-3000:] + done.stderr[-2000:]
    loot = dict(line.split(" ", 1) for line in loot_file.read_text().splitlines())
    assert loot["config"].startswith("OK")  # the probe ran inside the run, as the CLI's tool
    assert loot["canary-env"] == "0"  # the agent's own environment never holds a key
    if sandbox == "local":  # positive control: no sandbox, the probes get through
        assert loot["read-home"] == "OK not for the agent"
        assert loot["write-outside"].startswith("OK")
        assert outside.exists()
        assert loot["canary-proc"] != "0"  # the harness's own process, in /proc
    else:
        assert loot["read-home"].startswith("BLOCKED"), loot
        assert not outside.exists()
        assert loot["canary-proc"] == "0"  # no process the agent can see holds the key


@pytest.mark.slow  # a run per CLI with a server that waits 3 s (~15-30 s each)
@pytest.mark.parametrize("agent", ["claude-code", *sorted(CLIS)])
def test_a_slow_starting_mcp_server_is_in_the_first_request(
    tmp_path: Path, oracle: list[str], agent: str
) -> None:
    """A declared MCP server that takes seconds to start (a loaded machine, a heavy server) is
    in the run's first request under every CLI: the adapter makes the CLI wait for it. Codex
    gives an optional server one second, then leaves it out without a word; it voided a T2-09
    run that way under CI's load until its servers were marked required."""
    if agent in CLIS:
        _needs(agent)
    needs_bwrap()
    root = tmp_path / "p"
    shutil.copytree(FIXTURES / "mini", root)
    (root / "tiers" / "mcp" / "slow.json").write_text(
        json.dumps(
            {
                "description": "the notes server, three seconds late",
                "command": "sh",
                "args": ["-c", 'sleep 3; exec python3 "$0"', "${SERVER_DIR}/servers/notes.py"],
                "files": ["servers/notes.py"],
            }
        )
    )
    (root / "tiers" / "T2.yaml").write_text(
        "tier: T2\nname: Tools\nsubtests:\n  01-slow:\n    description: a slow server\n"
        "    mcp_servers: [slow]\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-k",
            "alpha and T2",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            *oracle,
            f"--scylla-agent={agent}",
            f"--scylla-out={tmp_path / 'out'}",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rec = json.loads((tmp_path / "out" / "runs" / "alpha-T2-01-r1" / "run.json").read_text())
    assert (rec["outcome"], rec["ablation"]["problems"]) == ("pass", []), done.stdout[-3000:]
    assert len(rec["ablation"]["observed"]["mcp_servers"]) == 1  # as the CLI names it
