"""Evaluations in Python: an ordinary test function marked

    @pytest.mark.scylla(case="greet", tiers=["T0", "T1"])
    def test_greets_politely(scylla_run):
        assert "Hello" in scylla_run.read_text("greet.py")

runs like a YAML case: parametrized over tier x subtest x run (`test_greets_politely[T0-01-r1]`),
the agent run by the fixtures in setup, on the task of the named case folder (prompt, source,
checks, rubric, limits). The evaluation is its own case in the results (named after the
function), and its body decides: its asserts become a check item (`assert:<function>`) of the
record; the run passes when they hold, unless the agent timed out, ran over budget or crashed.
A body that asks `scylla_verdict` adds the panel's score (and its pass or fail). Its source is
part of the run's scoring conditions: editing it calls for `--scylla-rejudge`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import re
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.config.settings import SETTINGS_KEY, tierset
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import verdict_table
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.formats.spec import Case, load_case
from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.formats.yamlmarks import SpecError
from pytest_scylla.session.collect import (
    ACTIVE_KEY,
    CASE_FILE,
    RUN_KEY,
    TAGS_KEY,
    select_subtests,
    timeout_mark,
)
from pytest_scylla.session.fixtures import EVALUATION_KEY, STATE_KEY, ItemRun

NAME = re.compile(r"[A-Za-z0-9_.-]+$")
OWNERS = pytest.StashKey[dict[str, str]]()  # evaluation name -> the test that owns it
MESSAGE_LIMIT = 2_000


def _problem(where: str, what: str) -> pytest.Collector.CollectError:
    return pytest.Collector.CollectError(f"{where}: @pytest.mark.scylla: {what}")


def find_case(config: pytest.Config, name: str, test_file: Path, where: str) -> Path:
    """The case folder a marker names: a path from the test file's folder, else a folder of
    that name under a case root (`scylla_cases`)."""
    candidates = [(test_file.parent / name).resolve()]
    candidates += [root / name for root in config.stash.get(ACTIVE_KEY, ())]
    for folder in candidates:
        if (folder / CASE_FILE).is_file():
            return folder
    roots = ", ".join(str(r) for r in config.stash.get(ACTIVE_KEY, ()))
    raise _problem(
        where,
        f"no case {name!r}: expected {name}/{CASE_FILE} next to the test "
        f"file or under a case root ({roots}); give case= a case folder",
    )


def _arguments(marker: pytest.Mark, where: str) -> tuple[str, list[str] | None]:
    unknown = set(marker.kwargs) - {"case", "tiers"}
    if unknown or len(marker.args) > 1:
        raise _problem(
            where,
            f"unknown arguments {sorted(unknown) or list(marker.args[1:])}; "
            "expected case=<case folder> and optionally tiers=[...]",
        )
    case = marker.kwargs.get("case", marker.args[0] if marker.args else None)
    if not isinstance(case, str) or not case:
        raise _problem(where, "case= is missing; name the case folder whose task it runs")
    tiers = marker.kwargs.get("tiers")
    if tiers is not None and (isinstance(tiers, str) or not all(isinstance(t, str) for t in tiers)):
        raise _problem(where, f"tiers={tiers!r}: expected a list of tier names like ['T0', 'T5']")
    return case, None if tiers is None else list(tiers)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a marked function over its case's selected tier subtests and runs."""
    marker = metafunc.definition.get_closest_marker("scylla")
    if marker is None:
        return
    config, function = metafunc.config, metafunc.function
    where = f"{metafunc.definition.nodeid}"
    name, only = _arguments(marker, where)
    _check_function(metafunc, where)
    settings = config.stash[SETTINGS_KEY]
    folder = find_case(config, name, metafunc.definition.path, where)
    case, subtests = _load(config, folder, only, where)
    own = dataclasses.replace(case, id=function.__name__)
    _register_tags(config, case)
    marks = [getattr(pytest.mark, m) for m in (case.category, *case.tags)]
    limit = timeout_mark(config, own)  # pytest-timeout, when the session's is too short
    marks += [limit] if limit is not None else []
    metafunc.parametrize(
        "scylla_spec",
        [
            pytest.param(
                spec,
                id=spec.key.item_name.partition("[")[2][:-1],
                marks=[
                    getattr(pytest.mark, m)
                    for m in (sub.tier, *([spec.key.model] if model else []))
                ]
                + marks,
            )
            for sub in subtests
            for run in range(1, settings.runs + 1)
            for model in settings.models or ("",)
            for spec in (RunSpec(own, sub, run, model),)
        ],
    )


def _check_function(metafunc: pytest.Metafunc, where: str) -> None:
    """The marked function takes the agent's run, and its name can key runs (once)."""
    function = metafunc.function
    if "scylla_run" not in metafunc.fixturenames:  # scylla_verdict brings it too
        raise _problem(
            where,
            "the function does not take the agent's run; take "
            "`scylla_run` (and `scylla_verdict` for the judges' score)",
        )
    if not NAME.match(function.__name__):
        raise _problem(
            where, f"{function.__name__!r} cannot name a run (letters, digits, '_', '.', '-')"
        )
    owners = metafunc.config.stash.setdefault(OWNERS, {})
    owner = owners.setdefault(function.__name__, where.split("::")[0])
    if owner != where.split("::")[0]:
        raise _problem(
            where,
            f"an evaluation named {function.__name__!r} is already defined "
            f"in {owner}; names key the runs: rename one",
        )


