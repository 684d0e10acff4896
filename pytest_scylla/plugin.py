"""The pytest plugin (entry point `scylla`): options, configuration and collection hooks."""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.config import options, settings
from pytest_scylla.config.sandbox import plugin_sandboxes
from pytest_scylla.config.settings import EXPERIMENT_KEY, SESSION_KEY
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import bound_report, of_report
from pytest_scylla.core.runspec import model_label
from pytest_scylla.core.terminal import safe, scrub
from pytest_scylla.formats.spec import CATEGORIES
from pytest_scylla.formats.tiers import tier_files
from pytest_scylla.session import collect
from pytest_scylla.session.collect import ACTIVE_KEY
from pytest_scylla.session.header import BYSTANDER_KEY, bystander_line, header_lines, sandbox_line


def pytest_addoption(parser: pytest.Parser) -> None:
    options.addoptions(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_scylla import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_scylla_agents(config: pytest.Config) -> list[Any]:
    """The built-in adapters: Claude Code, Codex, Gemini CLI, opencode."""
    from pytest_scylla.run.agents import builtin

    return builtin()


def pytest_scylla_sandboxes(config: pytest.Config) -> dict[str, Any]:
    """The built-in sandboxes: local, bwrap, docker."""
    from pytest_scylla.run.sandbox import builtin

    return builtin()


def pytest_scylla_judge_kinds(config: pytest.Config) -> dict[str, Any]:
    """The built-in judge kinds: anthropic, openai, gemini, claude-cli."""
    from pytest_scylla.judging.judges import BUILTIN_KINDS

    return dict(BUILTIN_KINDS)


def pytest_scylla_report_writers(config: pytest.Config | None) -> dict[str, Any]:
    """The built-in report writers: md (tables.md, tables.tex) and html (report.html)."""
    from pytest_scylla.results.builtin_reports import WRITERS

    return dict(WRITERS)


@pytest.hookimpl(trylast=True)
def pytest_scylla_runtime(config: pytest.Config) -> Any:
    """The built-in runtime: gateway, sandbox and the real CLI (its baseline measured)."""
    from pytest_scylla.config.agent import adapters
    from pytest_scylla.operations.runtime import build

    chosen = config.stash[settings.SETTINGS_KEY]
    return build(
        chosen,
        config.stash[EXPERIMENT_KEY],
        config.stash[SESSION_KEY],
        settings.tierset(config),
        adapters(config)[chosen.agent],
        sandboxes=plugin_sandboxes(config),
    )


@pytest.hookimpl(trylast=True)
def pytest_scylla_execute(spec: Any, runtime: Any, conditions: Any) -> Any:
    """The built-in runner: the real agent in its sandbox, checks, judges."""
    from pytest_scylla.operations.runner import execute

    return execute(spec, runtime, conditions)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not collect.wanted(config):  # inert: a session that evaluates nothing sees no trace of
        config.stash[BYSTANDER_KEY] = collect.bystander(config)  # the plugin but one header
        return  # line, and the case folders it would collect are left out of its collection
    config.stash[ACTIVE_KEY] = collect.case_roots(config)
    if (
        config.getoption("scylla_only", False)
        and config.args_source != pytest.Config.ArgsSource.ARGS
    ):
        # no paths given: the evaluations wherever they are, even where testpaths (the
        # project's own tests) never reach them
        config.args = [str(r) for r in config.stash[ACTIVE_KEY] if r.is_dir()] or config.args
    from pytest_scylla.config import extensions

    try:
        extensions.register(config)  # the `pytest_scylla` entry-point group's hook modules
    except extensions.ExtensionError as exc:
        raise pytest.UsageError(str(exc)) from None
    from pytest_scylla.core.tempdirs import claimed

    config.stash[HELD_KEY] = claimed()  # private folders this process held before the session
    worker = getattr(config, "workerinput", None)
    config.stash[settings.SETTINGS_KEY] = _settings(config, worker)
    _register(config)
    config.stash[EXPERIMENT_KEY] = settings.experiment_dir(config)
    if worker and "scylla_session" in worker:
        config.stash[SESSION_KEY] = worker["scylla_session"]
    else:
        from pytest_scylla.operations.ledger import new_session_id

        config.stash[SESSION_KEY] = new_session_id()
    _session_plugins(config, worker)
    from pytest_scylla.formats import yamlmarks

    # what earlier sessions found valid (a session that only collects writes nothing there)
    valid = config.stash[settings.SETTINGS_KEY].cache_dir / "valid"
    yamlmarks.remember_valid(valid, write=not config.option.collectonly)


def _settings(config: pytest.Config, worker: dict[str, Any] | None) -> settings.Settings:
    """The session's settings; an xdist worker's sandbox is the one its controller's `auto`
    chose, and its Anthropic judges are asked through the controller's judge service."""
    resolved = settings.resolve(config)
    if worker and "scylla_sandbox" in worker:  # what the controller's `auto` chose
        resolved = replace(resolved, sandbox=worker["scylla_sandbox"])
    if worker and worker.get("scylla_judge_service"):  # the controller asks its SDK judges
        from pytest_scylla.judging import service

        service.use(worker["scylla_judge_service"])
    return resolved


def _register(config: pytest.Config) -> None:
    """An evaluating session's markers, fixtures and hooks."""
    config.addinivalue_line(
        "markers",
        "scylla(case, tiers=None): a pytest-scylla evaluation "
        "run; on a test function, a Python evaluation of that case's task",
    )
    from pytest_scylla.session import evaluation, fixtures

    config.pluginmanager.register(fixtures, "scylla-fixtures")
    config.pluginmanager.register(evaluation, "scylla-evaluation")
    config.pluginmanager.register(evaluation.Body(), "scylla-body")
    config.pluginmanager.register(_Exit(), "scylla-exit")
    for tier in tier_files(config.stash[settings.SETTINGS_KEY].tier_dirs):
        config.addinivalue_line("markers", f"{tier}: runs of tier {tier}")
    for category in CATEGORIES:
        config.addinivalue_line("markers", f"{category}: cases of category {category}")
    for model in config.stash[settings.SETTINGS_KEY].models:
        config.addinivalue_line("markers", f"{model_label(model)}: runs of agent model {model}")


def _session_plugins(config: pytest.Config, worker: dict[str, Any] | None) -> None:
    """The plan (under --scylla-plan), the controller's aggregation and progress, xdist's hooks."""
    s = config.stash[settings.SETTINGS_KEY]
    if s.plan:  # nothing runs: collect, then print the plan (xdist stays out of it)
        workers = getattr(config.option, "numprocesses", None)
        config.option.collectonly = True
        config.pluginmanager.register(
            _Plan(config, workers if isinstance(workers, int) and workers > 0 else 1), "scylla-plan"
        )
    if worker is None:  # the controller collects, exports and summarises
        from pytest_scylla.config.extensions import report_writers
        from pytest_scylla.operations.progress import Progress
        from pytest_scylla.results.aggregate import Aggregator

        writers = report_writers(config)  # checked in resolve
        config.pluginmanager.register(
            Aggregator(config.stash[EXPERIMENT_KEY], s, writers), "scylla-aggregate"
        )
        config.pluginmanager.register(
            Progress(config, s, config.stash[EXPERIMENT_KEY], config.stash[SESSION_KEY]),
            "scylla-progress",
        )
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(config), "scylla-xdist")


