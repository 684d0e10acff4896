"""`scylla ablate` on a corpus of real teams' agent configurations (tests/fixtures/corpus: the
configuration files of public repositories, each pinned by commit with its licence in
SOURCE.md). Default tier: every entry plans, lists every file the CLI loads as a component or
kept with its reason, and writes tier files that validate. Slow tier: a sample rotating with the
commit runs every arm once under the oracle, each run passes the ablation check, and
`scylla ablate report` reads them."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.config.extensions import agents
from pytest_scylla.formats.agent_config import read_claude_code
from pytest_scylla.formats.components import Configuration
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.run.agents import configuration_reader

from ..conftest import rotation
from .test_ablate import _observed, _run_arms

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"


def _read(agent: str, root: Path) -> Configuration:
    """The project's configuration as the named adapter's own reader gives it (the registry's,
    as `scylla ablate plan --agent` finds it)."""
    reader = configuration_reader(agents(None)[agent])
    assert reader is not None, f"{agent} ships no configuration reader"
    return reader(root)


ENTRIES = sorted(p.name for p in CORPUS.iterdir() if (p / "SOURCE.md").is_file())
# each entry under the CLI whose files it has (`entry@cli`; Claude Code when none is named)
PLANS = [
    *(n for n in ENTRIES if n != "google-gemini+gemini-cli"),
    "google-gemini+gemini-cli@gemini-cli",
    *(f"{n}@codex" for n in ("Kroisse+tribute", "astral-sh+uv", "pydantic+pydantic-ai")),
]
GAPS = {  # what the plan does not do yet on an entry, found by this corpus (issue 45)
}
PLACEHOLDERS = {".keep", ".gitkeep"}
LOADED = {  # per CLI: its instruction files (at any depth) and its folders
    "claude-code": ({"CLAUDE.md", "CLAUDE.local.md"}, (".claude",)),
    "gemini-cli": ({"GEMINI.md"}, (".gemini",)),
    "codex": ({"AGENTS.md", "AGENTS.override.md"}, (".codex", ".agents")),
}


def _entry(plan: str) -> Any:
    gap = GAPS.get(plan)
    return pytest.param(plan, marks=pytest.mark.xfail(reason=gap, strict=True)) if gap else plan


def _split(plan: str) -> tuple[str, str]:
    """(entry, CLI) of `entry@cli`."""
    name, _, agent = plan.partition("@")
    return name, agent or "claude-code"


def _copy(name: str, where: Path) -> Path:
    root = where / name
    shutil.copytree(CORPUS / name, root, symlinks=True)
    return root


def _loaded(root: Path, agent: str) -> list[str]:
    """The files of the entry the CLI loads: instruction files at any depth, the files of its
    folder (through the links the entry has inside itself; placeholders like `.keep` aside),
    and the project's .mcp.json."""
    names, folder = LOADED[agent]
    found = [".mcp.json"] if (root / ".mcp.json").is_file() else []
    for top, _, files in os.walk(root, followlinks=True):
        for entry in files:
            rel = (Path(top) / entry).relative_to(root)
            if entry in names or (rel.parts[0] in folder and entry not in PLACEHOLDERS):
                found.append(rel.as_posix())
    return sorted(found)


def _listed(config: Configuration) -> set[str]:
    """The files the configuration's components name: each one's file, a section's imported
    files, a skill's or agent's folder."""
    listed: set[str] = set()
    for comp in config.components:
        listed.add(comp.where.partition(":")[0])
        listed.update(comp.data.get("files", ()) if comp.kind == "section" else ())
        if comp.source is not None:
            listed.add(comp.source.relative_to(config.root).as_posix())
    return listed


def _imports_only(path: Path) -> bool:
    """An instruction file whose every line is an `@import` (or a comment): its text is the
    imported files', listed as their sections."""
    lines = [x.strip() for x in path.read_text().splitlines() if x.strip()]
    return all(x.startswith(("@", "<!--")) for x in lines)


@pytest.mark.parametrize("plan", [_entry(p) for p in PLANS])
def test_every_corpus_entry_plans_and_lists_every_file_the_cli_loads(
    plan: str, tmp_path: Path, capsys: Any
) -> None:
    name, agent = _split(plan)
    root = _copy(name, tmp_path)
    assert main(["ablate", "plan", str(root), "--agent", agent, "--dry-run"]) == 0, (
        capsys.readouterr().err
    )
    said = capsys.readouterr().out
    config = _read(agent, root)
    for comp in config.components:
        assert comp.id in said, comp.id
    listed = _listed(config)
    silent = [
        f
        for f in _loaded(root, agent)
        if not any(f == x or f.startswith(x.rstrip("/") + "/") for x in listed)
        and not _imports_only(root / f)
    ]
    assert silent == [], f"{name}: files the CLI loads that the plan does not list"
    out = tmp_path / "ablation"
    assert main(["ablate", "plan", str(root), "--agent", agent, "--out", str(out)]) == 0
    assert TierSet(out).errors == {}
    assert not re.search(r"[&*]id\d{3}\b", (out / "T0.yaml").read_text())  # no YAML anchors


def test_the_hooks_scripts_outside_claude_are_listed_with_their_hooks(tmp_path: Path) -> None:
    """uv's hooks run `bash agents/hooks/session-start.sh` and `uv run --frozen
    agents/hooks/post-edit-format.py`: each script is listed as run by its hook."""
    config = read_claude_code(_copy("astral-sh+uv", tmp_path))
    kept = {c.where: c.reason for c in config.components if not c.ablated}
    assert "sessionstart hook runs" in kept["agents/hooks/session-start.sh"]
    assert "posttooluse hook runs" in kept["agents/hooks/post-edit-format.py"]


