"""A team's own Claude Code configuration read into components (`formats.agent_config`), its
instructions files split by section with their imports resolved (`formats.instructions`), and the
ablation design over the components written as tier files (`formats.ablation_plan`)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy
import pytest

from pytest_scylla.formats import ablation_plan, instructions
from pytest_scylla.formats.agent_config import Component, Configuration, read_claude_code
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError

TEAM = Path(__file__).parents[2] / "fixtures" / "team"


@pytest.fixture
def team(tmp_path: Path) -> Path:
    return Path(shutil.copytree(TEAM, tmp_path / "team"))


def test_every_component_of_the_sample_configuration_is_listed(team: Path) -> None:
    config = read_claude_code(team)
    ablated = [(c.id, c.where) for c in config.components if c.ablated]
    assert ablated == [
        ("section:ledger-service", "CLAUDE.md:1"),
        ("section:project-layout", "CLAUDE.md:6"),
        ("section:running-tests", "CLAUDE.md:12"),
        ("section:money-and-rounding", "CLAUDE.md:19"),
        ("section:code-style", "CLAUDE.md:24"),
        ("section:errors", "CLAUDE.md:29"),
        ("section:commits-and-reviews", "CLAUDE.md:34"),
        ("skill:changelog", ".claude/skills/changelog/SKILL.md"),
        ("skill:fixture-builder", ".claude/skills/fixture-builder/SKILL.md"),
        ("skill:money-math", ".claude/skills/money-math/SKILL.md"),
        ("command:release", ".claude/commands/release.md"),  # listed to the model as a skill
        ("agent:reviewer", ".claude/agents/reviewer.md"),
        ("agent:test-author", ".claude/agents/test-author.md"),
        ("mcp:ledger-facts", ".mcp.json"),
        ("hook:posttooluse", ".claude/settings.json"),
    ]
    kept = {c.id: c.reason for c in config.components if not c.ablated}
    assert set(kept) == {"setting:permissions", "file:tools-check-cents-py"}
    assert all(kept.values())  # each says why
    assert "the posttooluse hook runs" in kept["file:tools-check-cents-py"]  # outside .claude/
    # the imported file belongs to the section that imports it; the section is as written
    # (its `@` line kept: the CLI sends the imported file after CLAUDE.md, under its header)
    running = next(c for c in config.components if c.id == "section:running-tests")
    assert running.text.endswith("\n\n@docs/testing.md\n")
    assert "do not write SQL in tests" not in running.text
    assert running.data["imports"] == ("docs/testing.md",)
    # a skill is its whole folder: a template beside SKILL.md changes its hash
    skill = next(c for c in config.components if c.id == "skill:fixture-builder")
    assert "funded_account" in skill.text


def test_the_configuration_hash_follows_every_component(team: Path) -> None:
    before = read_claude_code(team).digest
    assert read_claude_code(team).digest == before  # stable
    template = team / ".claude/skills/fixture-builder/templates/ledger_fixture.py"
    template.write_text(template.read_text() + "# changed\n")
    changed = read_claude_code(team).digest
    assert changed != before
    # a skill's asset may be binary: read as bytes, and it counts too
    (team / ".claude/skills/money-math/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\x00")
    assert read_claude_code(team).digest != changed


@pytest.mark.parametrize(
    ("text", "headings"),
    [
        ("# Title\nintro\n## A\na\n## B\nb\n", ["Title", "A", "B"]),  # the title's own
        ("## A\na\n## B\nb\n", ["A", "B"]),  # fewer than three anyhow: every heading
        ("# A\na\n# B\nb\n## x\n## y\n", ["A", "B", "x", "y"]),  # two are too few: one deeper
        ("# A\n# B\n# C\n## x\n", ["A", "B", "C"]),  # three at the top: no deeper
        ("intro\n## A\n## B\n", ["", "A", "B"]),  # the text before the first heading
        ("plain text only\n", [""]),
        ("## A\n```\n## not a heading\n```\n## B\n", ["A", "B"]),  # fenced code is no heading
    ],
)
def test_sections_split_at_the_top_level(tmp_path: Path, text: str, headings: list[str]) -> None:
    (tmp_path / "CLAUDE.md").write_text(text)
    found = instructions.sections(instructions.resolve(tmp_path / "CLAUDE.md", tmp_path))
    assert [s.heading for s in found] == headings


def test_only_imports_outside_code_and_addresses_are_followed(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("from a\n")
    (tmp_path / "CLAUDE.md").write_text(
        "See @docs/a.md here.\nmail me@example.com\n`@docs/missing.md` in a span\n"
        "```\n@docs/missing.md\n```\n"
    )
    lines = [x.text for x in instructions.resolve(tmp_path / "CLAUDE.md", tmp_path)]
    assert lines == [
        "See docs/a.md here.",
        "from a",
        "mail me@example.com",
        "`@docs/missing.md` in a span",
        "```",
        "@docs/missing.md",
        "```",
    ]


def _error(root: Path) -> str:
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    return str(caught.value)


@pytest.mark.parametrize(
    ("path", "content", "expected"),
    [
        ("CLAUDE.md", b"# T\n## A\ncaf\xe9\n", "CLAUDE.md:3: column 4: byte 0xe9 is not UTF-8"),
        ("CLAUDE.md", b"## A\n@a.md\n", "b.md:2: @a.md: import loop (a.md -> b.md -> a.md)"),
        ("CLAUDE.md", b"## A\n@../outside.md\n", "CLAUDE.md:2: @../outside.md: points outside"),
        ("CLAUDE.md", b"## A\n@nowhere.md\n", "CLAUDE.md:2: @nowhere.md: no such file"),
        (".claude/skills/s/SKILL.md", b"no front matter\n", "SKILL.md:1: expected YAML front"),
        (".claude/agents/x.md", b"---\nname: x\n---\nbody\n", "x.md:1: front matter lacks"),
        (".mcp.json", b'{"mcpServers": {\n  "a": }\n}', ".mcp.json:2: column 8: Expecting value"),
    ],
)
def test_bad_input_names_the_file_and_line(
    tmp_path: Path, path: str, content: bytes, expected: str
) -> None:
    (tmp_path / "a.md").write_text("@b.md\n")
    (tmp_path / "b.md").write_text("## B\n@a.md\n")
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_bytes(content)
    message = _error(tmp_path)
    assert expected in message, message
    assert "\n" not in message  # one line


def _config(kinds: str | list[str]) -> Configuration:
    listed = kinds.split() if isinstance(kinds, str) else kinds
    comps = tuple(
        Component(kind, f"c{i}", "CLAUDE.md", f"text {i}") for i, kind in enumerate(listed)
    )
    return Configuration("claude-code", Path("."), comps)


def test_up_to_eight_factors_leave_one_out_and_add_one() -> None:
    units = ablation_plan.factors(_config("section section skill agent"))
    every = {f.name for f in units}
    arms = ablation_plan.design(units, add_one=True)
    assert [a.name for a in arms][:4] == [
        "01-full",
        "02-none",
        "03-no-md-c0",
        "04-no-md-c1",
    ]
    assert len(arms) == 2 + 2 * 4
    assert [a.kept for a in arms[:3]] == [every, frozenset(), every - {"section:c0"}]
    assert arms[-1].kept == {"agent:c3"}
    grouped = ablation_plan.design(
        ablation_plan.factors(_config("section section skill"), ["section"])
    )
    assert [a.name for a in grouped] == [
        "01-full",
        "02-none",
        "03-no-skill-c2",
        "04-no-group-section",
    ]


def test_twelve_factors_take_a_plackett_burman_design_of_sixteen_arms() -> None:
    """Each factor is kept in half the arms and every two factors' columns are orthogonal:
    every main effect is estimable, and independent of the others."""
    units = ablation_plan.factors(_config(["skill"] * 12))
    arms = ablation_plan.design(units)
    assert len(arms) <= 16
    levels = numpy.array([[1 if f.name in a.kept else -1 for f in units] for a in arms])
    assert (levels.sum(axis=0) == 0).all()
    for i, j in itertools.combinations(range(len(units)), 2):
        assert levels[:, i] @ levels[:, j] == 0


def test_the_written_tiers_validate_and_each_arm_carries_what_it_keeps(team: Path) -> None:
    config = read_claude_code(team)
    units = ablation_plan.factors(config, ["section"])
    arms = ablation_plan.design(units)
    out = team / "ablation"
    tier_file = ablation_plan.write_tiers(config, units, arms, out)
    first = tier_file.read_bytes()
    ablation_plan.write_tiers(config, units, arms, out)
    assert tier_file.read_bytes() == first  # deterministic
    assert config.digest in first.decode().splitlines()[0]
    tiers = TierSet(out)
    assert tiers.errors == {}
    for arm in arms:
        sub = tiers.resolve(f"T0-{arm.name[:2]}")
        carried = {f"skill:{n}" for n in sub.skills if n != "release"}
        carried |= {"command:release"} if "release" in sub.skills else set()
        carried |= {f"agent:{n}" for n in sub.agents}
        carried |= {f"mcp:{n}" for n in sub.mcp_servers}
        carried |= {"hook:posttooluse"} if "hooks" in sub.settings else set()
        carried |= {"group:section"} if sub.claude_md else set()
        assert carried == arm.kept, arm.name
        assert sub.settings.get("permissions") == {"deny": ["Bash(git push:*)"]}  # every arm
    full = tiers.resolve("T0-01")
    assert full.claude_md == tuple(  # every section, in the file's order
        c.name for c in config.components if c.kind == "section"
    )


def test_an_arm_that_removes_the_projects_configuration_hashes_apart() -> None:
    """`project_config: remove` is a condition of the run (a resume never mixes the two), and
    the default leaves every existing experiment's config hash as it was."""
    from dataclasses import replace

    from pytest_scylla.formats.provenance import subtest_conditions

    tiers = TierSet(Path(__file__).parents[3] / "tiers")
    sub = tiers.resolve("T0-01")
    assert "project_config" not in subtest_conditions(sub, tiers)
    removed = subtest_conditions(replace(sub, project_config="remove"), tiers)
    assert removed["project_config"] == "remove"