HELD_KEY = pytest.StashKey[frozenset[Path]]()


class _Plan:
    def __init__(self, config: pytest.Config, workers: int) -> None:
        self.config = config
        self.workers = workers
        self.specs: list[Any] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.specs = [i.stash[collect.RUN_KEY] for i in session.items if collect.RUN_KEY in i.stash]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_scylla.operations.plan import estimate

        s = self.config.stash[settings.SETTINGS_KEY]
        terminalreporter.section("pytest-scylla plan")
        for line in estimate(
            self.specs,
            self.config.stash[EXPERIMENT_KEY],
            s.model,
            s.oracle,
            s.fresh,
            s.rejudge,
            self.workers,
            s.budget_usd,
        ):
            terminalreporter.write_line(safe(line))


class _XdistHooks:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        from pytest_scylla.core import warm

        warm.at_idle_priority()  # the controller's imports yield to its workers' runs
        config = self.config
        node.workerinput["scylla_out"] = str(config.stash[EXPERIMENT_KEY])
        node.workerinput["scylla_session"] = config.stash[SESSION_KEY]
        sandbox_line(config)
        node.workerinput["scylla_sandbox"] = config.stash[settings.SETTINGS_KEY].sandbox
        node.workerinput["scylla_judge_service"] = judge_service(config)


JUDGE_SERVICE_KEY = pytest.StashKey[Any]()


def judge_service(config: pytest.Config) -> str | None:
    """The address of the controller's judge service, started for the first worker when the
    panel has an Anthropic judge (see judging.service); None when it has none."""
    if JUDGE_SERVICE_KEY not in config.stash:
        s = config.stash[settings.SETTINGS_KEY]
        config.stash[JUDGE_SERVICE_KEY] = None
        if any(j.kind == "anthropic" for j in s.judges) and not config.option.collectonly:
            from pytest_scylla.judging import anthropic_judge, service

            # no socket here (a temp dir path too long, say): each worker asks its own judges
            with contextlib.suppress(OSError):
                config.stash[JUDGE_SERVICE_KEY] = service.JudgeService(
                    anthropic_judge.SharedClient()
                )
    running = config.stash[JUDGE_SERVICE_KEY]
    return running.address if running is not None else None


