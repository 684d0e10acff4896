"""What the checks' results put in a run's record, and the run the agent forfeited by
replacing its workspace: the record's fields for both, decided from the pinned workspace
(`run.pinned`) and the record alone."""

from __future__ import annotations

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.judging import judge_run
from pytest_scylla.run import checks, integrity, pinned

REPLACED = "the agent replaced its workspace folder"


def r_prog(milestones: tuple[str, ...], results: list[checks.CheckResult]) -> float | None:
    """The paper's fine-grained progress rate: the share of the case's ordered milestones
    reached, counting from the first up to the first one whose check failed. None without
    milestones."""
    if not milestones:
        return None
    passed = {r.name: r.passed for r in results}
    reached = next(
        (i for i, name in enumerate(milestones) if not passed.get(name)), len(milestones)
    )
    return reached / len(milestones)


def check_fields(spec: RunSpec, results: list[checks.CheckResult]) -> RunRecord:
    """The record's fields of the checks' results."""
    rows = judge_run.Evidence("", "", [], results)
    return {
        "checks": [r.to_json() for r in results],
        "check_items": rows.check_rows(spec.case),
        "check_score": rows.check_score(spec.case),
        "r_prog": r_prog(spec.case.milestones, results),
    }


def replaced(pin: pinned.Pin | None, rec: RunRecord) -> bool:
    """Whether the run's private folder or workspace is no longer the one held from before the
    agent (`pinned`); the first time, an integrity finding says what was found."""
    assert pin is not None
    why = pin.check()
    if why and not any(f["kind"] == pinned.KIND for f in rec["integrity"]):
        finding = integrity.Finding(
            pinned.KIND,
            pin.name,
            f"{why}; the run fails, and nothing more of its workspace is read, restored, "
            "checked or shown to the judges",
        )
        rec["integrity"].append(finding.to_json())
    return bool(why)


def forfeit(spec: RunSpec, rec: RunRecord, results: list[checks.CheckResult]) -> None:
    """A replaced workspace: the run fails, scored 0 with no judge asked (nothing the judges
    could be shown is the agent's work for certain); the checks that ran before it stand in
    the record. An infra_error found before stays one (the run does not count)."""
    rec.update(check_fields(spec, results))
    if rec["classified"]["outcome"] == Outcome.INFRA_ERROR:
        return
    rec["classified"] = {"outcome": "fail", "reason": REPLACED}
    rec.update({"score": 0.0, "impl_rate": 0.0, "grade": spec.case.rubric.grade(0.0)})
