"""The public fixtures: one run of an item, in the phases pytest gives it.

- `scylla_spec`: what the item runs (case, composed subtest, run number).
- `scylla_workspace`: the run's workspace, provisioned (source at its commit, the tier overlay)
  in its sandbox; setup decides first whether the run happens at all (resume, budget, pause).
- `scylla_run`: the agent run, done in fixture setup (a harness failure is a pytest ERROR):
  outcome, diff, files, transcript, usage, cost, checks, ablation (`AgentRun`).
- `scylla_verdict`: the judge panel's verdict, asked when the test body first uses it.

YAML items are built on these (`collect.run_case`); so is a Python evaluation marked
`@pytest.mark.scylla(case=..., tiers=[...])`, whose asserts become check items of its record
(`evaluation.py`). The record is written after the agent ("not judged yet") and again when the
test body ends; the lock, the ledger and the private folders are released at teardown.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import REPORT_PROPERTY, STOP_PROPERTY, RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.terminal import safe
from pytest_scylla.run.sandbox import SandboxError
from pytest_scylla.run.view import AgentRun, Verdict, Workspace
from pytest_scylla.session.collect import JUNIT_PROPERTIES, RUN_KEY, runtime

if TYPE_CHECKING:
    from pytest_scylla.formats.provenance import Conditions
    from pytest_scylla.operations.runner import Run
    from pytest_scylla.operations.runtime import Runtime
    from pytest_scylla.results.decisions import Stop

STATE_KEY = pytest.StashKey["ItemRun"]()
EVALUATION_KEY = pytest.StashKey[str]()  # a Python evaluation's source hash (evaluation.py)


class ItemRun:
    """One item's run across its fixtures: the resume decision under the run's lock, the run's
    phases, and the record reported once."""

    def __init__(self, item: pytest.Item, spec: RunSpec) -> None:
        self.item, self.spec = item, spec
        self.rt: Runtime = runtime(item)
        self.cond: Conditions = self.rt.conditions(spec, item.stash.get(EVALUATION_KEY, None))
        self.run: Run | None = None
        self.record: RunRecord = {}
        self.cached = False
        self.judged = False  # the panel has given its verdict (or none is due)
        self.reported = False
        self.spent = 0.0  # dollars spent by this session on this run
        self._locks = contextlib.ExitStack()

    # -- setup ------------------------------------------------------------------------------
    def begin(self) -> None:
        """Decide, under the run's lock (held until teardown), what this item does."""
        from pytest_scylla.operations import resume

        rt, s = self.rt, self.rt.settings
        self._locks.enter_context(resume.run_lock(rt.out, self.spec.key.folder))
        decision = resume.decide(
            rt.run_dir(self.spec),
            self.cond.config_hash,
            self.cond.judge_hash,
            self.cond.inputs,
            fresh=s.fresh,
            rejudge=s.rejudge,
            conditions=self.cond.config,
        )
        if decision.action == "conflict":
            self.item.session.shouldstop = (
                "pytest-scylla: a stored run conflicts with the current conditions"
            )
            pytest.fail(decision.reason, pytrace=False)
        if decision.action == "skip":
            pytest.skip(decision.reason)
        if decision.action == "cached":
            assert decision.record is not None
            self.record = cast(RunRecord, {**decision.record, "cached": True})
            self.cached = self.judged = True
            return
        stopped = self._decided()
        if stopped is not None:  # by design: marked so, whatever the reason's wording
            self.item.user_properties.append((STOP_PROPERTY, stopped.kind))
            pytest.skip(stopped.reason)
        if rt.ledger is not None:
            resume.wait_out_pause(rt, _say(self.item))
            why = rt.ledger.over_budget(s.budget_usd)
            if why:
                pytest.skip(why)
        self.run = self.item.config.hook.pytest_scylla_execute(
            spec=self.spec, runtime=rt, conditions=self.cond
        )
        assert self.run is not None
        if decision.action == "rejudge":  # the stored run's evidence read back, no agent
            assert decision.record is not None
            evidence = resume.stored_evidence(rt.run_dir(self.spec), decision.record)
            self.record = resume.for_rejudge(decision.record, self.spec.case, evidence, self.cond)
            self.run.rescore(self.record, evidence)
            self.record["rejudged_now"] = True
            return
        self.run.provision()
        self.record = self.run.record
        self._fail_if_void()

    def _decided(self) -> Stop | None:
        """--scylla-stop=decided: why this run is no longer needed, or None."""
        if self.rt.settings.stop != "decided":  # the decisions (and numpy) stay unimported
            return None
        from pytest_scylla.operations import stopping

        family = self.item.config.stash.get(stopping.FAMILY_KEY, None)
        return None if family is None else stopping.skip_reason(family, self.rt.out, self.spec.key)

    def act(self) -> None:
        """The agent and the checks (for a run that happens in this session)."""
        if self.run is None or self.run.rescoring:
            return
        self.run.act()
        self.record = self.run.record
        self.spent += float(self.record.get("cost_usd") or 0)
        self._fail_if_void()

    def _fail_if_void(self) -> None:
        """A harness failure: the record is written; the item is a pytest ERROR."""
        if self.run is not None and self.run.void:
            self.judged = True
            self.report()
            pytest.fail(
                f"infra_error: {self.record['reason']}\nrun folder: {self.rt.run_dir(self.spec)}",
                pytrace=False,
            )

    # -- the test body ------------------------------------------------------------------------
    def judge(self) -> RunRecord:
        """The panel's verdict and the outcome it gives (once; a stored run's as stored)."""
        if self.judged:
            return self.record
        self.judged = True
        assert self.run is not None
        self.run.judge()
        self.record = self.run.record
        self.spent += float(self.record.get("judge_cost_usd") or 0)
        return self.record

    def write(self) -> None:
        """The record to the run folder as it stands (with the timings `finish` adds)."""
        if self.run is None or self.cached:
            return
        now = self.record.get("rejudged_now")
        self.run.record = {
            k: v
            for k, v in self.record.items()  # type: ignore[assignment]
            if k != "rejudged_now"
        }
        self.run.finish()
        self.record = self.run.record if now is None else {**self.run.record, "rejudged_now": now}

    def report(self) -> None:
        """Attach the record to the item's reports, once (JSON-native: it crosses from xdist
        workers), with its main fields as JUnit properties."""
        if self.reported or not self.record:
            return
        self.reported = True
        rec = json.loads(json.dumps(self.record))
        self.item.user_properties.append((REPORT_PROPERTY, rec))
        for name in JUNIT_PROPERTIES:
            self.item.user_properties.append((f"scylla_{name}", rec.get(name)))

    # -- teardown -----------------------------------------------------------------------------
    def close(self) -> None:
        """Record what stands (a body that never ran leaves "not judged yet" on disk), count
        the spend, release the workspace and the lock."""
        try:
            if self.record and not self.reported:
                self.report()
            if self.rt.ledger is not None and not self.cached and self.record:
                self.rt.ledger.add(self.spent, self.record.get("outcome") == Outcome.PASS)
        finally:
            try:
                if self.run is not None:
                    self.run.release()
            finally:
                self._locks.close()


