"""The commit the agent starts from: the tier overlay folded into the checkout, so the agent's
`git status` is clean (as in the team's own checkout), while every diff still shows exactly the
agent's work and never the overlay's files."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, Source, load_case
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.run import overlay
from pytest_scylla.run.agents import codex, gemini_cli, opencode
from pytest_scylla.run.workspace import Workspace, checkout, create, diff, git, start

ROOT = Path(__file__).resolve().parents[3]
TIERS = TierSet(ROOT / "tiers")
BLOCK = TIERS.resource_path("claude_md", "task-focus").read_text().strip()
TEAM = {  # a team's checkout: its own agent configuration beside the code
    "README.md": "the project\n",
    "lib.py": "def f():\n    return 0\n",
    "CLAUDE.md": "# the team's rules\n",
    "AGENTS.md": "# the team's rules for Codex\n",
    ".mcp.json": '{"mcpServers": {}}\n',
    ".claude/settings.json": '{"env": {}}\n',
}


@pytest.fixture
def case(tmp_path: Path) -> Case:
    """A case whose source folder is the team's checkout."""
    source = tmp_path / "source"
    for rel, text in TEAM.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    plain = load_case(ROOT / "cases/test-001/test.yaml", ROOT / "rubrics")
    return replace(plain, source=Source(path=source))


def _arm(
    tmp_path: Path,
    case: Case,
    name: str,
    apply: Callable[..., overlay.Overlay] = overlay.apply,
) -> tuple[Workspace, overlay.Overlay]:
    """A run's workspace as `run_steps.prepare` makes it: checkout, overlay (the project's own
    configuration removed, four CLAUDE.md blocks written), then `start`."""
    work, private = tmp_path / name / "work", tmp_path / name / "private"
    private.mkdir(parents=True)
    task = checkout(case, work, tmp_path / "cache")
    sub = replace(TIERS.resolve("T0-11"), project_config="remove")
    ov = apply(sub, TIERS, work, private, {"mcpServers": {}})
    return start(work, task, tmp_path / name / "harness"), ov


def _changed(text: str) -> set[str]:
    """The paths a diff names."""
    return set(re.findall(r"(?m)^diff --git a/(\S+) b/", text))


def test_the_agent_starts_from_a_clean_checkout_holding_the_overlay(
    case: Case, tmp_path: Path
) -> None:
    ws, ov = _arm(tmp_path, case, "arm")
    assert {".mcp.json", "CLAUDE.md", "AGENTS.md", ".claude/settings.json"} <= set(ov.written)
    assert not (ws.path / ".mcp.json").exists()  # the overlay did rewrite the configuration
    assert (ws.path / "CLAUDE.md").read_text().startswith(BLOCK)
    assert git(["status", "--porcelain", "--untracked-files=all"], ws.path) == ""
    # one commit, the task's own subject: nothing says the configuration was rewritten
    assert git(["log", "--format=%s"], ws.path).splitlines() == ["test-001: task source"]
    assert ws.base_commit == git(["rev-parse", "HEAD"], ws.path).strip() != ws.task_commit
    # nor does the trail of the replaced commit (its reflog, its objects: the team's files)
    assert git(["reflog"], ws.path) == ""
    assert git(["cat-file", "-t", ws.task_commit], ws.path, check=False) == ""
    assert (
        ws.task_commit
        == create(case, tmp_path / "plain", tmp_path / "cache", tmp_path / "h").base_commit
    )  # the source as pinned
    # the harness's copy is the agent's starting point: its diff is empty
    assert git(["rev-parse", "HEAD"], ws.git_dir).strip() == ws.base_commit
    assert diff(ws) == ""
    again, _ = _arm(tmp_path, case, "again")  # the same configuration, the same commit
    assert again.base_commit == ws.base_commit


