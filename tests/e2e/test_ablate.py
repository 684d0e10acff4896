"""`scylla ablate` end to end: the plan on real configurations nobody here wrote (the Claude Code
setups two projects publish in their source distributions on PyPI, pinned by hash); the arms of
the sample team setup run through the real CLI, each carrying exactly its components, a planted
leak caught; and the report recovering effects the oracle plants, with a swapped control."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_scylla.cli.main import main
from pytest_scylla.formats.agent_config import read_claude_code
from pytest_scylla.formats.tiers import TierSet

from ..conftest import export_rows, sdists

REAL = {  # a CLAUDE.md importing @CONTRIBUTING.md, 3 skills, a hook
    "claude_code_log-1.7.0": "claude-code-log==1.7.0 --hash=sha256:"
    "c30b9463066429cabde6216b7e43c1f3721144517568eda69588c39b6341271e",
    # 2 top-level titles over 22 sections, 6 sub-agents, 2 hook events, nested skills, commands
    "mcp_memory_service-11.0.0": "mcp-memory-service==11.0.0 --hash=sha256:"
    "f8259a1535edbecd6a820af724ec14832b4570dd34972537782fe7c0550ec2ad",
}
CONFIG = ("CLAUDE.md", "CONTRIBUTING.md", "AGENTS.md", ".mcp.json", ".claude/")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two projects' configuration files, from their sdists (their build backend, hatchling,
    is this project's own: no build environment is made)."""
    where = tmp_path_factory.mktemp("real")
    downloaded = sdists(list(REAL.values()), where)
    for name in REAL:
        with tarfile.open(downloaded / f"{name}.tar.gz") as sdist:
            members = [m for m in sdist.getmembers() if m.name.partition("/")[2].startswith(CONFIG)]
            sdist.extractall(where, members=members, filter="data")
    return {name: where / name for name in REAL}


@pytest.mark.slow  # downloads two sdists (about 6 s)
def test_a_real_claude_md_with_an_import_skills_and_a_hook(real: dict[str, Path]) -> None:
    root = real["claude_code_log-1.7.0"]
    config = read_claude_code(root)
    ids = [c.id for c in config.components]
    assert [i for i in ids if i.startswith("section:")] == [
        "section:claude-code-log",
        "section:project-overview",
        "section:key-features",
        "section:usage",
        "section:development",
        "section:architecture",
    ]
    development = next(c for c in config.components if c.id == "section:development")
    # the import as written, the imported file kept in place for the arms with the section
    assert "See @CONTRIBUTING.md for detailed" in development.text
    assert "# Contributing to Claude Code Log" not in development.text
    assert development.data["imports"] == ("CONTRIBUTING.md",)
    assert [i for i in ids if not i.startswith("section:")] == [
        "skill:foldyard",
        "skill:tool-renderer",
        "skill:update-tools-coverage",
        "hook:posttooluse",
    ]
    assert main(["ablate", "plan", str(root), "--out", str(root / "ablation")]) == 0
    tiers = TierSet(root / "ablation")
    assert tiers.errors == {}
    assert len(tiers.tiers["T0"].subtests) == 12  # 10 factors: Plackett-Burman


@pytest.mark.slow  # shares the download
def test_a_real_setup_of_agents_and_hooks_lists_what_it_cannot_ablate(
    real: dict[str, Path],
) -> None:
    root = real["mcp_memory_service-11.0.0"]
    config = read_claude_code(root)
    kinds = [c.kind for c in config.ablated]
    assert (kinds.count("section"), kinds.count("agent"), kinds.count("hook")) == (24, 6, 2)
    kept = {c.id: c.reason for c in config.components if not c.ablated}
    assert "no SKILL.md directly in this folder" in kept["file:gitnexus"]  # skills one deeper
    assert "setting:enabledplugins" in kept
    # commands are listed to the model as skills: components
    assert {"command:release", "command:triage"} <= {c.id for c in config.ablated}
    scripts = {i: r for i, r in kept.items() if i.startswith("file:") and i.endswith("-sh")}
    assert scripts  # the hooks' own scripts, listed as carried with their hooks
    assert all("a script the" in r and "hook runs" in r for r in scripts.values())
    grouped = ["--group", "section", "--group", "agent", "--group", "command"]
    assert main(["ablate", "plan", str(root), *grouped, "--out", str(root / "abl")]) == 0
    arms = TierSet(root / "abl").tiers["T0"].subtests
    assert [a.name for a in arms] == [
        "01-full",
        "02-none",
        "03-no-hook-posttooluse",
        "04-no-hook-sessionstart",
        "05-no-group-section",
        "06-no-group-command",
        "07-no-group-agent",
    ]


