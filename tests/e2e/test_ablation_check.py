"""The ablation check on what the real Claude Code CLI (2.1.197) does with a team's setup, through
oracle runs: the deny rules of its settings drop tools (the baseline measured with the same
rules says which), skills whose descriptions overflow the listing budget are listed bare, a
server slower than the CLI's default wait is waited for, and the CLAUDE.md and skills of a
subfolder, loaded once the agent works there, fail an arm that removed them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run import baseline

SKILLS = 60  # with these descriptions, past Claude Code 2.1.197's skill listing budget
ARMS = """tier: T7
name: Team setups
subtests:
  01-deny:
    description: the team's settings deny WebFetch, a Bash pattern and Edit(*)
    settings:
      permissions:
        deny: [WebFetch, "Bash(rm:*)", "Edit(*)"]
  02-many-skills:
    description: skills whose descriptions overflow the listing
    skills: [{skills}]
  03-slow-server:
    description: a server that takes eight seconds to start
    mcp_servers: [slow]
  04-removed:
    description: the project's configuration removed
    project_config: remove
"""


def _project(root: Path) -> None:
    """The arms above, and a case (gamma) whose source has a CLAUDE.md and a skill in sub/,
    where the oracle's solution reads and writes."""
    tiers = root / "tiers"
    names = [f"s{i:02d}-helper" for i in range(SKILLS)]
    for i, name in enumerate(names):
        said = f"Use this skill when working on part {i} of the ledger: " + (
            "it explains the conventions, the edge cases and the review checklist. " * 10
        )
        (tiers / "skills" / name).mkdir(parents=True)
        (tiers / "skills" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {json.dumps(said.strip())}\n---\nBody.\n"
        )
    (tiers / "mcp" / "slow.json").write_text(
        json.dumps(
            {
                "description": "the notes server, eight seconds late",
                "command": "sh",
                "args": ["-c", 'sleep 8; exec python3 "$0"', "${SERVER_DIR}/servers/notes.py"],
                "files": ["servers/notes.py"],
            }
        )
    )
    (tiers / "T7.yaml").write_text(ARMS.format(skills=", ".join(names)))
    gamma = root / "cases" / "gamma"
    shutil.copytree(root / "cases" / "alpha", gamma)
    for folder, text in (("source", "X = 0\n"), ("solution", "X = 1\n")):
        (gamma / folder / "sub").mkdir()
        (gamma / folder / "sub" / "x.py").write_text(text)
    (gamma / "source" / "sub" / "CLAUDE.md").write_text(
        "# Sub rules\n\nIn this folder, constants are spelled in capitals and never change.\n"
    )
    skill = gamma / "source" / "sub" / ".claude" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Ship the ledger with the release checklist.\n---\nGo.\n"
    )
    spec = (gamma / "test.yaml").read_text().replace("id: alpha", "id: gamma")
    (gamma / "test.yaml").write_text(spec + "tiers: [T7]\n")


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


@pytest.mark.slow  # five oracle runs through the real CLI, one with an 8 s server (about 60 s)
def test_a_teams_setup_passes_the_check_and_removed_files_loaded_later_fail_it(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    _project(mini)
    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "(alpha and (T7-01 or T7-02 or T7-03)) or (gamma and (T7-01 or T7-04))",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
    )
    runs = _records(out)
    assert sorted(runs) == [
        "alpha-T7-01-r1",
        "alpha-T7-02-r1",
        "alpha-T7-03-r1",
        "gamma-T7-01-r1",
        "gamma-T7-04-r1",
    ], done.stdout.str()[-3000:]
    for key in ("alpha-T7-01-r1", "alpha-T7-02-r1", "alpha-T7-03-r1", "gamma-T7-01-r1"):
        check = runs[key]["ablation"]
        assert (runs[key]["outcome"], check["problems"]) == ("pass", []), key
        assert check["requests"] >= 2  # every main-agent request was read, not the first only
    denied = set(runs["alpha-T7-01-r1"]["ablation"]["observed"]["tools"])
    assert "Bash" in denied  # Bash(rm:*) leaves the tool
    assert not {"WebFetch", "Edit"} & denied  # a bare name and Edit(*) drop it
    listed = runs["alpha-T7-02-r1"]["ablation"]["observed"]["skills"]
    assert {f"s{i:02d}-helper" for i in range(SKILLS)} <= set(listed)
    cache = Path(oracle[1].partition("=")[2])  # the tools the CLI adds for a server connecting,
    stored = list(cache.glob("baseline-claude-code-*.json"))  # measured with each baseline
    assert len(stored) >= 2  # the bare tool configuration and the deny rules of 01-deny
    for measured in stored:
        connecting = baseline._baseline(json.loads(measured.read_text()))["connecting_tools"]
        assert connecting == ["WaitForMcpServers"]
    slow = runs["alpha-T7-03-r1"]["ablation"]["observed"]
    assert (slow["mcp_servers"], "WaitForMcpServers" in slow["tools"]) == (["slow"], False)
    # the arm that removed the project's configuration: sub/'s skill came in the second request
    # (and sub/CLAUDE.md with it, unless the arm's overlay takes on-demand memory out)
    removed = runs["gamma-T7-04-r1"]
    assert removed["outcome"] == "infra_error", removed["reason"]
    problems = removed["ablation"]["problems"]
    assert "skill 'deploy' is in a later request (loaded on demand) but not declared" in problems
    nested = [p for p in problems if p.startswith("CLAUDE.md from ")]
    assert [
        p.endswith("/sub/CLAUDE.md is in a later request (loaded on demand) but not declared")
        for p in nested
    ] == [True] * len(nested)
    assert len(problems) == 1 + len(nested)


