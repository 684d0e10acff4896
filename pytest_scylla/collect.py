"""Collection: a case folder yields its `test.yaml`, which yields one item per
tier-subtest x run, e.g. `cases/test-001/test.yaml::test-001[T5-02-r3]`.

Collection parses and validates only. Problems become one `CollectError` per case, reading
`path:line: what is wrong and what is expected`; other cases still collect.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .settings import SETTINGS_KEY, tierset
from .spec import Case, load_case
from .tiers import Subtest
from .yamlmarks import Problem, SpecError

CASE_FILE = "test.yaml"


@dataclass(frozen=True)
class RunSpec:
    """What one item runs: a case under a composed subtest, as run number `run`."""

    case: Case
    subtest: Subtest
    run: int

    @property
    def key(self) -> str:
        return f"{self.case.id}[{self.subtest.ref}-r{self.run}]"


RUN_KEY = pytest.StashKey[RunSpec]()
TAGS_KEY = pytest.StashKey[set[str]]()


def is_case_dir(path: Path) -> bool:
    return (path / CASE_FILE).is_file()


class CaseDirectory(pytest.Directory):
    """A case folder: only its `test.yaml` is collected, never the payload files in it."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        yield CaseFile.from_parent(self, path=self.path / CASE_FILE)


class CaseFile(pytest.File):
    """A case's `test.yaml`: expands to runs for every selected tier, subtest and run index."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        settings = self.config.stash[SETTINGS_KEY]
        tiers = tierset(self.config)
        try:
            case = load_case(self.path, settings.rubrics_dir, known_tiers=tiers.names)
            subtests = self._subtests(case)
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        marks = ["scylla", case.category, *case.tags]  # scylla and categories: see configure
        registered = self.config.stash.setdefault(TAGS_KEY, set())
        for tag in set(case.tags) - registered:
            self.config.addinivalue_line("markers", f"{tag}: pytest-scylla case tag")
            registered.add(tag)
        for sub in subtests:
            for run in range(1, settings.runs + 1):
                spec = RunSpec(case=case, subtest=sub, run=run)
                item = RunItem.from_parent(self, name=spec.key, callobj=run_case)
                item.stash[RUN_KEY] = spec
                for mark in (sub.tier, *marks):
                    item.add_marker(mark)
                yield item

    def _subtests(self, case: Case) -> list[Subtest]:
        """The composed subtests of the selected tiers; a broken tier is this case's error."""
        settings = self.config.stash[SETTINGS_KEY]
        tiers = tierset(self.config)
        if not tiers.names:
            raise SpecError([Problem(self.path, None, f"no tier files found in "
                                     f"{settings.tiers_dir}; expected T0.yaml ... there, or "
                                     "point --scylla-tiers-dir at them")])
        wanted = [t for t in (case.tiers or tiers.names) if settings.selects_tier(t)]
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


class RunItem(pytest.Function):
    """One run of a case; its location points at the case's YAML."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        spec = self.stash[RUN_KEY]
        return self.path, spec.case.line - 1, f"{spec.key} ({spec.subtest.name})"


def run_case(request: pytest.FixtureRequest) -> None:
    """Run one case under one subtest. The agent runner is not built yet: resolve, then skip."""
    spec = request.node.stash[RUN_KEY]
    prompt = spec.case.prompt.read_text(encoding="utf-8")
    assert prompt.strip(), f"{spec.case.prompt} is empty"
    assert spec.case.rubric.items, f"{spec.case.rubric.path} has no items"
    pytest.skip(f"agent runner not implemented (resolved {spec.key}: subtest "
                f"{spec.subtest.tier}-{spec.subtest.name}, rubric {spec.case.rubric.name}, "
                f"{len(spec.case.checks)} checks)")


def collect_directory(path: Path, parent: pytest.Collector) -> Any:
    return CaseDirectory.from_parent(parent, path=path) if is_case_dir(path) else None