TEAM = Path(__file__).parents[1] / "fixtures" / "team"


def _observed(out: Path) -> dict[str, Any]:
    """What each arm's first request carried, by arm; every run passed and passed the
    component-level ablation check."""
    records = [json.loads(p.read_text()) for p in sorted(out.glob("runs/*/run.json"))]
    for record in records:
        assert record["outcome"] == "pass", (record["subtest_name"], record["reason"])
        assert record["ablation"]["checked"]
        assert record["ablation"]["problems"] == []
    return {r["subtest_name"]: r["ablation"]["observed"] for r in records}


def _team_project(mini: Path) -> None:
    """The mini project whose root and whose case's source (the team's repository, as a case of
    one's own history is) both carry the team's configuration."""
    for target in (mini, mini / "cases" / "alpha" / "source"):
        shutil.copytree(TEAM, target, dirs_exist_ok=True)


@pytest.mark.slow  # seven oracle runs through the real CLI (about 60 s of a worker)
def test_every_arm_of_a_plan_runs_and_carries_exactly_its_components(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The plan's arms run through the real CLI under the oracle: every run passes the ablation
    check (each section, skill, sub-agent and MCP server present where its arm keeps it and
    absent where it removes it, although the case's own source carries the whole setup)."""
    _team_project(mini)
    grouped = ["--group", "section", "--group", "skill", "--group", "agent"]
    assert main(["ablate", "plan", str(mini), *grouped]) == 0
    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "alpha",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-tiers-dir={mini / 'ablation'}",
        "--scylla-packaged-tiers=under",  # as docs/ablate.md runs it: beta names T0 and T1
        "--scylla-tiers=T0",
        f"--scylla-out={out}",
    )
    seen = _observed(out)
    assert list(seen) == [
        "01-full",
        "02-none",
        "03-no-cmd-release",
        "04-no-mcp-ledger-facts",
        "05-no-hook-posttooluse",
        "06-no-memory-cases-alpha-source",  # the case's source holds a CLAUDE.md: nested here
        "07-no-group-section",
        "08-no-group-skill",
        "09-no-group-agent",
    ], done.stdout.str()[-3000:]
    done.assert_outcomes(passed=9)
    ours = {"changelog", "fixture-builder", "money-math"}
    assert ours <= set(seen["01-full"]["skills"])
    assert not ours & set(seen["08-no-group-skill"]["skills"])
    # the team's command, listed to the model as a skill: where its arm keeps it only
    assert "release" in seen["01-full"]["skills"]
    assert "release" in seen["08-no-group-skill"]["skills"]
    assert "release" not in seen["03-no-cmd-release"]["skills"]
    assert "release" not in seen["02-none"]["skills"]
    assert seen["01-full"]["mcp_servers"] == ["ledger-facts"]
    assert seen["04-no-mcp-ledger-facts"]["mcp_servers"] == []
    assert {"reviewer", "test-author"} <= set(seen["01-full"]["agents"])
    assert not {"reviewer", "test-author"} & set(seen["09-no-group-agent"]["agents"])

    # a leak: the errors section's text also in a skill's description, which the CLI lists
    errors = (mini / "ablation" / "blocks" / "errors.md").read_text()
    _say_in_description(mini / "ablation" / "skills" / "money-math" / "SKILL.md", errors)
    leaked = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-07",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-tiers-dir={mini / 'ablation'}",
        "--scylla-packaged-tiers=under",  # as docs/ablate.md runs it: beta names T0 and T1
        "--scylla-tiers=T0",
        f"--scylla-out={mini / 'leak'}",
    )
    record = json.loads((mini / "leak" / "runs" / "alpha-T0-07-r1" / "run.json").read_text())
    assert record["outcome"] == "infra_error", leaked.stdout.str()[-2000:]
    assert (
        "CLAUDE.md block 'errors' is in the request but not declared"
        in record["ablation"]["problems"]
    )