TEAM = Path(__file__).parents[1] / "fixtures" / "team"
NESTED = "Every posting function returns a new object; never mutate a posting in place.\n"


def _real_team(mini: Path) -> None:
    """The setup of issue 45, as teams commit it, in the mini project's root and in the case's
    source: the sample team's CLAUDE.md (seven sections, an @import), three skills, two
    sub-agents, a PostToolUse hook and an MCP server script, plus `permissions.deny` naming
    WebFetch, an `npx` server from `.mcp.json` and a CLAUDE.md in the ledger/ subfolder, where
    the oracle's solution reads and writes."""
    for root in (mini, mini / "cases" / "alpha" / "source"):
        shutil.copytree(TEAM, root, dirs_exist_ok=True)
        settings = json.loads((root / ".claude" / "settings.json").read_text())
        settings["permissions"]["deny"].append("WebFetch")
        (root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
        servers = json.loads((root / ".mcp.json").read_text())
        npx = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
        servers["mcpServers"]["memory"] = npx
        (root / ".mcp.json").write_text(json.dumps(servers, indent=2))
        (root / "ledger").mkdir()
        (root / "ledger" / "CLAUDE.md").write_text(f"# Ledger package\n\n{NESTED}")
    for folder, text in (("source", "BALANCE = 0\n"), ("solution", "BALANCE = 1\n")):
        (mini / "cases" / "alpha" / folder / "ledger").mkdir(exist_ok=True)
        (mini / "cases" / "alpha" / folder / "ledger" / "accounts.py").write_text(text)


@pytest.mark.slow  # plan + 12 arms + a control through the real CLI (about 2 minutes)
@pytest.mark.each_sandbox
def test_every_arm_of_a_real_teams_setup_passes_the_check_over_the_whole_run(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every arm's runs pass the ablation check on every request (issue 45's acceptance for
    its realistic setup: it had 16 of 16 arms end in infra_error). The ledger/CLAUDE.md reaches
    the model (in a later request, once the agent reads ledger/) in the arms that keep it and
    in no other. The control: with the overlay leaving the subfolder files in every arm, an arm
    that does not keep it fails the check, naming the file (one that keeps it still passes)."""
    from pytest_scylla.cli.main import main
    from pytest_scylla.run import overlay

    _real_team(mini)
    assert main(["ablate", "plan", str(mini), "--group", "section", "--group", "skill"]) == 0
    design = json.loads((mini / "ablation" / "design.json").read_text())
    tiers = [f"--scylla-tiers-dir={mini / 'ablation'}", "--scylla-packaged-tiers=under"]
    arms = ["cases", *oracle, *tiers, "--scylla-tiers=T0"]
    done = pytester.runpytest(*arms, "-k", "alpha", "-n", "2", f"--scylla-out={mini / 'out'}")
    runs = _records(mini / "out")
    assert len(runs) == len(design["arms"]) >= 8, done.stdout.str()[-3000:]
    for key, record in runs.items():
        assert (record["outcome"], record["ablation"]["problems"]) == ("pass", []), key
        assert record["ablation"]["requests"] >= 3
    keeps = {r["subtest"]: "ledger/CLAUDE.md" in r["declared"]["keep_files"] for r in runs.values()}
    kept, removed = (next(a for a, k in sorted(keeps.items()) if k is v) for v in (True, False))

    monkeypatch.setattr(overlay, "_remove_on_demand", lambda workspace, keep: [])
    control = mini / "control"
    pytester.runpytest(  # in this process (no workers), where the overlay is patched
        *arms, "-p", "no:xdist", "-k", f"alpha and ({kept} or {removed})", f"--scylla-out={control}"
    )
    left = _records(control)
    assert left[f"alpha-{kept}-r1"]["outcome"] == "pass"
    record = left[f"alpha-{removed}-r1"]
    assert record["outcome"] == "infra_error"
    (problem,) = record["ablation"]["problems"]
    assert problem.endswith(
        "/ledger/CLAUDE.md is in a later request (loaded on demand) but not declared"
    )
