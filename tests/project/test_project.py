"""The project's promises about itself: README and CI agree, the option surface is pinned.

Here the in-process tests; the sessions are in `tests/e2e/test_project.py`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert block, "the quick start needs a code block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one() -> None:
    commands = quick_start()
    assert len(commands) == 2
    main_job, tests = commands
    assert "cases/" in main_job
    assert "pytest" in tests
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert tests in ci_lines


def test_ci_installs_what_the_tests_need() -> None:
    ci = (ROOT / ".ci/run").read_text()
    assert "bubblewrap" in ci
    assert re.search(r"CLAUDE_CODE_VERSION=\d+\.\d+\.\d+", ci)
    assert "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" in ci
    from pytest_scylla.run.agents import claude_code, codex, gemini_cli, opencode

    assert f"CLAUDE_CODE_VERSION={claude_code.PINNED_VERSION}\n" in ci  # the adapters' pins
    assert f"CODEX_VERSION={codex.PINNED_VERSION}\n" in ci
    assert "@openai/codex@${CODEX_VERSION}" in ci
    assert f"GEMINI_CLI_VERSION={gemini_cli.PINNED_VERSION}\n" in ci
    assert "@google/gemini-cli@${GEMINI_CLI_VERSION}" in ci
    assert f"OPENCODE_VERSION={opencode.PINNED_VERSION}\n" in ci
    assert "opencode-ai@${OPENCODE_VERSION}" in ci