def _load(
    config: pytest.Config, folder: Path, only: list[str] | None, where: str
) -> tuple[Case, list[Subtest]]:
    """The named case and its subtests selected (of the marker's tiers, if it names some)."""
    settings = config.stash[SETTINGS_KEY]
    try:
        case = load_case(folder / CASE_FILE, settings.rubrics_dir, tierset(config).names)
        if only:
            unknown = sorted(set(only) - set(tierset(config).names))
            if unknown:
                raise _problem(
                    where,
                    f"tiers {unknown} are not tier files; known: "
                    f"{', '.join(tierset(config).names)}",
                )
        subtests = select_subtests(config, case, folder / CASE_FILE, only)
    except SpecError as exc:
        raise pytest.Collector.CollectError(str(exc)) from None
    return case, subtests


def _register_tags(config: pytest.Config, case: Case) -> None:
    """The case's tags as pytest markers (each registered once)."""
    registered = config.stash.setdefault(TAGS_KEY, set())
    for tag in set(case.tags) - registered:
        config.addinivalue_line("markers", f"{tag}: pytest-scylla case tag")
        registered.add(tag)


def pytest_itemcollected(item: pytest.Item) -> None:
    """An evaluation's items carry their run (as YAML items do) and their source's hash."""
    callspec = getattr(item, "callspec", None)
    spec = callspec.params.get("scylla_spec") if callspec is not None else None
    if isinstance(spec, RunSpec) and item.get_closest_marker("scylla") is not None:
        item.stash[RUN_KEY] = spec
        function = getattr(item, "function", None)
        source = inspect.getsource(function) if function is not None else item.nodeid
        item.stash[EVALUATION_KEY] = hashlib.sha256(source.encode()).hexdigest()[:16]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An evaluation reused from disk is not run again: its stored outcome stands."""
    state = pyfuncitem.stash.get(STATE_KEY, None)
    if state is None or EVALUATION_KEY not in pyfuncitem.stash or not state.cached:
        return None
    state.report()
    if state.record.get("outcome") != Outcome.PASS:
        pytest.fail(verdict_table(state.record), pytrace=False)
    return True


class Body:
    """Around every run item's test body: the record is completed, written and reported."""

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        state = pyfuncitem.stash.get(STATE_KEY, None)
        if state is None:
            return (yield)
        evaluation = EVALUATION_KEY in pyfuncitem.stash and not state.cached
        began = time.monotonic()
        try:
            result = yield
        except (Exception, pytest.fail.Exception, pytest.skip.Exception) as exc:
            if evaluation:
                conclude(state, pyfuncitem, exc, time.monotonic() - began)
            _keep(state)
            raise
        except BaseException:  # interrupted: the record stays "not judged yet"
            _keep(state)
            raise
        if evaluation:
            conclude(state, pyfuncitem, None, time.monotonic() - began)
        _keep(state)
        if evaluation and state.record.get("outcome") != Outcome.PASS:
            pytest.fail(verdict_table(state.record), pytrace=False)
        return result


def _keep(state: ItemRun) -> None:
    state.write()
    state.report()


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


def conclude(
    state: ItemRun, item: pytest.Function, exc: BaseException | None, seconds: float
) -> None:
    """An evaluation's record from its body: the assert item, the outcome, the score."""
    rec = state.record
    name = item.originalname
    rec["evaluation"] = {"test": item.nodeid.split("[")[0], "case": state.spec.case.root.name}
    if exc is not None and not isinstance(exc, (AssertionError, pytest.fail.Exception)):
        rec.update(
            {
                "outcome": Outcome.INFRA_ERROR,
                "passed": False,
                "reason": f"the evaluation raised {type(exc).__name__}: {_message(exc)}",
            }
        )
        return
    ok = exc is None
    why = "" if exc is None else _message(exc)
    rec["checks"] = [
        *(c for c in rec.get("checks") or [] if c.get("kind") != "assert"),
        {
            "name": f"assert:{name}",
            "kind": "assert",
            "passed": ok,
            "exit_code": None,
            "seconds": round(seconds, 3),
            "stdout": "",
            "stderr": "",
            "reason": why,
        },
    ]
    rec["check_items"] = [
        *(c for c in rec.get("check_items") or [] if c.get("id") != "assert"),
        {
            "id": "assert",
            "category": "evaluation",
            "check": f"assert:{name}",
            "points": 1.0,
            "achieved": 1.0 if ok else 0.0,
            "required": True,
            "met": ok,
        },
    ]
    classified = rec.get("classified") or {}
    judged = rec.get("consensus") is not None or bool(rec.get("judges"))
    if classified.get("outcome"):  # timeout, budget_exceeded, agent_error: that is the outcome
        outcome, reason = classified["outcome"], classified.get("reason", "")
    elif not ok:
        outcome, reason = Outcome.FAIL, f"assert:{name} failed: {why}"
    elif judged:
        outcome, reason = rec.get("outcome") or Outcome.JUDGE_ERROR, rec.get("reason") or ""
    else:
        outcome, reason = Outcome.PASS, ""
    if not judged:  # the score is the body's
        score = 1.0 if ok and outcome == Outcome.PASS else 0.0
        rec.update(
            {"score": score, "impl_rate": score, "grade": state.spec.case.rubric.grade(score)}
        )
    rec.update({"outcome": outcome, "passed": outcome == Outcome.PASS, "reason": reason})
