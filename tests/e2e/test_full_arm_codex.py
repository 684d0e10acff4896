"""Issue 45, point 1, for Codex (0.169.0): the plan's `full` arm of the team's Codex setup
(AGENTS.md sections, skills of .agents/skills, MCP servers and settings of .codex/config.toml)
against the real `codex exec` run directly in a copy of the repository, against the capture
server of test_full_arm (Responses API), with a private CODEX_HOME."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.agents import codex

from .test_ablate import CODEX_TEAM, TEAM
from .test_full_arm import _arms, _capture_server, _first_main, _git, _mini

CONTROL = "no-mcp-ledger-facts"  # an arm without the team's server: its namespace must go


def _codex_team(root: Path) -> None:
    """The team's Codex configuration and the MCP server's script (as test_ablate sets it)."""
    shutil.copytree(CODEX_TEAM, root, dirs_exist_ok=True)
    shutil.copytree(TEAM / "tools", root / "tools", dirs_exist_ok=True)


def _direct(repo: Path, private: Path, model: str) -> dict[str, Any]:
    """The first request of `codex exec` run directly in `repo` as the team runs it: the
    project trusted (Codex reads a project's .codex/config.toml only then, as a team member
    who uses it has said), the CLI's own flags of a headless run as the plugin passes them,
    without the overlay's; its CODEX_HOME private, pointing the provider at the capture
    server, so nobody's own configuration leaks in."""
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "the team's repository")
    home = private / "home"
    with _capture_server() as (url, bodies):
        base = {"PATH": os.environ["PATH"], "HOME": str(home)}
        env = codex.environment(base, {"CODEX_HOME": str(home / ".codex")}, f"{url}/v1")
        with (home / ".codex" / "config.toml").open("a") as config:
            config.write(f'\n[projects."{repo}"]\ntrust_level = "trusted"\n')
        argv = codex.command(shutil.which("codex") or "codex", model, 1, ())
        done = subprocess.run(
            argv, input=b"Say OK.", cwd=repo, env=env, capture_output=True, timeout=240
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return _first_main(bodies)


@pytest.fixture(scope="module")
def first_requests(
    tmp_path_factory: pytest.TempPathFactory, oracle: list[str]
) -> dict[str, dict[str, Any]]:
    """The first request of the full and control arms (under the oracle), and of the team's
    own run (`team`)."""
    where = tmp_path_factory.mktemp("full-arm-codex")
    mini = _mini(where / "mini", _codex_team)
    repo = where / "team-repo"
    shutil.copytree(mini / "cases" / "alpha" / "source", repo)
    firsts = _arms(mini, oracle, CONTROL, "--agent", "codex", "--scylla-agent=codex")
    firsts["team"] = _direct(repo, where / "private", firsts["full"]["model"])
    for name, request in firsts.items():  # kept for a failure's reader
        (where / f"{name}.json").write_text(json.dumps(request, indent=1))
    return firsts


def _normalised(text: str, request: dict[str, Any]) -> str:
    """What legitimately differs between two runs of one configuration, marked: the workspace's
    absolute path (the plugin's is a private copy; Codex names it in the AGENTS.md header and
    the environment context), the run's private CODEX_HOME (where Codex keeps its own system
    skills) and the date (Codex says today's)."""
    said = json.dumps(request)
    found = re.search(r"<cwd>([^<]+)</cwd>", said)
    home = re.search(r"`(/[^`]+)/skills/\.system`", said)
    assert found is not None, "no working directory in the request"
    assert home is not None, "no CODEX_HOME in the request"
    text = text.replace(home.group(1), "<codex home>").replace(found.group(1), "<workspace>")
    return re.sub(r"\d{4}-\d{2}-\d{2}", "<date>", text)


def _parts(request: dict[str, Any]) -> dict[str, Any]:
    """The configuration parts of a Codex request, normalised: the base instructions, each tool
    (MCP servers are the `mcp__<name>` namespaces of the tool-search listing), the reasoning
    settings, and every input text but the task's prompt (the last user message): the
    developer messages (base prompt, skills listing, permissions, deferred tools) and the
    AGENTS.md and environment context."""
    texts = [
        (item.get("role"), part.get("text", ""))
        for item in request["input"]
        for part in item.get("content") or []
    ]
    assert texts[-1][0] == "user"  # the task's prompt (or "Say OK."), not configuration
    return {
        "instructions": _normalised(str(request.get("instructions") or ""), request),
        "tools": [_normalised(json.dumps(t, sort_keys=True), request) for t in request["tools"]],
        "reasoning": request.get("reasoning"),
        "context": [_normalised(t, request) for _, t in texts[:-1]],
    }


SKILLS = re.compile(r"### Skill roots\n.*?(?=### Available skills)", flags=re.S)
WHERE = re.compile(r" \(file: r\d+/")


def _skills_by_name(text: str) -> str:
    """The skills listing without where the skills are (names and descriptions kept, sorted):
    the test below compares where they are too."""
    if "### Available skills" not in text:
        return text
    head, _, listing = SKILLS.sub("", text).partition("### Available skills\n")
    entries, _, tail = listing.partition("</skills_instructions>")
    lines = sorted(WHERE.split(line)[0] for line in entries.splitlines())
    return head + "\n".join(lines) + tail


@pytest.mark.slow  # one oracle session of two runs, one direct CLI run (about 40 s)
def test_the_full_codex_arm_sends_the_teams_configuration(
    first_requests: dict[str, dict[str, Any]],
) -> None:
    """Tools (MCP namespaces among them), base instructions, AGENTS.md, environment and every
    developer message are the team's once normalised; the skills listing too, by name and
    description, but for where the skills are (the test after it compares those too)."""
    ours, theirs = _parts(first_requests["full"]), _parts(first_requests["team"])
    assert ours["tools"] == theirs["tools"]
    assert "mcp__ledger_facts" in json.dumps(ours)  # a namespace tool, or deferred: as the CLI
    assert ours["instructions"] == theirs["instructions"]
    mine = [_skills_by_name(t) for t in ours["context"]]
    assert mine == [_skills_by_name(t) for t in theirs["context"]]
    assert "- cents-arithmetic: Adding" in "\n".join(mine)
    # the control: an arm without the team's server lacks its namespace, all else equal
    control = _parts(first_requests[CONTROL])
    assert "mcp__ledger_facts" not in json.dumps(control)
    # (Codex offers its MCP resource tools, list_mcp_resources and the like, only with a server)
    assert control["tools"] == [
        t for t in ours["tools"] if "mcp" not in json.loads(t).get("name", "")
    ]
    assert control["context"] == [t.replace("- mcp__ledger_facts\n", "") for t in ours["context"]]


@pytest.mark.slow
def test_the_full_codex_arm_lists_the_skills_where_the_team_has_them(
    first_requests: dict[str, dict[str, Any]],
) -> None:
    """The overlay puts an arm's skills where the team keeps them (the workspace's
    .agents/skills): the listing, its roots table and its order, is the team's byte for byte
    once the paths are normalised."""
    ours = _parts(first_requests["full"])["context"]
    assert ours == _parts(first_requests["team"])["context"]
    listing = next(t for t in ours if t.startswith("<skills_instructions>"))
    assert "`<workspace>/.agents/skills`" in listing  # the team's root, not CODEX_HOME's
    assert "(file: r1/cents-arithmetic/SKILL.md)" in listing


@pytest.mark.slow
def test_the_full_codex_arm_keeps_the_teams_codex_settings(
    first_requests: dict[str, dict[str, Any]],
) -> None:
    """The team's `model_reasoning_effort = "medium"` is in every arm (the control's too): the
    request's reasoning settings are the team's."""
    ours, theirs = _parts(first_requests["full"]), _parts(first_requests["team"])
    assert ours["reasoning"] == theirs["reasoning"]
    assert theirs["reasoning"]["effort"] == "medium"
    assert _parts(first_requests[CONTROL])["reasoning"] == theirs["reasoning"]
