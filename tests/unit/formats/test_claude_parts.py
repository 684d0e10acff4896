"""What Claude Code loads beside CLAUDE.md, skills, agents and servers (`formats.claude_parts`),
planned as the real CLI sends it: unscoped rules as memory, commands as listed skills, nested
CLAUDE.md and scoped rules kept in every arm, imports into dot-folders resolved, the `env` keys
that redirect the CLI dropped; the tier file plain YAML, one arm per set of kept factors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_scylla.formats import ablation_plan
from pytest_scylla.formats.agent_config import read_claude_code
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError

SETTINGS = {
    "permissions": {"deny": ["WebFetch"]},
    "env": {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8082",
        "ANTHROPIC_AUTH_TOKEN": "sk-secret-token",
        "ANTHROPIC_MODEL": "claude-opus-4",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "x",
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "HTTPS_PROXY": "http://proxy:3128",
        "BASH_DEFAULT_TIMEOUT_MS": "60000",
    },
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/format-hook.sh"}
                ],
            }
        ]
    },
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "p",
        {
            "CLAUDE.md": "# Team\nintro\n## Build\nmake\n## Rules\nSee @.claude/AGENT_RULES.md\n",
            ".claude/AGENT_RULES.md": "Never commit to main directly.\n",
            ".claude/rules/global.md": "Say what you changed and why.\n",
            ".claude/rules/py.md": '---\npaths:\n  - "src/**/*.py"\n---\nType every function.\n',
            ".claude/commands/release.md": "---\ndescription: Cut a release\n---\nTag it.\n",
            ".claude/commands/front/comp.md": "Make a component\n\nwith tests.\n",
            ".claude/commands/secret.md": "---\ndisable-model-invocation: true\n---\nUser only.\n",
            ".claude/settings.json": json.dumps(SETTINGS),
            ".claude/format-hook.sh": "#!/bin/sh\nruff format .\n",
            "src/CLAUDE.md": "Code under src/ is typed.\n",
            "node_modules/x/CLAUDE.md": "not the team's\n",
        },
    )


def test_every_part_the_cli_loads_is_a_component_or_kept_with_its_reason(project: Path) -> None:
    config = read_claude_code(project)
    parts = {c.id: c for c in config.components}
    ablated = [c.id for c in config.ablated]
    assert ablated == [
        "section:team",
        "section:build",
        "section:rules",
        "rule:global-md",
        "rule:py-md",  # scoped: loaded on demand, kept by the arms' keep_files
        "command:front-comp",
        "command:release",
        "hook:posttooluse",
        "memory:src",  # src/CLAUDE.md, likewise
    ]
    # the import into a dot-folder belongs to its section, as written (the CLI sends the file
    # under its own header), and is not listed on its own
    assert parts["section:rules"].text == "## Rules\nSee @.claude/AGENT_RULES.md\n"
    assert parts["section:rules"].data["imports"] == (".claude/AGENT_RULES.md",)
    assert not any(c.where == ".claude/AGENT_RULES.md" for c in config.components)
    assert "under its own header" in parts["rule:global-md"].reason
    assert "loaded when the agent reads a file its paths name (src/**/*.py)" in (
        parts["rule:py-md"].reason
    )
    assert parts["memory:src"].reason.startswith("read when the agent reads files in src/")
    assert not any(i.startswith("memory:node-modules") for i in parts)
    kept = {c.id: c.reason for c in config.components if not c.ablated}
    assert "in no arm" in kept["command:secret"]
    assert "a script the posttooluse hook runs" in kept["file:format-hook-sh"]
    assert "dropped from every arm" in kept["setting:env-anthropic-base-url"]
    for key in ("auth-token", "model", "default-haiku-model"):
        assert f"setting:env-anthropic-{key}" in kept
    assert {"setting:env-claude-code-use-bedrock", "setting:env-https-proxy"} <= set(kept)
    assert all(kept.values())
    assert "front:comp" in parts["command:front-comp"].reason  # the CLI's own name, said


def test_the_arms_carry_rules_as_memory_commands_as_skills_and_no_redirecting_env(
    project: Path,
) -> None:
    config = read_claude_code(project)
    units = ablation_plan.factors(config)
    arms = ablation_plan.design(units, factorial_above=12)  # leave-one-out: 01 full, 02 none
    tier_file = ablation_plan.write_tiers(config, units, arms, project / "ablation")
    text = tier_file.read_text()
    assert not {"&id", "*id"} & {text[i : i + 3] for i in range(len(text))}  # no anchor, alias
    assert "sk-secret-token" not in text
    assert "127.0.0.1:8082" not in text
    tiers = TierSet(project / "ablation")
    assert tiers.errors == {}
    full = tiers.resolve("T0-01")
    assert full.claude_md == ("team", "build", "rules")
    assert full.claude_md_file is None  # the blocks go to CLAUDE.md
    assert set(full.skills) == {"release", "front-comp"}
    assert full.settings["env"] == {"BASH_DEFAULT_TIMEOUT_MS": "60000"}
    assert full.settings["permissions"] == {"deny": ["WebFetch"]}
    # the rules stay in place (the CLI loads them, each under its header), as does the file
    # the `rules` section imports
    assert full.keep_files == (
        ".claude/AGENT_RULES.md",
        ".claude/rules/global.md",
        ".claude/rules/py.md",
        "src/CLAUDE.md",
    )
    assert not list((project / "ablation/blocks").glob("rule-*"))
    skill = (project / "ablation/skills/front-comp/SKILL.md").read_text()
    assert skill.startswith("---\nname: front-comp\ndescription: Make a component\n---\n")
    none = tiers.resolve("T0-02")
    assert (none.claude_md, none.skills, "hooks" in none.settings) == ((), (), False)
    assert none.keep_files == ()
    without = tiers.resolve(next(f"T0-{a.name[:2]}" for a in arms if a.name.endswith("memory-src")))
    assert without.keep_files == (
        ".claude/AGENT_RULES.md",
        ".claude/rules/global.md",
        ".claude/rules/py.md",
    )
    assert none.settings["env"] == {"BASH_DEFAULT_TIMEOUT_MS": "60000"}  # kept: every arm


def test_a_relative_link_to_a_file_of_the_project_is_memory_like_the_file(tmp_path: Path) -> None:
    """pydantic-ai links each subfolder's CLAUDE.md to the AGENTS.md beside it: the CLI follows
    the link, so it is a component the arms keep as the link it is; an absolute link (which a
    copy of the project would point back at the original) is in no arm, with the reason."""
    root = _write(
        tmp_path / "p",
        {"docs/AGENTS.md": "Write docs in plain words.\n", "CLAUDE.md": "# A\n\nx\n"},
    )
    (root / "docs" / "CLAUDE.md").symlink_to("AGENTS.md")
    (root / "api").mkdir()
    (root / "api" / "CLAUDE.md").symlink_to(root / "docs" / "AGENTS.md")
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / ".claude" / "rules" / "docs.md").symlink_to("../../docs/AGENTS.md")
    parts = {c.id: c for c in read_claude_code(root).components}
    docs = parts["memory:docs"]
    assert docs.ablated
    assert (docs.data["keep"], docs.text) == ("docs/CLAUDE.md", "Write docs in plain words.\n")
    assert parts["rule:docs-md"].data["keep"] == ".claude/rules/docs.md"
    linked = parts["file:api-claude-md"]
    assert not linked.ablated
    assert "not relative" in linked.reason
    # Chainlit's shape: .claude/rules itself a link to a shared folder (named as the folder)
    shutil.rmtree(root / ".claude" / "rules")
    (root / "shared").mkdir()
    (root / ".claude" / "rules").symlink_to("../shared")
    folder = {c.id: c for c in read_claude_code(root).components}["file:claude-rules"]
    assert "a linked folder of rules" in folder.reason


WORKFLOW = 'export const meta = {\n  name: "pr-sweep",\n  description: "Sweep PRs",\n};\n'


def test_a_workflow_is_a_component_the_arms_keep_in_place(tmp_path: Path) -> None:
    """claude-code-action's .claude/workflows/*.js: Claude Code 2.1.197 lists each as a skill
    named by its `meta.name`; the plan makes it a component left in place in the arms that
    keep it (the others take it out), and the ablation check expects that skill there."""
    from pytest_scylla.run.overlay import remove_project_config

    root = _write(
        tmp_path / "p",
        {
            ".claude/workflows/pr-stamp.js": WORKFLOW,
            ".claude/workflows/plain.js": "export default async function run() {}\n",
            ".claude/workflows/notes.txt": "not a workflow\n",
        },
    )
    parts = {c.id: c for c in read_claude_code(root).components}
    assert parts["workflow:pr-sweep"].data == {
        "keep": ".claude/workflows/pr-stamp.js",
        "skill": "pr-sweep",
    }
    assert parts["workflow:plain"].data["skill"] == "plain"  # no meta: the file's name
    assert "listed to the model as the skill 'pr-sweep'" in parts["workflow:pr-sweep"].reason
    assert not parts["file:workflows-notes-txt"].ablated
    config = read_claude_code(root)
    units = ablation_plan.factors(config)
    arms = ablation_plan.design(units)
    ablation_plan.write_tiers(config, units, arms, root / "ablation")
    tiers = TierSet(root / "ablation")
    only = next(a for a in arms if a.name.endswith("no-wf-plain"))
    kept = tiers.resolve(f"T0-{only.name[:2]}").keep_files
    assert kept == (".claude/workflows/pr-stamp.js",)
    ws = tmp_path / "ws"
    shutil.copytree(root, ws)
    removed = remove_project_config(ws, kept)
    assert removed == [".claude/workflows/plain.js"]  # the control: the other one goes
    assert (ws / ".claude/workflows/pr-stamp.js").is_file()


def test_the_output_style_the_settings_name_is_a_component_and_plugins_are_dropped(
    tmp_path: Path,
) -> None:
    """`outputStyle` naming a style of .claude/output-styles/: the file and the key go together
    into the arms that keep it; a style nobody names is in no arm; `enabledPlugins` (from a
    marketplace no sandbox reaches) is dropped from every arm, with the reason."""
    settings = {"outputStyle": "Terse", "enabledPlugins": {"lint@tools": True}, "model": "x"}
    root = _write(
        tmp_path / "p",
        {
            ".claude/output-styles/terse.md": "---\nname: Terse\n---\nBe brief.\n",
            ".claude/output-styles/long.md": "Explain at length.\n",
            ".claude/settings.json": json.dumps(settings),
        },
    )
    config = read_claude_code(root)
    parts = {c.id: c for c in config.components}
    style = parts["output-style:terse"]
    assert style.ablated
    assert style.data == {
        "keep": ".claude/output-styles/terse.md",
        "settings": {"outputStyle": "Terse"},
    }
    assert "in no arm" in parts["output-style:long"].reason
    assert "marketplace" in parts["setting:enabledplugins"].reason
    units = ablation_plan.factors(config)
    arms = ablation_plan.design(units)
    ablation_plan.write_tiers(config, units, arms, root / "ablation")
    tiers = TierSet(root / "ablation")
    full, none = tiers.resolve("T0-01"), tiers.resolve("T0-02")
    assert full.settings == {"model": "x", "outputStyle": "Terse"}
    assert full.keep_files == (".claude/output-styles/terse.md",)
    assert none.settings == {"model": "x"}  # the control: no style, no key
    assert none.keep_files == ()


def test_servers_a_sandbox_cannot_start_are_in_no_arm_with_the_reason(tmp_path: Path) -> None:
    """A remote server (`url`) and one run by `docker run`: listed, in no arm, each saying why
    (a sandbox has no network and no container engine); a command server beside them is a
    component (the control)."""
    servers = {
        "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
        "github": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/github/mcp"]},
        "local": {"command": "node", "args": ["tools/server.js"]},
    }
    root = _write(tmp_path / "p", {".mcp.json": json.dumps({"mcpServers": servers})})
    parts = {c.id: c for c in read_claude_code(root).components}
    assert not parts["mcp:remote"].ablated
    assert "a sandbox has no network" in parts["mcp:remote"].reason
    assert not parts["mcp:github"].ablated
    assert "no container engine" in parts["mcp:github"].reason
    assert parts["mcp:local"].ablated


def test_a_claude_md_of_imports_only_is_cut_by_what_it_imports(tmp_path: Path) -> None:
    """`@AGENTS.md` alone: CLAUDE.md is kept as written and AGENTS.md's sections are the
    components (written back to AGENTS.md). Two imports and nothing else: no section of
    CLAUDE.md's own to keep them in, so the sections are cut by the imported headings with the
    imports resolved in place (every block has text; the known difference docs/ablate.md names)."""
    agents = "# Build\n\nmake\n\n# Test\n\nmake test\n\n# Style\n\nblack\n"
    one = _write(tmp_path / "one", {"CLAUDE.md": "@AGENTS.md\n", "AGENTS.md": agents})
    parts = read_claude_code(one).components
    sections = [c for c in parts if c.kind == "section"]
    assert [c.where for c in sections] == ["AGENTS.md:1", "AGENTS.md:5", "AGENTS.md:9"]
    assert {c.data["home"] for c in sections} == {"AGENTS.md"}
    two = _write(
        tmp_path / "two",
        {"CLAUDE.md": "@a.md\n@b.md\n", "a.md": "# A\n\none\n", "b.md": "# B\n\ntwo\n"},
    )
    sections = [c for c in read_claude_code(two).components if c.kind == "section"]
    assert [c.text for c in sections] == ["# A\n\none\n# B\n\ntwo\n"]  # both, inlined
    assert sections[0].data == {"files": ("a.md", "b.md")}  # no home: written to CLAUDE.md


def test_plan_passes_only_the_variables_the_user_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server reading `${GH_TOKEN}` and `${GH_HOST:-github.com}`: without `--pass-env` the
    plan writes no `pass_env` and says the runs will stop until it is passed; with it, the
    resource names it (a default-valued variable needs nothing)."""
    from pytest_scylla.cli.main import main

    monkeypatch.setenv("GH_TOKEN", "t0ken-value")
    server = {
        "command": "node",
        "args": ["s.js"],
        "env": {"T": "${GH_TOKEN}", "H": "${GH_HOST:-x}"},
    }
    root = _write(tmp_path / "p", {".mcp.json": json.dumps({"mcpServers": {"gh": server}})})
    assert main(["ablate", "plan", str(root), "--out", str(root / "a")]) == 0
    said = capsys.readouterr().out
    assert "note: MCP server 'gh' reads ${GH_TOKEN}: its runs stop" in said
    assert "--pass-env GH_TOKEN" in said
    assert "pass_env" not in (root / "a/mcp/gh.json").read_text()  # the control
    assert (
        main(["ablate", "plan", str(root), "--out", str(root / "a"), "--pass-env", "GH_TOKEN"]) == 0
    )
    written = json.loads((root / "a/mcp/gh.json").read_text())
    assert written["pass_env"] == ["GH_TOKEN"]
    assert "t0ken-value" not in (root / "a/mcp/gh.json").read_text()  # the name, never the value
    assert "note: MCP server" not in capsys.readouterr().out


