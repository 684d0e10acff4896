"""The public surface for plugin authors: import from here, and only from here.

Everything else in the package may move between releases; these names stay. A plugin implements
the `pytest_scylla_*` hooks (`hookspecs.py`) in a `conftest.py`, a `pytest11` plugin, or a module
named in the `pytest_scylla` entry-point group, and each hook offers things by name: agent
adapters (`Agent`), sandboxes (subclasses of `Sandbox`), judge kinds (`JudgeKind`) and report
writers (`Writer`, given a `ReportInput`); a judge kind checks its model's answer with the
verdict helpers (`VERDICT_TOOL`, `verdict_schema`, `verdict_problems`, `verdict_from_json`);
an agent adapter that reads its CLI's configuration for `scylla ablate plan`
(`read_configuration(root)`) returns a `Configuration` of `Component`s, found with the readers'
helpers (`sections_in`, `skills_in`, `agents_in`, `mcp_in`), and raises `SpecError` naming a
file it cannot read. A name is offered once: a second offer of a taken
name, a built-in's included, stops the session with an error naming both plugins.

The names load on first use, so importing this module costs a plugin nothing at start-up."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_scylla.core.record import RunRecord
    from pytest_scylla.core.runspec import RunKey, RunSpec
    from pytest_scylla.formats.agent_config import agents_in, mcp_in, sections_in, skills_in
    from pytest_scylla.formats.components import Component, Configuration
    from pytest_scylla.formats.provenance import Conditions
    from pytest_scylla.formats.yamlmarks import SpecError
    from pytest_scylla.judging.judges import JudgeKind, JudgeResult, JudgeSpec
    from pytest_scylla.judging.verdict import TOOL_NAME as VERDICT_TOOL
    from pytest_scylla.judging.verdict import from_json as verdict_from_json
    from pytest_scylla.judging.verdict import problems as verdict_problems
    from pytest_scylla.judging.verdict import schema as verdict_schema
    from pytest_scylla.operations.runner import Run
    from pytest_scylla.operations.runtime import SETUP_ERRORS, Runtime
    from pytest_scylla.results.report_input import ReportInput, Writer
    from pytest_scylla.results.tables import Tables
    from pytest_scylla.run.agents import Agent, Result, SetupError
    from pytest_scylla.run.sandbox import Finished, Sandbox, SandboxError

# name -> "module" (the same name there) or "module:name" (another name there)
_HOMES = {
    "RunRecord": "core.record",
    "RunKey": "core.runspec",
    "RunSpec": "core.runspec",
    "agents_in": "formats.agent_config",
    "mcp_in": "formats.agent_config",
    "sections_in": "formats.agent_config",
    "skills_in": "formats.agent_config",
    "Component": "formats.components",
    "Configuration": "formats.components",
    "Conditions": "formats.provenance",
    "SpecError": "formats.yamlmarks",
    "JudgeKind": "judging.judges",
    "JudgeResult": "judging.judges",
    "JudgeSpec": "judging.judges",
    "VERDICT_TOOL": "judging.verdict:TOOL_NAME",
    "verdict_from_json": "judging.verdict:from_json",
    "verdict_problems": "judging.verdict:problems",
    "verdict_schema": "judging.verdict:schema",
    "Run": "operations.runner",
    "Runtime": "operations.runtime",
    "SETUP_ERRORS": "operations.runtime",
    "ReportInput": "results.report_input",
    "Writer": "results.report_input",
    "Tables": "results.tables",
    "Agent": "run.agents",
    "Result": "run.agents",
    "SetupError": "run.agents",
    "Finished": "run.sandbox",
    "Sandbox": "run.sandbox",
    "SandboxError": "run.sandbox",
}
__all__ = [
    "SETUP_ERRORS",
    "VERDICT_TOOL",
    "Agent",
    "Component",
    "Conditions",
    "Configuration",
    "Finished",
    "JudgeKind",
    "JudgeResult",
    "JudgeSpec",
    "ReportInput",
    "Result",
    "Run",
    "RunKey",
    "RunRecord",
    "RunSpec",
    "Runtime",
    "Sandbox",
    "SandboxError",
    "SetupError",
    "SpecError",
    "Tables",
    "Writer",
    "agents_in",
    "mcp_in",
    "sections_in",
    "skills_in",
    "verdict_from_json",
    "verdict_problems",
    "verdict_schema",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"pytest_scylla.api has no {name!r}; it offers {', '.join(__all__)}")
    module, _, there = _HOMES[name].partition(":")
    value = getattr(importlib.import_module(f"pytest_scylla.{module}"), there or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
