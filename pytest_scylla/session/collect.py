"""Collection: a case folder yields its `test.yaml`, which yields one item per
tier-subtest x run, e.g. `cases/test-001/test.yaml::test-001[T5-02-r3]`.

Collection parses and validates only. Problems become one `CollectError` per case, reading
`path:line: what is wrong and what is expected`; other cases still collect.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_scylla.config.agent import adapters
from pytest_scylla.config.settings import SETTINGS_KEY, tierset
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import verdict_table
from pytest_scylla.core.runspec import RunSpec, model_label
from pytest_scylla.formats.spec import Case, load_case
from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.formats.yamlmarks import Problem, SpecError, display
from pytest_scylla.run.agents import unsupported

if TYPE_CHECKING:
    from pytest_scylla.operations.runtime import Runtime

CASE_FILE = "test.yaml"


RUN_KEY = pytest.StashKey[RunSpec]()
TAGS_KEY = pytest.StashKey[set[str]]()
ACTIVE_KEY = pytest.StashKey[tuple[Path, ...]]()  # set when the session evaluates: case roots
# the process's Runtime, or the setup error that prevented it (one message for every run)
RUNTIME_KEY = pytest.StashKey["Runtime | Exception"]()


JUNIT_PROPERTIES = ("tier", "subtest", "outcome", "score", "grade", "cost_usd")


def case_roots(config: pytest.Config) -> tuple[Path, ...]:
    """The folders cases are collected from (`scylla_cases`)."""
    base = config.inipath.parent if config.inipath else config.rootpath
    return tuple((base / str(p)).resolve() for p in config.getini("scylla_cases"))


def wanted(config: pytest.Config) -> bool:
    """Whether this session evaluates: `--scylla-only`, another --scylla-* option on the
    command line, or a path it collects from that is or lies in a case root (`pytest cases/`,
    `testpaths = cases`). A path that only holds one (a bare `pytest` in a project with its own
    tests) does not: the project's tests run, and the plugin stays out of the way (no probes,
    folders or summary; `bystander` says in one line how to run the evaluations). Never under
    `--scylla-skip`."""
    if config.getoption("scylla_skip", False):
        return False
    if any(str(arg).startswith("--scylla") for arg in config.invocation_params.args):
        return True
    roots = [r for r in case_roots(config) if r.is_dir()]
    return any(target == r or r in target.parents for target in _targets(config) for r in roots)


def bystander(config: pytest.Config) -> tuple[Path, ...]:
    """The case roots a session that does not evaluate would otherwise collect (a path it
    collects from is, holds or lies in one): they are left out of its collection."""
    roots = [r for r in case_roots(config) if r.is_dir()]
    return tuple(
        r
        for r in roots
        if any(
            target == r or target in r.parents or r in target.parents for target in _targets(config)
        )
    )


def _targets(config: pytest.Config) -> list[Path]:
    return [
        (config.invocation_params.dir / str(arg).split("::")[0]).resolve() for arg in config.args
    ]


MISNAMED = ("test.yml",)  # a case file under another name: the folder is still a case's
# pytest's default `norecursedirs`: folders collection does not enter (validate neither)
SKIPPED_DIRS = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
IDS_KEY = pytest.StashKey[dict[str, Path]]()  # case id -> its file, for duplicates


def is_case_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in (CASE_FILE, *MISNAMED))


def case_files(cases_dir: Path) -> list[Path]:
    """The case files under `cases_dir` as collection finds them: nested folders too, but not
    inside a case's folder (its payload); a misnamed case file is listed under its name."""
    found = []
    for folder, dirs, _ in os.walk(cases_dir):  # pruned as it goes: never a case's payload
        here = Path(folder)
        if is_case_dir(here):
            dirs[:] = []
            found.append(
                here / CASE_FILE
                if (here / CASE_FILE).is_file()
                else next(here / n for n in MISNAMED if (here / n).is_file())
            )
        else:  # as pytest's collection: hidden folders and the usual tool folders left out
            dirs[:] = [d for d in dirs if not any(fnmatch.fnmatch(d, p) for p in SKIPPED_DIRS)]
    return sorted(found)