def _say(item: pytest.Item) -> Any:
    def say(line: str) -> None:
        """A line on the terminal, when this process has one (not on xdist workers)."""
        config = item.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        capture = config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or hasattr(config, "workerinput"):
            return
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            reporter.ensure_newline()
            reporter.write_line(safe(line), yellow=True)

    return say


# -- the fixtures ------------------------------------------------------------------------------


@pytest.fixture
def scylla_spec(request: pytest.FixtureRequest) -> RunSpec:
    """What this item runs: its case, composed tier subtest and run number."""
    if RUN_KEY not in request.node.stash:
        pytest.fail(
            f"{request.node.nodeid}: the scylla fixtures belong to evaluation runs; mark "
            "the test @pytest.mark.scylla(case=<case folder>)",
            pytrace=False,
        )
    spec: RunSpec = request.node.stash[RUN_KEY]
    return spec


@pytest.fixture
def scylla_workspace(request: pytest.FixtureRequest, scylla_spec: RunSpec) -> Iterator[Workspace]:
    """The run's workspace, provisioned in its sandbox (or the stored run, when a resumed
    session reuses or re-scores it)."""
    item = request.node
    why = runtime(item).unrunnable(scylla_spec)
    if why:
        pytest.skip(why)
    try:
        state = ItemRun(item, scylla_spec)
    except SandboxError as exc:  # the run's image is missing, or has no agent CLI
        pytest.fail(f"infra_error: {exc}", pytrace=False)
    item.stash[STATE_KEY] = state
    try:
        state.begin()
        run = state.run
        yield Workspace(
            scylla_spec,
            run.workspace if run else None,
            state.rt.run_dir(scylla_spec),
            state.rt.sandbox.name,
        )
    finally:
        state.close()


@pytest.fixture
def scylla_run(request: pytest.FixtureRequest, scylla_workspace: Workspace) -> AgentRun:
    """The agent run in that workspace (done here, in setup), with the checks on its work."""
    state = request.node.stash[STATE_KEY]
    state.act()
    return AgentRun(state, scylla_workspace)


@pytest.fixture
def scylla_verdict(request: pytest.FixtureRequest, scylla_run: AgentRun) -> Verdict:
    """The judge panel's verdict on the run: asked when the test body first uses it."""
    return Verdict(request.node.stash[STATE_KEY].judge)
