"""`scylla init [DIR]`: a new evaluation project — pytest configuration, one example case that
passes under the oracle and a Python evaluation of it, a `.gitignore` for results, and CI
workflows (GitHub Actions and GitLab CI) that run an oracle smoke test on every change and a
real evaluation on a schedule or by hand, with the API key as a secret. Existing files are never
overwritten, and nothing is written through a link (`core.links`): a linked `cases/` or
`.github/`, or a dangling `.gitignore` link, is refused by name, and so is an existing pytest
configuration that is a link out of the folder (it is not read)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_scylla import __version__
from pytest_scylla.core import links
from pytest_scylla.run.agents.claude_code import PINNED_VERSION

CASE = "cases/greet"
REQUIREMENTS = "requirements-scylla.txt"
INSTALL = (
    f"pip install -r {REQUIREMENTS} && npm install -g @anthropic-ai/claude-code@{PINNED_VERSION}"
)
SMOKE = (
    "pytest cases -n 2 --scylla-oracle --scylla-out=reports/smoke --scylla-report=all "
    "--junitxml=reports/smoke/junit.xml"
)
# the real job's selection and budget agree: 9 cells (the greet case in six subtests, its
# Python evaluation in the three of them its tiers have) x 5 runs x the case's $0.40 limit is
# $18 of agent spend at most, inside $25 with the judges (`scylla plan` says so in the job)
REAL_SELECTION = (
    "--scylla-runs=5 --scylla-subtests=T0-01,T0-12,T1-08,T2-09,T5-09,T6-01 --scylla-budget-usd=25"
)
REAL = (
    f"pytest cases -n 4 {REAL_SELECTION} --scylla-out=reports/real --scylla-report=all "
    "--junitxml=reports/real/junit.xml"
)
PLAN = f"scylla plan cases {REAL_SELECTION} --scylla-out=reports/real"
DOCKER_IMAGE = f"scylla-agent:{PINNED_VERSION}"

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
PYTEST_CONFIGS = {
    "pytest.ini": "",
    "pytest.toml": "",
    ".pytest.ini": "",
    ".pytest.toml": "",
    "pyproject.toml": "[tool.pytest",
    "tox.ini": "[pytest]",
    "setup.cfg": "[tool:pytest]",
}

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
max_cost_usd: 0.40
checks:
  - name: hidden-tests
    description: The hidden tests pass.
    run: python -m pytest -q -p no:cacheprovider -p no:scylla scylla_hidden_tests
  - name: lint
    description: ruff finds nothing in greet.py.
    run: ruff check --no-cache --isolated greet.py
""",
    f"{CASE}/prompt.md": "`greet(name)` in greet.py ignores its argument and always greets "
    '"World". Make it return `Hello, <name>!` for the name it is given '
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
    assert scylla_run.cost_usd is not None and scylla_run.cost_usd < 0.40
    # the judge panel is asked here, in the test body, when its verdict is first used
    assert scylla_verdict.score >= 0.6, scylla_verdict.table()