def case_file_problem(path: Path) -> str | None:
    """Why a case file found by `case_files` cannot be a case's (its name), or None."""
    if path.name == CASE_FILE:
        return None
    return (
        f"the case file must be named {CASE_FILE}; rename it (nothing in "
        f"{display(path.parent)} is collected until then)"
    )


def duplicate_id(seen: dict[str, Path], case_id: str, file: Path) -> str | None:
    """A second case of the same id (nested folders): their runs would share keys."""
    first = seen.setdefault(case_id, file)
    if first == file:
        return None
    return (
        f"case id '{case_id}' is already that of {display(first)}; case ids name the runs "
        "and must be unique: rename one folder and its id"
    )


class CaseDirectory(pytest.Directory):
    """A case folder: only its `test.yaml` is collected, never the payload files in it (a
    misnamed `test.yml` is an error, not a reason to collect its Python files as tests)."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        if not (self.path / CASE_FILE).is_file():
            misnamed = next(self.path / n for n in MISNAMED if (self.path / n).is_file())
            raise self.CollectError(f"{display(misnamed)}: {case_file_problem(misnamed)}")
        yield CaseFile.from_parent(self, path=self.path / CASE_FILE)


class CaseFile(pytest.File):
    """A case's `test.yaml`: expands to runs for every selected tier, subtest and run index."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        settings = self.config.stash[SETTINGS_KEY]
        tiers = tierset(self.config)
        try:
            case = load_case(self.path, settings.rubrics_dir, known_tiers=tiers.names)
            subtests = select_subtests(self.config, case, self.path)
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        twice = duplicate_id(self.config.stash.setdefault(IDS_KEY, {}), case.id, self.path)
        if twice:
            raise self.CollectError(f"{display(self.path)}: {twice}")
        registered = self.config.stash.setdefault(TAGS_KEY, set())
        for tag in set(case.tags) - registered:
            self.config.addinivalue_line("markers", f"{tag}: pytest-scylla case tag")
            registered.add(tag)
        # the case's marks on its file, once (its runs inherit them: -m, -k and
        # get_closest_marker look up the chain); scylla and categories: see configure
        for mark in ("scylla", case.category, *case.tags):
            self.add_marker(mark)
        adapter = adapters(self.config)[settings.agent]
        for sub in subtests:
            why = unsupported(adapter, sub, tiers)  # not applicable here: skipped, with why
            for run in range(1, settings.runs + 1):
                for model in settings.models or ("",):
                    spec = RunSpec(case=case, subtest=sub, run=run, model=model)
                    item = self._item(spec, [sub.tier, *([model_label(model)] if model else [])])
                    if why is not None:
                        item.add_marker(
                            pytest.mark.skip(reason=f"not applicable to {settings.agent}: {why}")
                        )
                    yield item

    def _item(self, spec: RunSpec, marks: list[str]) -> RunItem:
        # every run item of this file has the same function and parent, so the same fixture
        # closure: computed for the first and handed to the rest (pytest would compute it for
        # each: a third of a worker's collection, which every xdist worker does in full)
        info = getattr(self, "_scylla_fixtureinfo", None)
        item = RunItem.from_parent(
            self, name=spec.key.item_name, callobj=run_case, fixtureinfo=info
        )
        if info is None:
            self._scylla_fixtureinfo = item._fixtureinfo
        else:  # its own list of names, should anything add to one item's
            item.fixturenames = list(info.names_closure)
        _as_parsed(item)
        item.stash[RUN_KEY] = spec
        for mark in marks:
            item.add_marker(mark)
        if (limit := timeout_mark(self.config, spec.case)) is not None:
            item.add_marker(limit)
        return item


RUN_MARGIN_S = 900  # past the agent's timeout: workspace, checks, judges (their own limits)