def pytest_unconfigure(config: pytest.Config) -> None:
    if ACTIVE_KEY not in config.stash:
        return
    from pytest_scylla.formats import yamlmarks

    yamlmarks.remember_valid(None)  # an in-process session (pytester) leaves nothing behind
    rt = config.stash.get(collect.RUNTIME_KEY, None)
    if rt is not None and not isinstance(rt, Exception):
        rt.gateway.stop()
    if config.stash.get(JUDGE_SERVICE_KEY, None) is not None:
        config.stash[JUDGE_SERVICE_KEY].stop()
    from pytest_scylla.core.tempdirs import clean_stale, release_all

    release_all(config.stash.get(HELD_KEY, frozenset()))  # what an interruption left of
    # this session's runs (cut mid-removal, say)
    if not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("dsession"):
        clean_stale()  # folders of workers stopped before they could clean up (Ctrl-C)


class _Exit:
    """After every other plugin's unconfigure (so that pytest's own garbage collection still
    finds unraisable exceptions): the objects alive now are frozen out of the interpreter's
    final collections. An evaluating process holds the judges' SDK and numpy, whose collection
    at exit took ~0.35 s, and so does an xdist controller (its judge service, the statistics):
    0.4 s of its exit, measured. Python does not promise finalizers at exit either way."""

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if (
            config.stash.get(collect.RUNTIME_KEY, None) is not None  # it evaluated
            or config.pluginmanager.hasplugin("dsession")
        ):  # its workers did
            import gc

            gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--scylla-only`: the evaluations only. `--scylla-shard=I/N`: keep this shard's runs
    (by run key; other tests stay). `--scylla-stop=decided`: the comparisons among the runs
    kept, and the runs in run-major order."""
    if ACTIVE_KEY not in config.stash:
        return
    if config.getoption("scylla_only", False):
        others = [item for item in items if not _evaluation(item)]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if _evaluation(item)]
    from pytest_scylla.session.selection import shard_and_order

    shard_and_order(config, items)


def _evaluation(item: pytest.Item) -> bool:
    """A run item of a case, or a Python evaluation (`@pytest.mark.scylla`)."""
    return collect.RUN_KEY in item.stash or item.get_closest_marker("scylla") is not None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A Python evaluation in a session that evaluates nothing (it lies outside the case
    roots): one clear error instead of missing fixtures."""
    if (
        ACTIVE_KEY in metafunc.config.stash
        or metafunc.definition.get_closest_marker("scylla") is None
    ):
        return
    roots = ", ".join(metafunc.config.getini("scylla_cases"))
    raise pytest.Collector.CollectError(
        f"{metafunc.definition.nodeid}: @pytest.mark.scylla: this evaluation lies outside the "
        f"case roots (scylla_cases = {roots}); move its file under one, add its folder to "
        "scylla_cases, or pass a --scylla-* option"
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A session that does not evaluate leaves the case roots alone: their hidden tests,
    solutions and sources, and the Python evaluations, are not the project's tests."""
    roots = config.stash.get(BYSTANDER_KEY, ())
    if roots and any(collection_path.resolve().is_relative_to(r) for r in roots):
        return True
    return None


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    roots = parent.config.stash.get(ACTIVE_KEY, ())
    if not any(path.resolve().is_relative_to(root) for root in roots):
        return None  # a test.yaml outside the case roots is someone else's file
    return collect.collect_directory(path, parent)  # type: ignore[no-any-return]


def pytest_report_header(config: pytest.Config) -> list[str]:
    if ACTIVE_KEY not in config.stash:
        return bystander_line(config)
    return header_lines(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> Generator[None, None, None]:
    """Before anyone reads a report: its whole run record moves to `report.scylla_record` (the
    session's own readers use it), its JUnit property to a short summary."""
    bound_report(report)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """What pytest prints of a run item (its failure or error text, a skip reason, captured
    output) is made terminal-safe: a verdict quotes the agent and its judges. Made on the worker,
    so what crosses to the controller (and into --junitxml) is safe already."""
    report = yield
    if collect.RUN_KEY in item.stash:
        report.longrepr = scrub(report.longrepr)
        report.sections = scrub(report.sections)
    return report


def pytest_report_teststatus(
    report: pytest.TestReport, config: pytest.Config
) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """Runs reused from disk (a resumed experiment) and re-scored runs say so; a run the
    panel could not score (judged in the test body) is an ERROR like other harness failures."""
    if report.when != "call":
        return None
    rec = of_report(report)
    if rec is None:
        return None
    if report.failed and rec.get("outcome") == Outcome.JUDGE_ERROR:  # the panel, not the model
        return "error", "E", ("ERROR (judge_error)", {"red": True})
    tag = "cached" if rec.get("cached") else "rejudged" if rec.get("rejudged_now") else None
    if tag is None:
        return None
    if report.passed:
        return "passed", "c" if tag == "cached" else "j", (f"PASSED ({tag})", {"green": True})
    return "failed", "C" if tag == "cached" else "J", (f"FAILED ({tag})", {"red": True})