def test_one_factor_makes_two_arms_not_three(tmp_path: Path) -> None:
    """With one factor, `none` and `no-<it>` keep the same: one arm, said to be merged."""
    root = _write(tmp_path / "p", {".claude/rules/only.md": "One rule.\n"})
    config = read_claude_code(root)
    arms = ablation_plan.design(ablation_plan.factors(config), add_one=True)
    assert [a.name for a in arms] == ["01-full", "02-none"]
    assert "also no-rule-only-md" in arms[1].description
    assert "also only-rule-only-md" in arms[0].description
    assert [a.kept for a in arms] == [frozenset({"rule:only-md"}), frozenset()]


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        (".claude/rules/bad.md", "---\npaths: [a\n---\nx\n", "bad.md:1: the front matter"),
        (".claude/rules/empty.md", "\n", "empty.md:1: the rule is empty"),
        (".claude/commands/bad.md", "---\n: :\n---\nx\n", "bad.md:1: the front matter"),
        (".claude/commands/x.md", "---\ndescription: d\n---\n", "x.md:1: the command has no"),
        (".claude/commands/s.md", "dup\n", "s.md:1: the command 's' has the name of the skill"),
        (
            ".mcp.json",
            '{"mcpServers": {\n "gh": {"command": "gh-mcp",\n "env": {"T": "${SCYLLA_UNSET_X}"}}}}',
            ".mcp.json:3: server 'gh': ${SCYLLA_UNSET_X} is not set; set it",
        ),
    ],
)
def test_bad_rules_and_commands_are_one_line_naming_the_file(
    tmp_path: Path, path: str, content: str, expected: str
) -> None:
    root = _write(
        tmp_path / "p",
        {path: content, ".claude/skills/s/SKILL.md": "---\ndescription: a skill\n---\nbody\n"},
    )
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    assert expected in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


