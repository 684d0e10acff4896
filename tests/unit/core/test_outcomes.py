"""The typed outcomes are their strings wherever a record goes: JSON, CSV, comparisons."""

from __future__ import annotations

import csv
import io
import json

from pytest_scylla.core.outcomes import COUNTED, OUTCOMES, Outcome
from pytest_scylla.results import metrics


def test_an_outcome_is_written_as_its_string() -> None:
    typed = {"outcome": Outcome.INFRA_ERROR, "passed": False}
    assert json.dumps(typed) == json.dumps({"outcome": "infra_error", "passed": False})
    out = io.StringIO()
    csv.writer(out).writerow([Outcome.PASS, Outcome.JUDGE_ERROR])
    assert out.getvalue() == "pass,judge_error\r\n"
    assert f"{Outcome.FAIL}" == str(Outcome.FAIL) == "fail"
    assert "pass" in COUNTED
    assert "infra_error" not in COUNTED
    assert json.loads('"timeout"') == Outcome.TIMEOUT


def test_the_metrics_count_the_same_outcomes() -> None:
    assert tuple(metrics.COUNTED) == COUNTED
    assert tuple(metrics.OUTCOMES) == OUTCOMES


def _crosses(record: dict[str, object]) -> None:
    """Serialise a pytest report carrying `record` as an xdist worker sends it (pytest's
    report-to-JSON, then execnet's own serialiser)."""
    from _pytest.reports import TestReport, _report_to_json
    from execnet.gateway_base import dumps

    report = TestReport("c::r", ("c", 0, "r"), {}, "passed", None, "call", user_properties=[])
    report.scylla_record = record  # type: ignore[attr-defined]  # as core.record.bound_report
    dumps(_report_to_json(report))


def test_every_outcome_crosses_from_an_xdist_worker() -> None:
    """A run's record rides its report from the worker to the controller: every outcome name
    must be something execnet serialises."""
    import typing

    from pytest_scylla.core.outcomes import OutcomeName

    assert set(OUTCOMES) == set(typing.get_args(OutcomeName))
    for outcome in OUTCOMES:
        _crosses({"outcome": outcome, "passed": outcome == Outcome.PASS})


def test_an_enum_member_would_not_cross() -> None:
    """The control: an enum member (even a `StrEnum`'s, which JSON writes as its string) stops
    the worker's report at execnet."""
    from enum import StrEnum

    import pytest
    from execnet.gateway_base import DumpError

    class Typed(StrEnum):
        PASS = "pass"

    with pytest.raises(DumpError, match="can't serialize"):
        _crosses({"outcome": Typed.PASS})
