"""The other CLIs' configurations read into components (`formats.other_configs`): Codex's
AGENTS.md, skills and .codex/config.toml; Gemini CLI's GEMINI.md and .gemini/; opencode's
AGENTS.md, opencode.json and .opencode/. What a tier cannot carry is listed with the reason,
the written tiers validate, and bad input is one error naming the file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_scylla.config.extensions import agents
from pytest_scylla.formats import ablation_plan
from pytest_scylla.formats.agent_config import Configuration
from pytest_scylla.formats.other_configs import read_codex, read_gemini, read_opencode
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError
from pytest_scylla.run.agents import configuration_reader

CODEX_TEAM = Path(__file__).parents[2] / "fixtures" / "team-codex"
SKILL = "---\nname: {name}\ndescription: {name} does one thing.\n---\nDo the thing.\n"
AGENT = "---\ndescription: reviews a change\n{extra}---\nRead the diff and say what is wrong.\n"


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _validates(config: Configuration, out: Path) -> TierSet:
    """The plan's tiers for `config`, written and checked as the session checks them."""
    units = ablation_plan.factors(config)
    arms = ablation_plan.design(units, factorial_above=len(units))  # full first
    ablation_plan.write_tiers(config, units, arms, out)
    tiers = TierSet(out)
    assert tiers.errors == {}
    for sub in tiers.tiers["T0"].subtests:
        tiers.resolve(sub.ref)  # a SpecError fails the test
    return tiers


def _listing(config: Configuration) -> dict[str, str]:
    return {c.id: ("ablated" if c.ablated else c.reason) for c in config.components}


def test_codex_sections_skills_and_mcp_servers(tmp_path: Path) -> None:
    config = read_codex(CODEX_TEAM)
    listed = _listing(config)
    assert [i for i, state in listed.items() if state == "ablated"] == [
        "section:ledger-service-notes-for-codex",
        "section:where-things-are",
        "section:checking-a-change",
        "section:amounts",
        "section:style",
        "section:failures",
        "skill:cents-arithmetic",
        "skill:release-notes",
        "skill:sqlite-fixtures",
        "mcp:ledger-facts",
    ]
    assert "remote server" in listed["mcp:issue-tracker"]
    assert "carried in every arm" in listed["setting:model-reasoning-effort"]
    assert "custom prompts" in listed["command:release"]
    tiers = _validates(config, tmp_path / "ablation")
    full = tiers.tiers["T0"].subtests[0]
    assert full.skills == ("cents-arithmetic", "release-notes", "sqlite-fixtures")
    assert full.settings is None or not full.settings  # Codex runs no Claude Code settings


def test_codex_reads_the_override_in_place_of_agents_md(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {"AGENTS.md": "## A\na\n## B\nb\n## C\nc\n", "AGENTS.override.md": "## Only\nthis\n"},
    )
    assert [c.id for c in read_codex(root).components] == ["section:only"]


def test_gemini_context_file_imports_skills_agents_and_servers(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "CONTEXT.md": "# Team\nintro\n## Build\n@docs/build.md\n## Review\nreview text\n",
            "docs/build.md": "run make\n",
            ".gemini/settings.json": '{"context": {"fileName": ["CONTEXT.md"]},\n'
            ' "mcpServers": {"facts": {"command": "python3", "args": ["f.py"]},\n'
            '   "remote": {"httpUrl": "https://example.invalid/mcp"}},\n'
            ' "model": {"name": "gemini-2.5-pro"}}\n',
            ".gemini/skills/lint/SKILL.md": SKILL.format(name="lint"),
            ".gemini/agents/reviewer.md": AGENT.format(extra=""),
            ".gemini/agents/searcher.md": AGENT.format(extra="tools: [grep_search]\n"),
            ".gemini/extensions/ext/gemini-extension.json": "{}",
            ".gemini/commands/ship.toml": 'prompt = "ship it"\n',
        },
    )
    config = read_gemini(root)
    listed = _listing(config)
    ablated = [i for i, state in listed.items() if state == "ablated"]
    assert ablated == [
        "section:team",
        "section:build",
        "section:review",
        "skill:lint",
        "agent:reviewer",
        "mcp:facts",
    ]
    build = next(c for c in config.components if c.id == "section:build")
    assert "run make" in build.text  # the import, in place
    assert "Gemini CLI's terms" in listed["agent:searcher"]
    assert "remote server" in listed["mcp:remote"]
    assert "a setting of Gemini CLI" in listed["setting:model"]
    assert "extension" in listed["file:ext-gemini-extension-json"]
    assert "custom commands" in listed["command:ship-toml"]
    _validates(config, tmp_path / "ablation")