def timeout_mark(config: pytest.Config, case: Case) -> pytest.MarkDecorator | None:
    """pytest-timeout's limit for a run item when the session's own (`--timeout`, its ini key
    or PYTEST_TIMEOUT) is shorter than a run needs: the case's timeout_seconds plus the
    harness's margin, so pytest-timeout never cuts a run the harness would let finish (it
    would end as infra_error: interrupted). None without pytest-timeout or such a limit."""
    if not config.pluginmanager.hasplugin("timeout"):
        return None
    given = config.getoption("timeout", None)
    if given is None:
        given = config.getini("timeout") or os.environ.get("PYTEST_TIMEOUT")
    try:
        session = float(given or 0)
    except (TypeError, ValueError):
        return None  # pytest-timeout itself says what is wrong with it
    need = case.timeout_seconds + RUN_MARGIN_S
    return pytest.mark.timeout(need) if 0 < session < need else None


def select_subtests(
    config: pytest.Config, case: Case, path: Path, only: list[str] | None = None
) -> list[Subtest]:
    """The composed subtests of the tiers selected for `case` (its own `tiers:`, `only`, and
    the session's selection); a broken tier is this case's error (`SpecError`)."""
    settings = config.stash[SETTINGS_KEY]
    tiers = tierset(config)
    if not tiers.names:
        raise SpecError(
            [
                Problem(
                    path,
                    None,
                    f"no tier files found in "
                    f"{' or '.join(map(str, settings.tier_dirs))}; expected "
                    "T0.yaml ... there, or point --scylla-tiers-dir at them",
                )
            ]
        )
    wanted = [
        t
        for t in (case.tiers or tiers.names)
        if settings.selects_tier(t) and (only is None or t in only)
    ]
    problems: list[Problem] = []
    chosen = []
    for name in wanted:
        if name in tiers.errors:
            problems.extend(tiers.errors[name].problems)
            continue
        for sub in tiers.tiers[name].subtests:
            if not settings.selects_subtest(sub):
                continue
            try:
                chosen.append(tiers.resolve(sub.ref))
            except SpecError as exc:
                problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return chosen


def _as_parsed(item: pytest.Item) -> None:
    """pytest 9.2 keeps node ids structured (names, then params in brackets). A run item's
    name carries its params without a callspec, so its id would never equal the same id read
    back from pytest's cache (`--lf`, `--ff`): make it the parsed form of its own string."""
    node_id = getattr(item, "_id", None)
    if node_id is not None and hasattr(node_id, "parse"):
        setattr(item, "_id", type(node_id).parse(str(node_id)))  # noqa: B010 (not typed before 9.2)


class RunItem(pytest.Function):
    """One run of a case; its location points at the case's YAML. Its work is done by the
    public fixtures (`fixtures.py`): the agent runs in setup, so a harness failure
    (`infra_error`) is a pytest ERROR; the panel judges in the call, where a judged non-pass
    FAILs with its verdict table."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        spec = self.stash[RUN_KEY]
        return self.path, spec.case.line - 1, f"{spec.key.item_name} ({spec.subtest.name})"


def runtime(item: pytest.Item) -> Runtime:
    """The process's runtime (gateway, sandbox, CLI, baseline), made on first use. A setup
    problem (no CLI, no credential, no sandbox) fails every run with one clear message."""
    from pytest_scylla.operations.runtime import SETUP_ERRORS

    config = item.config
    if RUNTIME_KEY not in config.stash:
        try:
            config.stash[RUNTIME_KEY] = config.hook.pytest_scylla_runtime(config=config)
        except SETUP_ERRORS as exc:
            config.stash[RUNTIME_KEY] = exc
    rt = config.stash[RUNTIME_KEY]
    if isinstance(rt, Exception):
        item.session.shouldstop = f"pytest-scylla setup failed: {rt}"
        pytest.fail(f"setup: {rt}", pytrace=False)
    return rt


def run_case(scylla_verdict: Any) -> None:
    """A YAML item's test body: the panel's verdict; pass when the run passed, else fail with
    its verdict table."""
    rec = scylla_verdict.ask()
    if rec["outcome"] != Outcome.PASS:
        pytest.fail(verdict_table(rec), pytrace=False)


def collect_directory(path: Path, parent: pytest.Collector) -> Any:
    return CaseDirectory.from_parent(parent, path=path) if is_case_dir(path) else None
