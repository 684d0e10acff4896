"""The registry's one collision rule, directly: every name once, reserved words for no one.

Here the sessions; the in-process tests are in `tests/unit/core/test_registry.py`."""

from __future__ import annotations

import pytest

TAKER = """
import pytest


class Taker:
    name = "{agent}"


def pytest_scylla_agents(config):
    return [Taker()]


def pytest_scylla_sandboxes(config):
    from pytest_scylla.api import Sandbox

    return {{"{sandbox}": Sandbox}}


def pytest_scylla_report_writers(config):
    return {{"{report}": lambda report: None}}
"""


@pytest.mark.parametrize(
    ("agent", "sandbox", "report", "taken"),
    [
        ("codex", "jail", "txt", "an agent named 'codex'"),
        ("toy-cli", "bwrap", "txt", "a sandbox named 'bwrap'"),
        ("toy-cli", "jail", "html", "a report named 'html'"),
    ],
)
def test_a_plugin_taking_a_built_in_name_stops_the_session(
    mini: object, pytester: pytest.Pytester, agent: str, sandbox: str, report: str, taken: str
) -> None:
    """Built-in names are offered through the same hooks (the `html` report's writer too), so
    taking one is the same error."""
    pytester.makeconftest(TAKER.format(agent=agent, sandbox=sandbox, report=report))
    done = pytester.runpytest("cases", "--co", "-p", "no:xdist")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(
        [f"ERROR: two plugins offer {taken}: * and *conftest.py; give one another name"]
    )


def test_new_names_from_a_plugin_sit_beside_the_built_in_ones(
    mini: object, pytester: pytest.Pytester
) -> None:
    """Positive control: the same plugin with names of its own collects."""
    # a hook implementation may take fewer arguments than the hook offers (as pluggy allows)
    pytester.makeconftest(
        TAKER.format(agent="toy-cli", sandbox="jail", report="txt")
        + "\n\ndef pytest_scylla_judge_kinds():\n    return {}\n"
    )
    done = pytester.runpytest("cases", "--co", "-p", "no:xdist", "--scylla-sandbox=jail")
    assert done.ret == pytest.ExitCode.OK, done.stderr.str()
