"""The docs keep their promises: a README of at most 200 lines that sends readers to the pages,
every page in the site's navigation, a package map that names every package, and an extension
guide whose code imports nothing of the package but `pytest_scylla.api`."""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest
import yaml

from pytest_scylla import api

from ..support.docs import DOCS, README, ROOT, all_docs, docs_page, example, python_blocks

PACKAGE = ROOT / "pytest_scylla"


def test_the_readme_is_a_front_page_of_at_most_200_lines() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([a-z-]+)\.md\)", text))
    assert linked >= {"getting-started", "running-for-real", "ablate", "mining", "stopping"}
    assert {p for p in linked if not (DOCS / f"{p}.md").is_file()} == set()


def _nav_pages(nav: list[object]) -> set[str]:
    found: set[str] = set()
    for entry in nav:
        values = entry.values() if isinstance(entry, dict) else [entry]
        for value in values:
            found |= _nav_pages(value) if isinstance(value, list) else {str(value)}
    return found


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    nav = _nav_pages(config["nav"])
    assert {f"{name}.md" for name in all_docs()} - nav == set()
    assert nav - {f"{name}.md" for name in all_docs()} == {"changelog.md"}  # from CHANGELOG.md
    assert config["strict"] == "true"


def packages() -> set[str]:
    return {
        ".".join(("pytest_scylla", *init.parent.relative_to(PACKAGE).parts))
        for init in PACKAGE.rglob("__init__.py")
    }


def unnamed(packages: set[str], page: str) -> set[str]:
    """The packages the page's package map does not name (each as `pytest_scylla.x.y`)."""
    found = re.search(r"<!-- package-map -->\n(.*?)<!-- /package-map -->", page, re.DOTALL)
    assert found, "docs/development.md lost its <!-- package-map --> markers"
    named = set(re.findall(r"^\| `(pytest_scylla[a-z_.]*)`", found[1], re.MULTILINE))
    return packages - named


def test_the_package_map_names_every_package() -> None:
    found = packages()
    assert "pytest_scylla.run.gateway.oracle" in found
    assert len(found) >= 19
    assert unnamed(found, docs_page("development")) == set()


def test_the_package_map_check_finds_a_missing_package() -> None:
    """Positive control: a package the map does not name is reported."""
    extra = packages() | {"pytest_scylla.results.brand_new"}
    assert unnamed(extra, docs_page("development")) == {"pytest_scylla.results.brand_new"}


def package_imports(code: str) -> list[str]:
    """The modules of pytest_scylla a code block imports, but `pytest_scylla.api`."""
    found = []
    for node in ast.walk(ast.parse(code)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        found += [n for n in names if n.split(".")[0] == "pytest_scylla"]
    return [n for n in found if n != "pytest_scylla.api"]


def test_the_extension_guide_imports_only_the_api() -> None:
    blocks = python_blocks(docs_page("extending"))
    assert len(blocks) >= 2  # the report writer and the judge kind
    assert [n for block in blocks for n in package_imports(block)] == []
    for block in blocks:  # and what it imports from the api is there
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module == "pytest_scylla.api":
                assert {a.name for a in node.names} <= set(api.__all__)


def test_the_import_check_finds_an_internal_import() -> None:
    """Positive control: a block importing the package's insides is reported."""
    block = "from pytest_scylla.results.tables import Tables\nimport pytest_scylla.api\n"
    assert package_imports(block) == ["pytest_scylla.results.tables"]
    assert package_imports("import pytest_scylla.run.agents as a\n") == ["pytest_scylla.run.agents"]


def test_the_judge_kind_example_checks_a_verdict_with_the_api_helpers() -> None:
    """The helpers the guide's judge kind uses are the judges' own (`judging.verdict`)."""
    # the module as the api finds it (sys.modules), resolved anew: an earlier pytester inline
    # run in this worker may have dropped `verdict` from sys.modules (it restores its
    # snapshot), so a later import made a second module, while the api and the package's
    # attribute may still hold the first
    verdict = importlib.import_module("pytest_scylla.judging.verdict")
    code = example("extending", "judge-kind")
    for name in ("VERDICT_TOOL", "verdict_schema", "verdict_problems", "verdict_from_json"):
        vars(api).pop(name, None)
    assert "verdict_from_json" in code
    assert "verdict_schema" in code
    assert (api.VERDICT_TOOL, api.verdict_schema, api.verdict_problems) == (
        verdict.TOOL_NAME,
        verdict.schema,
        verdict.problems,
    )
    assert api.verdict_from_json is verdict.from_json
    assert api.verdict_from_json("{", [])[1][0].startswith("not JSON")
    namespace: dict[str, object] = {}
    exec(compile(code, "judge-kind", "exec"), namespace)  # imports and defines, calls nothing
    kinds = namespace["pytest_scylla_judge_kinds"](None)  # type: ignore[operator]
    assert list(kinds) == ["toy"]
    assert kinds["toy"].upstream == "openai"


def test_the_agent_reader_example_plans_with_the_api_helpers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's adapter with a configuration reader, offered by a module of the entry-point
    group, is what `scylla ablate plan --agent toy-cli` reads a project with; the api's reader
    names are the built-in readers' own (`tests/e2e/test_agents.py` installs it for real)."""
    from pytest_scylla.cli.main import main
    from pytest_scylla.config import extensions
    from pytest_scylla.formats import agent_config, components, yamlmarks

    assert (api.Configuration, api.Component, api.SpecError) == (
        components.Configuration,
        components.Component,
        yamlmarks.SpecError,
    )
    helpers = ("sections_in", "skills_in", "agents_in", "mcp_in")
    assert [getattr(api, name) for name in helpers] == [
        getattr(agent_config, name) for name in helpers
    ]
    module = types.ModuleType("toy_cli")
    exec(compile(example("extending", "agent-reader"), "agent-reader", "exec"), module.__dict__)
    monkeypatch.setattr(extensions, "modules", lambda: [module])
    (tmp_path / "TOY.md").write_text("## Style\nshort lines\n## Tests\nrun them\n")
    (tmp_path / "CLAUDE.md").write_text("## Claude only\nnot the toy CLI's\n")
    skill = tmp_path / ".toy" / "skills" / "lint"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: lint\ndescription: lint it\n---\nrun ruff\n")
    assert main(["ablate", "plan", str(tmp_path), "--agent", "toy-cli", "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("toy-cli configuration ")
    assert [line.split()[0] for line in listed.splitlines()[1:4]] == [
        "section:style",
        "section:tests",
        "skill:lint",
    ]
    assert "claude-only" not in listed


def build(root: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as site:
        return subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", site],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )


def test_the_site_builds_strict() -> None:
    """`mkdocs build --strict`, as CI runs it (mkdocs is a dev dependency)."""
    done = build(ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Positive control: a link to a missing anchor of a page stops the strict build."""
    for name in ("mkdocs.yml", "CHANGELOG.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text() + "\nSee [the shards](shards.md#no-such-heading).\n")
    done = build(tmp_path)
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