def _say_in_description(skill: Path, text: str) -> None:
    """The text, on one line, in front of the skill's description (which the CLI lists)."""
    lines = skill.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("description:"))
    said = " ".join(text.split()) + " " + lines[at].partition(":")[2].strip()
    lines[at] = f"description: {json.dumps(said)}\n"
    skill.write_text("".join(lines))


PLANTED = {  # agent: (skill, its description) helpful, harmful and neutral
    "claude-code": (
        ("money-math", "Exact arithmetic on amounts in cents"),
        ("changelog", "Add an entry to CHANGELOG.md"),
        ("fixture-builder", ""),
    ),
    "codex": (
        ("cents-arithmetic", "Adding, splitting and rounding amounts held as integer cents"),
        ("release-notes", "Write the release notes entry for a change"),
        ("sqlite-fixtures", ""),
    ),
}


@pytest.mark.slow  # 2 x 2 x 4 arms x 16 oracle runs through the real CLIs (about 4 minutes)
@pytest.mark.parametrize("swapped", [False, True])
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_report_recovers_planted_effects(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    agent: str,
    swapped: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The oracle's effects mode plants a helpful skill (+50 points of pass rate when its
    description reaches the model), a harmful one (-50) and a neutral one; `scylla ablate
    report` finds the first helps, the second hurts and the third has no detectable effect.
    The mutation control (`swapped`) swaps the two effects, and the verdicts swap."""
    (_codex_project if agent == "codex" else _team_project)(mini)
    grouped = [f"--group={kind}" for kind in ("section", "agent", "mcp", "hook")]
    # leave-one-out whatever else the project holds (the team's command, the case source's
    # CLAUDE.md): arm 01 is full, 03-05 each without one skill
    loo = ["--factorial-above=12"]
    assert main(["ablate", "plan", str(mini), "--agent", agent, *grouped, *loo]) == 0
    (helpful, helpful_text), (harmful, harmful_text), (neutral, _) = PLANTED[agent]
    effects = {helpful_text: 0.5, harmful_text: -0.5}
    if swapped:
        effects = {helpful_text: -0.5, harmful_text: 0.5}
    (mini / "effects.json").write_text(json.dumps({"base": 0.5, "effects": effects}))
    monkeypatch.setenv("SCYLLA_ORACLE_EFFECTS", str(mini / "effects.json"))
    out = mini / "out"
    done = _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        "alpha and (T0-01 or T0-03 or T0-04 or T0-05)",  # full, and without each skill
        "-n",
        "2",
        "--scylla-runs=16",
        f"--scylla-agent={agent}",
        f"--scylla-out={out}",
        *(["--scylla-report=terminal,md,html"] if agent == "codex" and not swapped else []),
    )
    assert (out / "runs.csv").is_file(), done.stdout.str()[-3000:]
    assert main(["ablate", "report", str(out)]) == 0
    rows = {r["factor"]: r for r in export_rows(out / "components.csv")}
    helps, hurts = ("hurts", "helps") if swapped else ("helps", "hurts")
    assert rows[f"skill:{helpful}"]["verdict"] == helps
    assert rows[f"skill:{harmful}"]["verdict"] == hurts
    assert rows[f"skill:{neutral}"]["verdict"] == "no effect detectable at this n"
    assert f"| `skill:{helpful}` |" in (out / "components.md").read_text()
    assert f'<tr data-component="skill:{helpful}">' in (out / "components.html").read_text()
    if agent == "codex" and not swapped:  # the session's own reports carry the section
        tables = (out / "tables.md").read_text()  # the verdict, and any note in brackets
        assert re.search(rf"^\| `skill:{helpful}` \| helps( \([^|]*\))? \|", tables, re.M), tables
        page = (out / "report.html").read_text()
        drawn = [r for r in rows.values() if r["low"] not in ("", None)]  # estimated ones
        assert len(drawn) == 3  # the three skills (the groups' arms were not run)
        assert page.count('<rect class="ci"') == len(drawn)
        assert page.index('<section id="components">') < page.index("<table class=tool id=runs")


@pytest.mark.slow  # 16 arms x 6 oracle runs through the real CLI (about 90 s)
def test_twelve_components_in_sixteen_arms_recover_the_planted_main_effects(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """k = 12 (seven sections, three skills, two sub-agents): the Plackett-Burman design runs
    16 arms, and the regression finds the section that helps, the skill that hurts, and no
    effect in the ten others."""
    _team_project(mini)
    for root in (mini, mini / "cases" / "alpha" / "source"):
        (root / ".mcp.json").unlink()
        (root / ".claude" / "settings.json").write_text('{"permissions": {}}\n')
        shutil.rmtree(root / ".claude" / "commands")
    source = mini / "cases" / "alpha" / "source"  # the team's repository: no case inside it
    assert main(["ablate", "plan", str(source), "--out", str(mini / "ablation")]) == 0
    design = json.loads((mini / "ablation" / "design.json").read_text())
    assert (len(design["factors"]), len(design["arms"])) == (12, 16)
    money = (mini / "ablation" / "blocks" / "money-and-rounding.md").read_text()
    effects = {money.splitlines()[2]: 0.5, PLANTED["claude-code"][1][1]: -0.5}
    (mini / "effects.json").write_text(json.dumps({"base": 0.5, "effects": effects}))
    monkeypatch.setenv("SCYLLA_ORACLE_EFFECTS", str(mini / "effects.json"))
    out = mini / "out"
    done = _run_arms(
        pytester, mini, oracle, "-k", "alpha", "-n", "2", "--scylla-runs=6", f"--scylla-out={out}"
    )
    assert (out / "runs.csv").is_file(), done.stdout.str()[-3000:]
    assert main(["ablate", "report", str(out)]) == 0
    rows = {r["factor"]: r for r in export_rows(out / "components.csv")}
    assert len(rows) == 12
    verdicts = {factor: row["verdict"] for factor, row in rows.items()}
    assert verdicts.pop("section:money-and-rounding") == "helps"
    assert verdicts.pop("skill:changelog") == "hurts"
    assert set(verdicts.values()) == {"no effect detectable at this n"}, verdicts


CODEX_TEAM = Path(__file__).parents[1] / "fixtures" / "team-codex"


def _codex_project(mini: Path) -> None:
    """The mini project whose root and case source carry the team's Codex configuration (and
    the MCP server's script, from the Claude Code setup of the same team)."""
    for target in (mini, mini / "cases" / "alpha" / "source"):
        shutil.copytree(CODEX_TEAM, target, dirs_exist_ok=True)
        shutil.copytree(TEAM / "tools", target / "tools", dirs_exist_ok=True)


