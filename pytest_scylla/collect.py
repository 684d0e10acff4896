"""Collection: a case folder yields its `test.yaml`, which yields one item per
tier-subtest x run, e.g. `cases/test-001/test.yaml::test-001[T5-02-r3]`.

Collection parses and validates only. Problems become one `CollectError` per case, reading
`path:line: what is wrong and what is expected`; other cases still collect.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.formats.spec import Case, load_case
from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.formats.yamlmarks import Problem, SpecError
from pytest_scylla.settings import SETTINGS_KEY, tierset

if TYPE_CHECKING:
    from pytest_scylla.formats.provenance import Conditions
    from pytest_scylla.run.runtime import Runtime

CASE_FILE = "test.yaml"


RUN_KEY = pytest.StashKey[RunSpec]()
TAGS_KEY = pytest.StashKey[set[str]]()
RECORD_KEY = pytest.StashKey[RunRecord]()
# the process's Runtime, or the setup error that prevented it (one message for every run)
RUNTIME_KEY = pytest.StashKey["Runtime | Exception"]()


JUNIT_PROPERTIES = ("tier", "subtest", "outcome", "score", "grade", "cost_usd")


def case_roots(config: pytest.Config) -> tuple[Path, ...]:
    """The folders cases are collected from (`scylla_cases`)."""
    base = config.inipath.parent if config.inipath else config.rootpath
    return tuple((base / str(p)).resolve() for p in config.getini("scylla_cases"))


def wanted(config: pytest.Config) -> bool:
    """Whether this session evaluates anything: a --scylla-* option on the command line, or a
    path it collects from that is, holds or lies in a case root. Otherwise the plugin stays
    out of the way: no header, probes, folders or summary."""
    if any(str(arg).startswith("--scylla") for arg in config.invocation_params.args):
        return True
    roots = [r for r in case_roots(config) if r.is_dir()]
    for arg in config.args:
        target = (config.invocation_params.dir / str(arg).split("::")[0]).resolve()
        if any(target == r or r in target.parents or target in r.parents for r in roots):
            return True
    return False

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
                item = RunItem.from_parent(self, name=spec.key.item_name, callobj=run_case)
                _as_parsed(item)
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


def _as_parsed(item: pytest.Item) -> None:
    """pytest 9.2 keeps node ids structured (names, then params in brackets). A run item's
    name carries its params without a callspec, so its id would never equal the same id read
    back from pytest's cache (`--lf`, `--ff`): make it the parsed form of its own string."""
    node_id = getattr(item, "_id", None)
    if node_id is not None and hasattr(node_id, "parse"):
        item._id = type(node_id).parse(str(node_id))


class RunItem(pytest.Function):
    """One run of a case; its location points at the case's YAML.

    The run happens during setup, so a harness failure (`infra_error`) is a pytest ERROR and a
    model failure is a FAIL of the call phase."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        spec = self.stash[RUN_KEY]
        return self.path, spec.case.line - 1, f"{spec.key.item_name} ({spec.subtest.name})"

    def setup(self) -> None:
        super().setup()
        from pytest_scylla.operations.resume import perform

        spec = self.stash[RUN_KEY]
        rt = runtime(self)
        rec = perform(spec, rt, self._execute, self._stop, self._say)
        rec = json.loads(json.dumps(rec))  # JSON-native, as it travels from xdist workers
        self.stash[RECORD_KEY] = rec
        self.user_properties.append(("scylla_run", rec))
        for name in JUNIT_PROPERTIES:  # one by one too, for CI dashboards reading JUnit XML
            self.user_properties.append((f"scylla_{name}", rec.get(name)))
        if rec["outcome"] in ("infra_error", "judge_error"):
            pytest.fail(f"{rec['outcome']}: {rec['reason']}\nrun folder: {rt.run_dir(spec)}",
                        pytrace=False)

    def _execute(self, spec: RunSpec, rt: Runtime, cond: Conditions) -> RunRecord:
        rec: RunRecord = self.config.hook.pytest_scylla_execute(spec=spec, runtime=rt,
                                                                conditions=cond)
        return rec

    def _stop(self, why: str) -> None:
        """Stop the session after this item (a conflict that every further run would hit)."""
        self.session.shouldstop = why

    def _say(self, line: str) -> None:
        """A line on the terminal, when this process has one (not on xdist workers)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or hasattr(self.config, "workerinput"):
            return
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            reporter.ensure_newline()
            reporter.write_line(line, yellow=True)


def runtime(item: pytest.Item) -> Runtime:
    """The process's runtime (gateway, sandbox, CLI, baseline), made on first use. A setup
    problem (no CLI, no credential, no sandbox) fails every run with one clear message."""
    from pytest_scylla.run.runtime import SETUP_ERRORS

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


def verdict_table(rec: RunRecord) -> str:
    """The failure text of a judged non-pass: outcome and reason, each judge by category, the
    consensus against the threshold, the weakest items with a judge's reason, failed checks."""
    lines = [f"{rec['outcome']}: {rec['reason']}".rstrip(": ")]
    judges = [j for j in rec.get("judges", []) if j.get("valid")]
    if judges:
        names = [c["name"] for c in judges[0]["categories"]]
        lines.append("  " + f"{'judge':<22}" + "".join(f"{n[:14]:>15}" for n in names)
                     + f"{'score':>8}")
        for j in judges:
            cells = "".join(f"{'n/a' if c['score'] is None else format(c['score'], '.2f'):>15}"
                            for c in j["categories"])
            lines.append(f"  {j['judge_model'][:22]:<22}{cells}{j['score']:>8.2f}")
    c = rec.get("consensus")
    if c:
        lines.append(f"  consensus {c['score']:.2f} grade {c['grade']} (pass threshold "
                     f"{rec.get('pass_threshold', 0.6):.2f}), {c['valid_judges']} valid judges")
    weakest: dict[str, tuple[float, str, str, str]] = {}
    for j in judges:
        for item_id, v in (j.get("verdict") or {}).get("items", {}).items():
            if v["achieved"] != "N/A":
                entry = (float(v["achieved"]), item_id, j["judge_model"], v["reason"])
                weakest[item_id] = min(weakest.get(item_id, entry), entry)
    for achieved, item_id, model, why in sorted(weakest.values())[:3]:
        lines.append(f"  weak {item_id} {achieved:g} ({model}): {why[:120]}")
    for check in rec.get("checks", []):
        if not check["passed"]:
            lines.append(f"  FAIL check {check['name']:<20} {check['reason']}".rstrip())
    for finding in rec.get("integrity", []):
        lines.append(f"  TAMPERING {finding['kind']}: {finding['path']} ({finding['detail']})")
    lines.append(f"  cost ${rec.get('cost_usd') or 0:.4f} agent ({rec.get('cost_source')}) + "
                 f"${rec.get('judge_cost_usd') or 0:.4f} judges, {rec.get('num_turns')} turns, "
                 f"agent {rec['timings'].get('agent_s')}s"
                 f"{'  [SIMULATED MODEL]' if rec.get('simulated') else ''}")
    return "\n".join(lines)


def run_case(request: pytest.FixtureRequest) -> None:
    """The call phase: pass when the run passed, else fail with its verdict table."""
    rec = request.node.stash[RECORD_KEY]
    if rec["outcome"] != "pass":
        pytest.fail(verdict_table(rec), pytrace=False)


def collect_directory(path: Path, parent: pytest.Collector) -> Any:
    return CaseDirectory.from_parent(parent, path=path) if is_case_dir(path) else None
