"""`scylla init [DIR]`: a new evaluation project — pytest configuration, one example case that
passes under the oracle and a Python evaluation of it, a `.gitignore` for results, and CI
workflows (GitHub Actions and GitLab CI) that run an oracle smoke test on every change and a
real evaluation on a schedule or by hand, with the API key as a secret. Existing files are never
overwritten."""

from __future__ import annotations

from pathlib import Path

from pytest_scylla import __version__
from pytest_scylla.run.agents.claude_code import PINNED_VERSION

CASE = "cases/greet"
INSTALL = (f'pip install "pytest-scylla=={__version__}" && '
           f"npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}")
SMOKE = ("pytest cases -n 2 --scylla-oracle --scylla-out=reports/smoke --scylla-report=all "
         "--junitxml=reports/smoke/junit.xml")
REAL = ("pytest cases -n 4 --scylla-runs=5 --scylla-out=reports/real --scylla-report=all "
        "--scylla-budget-usd=20 --junitxml=reports/real/junit.xml")

# in a repository with tests of its own, `pytest -p no:scylla` (or pytest without the plugin)
# must not collect the cases' payload or the Python evaluations as the project's tests
CONFTEST = '''"""Written by `scylla init`. The case folders here hold hidden tests, reference
solutions and sources that are not this project's tests, and Python evaluations that need
pytest-scylla's fixtures: without the plugin (`pytest -p no:scylla`, or not installed) none of it
is collected. With it, a session evaluates them only when asked (`pytest cases/`, or
`pytest --scylla-only`)."""


def pytest_ignore_collect(collection_path, config):
    if not config.pluginmanager.has_plugin("scylla"):
        return True
    return None
'''
# where a folder's pytest configuration may already be (a pytest.ini written beside it would
# take precedence over it, and change how the project's own tests run)
PYTEST_CONFIGS = {"pytest.ini": "", "pytest.toml": "", ".pytest.ini": "", ".pytest.toml": "",
                  "pyproject.toml": "[tool.pytest", "tox.ini": "[pytest]",
                  "setup.cfg": "[tool:pytest]"}

FILES = {
    "pytest.ini": """[pytest]
# evaluations live under cases/ (pytest-scylla's scylla_cases default); T0-T6 come from the
# package unless a tiers/ folder is added here
testpaths = cases
""",
    ".gitignore": "reports/\n.pytest_cache/\n__pycache__/\n",
    "cases/conftest.py": CONFTEST,
    f"{CASE}/test.yaml": """id: greet
name: Greet by name
description: Fix greet() so that it greets the person it is given.
category: bug-fixing
source:
  path: source
prompt: prompt.md
rubric: python-change
hidden: hidden
solution: solution
timeout_seconds: 300
max_cost_usd: 1.0
checks:
  - name: hidden-tests
    description: The hidden tests pass.
    run: python -m pytest -q -p no:cacheprovider -p no:scylla scylla_hidden_tests
  - name: lint
    description: ruff finds nothing in greet.py.
    run: ruff check --no-cache --isolated greet.py
""",
    f"{CASE}/prompt.md": "`greet(name)` in greet.py ignores its argument and always greets "
                         "\"World\". Make it return `Hello, <name>!` for the name it is given "
                         "(keep `Hello, World!` when no name is given).\n",
    f"{CASE}/source/greet.py": 'def greet(name: str = "World") -> str:\n'
                               '    return "Hello, World!"\n',
    f"{CASE}/solution/greet.py": 'def greet(name: str = "World") -> str:\n'
                                 '    return f"Hello, {name}!"\n',
    f"{CASE}/hidden/scylla_hidden_tests/test_greet.py": """from greet import greet


def test_greets_the_name_it_is_given():
    assert greet("Ada") == "Hello, Ada!"


def test_greets_the_world_by_default():
    assert greet() == "Hello, World!"
""",
    "cases/test_greet_eval.py": '''"""A Python evaluation of the greet task: parametrized over
the tiers like a YAML case; its asserts become a check item of each run's record."""

import pytest


@pytest.mark.scylla(case="greet", tiers=["T0", "T5"])
def test_greet_keeps_its_default(scylla_run, scylla_verdict):
    # read_text never follows a link the agent made (a missing file fails the run)
    source = scylla_run.read_text("greet.py")
    assert 'name: str = "World"' in source, "the default argument was dropped"
    assert scylla_run.checks_passed, [f"{c.name}: {c.reason}" for c in scylla_run.checks]
    assert "greet.py" in scylla_run.diff
    assert scylla_run.cost_usd is not None and scylla_run.cost_usd < 1.0
    # the judge panel is asked here, in the test body, when its verdict is first used
    assert scylla_verdict.score >= 0.6, scylla_verdict.table()
''',
    ".github/workflows/scylla.yml": f"""name: scylla
on:
  push:
  pull_request:
  schedule:
    - cron: "17 3 * * 1"
  workflow_dispatch:
jobs:
  smoke:
    # every change: the oracle (a simulated model, no key) proves cases and pipeline work
    if: github.event_name == 'push' || github.event_name == 'pull_request'
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/setup-node@v4
        with:
          node-version: "20"
      - run: sudo apt-get update && sudo apt-get install -y bubblewrap
      - run: {INSTALL}
      - run: {SMOKE}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: scylla-smoke
          path: reports/smoke
  evaluate:
    # weekly or by hand: the real model, the key from the repository's secrets
    if: github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/setup-node@v4
        with:
          node-version: "20"
      - run: sudo apt-get update && sudo apt-get install -y bubblewrap
      - run: {INSTALL}
      - run: {REAL}
        env:
          ANTHROPIC_API_KEY: ${{{{ secrets.ANTHROPIC_API_KEY }}}}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: scylla-evaluation
          path: reports/real
""",
    ".gitlab-ci.yml": f"""default:
  image: python:3.11
  before_script:
    - apt-get update && apt-get install -y bubblewrap nodejs npm
    - {INSTALL}

smoke:
  # every change: the oracle (a simulated model, no key)
  rules:
    - if: $CI_PIPELINE_SOURCE == "push" || $CI_PIPELINE_SOURCE == "merge_request_event"
  script:
    - {SMOKE}
  artifacts:
    when: always
    paths: [reports/smoke]
    reports:
      junit: reports/smoke/junit.xml

evaluate:
  # scheduled or started by hand: the real model; set ANTHROPIC_API_KEY as a masked variable
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" || $CI_PIPELINE_SOURCE == "web"
  script:
    - {REAL}
  artifacts:
    when: always
    paths: [reports/real]
    reports:
      junit: reports/real/junit.xml
""",
}


def init(folder: Path) -> list[str]:
    """Write the project into `folder` (made if missing); one line per file: made or kept."""
    lines = []
    configured = existing_config(folder)
    for rel, text in FILES.items():
        path = folder / rel
        if path.exists():
            lines.append(f"kept    {rel} (exists; not overwritten)")
            continue
        if rel == "pytest.ini" and configured is not None:
            lines.append(f"skipped {rel} (the pytest configuration in {configured} stays the "
                         "project's: its `pytest` runs its own tests; evaluations run with "
                         "`pytest cases/` or `pytest --scylla-only`)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        lines.append(f"made    {rel}")
    return lines


def existing_config(folder: Path) -> str | None:
    """The file of `folder` that already holds a pytest configuration, or None."""
    for name, section in PYTEST_CONFIGS.items():
        path = folder / name
        if not path.is_file():
            continue
        if not section or section in path.read_text(encoding="utf-8", errors="replace"):
            return name
    return None