def test_opencode_instructions_agents_and_local_servers(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "AGENTS.md": "# Team\n## Layout\nsrc/\n## Tests\nrun them\n",
            "docs/style.md": "# Style\nshort functions\n",
            "opencode.json": '{"instructions": ["docs/*.md"],\n'
            ' "mcp": {"facts": {"type": "local", "command": ["python3", "f.py"],'
            ' "environment": {"X": "1"}},\n'
            '   "off": {"type": "local", "command": ["x"], "enabled": false},\n'
            '   "web": {"type": "remote", "url": "https://example.invalid/mcp"}},\n'
            ' "agent": {"plan": {"model": "x"}}, "theme": "dark"}\n',
            ".opencode/skills/lint/SKILL.md": SKILL.format(name="lint"),
            ".opencode/agents/reviewer.md": AGENT.format(extra="mode: subagent\n"),
            ".opencode/command/ship.md": "ship it\n",
        },
    )
    config = read_opencode(root)
    listed = _listing(config)
    assert [i for i, state in listed.items() if state == "ablated"] == [
        "section:team",
        "section:layout",
        "section:tests",
        "section:style",
        "skill:lint",
        "agent:reviewer",
        "mcp:facts",
    ]
    facts = next(c for c in config.components if c.id == "mcp:facts")
    assert dict(facts.data) == {"command": "python3", "args": ["f.py"], "env": {"X": "1"}}
    assert "switched off" in listed["mcp:off"]
    assert "remote server" in listed["mcp:web"]
    assert "declared in opencode.json" in listed["agent:plan"]
    assert "a setting of opencode" in listed["setting:theme"]
    _validates(config, tmp_path / "ablation")


def test_opencode_falls_back_to_claude_md(tmp_path: Path) -> None:
    root = _write(tmp_path, {"CLAUDE.md": "# One\n## Two\n## Three\n"})
    assert [c.name for c in read_opencode(root).components] == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("agent", "path", "content", "expected"),
    [
        ("codex", ".codex/config.toml", "a = 1\n[mcp_servers\n", "config.toml:2: "),
        ("codex", "AGENTS.md", "## A\n\x1b[31m\n", "AGENTS.md:2: column 1:"),
        ("codex", ".agents/skills/s/SKILL.md", "no front matter\n", "SKILL.md:1: expected YAML"),
        ("gemini-cli", ".gemini/settings.json", '{\n "a": ,\n}', "settings.json:2: column 7"),
        ("gemini-cli", "GEMINI.md", "## A\n@GEMINI.md\n", "GEMINI.md:2: @GEMINI.md: import loop"),
        ("opencode", "opencode.json", '{"instructions": ["../x.md"]}', "'../x.md' is outside"),
        ("opencode", "opencode.json", '{"mcp": {"a": {"type": "local"}}}', "mcp.a.command"),
    ],
)
def test_bad_input_names_the_file_and_line(
    tmp_path: Path, agent: str, path: str, content: str, expected: str
) -> None:
    _write(tmp_path, {path: content})
    with pytest.raises(SpecError) as caught:
        configuration_reader(agents(None)[agent])(tmp_path)  # the adapter's own reader
    message = str(caught.value)
    assert expected in message, message
    assert "\n" not in message


def test_a_codex_project_copied_whole_plans_the_same(tmp_path: Path) -> None:
    """The configuration hash depends on what the files hold, not where the project is."""
    copy = Path(shutil.copytree(CODEX_TEAM, tmp_path / "elsewhere"))
    assert read_codex(copy).digest == read_codex(CODEX_TEAM).digest
    (copy / ".codex" / "config.toml").write_text('[mcp_servers.ledger-facts]\ncommand = "x"\n')
    assert read_codex(copy).digest != read_codex(CODEX_TEAM).digest
