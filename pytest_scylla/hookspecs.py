"""pytest-scylla's extension points (`pytest_scylla_*` hooks), registered by the plugin.

A plugin or conftest.py implements them like any pytest hook; a package can also name its module
in the `pytest_scylla` entry-point group (see `extensions`). The built-in implementations come
last (`trylast`), so the first other plugin that answers replaces them. A replacement of
`pytest_scylla_execute` that does not run the agent must mark its records `simulated`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_scylla.core.runspec import RunSpec
    from pytest_scylla.formats.provenance import Conditions
    from pytest_scylla.judging.judges import JudgeKind
    from pytest_scylla.operations.runner import Run
    from pytest_scylla.operations.runtime import Runtime
    from pytest_scylla.results.report_input import Writer
    from pytest_scylla.run.agents import Agent
    from pytest_scylla.run.sandbox import Sandbox


@pytest.hookspec
def pytest_scylla_agents(config: pytest.Config | None) -> list[Agent] | None:
    """The agent CLI adapters this plugin offers (`api.Agent`), each selectable with
    `--scylla-agent=<name>`; every plugin's are gathered (built in: claude-code, codex,
    gemini-cli, opencode). A name is offered once (`core.registry`). An adapter with a
    configuration reader (`read_configuration(root)`) is also one `scylla ablate plan --agent`
    plans for. `config` is None when the `scylla` command asks (it reads the modules of the
    `pytest_scylla` entry-point group)."""


@pytest.hookspec
def pytest_scylla_judge_kinds(config: pytest.Config) -> dict[str, JudgeKind] | None:
    """Judge kinds this plugin offers (`api.JudgeKind`), by the name
    `--scylla-judges=<kind>:<model>` spells them with; every plugin's are gathered (built in:
    anthropic, openai, gemini, claude-cli). A name is offered once (`core.registry`)."""


@pytest.hookspec
def pytest_scylla_sandboxes(config: pytest.Config | None) -> dict[str, type[Sandbox]] | None:
    """Sandboxes this plugin offers (subclasses of `api.Sandbox`), by the name
    `--scylla-sandbox=<name>` (and `scylla cases mine --sandbox`, `scylla sandbox`) selects
    them with; every plugin's are gathered (built in: local, bwrap, docker; `auto` chooses).
    A name is offered once (`core.registry`). `config` is None when the `scylla` command asks
    (it reads the modules of the `pytest_scylla` entry-point group)."""


@pytest.hookspec
def pytest_scylla_report_writers(config: pytest.Config | None) -> dict[str, Writer] | None:
    """Reports this plugin adds, by the name `--scylla-report` (and `scylla report --report`)
    selects them with: `writer(report)` writes its own files into `report.folder` (an
    `api.ReportInput`); the built-in reports (terminal, html, md, json, csv) hold their
    names. `config` is None when the `scylla` command asks (it reads the modules of the
    `pytest_scylla` entry-point group)."""


@pytest.hookspec(firstresult=True)
def pytest_scylla_runtime(config: pytest.Config) -> Runtime | None:
    """Set up what every run of this process shares (gateway, sandbox, CLI); called once per
    process, at its first run. Raise one of `operations.runtime.SETUP_ERRORS` for a setup
    problem."""


@pytest.hookspec(firstresult=True)
def pytest_scylla_execute(spec: RunSpec, runtime: Runtime, conditions: Conditions) -> Run | None:
    """The run of one item (resume has decided it must run), not started: a `runner.Run` (or
    a subclass) whose phases the item's fixtures drive — `provision` and `act` in setup,
    `judge` in the test body, `finish` and `release` after it. Each phase keeps `record`
    current and `finish` writes it to the run folder."""
