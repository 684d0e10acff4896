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
