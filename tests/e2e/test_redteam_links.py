"""Red team (#44 class 5): links in a team's configuration and project. `scylla ablate plan` reads
nothing through a link that leaves the project (a linked CLAUDE.md, a skill folder or a file in
one, a sub-agent, a link out inside a folder a skill links to, .mcp.json, Codex's config.toml),
so no host file is copied into the tiers folder and from there into every arm and request; a link
that loops back is refused too. `scylla init` writes nothing through a link (a linked `cases/` or
`.github/`, a dangling `.gitignore`) and reads no pytest configuration through a link out.

Positive controls: with the checks off (`core.links` made to pass everything, or `init`'s old
writer), the host file's text is in the written tiers and the scaffold lands in the other folder.
Links that stay inside the project are followed for reading."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core import links
from pytest_scylla.formats.yamlmarks import display

TEAM = Path(__file__).parents[1] / "fixtures" / "team"
HOST = "HOST-ONLY-7f3a: the text of a file outside the project"
SKILL = f"---\ndescription: Formats ledgers.\n---\n\n# Leak\n\n{HOST}\n"
AGENT = f"---\ndescription: Reviews changes.\n---\n\nYou review. {HOST}\n"
MCP = f'{{"mcpServers": {{"leak": {{"command": "echo", "args": ["{HOST}"]}}}}}}'
CODEX = f'[mcp_servers.leak]\ncommand = "echo"\nargs = ["{HOST}"]\n'


def _link(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.exists() or link.is_symlink():
        shutil.rmtree(link) if link.is_dir() and not link.is_symlink() else link.unlink()
    link.symlink_to(target)
    return link


def _claude_md(team: Path, host: Path) -> Path:
    (host / "secret.md").write_text(f"# Host\n\n{HOST}\n")
    return _link(team / "CLAUDE.md", host / "secret.md")


def _skill_file(team: Path, host: Path) -> Path:
    (host / "secret.md").write_text(HOST)
    return _link(team / ".claude/skills/money-math/notes.md", host / "secret.md")


def _skill_folder(team: Path, host: Path) -> Path:
    (host / "leak").mkdir()
    (host / "leak/SKILL.md").write_text(SKILL)
    return _link(team / ".claude/skills/leak", host / "leak")


def _agent(team: Path, host: Path) -> Path:
    (host / "spy.md").write_text(AGENT)
    return _link(team / ".claude/agents/spy.md", host / "spy.md")


def _through_a_folder_inside(team: Path, host: Path) -> Path:
    """A skill links to a project folder (inside: followed), which holds a link out."""
    (host / "secret.md").write_text(HOST)
    out = _link(team / "docs/host-notes.md", host / "secret.md")
    _link(team / ".claude/skills/money-math/docs", Path("../../../docs"))
    return team / ".claude/skills/money-math/docs" / out.name


def _mcp_json(team: Path, host: Path) -> Path:
    (host / "mcp.json").write_text(MCP)
    return _link(team / ".mcp.json", host / "mcp.json")


def _codex_config(team: Path, host: Path) -> Path:
    (host / "config.toml").write_text(CODEX)
    (team / "AGENTS.md").write_text("# Team\n\nUse cents.\n")
    return _link(team / ".codex/config.toml", host / "config.toml")


ATTACKS: dict[str, Callable[[Path, Path], Path]] = {
    "claude-md": _claude_md,
    "skill-file": _skill_file,
    "skill-folder": _skill_folder,
    "agent": _agent,
    "link-out-behind-a-link-inside": _through_a_folder_inside,
    "mcp-json": _mcp_json,
    "codex-config": _codex_config,
}


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, Path]:
    """(the sample team's project, a host folder outside it)."""
    host = tmp_path / "host"
    host.mkdir()
    return Path(shutil.copytree(TEAM, tmp_path / "team")), host


def _plan(team: Path, out: Path, capsys: pytest.CaptureFixture[str], agent: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["ablate", "plan", str(team), "--agent", agent, "--out", str(out)])
    return code, capsys.readouterr().err


def _carried(out: Path) -> bool:
    """Whether any file of the written tiers holds the host file's text."""
    return out.is_dir() and any(
        HOST in f.read_text(errors="replace") for f in out.rglob("*") if f.is_file()
    )


@pytest.mark.parametrize("attack", ATTACKS)
def test_ablate_plan_reads_nothing_through_a_link_out_of_the_project(
    team: tuple[Path, Path],
    attack: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project, host = team
    link = ATTACKS[attack](project, host)
    agent = "codex" if attack == "codex-config" else "claude-code"
    out = project.parent / "tiers"
    code, err = _plan(project, out, capsys, agent)
    assert code == 2, err
    shown = display(link)  # as the message names it: relative to the working directory
    assert f"{shown}: a link to {os.readlink(link)}: outside the project {project.resolve()}" in err
    assert "copy what it points to into the project instead of linking it" in err
    assert not _carried(out)
    # positive control: with the checks off, the host file's text is in the tiers
    monkeypatch.setattr(links, "check_read", lambda *a: None)
    monkeypatch.setattr(links, "check_tree", lambda *a: None)
    code, err = _plan(project, out, capsys, agent)
    assert code == 0, err
    assert _carried(out)


def test_ablate_plan_follows_links_inside_the_project(
    team: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    project, _ = team
    _link(project / ".claude/skills/money-math/testing.md", Path("../../../docs/testing.md"))
    _link(project / ".claude/skills/money-math/tools", Path("../../../tools"))
    out = project.parent / "tiers"
    code, err = _plan(project, out, capsys, "claude-code")
    assert code == 0, err
    copied = out / "skills/money-math"
    assert (copied / "testing.md").read_text() == (project / "docs/testing.md").read_text()
    assert (copied / "tools/check_cents.py").is_file()


def test_ablate_plan_refuses_a_link_that_loops(
    team: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _ = team
    link = _link(project / ".claude/skills/money-math/again", Path(".."))
    out = project.parent / "tiers"
    code, err = _plan(project, out, capsys, "claude-code")
    assert code == 2
    shown = display(link)  # as the message names it: relative to the working directory
    assert f"{shown}: a link to ..: a folder that holds the link, so a copy would never end" in err
    # positive control: unchecked, the copy follows the loop until the kernel stops it, and the
    # plan fails with a wall of repeated paths
    monkeypatch.setattr(links, "check_tree", lambda *a: None)
    code, err = _plan(project, out, capsys, "claude-code")
    assert code == 2
    assert "Too many levels of symbolic links" in err
    assert err.count("money-math/again/money-math/again") > 10


def _old_writer(root: Path, rel: str, text: str) -> bool:
    """`scylla init`'s writer before: `exists()`, `mkdir(parents=True)`, `write_text`."""
    path = root / rel
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


@pytest.mark.parametrize(
    ("rel", "target"),
    [("cases", "evals"), (".github", "ci"), (".gitignore", "ignored/.gitignore")],
)
def test_init_writes_nothing_through_a_link(
    tmp_path: Path,
    rel: str,
    target: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    (elsewhere / "ignored").mkdir(parents=True)
    link = _link(project / rel, elsewhere / target)  # `cases`, `.github`: dangling until made
    if rel != ".gitignore":
        (elsewhere / target).mkdir()
    assert main(["init", str(project)]) == 2
    said = capsys.readouterr()
    assert f"{link}: a link to {elsewhere / target}: nothing is written through a link" in said.out
    assert "some files were not written (named above, with why)" in said.err
    assert [p for p in elsewhere.rglob("*") if p.is_file()] == []
    assert (project / "pytest.ini").is_file()  # the rest is made
    # positive control: the old writer follows the link into the other folder
    for made in ("pytest.ini", ".gitignore", "cases", ".github", ".gitlab-ci.yml"):
        if made != rel and (project / made).exists():
            shutil.rmtree(project / made) if (project / made).is_dir() else (
                project / made
            ).unlink()
    monkeypatch.setattr(links, "write_new", _old_writer)
    assert main(["init", str(project)]) == 0
    assert [p for p in elsewhere.rglob("*") if p.is_file()] != []


def test_init_reads_no_pytest_configuration_through_a_link_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, host = tmp_path / "project", tmp_path / "host.cfg"
    project.mkdir()
    host.write_text("[tool:pytest]\naddopts = -x\n")
    link = _link(project / "setup.cfg", host)
    assert main(["init", str(project)]) == 2
    out = capsys.readouterr().out
    assert f"refused pytest.ini ({link}: a link to {host}: outside the project" in out
    assert "not read)" in out
    # positive control: unchecked, the host file is read (and decides that pytest.ini is skipped)
    monkeypatch.setattr(links, "check_read", lambda *a: None)
    assert main(["init", str(project)]) == 0
    assert "skipped pytest.ini (the pytest configuration in setup.cfg" in capsys.readouterr().out