def test_the_old_order_showed_the_rewrite_to_the_agent(case: Case, tmp_path: Path) -> None:
    """The positive control: the overlay written after the harness's copy, and not folded in
    (the behaviour before `start`), is what the CLI showed the model and what the diff saw."""
    work, private = tmp_path / "work", tmp_path / "private"
    private.mkdir()
    old = create(case, work, tmp_path / "cache", tmp_path / "harness")
    sub = replace(TIERS.resolve("T0-11"), project_config="remove")
    overlay.apply(sub, TIERS, work, private, {"mcpServers": {}})
    status = git(["status", "--porcelain"], work).splitlines()
    assert {" D .mcp.json", " M CLAUDE.md", " D AGENTS.md", " D .claude/settings.json"} <= set(
        status
    )
    assert {".mcp.json", "CLAUDE.md"} <= _changed(diff(old))


def test_the_diff_shows_exactly_the_agents_work(case: Case, tmp_path: Path) -> None:
    """An edit, a new file and a commit of the agent's own are in the diff; the overlay's files
    are not, but where the agent changed them. Its own .git is only files: rewriting it changes
    nothing the harness reads."""
    ws, _ = _arm(tmp_path, case, "arm")
    (ws.path / "lib.py").write_text("def f():\n    return 42\n")
    (ws.path / "notes.py").write_text("x = 1\n")
    git(["add", "notes.py"], ws.path)
    git(["commit", "-q", "-m", "agent's commit"], ws.path)
    shutil.rmtree(ws.path / ".git")  # the agent's history, gone
    git(["init", "-q"], ws.path)
    assert _changed(diff(ws)) == {"lib.py", "notes.py"}
    with (ws.path / "CLAUDE.md").open("a") as claude_md:
        claude_md.write("- the agent's own note\n")
    (ws.path / ".mcp.json").write_text("{}\n")  # what the overlay removed, put back
    assert _changed(diff(ws)) == {"lib.py", "notes.py", "CLAUDE.md", ".mcp.json"}
    assert "+- the agent's own note" in diff(ws)
    assert BLOCK.splitlines()[0] not in diff(ws)  # the overlay's blocks are not the agent's


@pytest.mark.parametrize(
    "apply", [codex.apply, gemini_cli.apply, opencode.apply], ids=["codex", "gemini", "opencode"]
)
def test_every_clis_overlay_is_folded_in(
    case: Case, tmp_path: Path, apply: Callable[..., overlay.Overlay]
) -> None:
    ws, ov = _arm(tmp_path, case, "arm", apply)
    assert ov.written  # it rewrote the project's configuration
    assert git(["status", "--porcelain", "--untracked-files=all"], ws.path) == ""
    assert ws.base_commit != ws.task_commit
    assert diff(ws) == ""


def test_a_pinned_commit_keeps_its_history_author_and_message(tmp_path: Path) -> None:
    """A `repo` + `commit` source: the pinned commit is replaced by one with the overlay's tree
    and the same parents, author and message (the record's `source.commit` stays the pinned
    one: `task_commit`); the history shows no commit of ours."""
    repo = tmp_path / "upstream"
    for n, (rel, text) in enumerate(TEAM.items()):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
        if n == 0:
            git(["init", "-q"], repo)
        git(["add", "-A"], repo)
        team = {"GIT_AUTHOR_NAME": "team", "GIT_AUTHOR_EMAIL": "team@example.com"}
        git(["commit", "-q", "-m", f"add {rel}\n\nbody\n"], repo, env=team)
    pinned = git(["rev-parse", "HEAD"], repo).strip()
    plain = load_case(ROOT / "cases/test-001/test.yaml", ROOT / "rubrics")
    case = replace(plain, source=Source(repo=repo.as_uri(), commit=pinned, url=repo.as_uri()))
    ws, _ = _arm(tmp_path, case, "arm")
    assert ws.task_commit == pinned != ws.base_commit
    assert git(["status", "--porcelain", "--untracked-files=all"], ws.path) == ""
    fields = "%P%n%an <%ae> %ad%n%B"
    assert git(["log", "-1", f"--format={fields}", ws.base_commit], ws.path) == git(
        ["log", "-1", f"--format={fields}", pinned], repo
    )
    assert len(git(["log", "--format=%H"], ws.path).split()) == len(TEAM)
    assert pinned not in git(["log", "--format=%H"], ws.path)
