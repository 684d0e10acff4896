"""The overlay writes exactly what a subtest declares, as copies, and isolates HOME."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.run.overlay import apply

ROOT = Path(__file__).resolve().parents[3]
TIERS = TierSet(ROOT / "tiers")
EVERY_SUBTEST = [s.ref for t in TIERS.tiers.values() for s in t.subtests]


def run_overlay(ref: str, tmp_path: Path) -> tuple[Path, Path, object]:
    ws, run_dir = tmp_path / "ws", tmp_path / "run"
    ws.mkdir(parents=True)
    run_dir.mkdir(parents=True)
    return ws, run_dir, apply(TIERS.resolve(ref), TIERS, ws, run_dir)


def flag(args: tuple[str, ...], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_empty_prompt_tier_writes_nothing_into_the_workspace(tmp_path: Path) -> None:
    ws, run_dir, ov = run_overlay("T0-00", tmp_path)
    assert list(ws.iterdir()) == []
    assert ov.written == ()
    assert flag(ov.args, "--system-prompt") == ""
    assert "--strict-mcp-config" in ov.args
    config = json.loads(Path(flag(ov.args, "--mcp-config") or "").read_text())
    assert config == {"mcpServers": {}}
    assert ov.env["HOME"] == str(run_dir / "home")
    assert ov.env["CLAUDE_CONFIG_DIR"] == str(run_dir / "home/.claude")
    assert list((run_dir / "home/.claude").iterdir()) == []


def test_vanilla_passes_no_prompt_flags(tmp_path: Path) -> None:
    _, _, ov = run_overlay("T0-01", tmp_path)
    assert "--system-prompt" not in ov.args
    assert "--append-system-prompt" not in ov.args
    assert "--tools" not in ov.args


@pytest.mark.parametrize("ref", EVERY_SUBTEST)
def test_every_declared_resource_lands_and_nothing_else(ref: str, tmp_path: Path) -> None:
    sub = TIERS.resolve(ref)
    ws, _, ov = run_overlay(ref, tmp_path)
    claude_md = ws / "CLAUDE.md"
    if sub.claude_md:
        text = claude_md.read_text()
        positions = [
            text.index(TIERS.resource_path("claude_md", b).read_text().strip())
            for b in sub.claude_md
        ]
        assert positions == sorted(positions)  # in declared order
    else:
        assert not claude_md.exists()
    skills = sorted(p.name for p in (ws / ".claude/skills").glob("*"))
    assert skills == sorted(sub.skills)
    agents = sorted(p.stem for p in (ws / ".claude/agents").glob("*.md"))
    assert agents == sorted(sub.agents)
    servers = json.loads(Path(flag(ov.args, "--mcp-config") or "").read_text())["mcpServers"]
    assert sorted(servers) == sorted(sub.mcp_servers)
    for server in servers.values():
        assert "${" not in json.dumps(server)
    settings = ws / ".claude/settings.json"
    deny = json.loads(settings.read_text())["permissions"]["deny"] if settings.exists() else []
    assert deny == list(sub.tools_deny)
    tools = flag(ov.args, "--tools")
    assert tools == (",".join(sub.tools_allow) if sub.tools_allow is not None else None)
    for path in ws.rglob("*"):
        assert not path.is_symlink()
    assert ov.declared["skills"] == list(sub.skills)


def test_prompt_files_are_passed_as_text(tmp_path: Path) -> None:
    for ref in EVERY_SUBTEST:
        prompt = TIERS.resolve(ref).system_prompt
        if prompt and prompt.mode in ("append", "replace") and prompt.file:
            _, _, ov = run_overlay(ref, tmp_path / ref)
            name = "--system-prompt" if prompt.mode == "replace" else "--append-system-prompt"
            assert flag(ov.args, name) == prompt.file.read_text()


def test_mcp_server_files_are_copied_per_run(tmp_path: Path) -> None:
    ref = next(r for r in EVERY_SUBTEST if "project-facts" in TIERS.resolve(r).mcp_servers)
    ws, run_dir, ov = run_overlay(ref, tmp_path)
    server = json.loads(Path(flag(ov.args, "--mcp-config") or "").read_text())["mcpServers"][
        "project-facts"
    ]
    script = Path(server["args"][0])
    assert script.is_file()
    assert script.is_relative_to(run_dir)
    assert str(ws) in server["args"]
    assert os.access(script, os.R_OK)


@pytest.mark.parametrize("project_config", ["remove", "keep"])
def test_an_arm_can_take_the_projects_own_configuration_out(
    tmp_path: Path, project_config: str
) -> None:
    """`project_config: remove` (what `scylla ablate plan` writes): the workspace's own CLAUDE.md,
    .claude/ and .mcp.json are gone before the arm's are written, a planted link is removed and
    its target left alone; `keep` (the control, the default) leaves them and appends."""
    from dataclasses import replace

    ws, run_dir = tmp_path / "ws", tmp_path / "run"
    (ws / ".claude/skills/own").mkdir(parents=True)
    (ws / ".claude/skills/own/SKILL.md").write_text("---\nname: own\n---\nmine\n")
    (ws / "CLAUDE.md").write_text("# the project's own\n")
    (ws / ".claude/hooks").mkdir()
    (ws / ".claude/hooks/check.sh").write_text("true\n")  # what a hook runs: stays
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "agents").mkdir(parents=True)
    (elsewhere / "agents/a.md").write_text("an agent outside\n")
    (ws / ".codex").symlink_to(elsewhere)  # a linked config folder: the link goes, not its files
    (ws / ".mcp.json").write_text("{}")
    outside = tmp_path / "outside.md"
    outside.write_text("not the workspace's\n")
    (ws / "AGENTS.md").symlink_to(outside)
    (ws / ".agents/skills/theirs").mkdir(parents=True)  # Codex's repository skills
    (ws / ".agents/skills/theirs/SKILL.md").write_text("---\nname: theirs\n---\nx\n")
    (ws / ".agents/notes.md").write_text("not a skill: stays\n")
    (ws / "AGENTS.override.md").write_text("# Codex reads this in place of AGENTS.md\n")
    (ws / "opencode.jsonc").write_text("{}\n")
    run_dir.mkdir()
    sub = replace(TIERS.resolve("T0-11"), project_config=project_config)  # with blocks
    ov = apply(sub, TIERS, ws, run_dir)
    own = (ws / "CLAUDE.md").read_text().startswith("# the project's own")
    if project_config == "remove":
        assert not own
        assert sorted(p.name for p in ws.iterdir()) == [".agents", ".claude", "CLAUDE.md"]
        assert [p.name for p in (ws / ".claude").iterdir()] == ["hooks"]
        assert [p.name for p in (ws / ".agents").iterdir()] == ["notes.md"]
        assert set(ov.written) == {
            "CLAUDE.md",
            "AGENTS.md",
            "AGENTS.override.md",
            ".agents/skills",
            ".claude/skills",
            ".mcp.json",
            ".codex",
            "opencode.jsonc",
        }
    else:
        assert own
        assert (ws / ".claude/skills/own/SKILL.md").exists()
        assert (ws / "AGENTS.md").is_symlink()
    assert outside.read_text() == "not the workspace's\n"
    assert (elsewhere / "agents/a.md").read_text() == "an agent outside\n"


@pytest.mark.parametrize("keep", [True, False])
def test_removing_the_projects_configuration_takes_out_memory_loaded_on_demand(
    tmp_path: Path, keep: bool
) -> None:
    """The rules of .claude/rules/ and the CLAUDE.md of subfolders go, but those the arm's
    `keep_files` names (the plan's components it keeps); a link among them goes too, its
    target left alone; a hook's script and other files stay. The control (`keep` False): the
    same files, named by no arm, all go."""
    from pytest_scylla.run.overlay import remove_project_config

    ws = tmp_path / "ws"
    rules = ws / ".claude" / "rules"
    for rel, text in {
        ".claude/rules/global.md": "Always say hello.\n",
        ".claude/rules/web/style.md": "---\ndescription: x\n---\nNo paths.\n",
        ".claude/rules/py.md": '---\npaths:\n  - "src/**/*.py"\n---\nType every function.\n',
        ".claude/format-hook.sh": "#!/bin/sh\n",
        "src/CLAUDE.md": "Typed code.\n",
        "docs/CLAUDE.md": "Docs.\n",
        "docs/CLAUDE.local.md": "Mine.\n",
        "docs/guide.md": "a guide\n",
    }.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (tmp_path / "outside.md").write_text("outside\n")
    (rules / "linked.md").symlink_to(tmp_path / "outside.md")
    (ws / "lib").mkdir()
    (ws / "lib" / "CLAUDE.md").symlink_to(tmp_path / "outside.md")
    (ws / "docs" / "AGENTS.md").write_text("Docs, for every CLI.\n")
    (ws / "api").mkdir()  # pydantic-ai's shape: a relative link to a file of the project
    (ws / "api" / "CLAUDE.md").symlink_to("../docs/AGENTS.md")
    (ws / "up").mkdir()  # the same target through an absolute link: not kept
    (ws / "up" / "CLAUDE.md").symlink_to(ws / "docs" / "AGENTS.md")
    kept = ("api/CLAUDE.md", ".claude/rules/py.md", "src/CLAUDE.md") if keep else ()
    (ws / "esc").mkdir()  # relative, but climbing out of the workspace: not kept
    (ws / "esc" / "CLAUDE.md").symlink_to("../../outside.md")
    kept += ("lib/CLAUDE.md", "up/CLAUDE.md", "esc/CLAUDE.md") if keep else ()
    removed = remove_project_config(ws, kept)
    assert sorted(removed) == sorted(
        [
            ".claude/rules/global.md",
            ".claude/rules/linked.md",
            ".claude/rules/web/style.md",
            "docs/CLAUDE.local.md",
            "docs/CLAUDE.md",
            "lib/CLAUDE.md",  # a link out of the workspace, even when kept
            "up/CLAUDE.md",  # an absolute link, even when kept
            "esc/CLAUDE.md",  # a relative link out of the workspace, even when kept
            *([] if keep else ["api/CLAUDE.md", ".claude/rules/py.md", "src/CLAUDE.md"]),
        ]
    )
    left = sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*") if p.is_file())
    assert left == sorted([".claude/format-hook.sh", "docs/AGENTS.md", "docs/guide.md", *kept[:3]])
    assert (ws / "api" / "CLAUDE.md").is_symlink() is keep  # kept as the link it is
    assert (tmp_path / "outside.md").read_text() == "outside\n"