''',
    REQUIREMENTS: f"""# What CI installs. pytest-scylla is not on a public index yet: if yours does
# not have it, replace the next line with where your team keeps it, e.g. a wheel committed here
# (./wheels/pytest_scylla-{__version__}-py3-none-any.whl) or a git URL
# (pytest-scylla @ git+https://<your host>/<group>/pytest-scylla@v{__version__}).
pytest-scylla=={__version__}
""",
    ".github/workflows/scylla.yml": f"""name: scylla
on:
  push:
    branches: [main]
  pull_request:
  schedule:
    - cron: "17 3 * * 1"
  workflow_dispatch:
permissions:
  contents: read
concurrency:
  group: scylla-${{{{ github.workflow }}}}-${{{{ github.ref }}}}
  cancel-in-progress: true
jobs:
  smoke:
    # every change: the oracle (a simulated model, no key) proves cases and pipeline work
    if: github.event_name == 'push' || github.event_name == 'pull_request'
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/setup-node@v4
        with:
          node-version: "20"
      - run: {INSTALL}
      - name: sandbox
        # ubuntu-24.04 restricts unprivileged user namespaces (AppArmor), which bubblewrap
        # needs: allowed on this throwaway VM; `scylla sandbox` fails the job, saying why,
        # when bubblewrap still cannot isolate a run
        run: |
          sudo apt-get update && sudo apt-get install -y bubblewrap
          sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
          scylla sandbox bwrap
      - run: {SMOKE} --scylla-sandbox=bwrap
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: scylla-smoke
          path: reports/smoke
  evaluate:
    # weekly or by hand: the real model, the key from the repository's secrets
    if: github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-24.04
    timeout-minutes: 240
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - uses: actions/setup-node@v4
        with:
          node-version: "20"
      - run: {INSTALL}
      - name: sandbox
        run: |
          sudo apt-get update && sudo apt-get install -y bubblewrap
          sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0
          scylla sandbox bwrap
      - run: {PLAN}
      - run: {REAL} --scylla-sandbox=bwrap
        env:
          ANTHROPIC_API_KEY: ${{{{ secrets.ANTHROPIC_API_KEY }}}}
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: scylla-evaluation
          path: reports/real
""",
    ".gitlab-ci.yml": f"""# One pipeline per change: a merge request's, else the branch's
# (never both), and the scheduled or hand-started ones.
workflow:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS
      when: never
    - if: $CI_COMMIT_BRANCH
    - if: $CI_PIPELINE_SOURCE == "schedule" || $CI_PIPELINE_SOURCE == "web"

# The Docker executor's job container cannot make the user namespaces bubblewrap needs: the
# runs go to containers on a Docker-in-Docker service (a privileged runner, as GitLab.com's
# are), their folders copied in and out (a remote engine), in the agent image built here.
variables:
  DOCKER_HOST: tcp://docker:2375
  DOCKER_TLS_CERTDIR: ""

default:
  image: python:3.11
  services:
    - docker:27-dind
  timeout: 30m
  before_script:
    - apt-get update && apt-get install -y nodejs npm
    - {INSTALL}
    - scylla image build
    - scylla sandbox docker --image {DOCKER_IMAGE}

smoke:
  # every change: the oracle (a simulated model, no key)
  rules:
    - if: $CI_PIPELINE_SOURCE == "push" || $CI_PIPELINE_SOURCE == "merge_request_event"
  script:
    - {SMOKE} --scylla-sandbox=docker --scylla-image={DOCKER_IMAGE}
  artifacts:
    when: always
    paths: [reports/smoke]
    reports:
      junit: reports/smoke/junit.xml

evaluate:
  # scheduled or started by hand: the real model; set ANTHROPIC_API_KEY as a masked variable
  rules:
    - if: $CI_PIPELINE_SOURCE == "schedule" || $CI_PIPELINE_SOURCE == "web"
  timeout: 4h
  script:
    - {PLAN}
    - {REAL} --scylla-sandbox=docker --scylla-image={DOCKER_IMAGE}
  artifacts:
    when: always
    paths: [reports/real]
    reports:
      junit: reports/real/junit.xml
""",
}


def init(folder: Path) -> list[str]:
    """Write the project into `folder` (made if missing); one line per file: made, kept, skipped
    or refused (a link on the way, named; see `refused`)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        configured = existing_config(folder)
    except links.LinkOut as exc:
        configured, config_refused = None, f"refused pytest.ini ({exc}: not read)"
    else:
        config_refused = ""
    lines = []
    for rel, text in FILES.items():
        if (
            rel == "pytest.ini"
            and not os.path.lexists(folder / rel)
            and (configured or config_refused)
        ):
            lines.append(config_refused or _skipped(rel, configured))
            continue
        try:
            made = links.write_new(folder, rel, text)
        except links.LinkOut as exc:
            lines.append(f"refused {rel} ({exc})")
            continue
        except OSError as exc:  # a file where a folder goes, a folder that cannot be written
            lines.append(f"refused {rel} ({exc.filename}: {exc.strerror})")
            continue
        lines.append(f"made    {rel}" if made else f"kept    {rel} (exists; not overwritten)")
    return lines


def refused(lines: list[str]) -> bool:
    """Whether `init`'s lines name a file it could not write."""
    return any(line.startswith("refused ") for line in lines)


def _skipped(rel: str, configured: str | None) -> str:
    return (
        f"skipped {rel} (the pytest configuration in {configured} stays the "
        "project's: its `pytest` runs its own tests; evaluations run with "
        "`pytest cases/` or `pytest --scylla-only`)"
    )


def existing_config(folder: Path) -> str | None:
    """The file of `folder` that already holds a pytest configuration, or None; `LinkOut` for one
    that is a link out of `folder` (never read)."""
    for name, section in PYTEST_CONFIGS.items():
        path = folder / name
        if not path.is_file():
            continue
        links.check_read(folder, path, "scylla init reads a pytest configuration")
        if not section or section in path.read_text(encoding="utf-8", errors="replace"):
            return name
    return None
