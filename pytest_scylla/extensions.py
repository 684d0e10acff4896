"""What other packages add through pytest-scylla's hooks (`hookspecs.py`), outside the pytest
plugin's own registration: the entry-point group `pytest_scylla` names modules that implement
`pytest_scylla_*` hooks. A pytest session registers them as plugins (beside `pytest11`
entry points and conftest.py files); the `scylla` command, which runs without pytest, reads
their report writers from them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

GROUP = "pytest_scylla"
# a report writer: (experiment folder, tables, summary, statistical results) -> None; it writes
# its own files into the folder
Writer = Callable[[Path, Any, dict[str, Any], dict[str, Any]], None]
WRITERS_KEY = pytest.StashKey[dict[str, Writer]]()


class ExtensionError(RuntimeError):
    """An entry point of the group that cannot be loaded, or a writer that takes a built-in
    report's name."""


def modules() -> list[Any]:
    """The objects the group's entry points name (each a module of hook functions)."""
    from importlib.metadata import entry_points

    found = []
    for point in entry_points(group=GROUP):
        try:
            found.append(point.load())
        except Exception as exc:  # a broken extension is named, never a traceback
            raise ExtensionError(f"the {GROUP} entry point '{point.name}' ({point.value}) "
                                 f"cannot be loaded: {type(exc).__name__}: {exc}") from None
    return found


def register(config: pytest.Config) -> None:
    """Register the group's modules as plugins of this pytest session."""
    for module in modules():
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, f"{GROUP}:{getattr(module, '__name__', '')}")


def _checked(offered: list[dict[str, Writer] | None], builtin: tuple[str, ...]
             ) -> dict[str, Writer]:
    found: dict[str, Writer] = {}
    for writers in offered:
        for name, writer in (writers or {}).items():
            if name in builtin or name in ("all", "none"):
                raise ExtensionError(f"a plugin offers a report named '{name}', which is a "
                                     "built-in one; give it another name")
            found[name] = writer
    return found


def report_writers(config: pytest.Config | None, builtin: tuple[str, ...]) -> dict[str, Writer]:
    """The report writers plugins add, by the name `--scylla-report` (or `scylla report
    --report`) selects them with: through the session's hooks, or without a session from
    the entry-point group."""
    if config is not None:  # asked once per session (the options' check, then the exports)
        if WRITERS_KEY not in config.stash:
            config.stash[WRITERS_KEY] = _checked(
                config.hook.pytest_scylla_report_writers(config=config), builtin)
        return config.stash[WRITERS_KEY]
    return _checked([hook(config=None) for hook in (
        getattr(m, "pytest_scylla_report_writers", None) for m in modules()) if hook], builtin)
