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
