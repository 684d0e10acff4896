"""One run, start to finish: workspace, overlay, gateway route, sandboxed CLI, checks, judges,
record. Every outcome, including infrastructure failures and interruptions, ends in a written
`run.json`: nothing measured is dropped.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_scylla.core import pricing, record
from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.formats.provenance import Conditions
from pytest_scylla.judging import judge_run
from pytest_scylla.operations.run_steps import (
    SETUP_FAILURES,
    RunState,
    identity,
    inspect_work,
    prepare,
    run_agent,
    timestamp,
)
from pytest_scylla.operations.runtime import Runtime
from pytest_scylla.run.outcome import costs, settle


def _ttfts(log: Path) -> list[float]:
    """The time to first byte of each answered model call in a run's gateway log."""
    found = []
    with contextlib.suppress(OSError):
        for line in log.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                call = json.loads(line)
                if call.get("status") == 200 and isinstance(call.get("ttft_s"), (int, float)):
                    found.append(float(call["ttft_s"]))
    return found


class Run(RunState):
    """One run in progress, whose phases the item's fixtures drive: `provision` (the workspace,
    `scylla_workspace`), `act` (the agent and the checks, `scylla_run`), `judge` (the panel, in
    the test body), `finish` (the record) and `release` (the private folders). A phase that
    fails ends the run as an `infra_error`; an interruption marks it unfinished; every path
    writes `run.json`, so nothing measured is dropped. After `act` the record on disk says "not
    judged yet", so a session stopped before the panel keeps the agent's work for resume."""

    @contextlib.contextmanager
    def _phase(self) -> Iterator[None]:
        """A setup failure ends the run as infra_error; an interruption marks it unfinished;
        either way the record is written."""
        try:
            yield
        except SETUP_FAILURES as exc:
            self.void = True
            self.record.update(
                {
                    "outcome": Outcome.INFRA_ERROR,
                    "passed": False,
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            )
            self.finish()
        except BaseException as exc:
            self.void = True
            self.record.update(
                {
                    "outcome": Outcome.INFRA_ERROR,
                    "passed": False,
                    "reason": f"interrupted ({type(exc).__name__}) before the run finished",
                }
            )
            self.finish()
            raise

    def provision(self) -> None:
        """A fresh run folder, the workspace at the pinned commit, the overlay, the route."""
        if self.run_dir.exists():
            shutil.rmtree(self.run_dir)
        self.run_dir.mkdir(parents=True)
        self.private, self.harness = claim_private(), claim_private()
        (self.private / "tmp").mkdir()
        self.record = identity(self)
        with self._phase():
            self.rt.sandbox.assign(self.private, self.rt.image(self.spec))
            self._ws, self._ov = prepare(self, self.record)

    def act(self) -> None:
        """The agent in its sandbox, then what it left: diff, files, integrity, checks, and
        the outcome classified before judging. Writes the not-yet-judged record."""
        if self.void:
            return
        assert self._ws is not None
        assert self._ov is not None
        with self._phase():
            finished, stderr_tail = run_agent(self, self._ov, self.record)
            inspect_work(self, self.record, self._ws, finished, stderr_tail)
            self._measure()
            classified = self.record["classified"]
            outcome, reason = classified["outcome"], classified["reason"]
            if outcome == Outcome.INFRA_ERROR or self.evidence is None:  # void, or nothing to judge
                self.void = outcome == Outcome.INFRA_ERROR  # (`forfeit`: the fail stands unjudged)
                settle(self.record, self.spec.case, outcome, reason)
            else:
                self.record.update(
                    {"outcome": Outcome.JUDGE_ERROR, "passed": False, "reason": NOT_JUDGED}
                )
            self.finish()

    def rescore(self, stored: RunRecord, evidence: judge_run.Evidence) -> None:
        """Make this a stored run to be judged again (no workspace, no agent)."""
        self.record, self.evidence, self.rescoring = stored, evidence, True

    def judge(self) -> None:
        """The panel's verdict and the run's outcome (a void run is not worth a judge)."""
        if self.void or self.evidence is None:
            return
        classified = self.record.get("classified") or {"outcome": None, "reason": ""}
        try:
            self.record.update(
                judge_run.judge(
                    self.spec.case, self.spec.key.folder, self.run_dir, self.rt, self.evidence
                )
            )
        except BaseException:  # the agent's work stands: resume asks the judges again
            self.record.update(
                {"outcome": Outcome.JUDGE_ERROR, "passed": False, "reason": NOT_JUDGED}
            )
            self.finish()
            raise
        settle(self.record, self.spec.case, classified["outcome"], classified["reason"])

    def _measure(self) -> None:
        """What the gateway measured of the agent, and its cost."""
        route = self.route
        if route is None:
            return
        self.rt.gateway.close(route.key)
        ttfts = _ttfts(self.run_dir / "model_calls.jsonl")
        if ttfts:  # time to the first byte of each answered call, as the gateway saw it
            self.timings["ttft_s"] = round(statistics.fmean(ttfts), 4)
            self.timings["ttft_first_s"] = ttfts[0]
        self.record.update(
            {
                "usage": route.usage,
                "tokens": pricing.token_totals(route.usage),
                "api_calls": route.calls,
                "refused_calls": route.refused,
                "infra_events": route.infra,
                "budget": {"max_cost_usd": route.max_cost_usd, "exceeded": route.budget_exceeded},
                "models_refused": sorted(route.models_refused),
                "ablation": route.ablation or {"checked": False},
            }
        )
        self.record.update(costs(route, self.result))

    def finish(self) -> None:
        """Write the record as it stands (timings and, once, the gateway's measures)."""
        if not self.record:
            return
        if self.rescoring:  # the agent's timings stand
            record.write_json(self.run_dir / record.RECORD_FILE, self.record)
            return
        if "usage" not in self.record:
            self._measure()
        self.timings["total_s"] = round(time.monotonic() - self.began, 3)
        self.timings.update(self.cpu.timings())
        self.record["timings"] = dict(self.timings)
        self.record["finished_at"] = timestamp()
        record.write_json(self.run_dir / record.RECORD_FILE, self.record)

    def release(self) -> None:
        """The workspace kept (--scylla-keep-workspaces; not one the agent replaced) or
        removed; the private folders go."""
        ws = self.workspace
        if ws is not None and self.rt.settings.keep_workspaces:
            shutil.move(str(ws), str(self.run_dir / "workspace"))
        if self.pin is not None:
            self.pin.close()
            self.pin = None
        if self.private is not None:
            self.rt.sandbox.close(self.private)
        for folder in (self.private, self.harness):
            if folder is not None:
                release_private(folder)
        self.private = self.harness = None


NOT_JUDGED = "not judged yet: the session stopped before the panel was asked"


def execute(spec: RunSpec, rt: Runtime, cond: Conditions) -> Run:
    """The built-in run of an item (not started: the fixtures drive its phases)."""
    return Run(spec, rt, cond)


def run_through(run: Run) -> RunRecord:
    """Every phase of a run in one go, outside pytest (benchmarks, tools): its record."""
    try:
        run.provision()
        run.act()
        run.judge()
        if not run.void:
            run.finish()
    finally:
        run.release()
    return run.record
