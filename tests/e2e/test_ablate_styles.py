"""Issue 45: an output style the team's settings.json names (`outputStyle`) is a component of
the plan: the style's file and the key go together into the arms that keep it. Checked with
the real CLI (2.1.197) under the oracle: the full arm's system prompt has the style, the arm
without it has none, and both pass the ablation check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .test_full_arm import _arms, _mini

STYLE = """---
name: Terse Reviewer
description: Short answers, a risk list first
keep-coding-instructions: false
---
Answer in at most three sentences. Open every answer with the risks you see, as a list.
"""


def _team(root: Path) -> None:
    """A CLAUDE.md of three sections, two output styles of which settings.json names one."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "CLAUDE.md").write_text(
        "# Billing\n\nMoney is integer cents.\n\n# Tests\n\nRun pytest -q.\n\n"
        "# Style\n\nNo prints.\n"
    )
    styles = root / ".claude" / "output-styles"
    styles.mkdir(parents=True)
    (styles / "terse.md").write_text(STYLE)
    (styles / "chatty.md").write_text("---\ndescription: long answers\n---\nExplain at length.\n")
    settings = {"outputStyle": "Terse Reviewer", "enabledPlugins": {"lint@team-tools": True}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))


@pytest.fixture(scope="module")
def firsts(tmp_path_factory: pytest.TempPathFactory, oracle: list[str]) -> dict[str, Any]:
    mini = _mini(tmp_path_factory.mktemp("styles") / "mini", _team)
    return _arms(mini, oracle, "no-style-terse-reviewer")


def _system(request: dict[str, Any]) -> str:
    system = request.get("system") or []
    return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)


@pytest.mark.slow  # two oracle runs through the real CLI (about 15 s)
def test_the_style_the_settings_name_is_in_the_arms_that_keep_it(firsts: dict[str, Any]) -> None:
    full, without = _system(firsts["full"]), _system(firsts["no-style-terse-reviewer"])
    assert "Open every answer with the risks you see" in full
    assert "Open every answer with the risks you see" not in without
    assert "Explain at length" not in full + without  # the style nobody picked: in no arm
    assert "# Output Style: Terse Reviewer\n" in full
    assert "# Output Style" not in without
