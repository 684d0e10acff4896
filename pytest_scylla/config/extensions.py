"""What plugins offer through pytest-scylla's hooks (`hookspecs.py`), gathered by the one
registry rule (`core.registry`: a name is offered once) — agents, sandboxes, judge kinds and
report writers, the built-in ones offered by `pytest_scylla.plugin` through the same hooks —
and the entry-point group `pytest_scylla`, whose modules implement `pytest_scylla_*` hooks. A
pytest session registers those modules as plugins (beside `pytest11` entry points and
conftest.py files); the `scylla` command, which runs without pytest, reads their agents,
sandboxes and report writers from them (`agents(None)`, `sandboxes(None)`,
`report_writers(None)`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

import pytest

from pytest_scylla.core.registry import RegistryError, gather

GROUP = "pytest_scylla"
BUILT_IN = "pytest-scylla (built in)"
Writer = Callable[..., None]  # `pytest_scylla.api.Writer`: writer(ReportInput)
WRITERS_KEY = pytest.StashKey[dict[str, Writer]]()
GATHERED_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()


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
            raise ExtensionError(
                f"the {GROUP} entry point '{point.name}' ({point.value}) "
                f"cannot be loaded: {type(exc).__name__}: {exc}"
            ) from None
    return found


def register(config: pytest.Config) -> None:
    """Register the group's modules as plugins of this pytest session."""
    for module in modules():
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, f"{GROUP}:{getattr(module, '__name__', '')}")


def _offers(config: pytest.Config, hook: str) -> list[tuple[str, Any]]:
    """(plugin name, what it offers) for each implementation of an offering hook, in the order
    the plugins registered (the built-in plugin's first)."""
    return [
        (impl.plugin_name, impl.function(**{arg: config for arg in impl.argnames}))
        for impl in getattr(config.hook, hook).get_hookimpls()
        if not (impl.hookwrapper or getattr(impl, "wrapper", False))
    ]


def _gathered(
    config: pytest.Config, hook: str, kind: str, named: Callable[[Any], Any]
) -> dict[str, Any]:
    """Everything the session's plugins offer through `hook`, by name (asked once)."""
    cache = config.stash.setdefault(GATHERED_KEY, {})
    if hook not in cache:
        try:
            cache[hook] = gather(
                kind, [(who, named(offered or {})) for who, offered in _offers(config, hook)]
            )
        except RegistryError as exc:
            raise pytest.UsageError(str(exc)) from None
    return cache[hook]


def _group_offers(hook: str) -> list[tuple[str, object]]:
    """(module name, what it offers) for each module of the entry-point group that implements
    `hook`, asked without a session (`config=None`, or no argument where it takes none)."""
    offers: list[tuple[str, object]] = []
    for module in modules():
        function = getattr(module, hook, None)
        if function is not None:
            takes = inspect.signature(function).parameters
            offered = function(config=None) if "config" in takes else function()
            offers.append((f"{GROUP}:{getattr(module, '__name__', '')}", offered))
    return offers


def _without_session(
    hook: str, kind: str, built_in: Any, named: Callable[[Any], Any]
) -> dict[str, Any]:
    """What `hook` offers without a pytest session (the `scylla` command): the built-in offer,
    then the entry-point group's (`_group_offers`), gathered by the one registry rule; a name
    offered twice is an `ExtensionError`."""
    offers = [(BUILT_IN, built_in), *_group_offers(hook)]
    try:
        return gather(kind, [(who, named(offered or {})) for who, offered in offers])
    except RegistryError as exc:
        raise ExtensionError(str(exc)) from None


def _adapters(listed: Any) -> list[tuple[str, Any]]:
    return [(adapter.name, adapter) for adapter in listed]


def agents(config: pytest.Config | None) -> dict[str, Any]:
    """The agent CLI adapters (`pytest_scylla.api.Agent`) by name: the session's plugins', or
    without a session (`config` None) the built-in ones and the entry-point group's."""
    if config is None:
        from pytest_scylla.run.agents import builtin

        return _without_session("pytest_scylla_agents", "agent", builtin(), _adapters)
    return _gathered(config, "pytest_scylla_agents", "agent", _adapters)


def sandboxes(config: pytest.Config | None) -> dict[str, Any]:
    """The sandboxes (subclasses of `pytest_scylla.api.Sandbox`) by name: the session's
    plugins', or without a session (`config` None) the built-in ones and the entry-point
    group's."""
    if config is None:
        from pytest_scylla.run.sandbox import builtin

        return _without_session("pytest_scylla_sandboxes", "sandbox", builtin(), dict.items)
    return _gathered(config, "pytest_scylla_sandboxes", "sandbox", dict.items)


def judge_kinds(config: pytest.Config) -> dict[str, Any]:
    """The judge kinds (`pytest_scylla.api.JudgeKind`) by name."""
    return _gathered(config, "pytest_scylla_judge_kinds", "judge kind", dict.items)


# the formats the session writes itself (the terminal table, the CSV and JSON exports): held by
# no writer, so no plugin can take their names
HELD = ("terminal", "csv", "json")


def _checked(offered: list[tuple[str, dict[str, Writer] | None]]) -> dict[str, Writer]:
    """Every offered report writer by name; the held formats' names are no one's."""
    try:
        found = gather(
            "report",
            [
                (BUILT_IN, [(name, None) for name in HELD]),
                *((who, (writers or {}).items()) for who, writers in offered),
            ],
        )
    except RegistryError as exc:
        raise ExtensionError(str(exc)) from None
    return {name: writer for name, writer in found.items() if writer is not None}


def report_writers(config: pytest.Config | None) -> dict[str, Writer]:
    """The report writers by the name `--scylla-report` (or `scylla report --report`) selects
    them with: the built-in `md` and `html` and the plugins', through the session's hooks, or
    without a session from the package and the entry-point group."""
    if config is not None:  # asked once per session (the options' check, then the exports)
        if WRITERS_KEY not in config.stash:
            config.stash[WRITERS_KEY] = _checked(_offers(config, "pytest_scylla_report_writers"))
        return config.stash[WRITERS_KEY]
    from pytest_scylla.results import builtin_reports

    offered = cast(
        "list[tuple[str, dict[str, Writer] | None]]",
        _group_offers("pytest_scylla_report_writers"),
    )
    return _checked([(BUILT_IN, builtin_reports.WRITERS), *offered])