def test_yaml_of_the_tier_file_holds_every_arm_in_full(project: Path) -> None:
    """Each arm's settings written out in full (no alias points at another arm's)."""
    config = read_claude_code(project)
    units = ablation_plan.factors(config)
    ablation_plan.write_tiers(config, units, ablation_plan.design(units), project / "abl")
    tier = yaml.safe_load((project / "abl/T0.yaml").read_text())
    assert all(s["settings"]["permissions"] for s in tier["subtests"].values())


@pytest.mark.parametrize("path", ["../outside/CLAUDE.md", "/etc/CLAUDE.md", "src/../../x.txt"])
def test_a_tier_keeps_only_project_files(tmp_path: Path, path: str) -> None:
    """`keep_files` names files of the project's own tree (an imported file may be any text):
    a path out of it is refused naming the tier file's line."""
    (tmp_path / "T0.yaml").write_text(
        "tier: T0\nname: x\ndescription: x\nsubtests:\n  01-a:\n    description: a\n"
        f"    project_config: remove\n    keep_files: [{json.dumps(path)}]\n"
    )
    errors = [str(e) for e in TierSet(tmp_path).errors.values()]
    assert len(errors) == 1
    assert "T0.yaml:8" in errors[0], errors
    assert "keep_files" in errors[0], errors


def test_a_server_variable_that_is_set_or_has_a_default_is_carried_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI expands `${VAR}` itself: the plan only refuses one it could not start with."""
    monkeypatch.setenv("SCYLLA_SET_X", "value")
    env = {"A": "${SCYLLA_SET_X}", "B": "${SCYLLA_UNSET_Y:-fallback}"}
    root = _write(
        tmp_path / "p",
        {".mcp.json": json.dumps({"mcpServers": {"gh": {"command": "gh-mcp", "env": env}}})},
    )
    server = next(c for c in read_claude_code(root).components if c.id == "mcp:gh")
    assert server.data["env"] == env