def _run_arms(pytester: pytest.Pytester, mini: Path, oracle: list[str], *more: str) -> Any:
    return pytester.runpytest(
        "cases",
        *oracle,
        f"--scylla-tiers-dir={mini / 'ablation'}",
        "--scylla-packaged-tiers=under",
        "--scylla-tiers=T0",
        *more,
    )


@pytest.mark.slow  # five oracle runs through the real Codex CLI
def test_a_codex_plan_runs_and_carries_exactly_its_components(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The same for Codex: AGENTS.md sections, skills of .agents/skills and the MCP server of
    .codex/config.toml, each present where its arm keeps it and absent where it removes it;
    a leak is reported against the section."""
    _codex_project(mini)
    grouped = ["--agent", "codex", "--group", "section", "--group", "skill"]
    assert main(["ablate", "plan", str(mini), *grouped]) == 0
    out = mini / "out"
    done = _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        "alpha",
        "-p",
        "no:xdist",
        "--scylla-agent=codex",
        f"--scylla-out={out}",
    )
    seen = _observed(out)
    assert list(seen) == [
        "01-full",
        "02-none",
        "03-no-mcp-ledger-facts",
        "04-no-group-section",
        "05-no-group-skill",
    ], done.stdout.str()[-3000:]
    ours = {"cents-arithmetic", "release-notes", "sqlite-fixtures"}
    assert ours <= set(seen["01-full"]["skills"])
    assert not ours & set(seen["05-no-group-skill"]["skills"])
    assert seen["01-full"]["mcp_servers"] == ["ledger_facts"]
    assert seen["03-no-mcp-ledger-facts"]["mcp_servers"] == []

    # a leak: the amounts section's text also in a skill's description, which Codex lists
    amounts = (mini / "ablation" / "blocks" / "amounts.md").read_text()
    _say_in_description(mini / "ablation" / "skills" / "release-notes" / "SKILL.md", amounts)
    leak = mini / "leak"
    _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        "alpha and T0-04",
        "-p",
        "no:xdist",
        "--scylla-agent=codex",
        f"--scylla-out={leak}",
    )
    record = json.loads((leak / "runs" / "alpha-T0-04-r1" / "run.json").read_text())
    assert record["outcome"] == "infra_error", record["reason"]
    problems = record["ablation"]["problems"]
    assert "CLAUDE.md block 'amounts' is in the request but not declared" in problems


REALISTIC = {  # beside the sample team's setup: what teams commit that the plan once missed
    ".claude/rules/global.md": "Say in one line what you changed and why it is safe to ship.\n",
    ".claude/rules/python.md": '---\npaths:\n  - "ledger/**/*.py"\n---\nType every function.\n',
    ".claude/AGENT_RULES.md": "Never push to main: open a merge request for every change.\n",
    "tools/CLAUDE.md": "Scripts under tools/ are run by hand; keep them dependency-free.\n",
    ".claude/format-hook.sh": "#!/bin/sh\nexit 0\n",
}
MEMORY_SERVER = "@modelcontextprotocol/server-memory"


def _realistic(root: Path) -> None:
    """The team's setup with an unscoped and a scoped rule, an import into a dot-folder, a
    nested CLAUDE.md, a hook's own script, an unpinned `npx` server and an `env` that points
    the CLI at a local proxy with a token."""
    shutil.copytree(TEAM, root, dirs_exist_ok=True)
    for rel, text in REALISTIC.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".claude/format-hook.sh").chmod(0o755)
    with (root / "CLAUDE.md").open("a") as claude_md:
        claude_md.write("\n## Agent rules\n\n@.claude/AGENT_RULES.md\n")
    settings = json.loads((root / ".claude/settings.json").read_text())
    settings["hooks"]["PostToolUse"][0]["hooks"].append(
        {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/format-hook.sh"}
    )
    settings["env"] = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/proxy",
        "ANTHROPIC_AUTH_TOKEN": "team-proxy-token",
        "ANTHROPIC_MODEL": "team-model",
        "LEDGER_ENV": "test",
    }
    (root / ".claude/settings.json").write_text(json.dumps(settings, indent=2))
    servers = json.loads((root / ".mcp.json").read_text())
    servers["mcpServers"]["memory"] = {"command": "npx", "args": ["-y", MEMORY_SERVER]}
    (root / ".mcp.json").write_text(json.dumps(servers, indent=2))


def test_a_realistic_setup_is_listed_part_by_part(tmp_path: Path, capsys: Any) -> None:
    """`scylla ablate plan` on it (asks the npm registry once, about 2 s): every part listed as
    a component or with its reason, the redirecting env keys dropped, the npx server pinned."""
    root = tmp_path / "team"
    _realistic(root)
    grouped = ["--group", "section", "--group", "skill", "--group", "memory"]
    assert main(["ablate", "plan", str(root), *grouped]) == 0
    said = capsys.readouterr().out
    for line in (
        "rule:global-md ",
        "rule:python-md ",  # scoped: an arm keeps it in place
        "memory:tools ",
        "command:release ",
        f"npx package '{MEMORY_SERVER}' pinned at plan time to {MEMORY_SERVER}@",
        "setting:env-anthropic-base-url",
        "a script the posttooluse hook runs",
    ):
        assert line in said, said
    design = json.loads((root / "ablation/design.json").read_text())
    assert design["components"]["group:memory"] == ["memory:tools"]  # many CLAUDE.md: one factor
    assert "team-proxy-token" not in (root / "ablation/T0.yaml").read_text()
    agent_rules = (root / "ablation/blocks/agent-rules.md").read_text()
    assert agent_rules == "## Agent rules\n\n@.claude/AGENT_RULES.md\n"  # as written
    tier = yaml.safe_load((root / "ablation/T0.yaml").read_text())
    kept = [s for s in tier["subtests"].values() if "agent-rules" in s.get("claude_md", [])]
    assert kept
    assert all(".claude/AGENT_RULES.md" in s["keep_files"] for s in kept)
    server = json.loads((root / "ablation/mcp/memory.json").read_text())
    assert server["npm"].startswith(f"{MEMORY_SERVER}@")
    assert server["args"] == ["-y", server["npm"]]


@pytest.mark.slow  # seven oracle runs through the real CLI, an npm install (about 90 s)
@pytest.mark.each_sandbox  # bwrap, and docker
def test_a_realistic_setup_runs_every_arm_through_the_ablation_check(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The arms of the realistic setup run through the real CLI under the oracle and pass the
    ablation check over the whole run: the full arm carries the rules, the command, the
    imported rules and the npx server (installed on the host, started in the sandbox); the
    others each lack what they leave out. The control: the full arm with the team's `env`
    kept (pointing the CLI at the team's proxy) does not pass."""
    source = mini / "cases" / "alpha" / "source"
    _realistic(source)
    plan = ["ablate", "plan", str(source), "--out", str(mini / "ablation"), "--group", "section"]
    assert main([*plan, "--group", "skill", "--group", "agent", "--factorial-above", "16"]) == 0
    design = json.loads((mini / "ablation" / "design.json").read_text())
    wanted = ("full", "none", "no-rule-global-md", "no-cmd-release", "no-mcp-memory")
    arms = {a[3:]: a[:2] for a in design["arms"] if a[3:] in (*wanted, "no-memory-tools")}
    picked = " or ".join(f"T0-{n}" for n in arms.values())
    out = mini / "out"
    done = _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        f"alpha and ({picked})",
        "-p",
        "no:xdist",
        f"--scylla-out={out}",
    )
    seen = _observed(out)
    assert sorted(seen) == sorted(f"{n}-{a}" for a, n in arms.items()), done.stdout.str()[-3000:]
    full, none = seen[f"{arms['full']}-full"], seen[f"{arms['none']}-none"]
    assert {"release", "money-math"} <= set(full["skills"])
    assert {"ledger-facts", "memory"} <= set(full["mcp_servers"])
    assert not {"release", "money-math"} & set(none["skills"])
    assert none["mcp_servers"] == []
    assert "release" not in seen[f"{arms['no-cmd-release']}-no-cmd-release"]["skills"]
    assert "memory" not in seen[f"{arms['no-mcp-memory']}-no-mcp-memory"]["mcp_servers"]

    tier = mini / "ablation" / "T0.yaml"  # the control: the team's env back in the full arm
    text = tier.read_text()
    env = "      env:\n        LEDGER_ENV: test\n"
    assert env in text
    proxy = "        ANTHROPIC_BASE_URL: http://127.0.0.1:9/proxy\n"
    tier.write_text(text.replace(env, env + proxy, 1))
    _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        f"alpha and T0-{arms['full']}",
        "-p",
        "no:xdist",
        f"--scylla-out={mini / 'proxy'}",
    )
    record = json.loads(next((mini / "proxy" / "runs").glob("*/run.json")).read_text())
    assert record["outcome"] == "agent_error", record["reason"]
    assert "Unable to connect to API" in record["reason"]