RUNNABLE = [p for p in PLANS if p not in GAPS]


RUN_GAPS: dict[str, str] = {}  # what the arms' runs show the plan does not do yet


def _sample(count: int = 2) -> list[Any]:
    """`count` entries of the corpus for this commit's slow tier (every entry in turn)."""
    seed = rotation()
    picked = [RUNNABLE[(seed + i) % len(RUNNABLE)] for i in range(count)]
    return [
        pytest.param(p, marks=pytest.mark.xfail(reason=RUN_GAPS[p], strict=True))
        if p in RUN_GAPS
        else p
        for p in picked
    ]


@pytest.mark.slow  # per entry 2-24 arms, one oracle run each through the real CLI (3-40 s)
@pytest.mark.parametrize("plan", _sample())
def test_a_corpus_entrys_arms_each_pass_the_ablation_check(
    plan: str, mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The entry's configuration is the case's source (the team's repository); its plan's arms
    run once each under the oracle; every run passes with no ablation problem over the whole
    run; `scylla ablate report` reads them."""
    source = mini / "cases" / "alpha" / "source"
    name, agent = _split(plan)
    shutil.copytree(CORPUS / name, source, symlinks=True, dirs_exist_ok=True)
    plan = ["ablate", "plan", str(source), "--agent", agent, "--out", str(mini / "ablation")]
    assert main(plan) == 0
    design = json.loads((mini / "ablation" / "design.json").read_text())
    out = mini / "out"
    done = _run_arms(
        pytester,
        mini,
        oracle,
        "-k",
        "alpha",
        "-p",
        "no:xdist",
        f"--scylla-agent={agent}",
        f"--scylla-out={out}",
    )
    seen = _observed(out)
    assert sorted(seen) == sorted(design["arms"]), done.stdout.str()[-3000:]
    assert main(["ablate", "report", str(out)]) == 0


def test_sub_agents_whose_front_matter_is_not_yaml_are_read_as_claude_code_reads_them(
    tmp_path: Path,
) -> None:
    """claude-code-action's sub-agents (as Claude Code's `/agents` writes them) describe
    themselves in an unquoted value holding `user: 'I've ...'`: not YAML. Claude Code reads it
    again with such values quoted, and so does the plan (it once refused the repository)."""
    config = read_claude_code(_copy("anthropics+claude-code-action", tmp_path))
    agents = {c.name: c for c in config.ablated if c.kind == "agent"}
    assert len(agents) == 5
    assert "Glob, Grep, Read" in agents["code-quality-reviewer"].text


def test_a_claude_md_that_only_imports_agents_md_is_kept_and_agents_md_is_cut(
    tmp_path: Path,
) -> None:
    """tribute's CLAUDE.md is `<!-- markdownlint-disable MD041 -->` and `@AGENTS.md`: the CLI
    sends it as written and AGENTS.md under its own header. The plan keeps CLAUDE.md as written
    in every arm and cuts AGENTS.md into the components, each arm's blocks written back to
    AGENTS.md, so the full arm's files are the team's."""
    root = _copy("Kroisse+tribute", tmp_path)
    config = read_claude_code(root)
    kept = next(c for c in config.components if c.id == "file:claude-md")
    assert not kept.ablated
    assert kept.reason.startswith("only imports AGENTS.md")
    sections = [c for c in config.components if c.kind == "section"]
    assert len(sections) >= 3
    assert all(c.where.startswith("AGENTS.md:") and c.ablated for c in sections)
    plan = ["ablate", "plan", str(root), "--out", str(tmp_path / "ablation")]
    assert main([*plan, "--factorial-above", "40"]) == 0  # leave-one-out: 01 is the full arm
    tiers = TierSet(tmp_path / "ablation")
    for sub in tiers.tiers["T0"].subtests:
        arm = tiers.resolve(sub.ref)
        assert arm.claude_md_file == "AGENTS.md"
        assert "CLAUDE.md" in arm.keep_files
    full = tiers.resolve("T0-01")
    blocks = [tiers.resource_path("claude_md", b).read_text() for b in full.claude_md]
    assert "\n\n".join(b.strip() for b in blocks) + "\n" == (root / "AGENTS.md").read_text()


def test_codex_hooks_are_listed_as_not_carried_with_the_reason(tmp_path: Path) -> None:
    """uv's .codex/hooks.json (a SessionStart and a PostToolUse hook): in no arm, and said so."""
    config = _read("codex", _copy("astral-sh+uv", tmp_path))
    hooks = next(c for c in config.components if c.where == ".codex/hooks.json")
    assert not hooks.ablated
    assert hooks.reason.startswith("Codex's hooks are not carried by a tier yet")


def test_a_preamble_of_only_an_html_comment_is_in_no_arm(tmp_path: Path) -> None:
    """A CLAUDE.md that opens with `<!-- markdownlint-disable MD041 -->` before its first
    heading: Claude Code hides the comment from the model (tribute's arms once ended
    infra_error, "declared CLAUDE.md block 'preamble' is missing from the request"), so that
    preamble is listed in no arm."""
    root = tmp_path / "p"
    root.mkdir()
    text = "<!-- markdownlint-disable MD041 -->\n\n# A\n\na\n\n# B\n\nb\n\n# C\n\nc\n"
    (root / "CLAUDE.md").write_text(text)
    config = read_claude_code(root)
    preamble = next(c for c in config.components if c.id == "section:preamble")
    assert not preamble.ablated
    assert "hides from the model" in preamble.reason
