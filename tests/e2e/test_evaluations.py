"""Evaluations in Python (`@pytest.mark.scylla`) and the public fixtures: their records, their
failures, resume, the errors of a badly marked test, and reading the agent's files safely.
The runner seam is the stand-in (fast, no CLI) except where the workspace itself is the point;
the scaffolded example runs through the real CLI in tests/e2e/test_init.py.

Here the sessions; the in-process tests are in `tests/unit/run/test_evaluations.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..conftest import workers

EVALS = """import pytest


@pytest.mark.scylla(case="alpha", tiers=["T0"])
def test_alpha_passes(scylla_run):
    with open("bodies.txt", "a") as log:
        log.write(scylla_run.key + "\\n")
    assert scylla_run.final_message in ("solution", "wrong", "noop")
    assert scylla_run.cost_usd is not None


@pytest.mark.scylla(case="alpha", tiers=["T1"])
def test_alpha_fails(scylla_run, scylla_verdict):
    assert scylla_verdict.score is not None
    assert scylla_run.num_turns > 99, "too few turns"
"""


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def test_an_evaluation_runs_beside_yaml_cases_and_its_asserts_are_check_items(
    standin: Path, pytester: pytest.Pytester
) -> None:
    (standin / "cases" / "test_alpha_evals.py").write_text(EVALS)
    out = standin / "out"
    done = pytester.runpytest(
        "cases", "-k", "T0-01 or T1-01", *workers(2), f"--scylla-out={out}", "-p", "no:randomly"
    )
    done.stdout.fnmatch_lines(
        [
            "*AssertionError: too few turns",
            "FAILED cases/test_alpha_evals.py::test_alpha_fails[[]T1-01-r1[]]*",
        ]
    )
    recs = records(out)
    assert {
        "alpha-T0-01-r1",
        "beta-T0-01-r1",
        "test_alpha_passes-T0-01-r1",
        "test_alpha_fails-T1-01-r1",
    } <= set(recs)
    passing, failing = recs["test_alpha_passes-T0-01-r1"], recs["test_alpha_fails-T1-01-r1"]
    assert (passing["case"], passing["tier"]) == ("test_alpha_passes", "T0")
    assert passing["evaluation"] == {
        "test": "cases/test_alpha_evals.py::test_alpha_passes",
        "case": "alpha",
    }
    # no verdict asked: no panel, the body's score
    assert (passing["outcome"], passing["score"], passing.get("judges", [])) == ("pass", 1.0, [])
    assert passing["checks"][-1] | {"seconds": 0} == {
        "name": "assert:test_alpha_passes",
        "kind": "assert",
        "passed": True,
        "exit_code": None,
        "seconds": 0,
        "stdout": "",
        "stderr": "",
        "reason": "",
    }
    assert failing["outcome"] == "fail"
    assert failing["judges"]  # the verdict was asked
    assert failing["reason"].startswith("assert:test_alpha_fails failed: too few turns")
    assert failing["check_items"][-1]["met"] is False
    assert (standin / "bodies.txt").read_text().split() == ["test_alpha_passes-T0-01-r1"]
    # both kinds in the exports, counted as cases of their own
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {"alpha", "beta", "test_alpha_passes", "test_alpha_fails"} == {r["case"] for r in rows}
    assert "test_alpha_passes" in (out / "runs.csv").read_text()

    # a second session reuses the stored runs: the body is not run again, outcomes stand
    again = pytester.runpytest(
        "cases", "-k", "T0-01 or T1-01", *workers(0), f"--scylla-out={out}", "-v"
    )
    again.stdout.fnmatch_lines(
        [
            "*test_alpha_passes[[]T0-01-r1[]] PASSED (cached)*",
            "*test_alpha_fails[[]T1-01-r1[]] FAILED (cached)*",
        ]
    )
    assert (standin / "bodies.txt").read_text().split() == ["test_alpha_passes-T0-01-r1"]

    # an edited evaluation scores runs differently: a conflict, until re-scored
    (standin / "cases" / "test_alpha_evals.py").write_text(
        EVALS.replace('"too few turns"', '"still too few"')
    )
    conflict = pytester.runpytest(
        "cases", "-k", "test_alpha_fails and T1-01", *workers(0), f"--scylla-out={out}"
    )
    conflict.stdout.fnmatch_lines(["*rubric or the judge panel changed*--scylla-rejudge*"])
    rescored = pytester.runpytest(
        "cases",
        "-k",
        "test_alpha_fails and T1-01",
        *workers(0),
        f"--scylla-out={out}",
        "--scylla-rejudge",
    )
    rescored.assert_outcomes(failed=1)
    rec = records(out)["test_alpha_fails-T1-01-r1"]
    assert "still too few" in rec["reason"]
    assert len(rec["rejudged"]) == 1
    assert [c["name"] for c in rec["checks"]].count("assert:test_alpha_fails") == 1


def test_an_evaluation_that_breaks_is_a_harness_fault_not_a_failed_agent(
    standin: Path, pytester: pytest.Pytester
) -> None:
    (standin / "cases" / "test_broken.py").write_text(
        "import pytest\n\n\n@pytest.mark.scylla(case='alpha', tiers=['T0'])\n"
        "def test_broken(scylla_run):\n    return scylla_run.files[0].nope\n"
    )
    out = standin / "out"
    done = pytester.runpytest(
        "cases/test_broken.py", "-k", "T0-01", *workers(0), f"--scylla-out={out}"
    )
    done.assert_outcomes(failed=1)
    rec = records(out)["test_broken-T0-01-r1"]
    assert rec["outcome"] == "infra_error"
    assert rec["reason"].startswith("the evaluation raised IndexError")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "@pytest.mark.scylla(case='nope')\ndef test_x(scylla_run): pass",
            "test_x: @pytest.mark.scylla: no case 'nope': expected nope/test.yaml",
        ),
        (
            "@pytest.mark.scylla(case='alpha', tiers=['T9'])\ndef test_x(scylla_run): pass",
            "test_x: @pytest.mark.scylla: tiers ['T9'] are not tier files; known: T0, T1, T5",
        ),
        (
            "@pytest.mark.scylla(case='alpha', tiers='T0')\ndef test_x(scylla_run): pass",
            "tiers='T0': expected a list of tier names",
        ),
        (
            "@pytest.mark.scylla(case='alpha')\ndef test_x(tmp_path): pass",
            "the function does not take the agent's run; take `scylla_run`",
        ),
        (
            "@pytest.mark.scylla(case='alpha')\ndef test_x(scylla_workspace): pass",
            "the function does not take the agent's run; take `scylla_run`",
        ),
        (
            "@pytest.mark.scylla(kase='alpha')\ndef test_x(scylla_run): pass",
            "unknown arguments ['kase']; expected case=",
        ),
    ],
)
def test_a_badly_marked_evaluation_is_one_clear_collection_error(
    standin: Path, pytester: pytest.Pytester, source: str, message: str
) -> None:
    (standin / "cases" / "test_bad.py").write_text(f"import pytest\n\n\n{source}\n")
    done = pytester.runpytest("cases", "--co", "-q", "--scylla-oracle")
    assert message in done.stdout.str()
    done.stdout.fnmatch_lines(["*1 error*"])
    assert "Traceback" not in done.stdout.str()
    assert "alpha[T0-00-r1]" in done.stdout.str()  # the YAML cases still collect


def test_evaluation_names_key_runs_so_a_duplicate_is_refused(
    standin: Path, pytester: pytest.Pytester
) -> None:
    body = (
        "import pytest\n\n\n@pytest.mark.scylla(case='alpha')\ndef test_same(scylla_run):\n"
        "    pass\n"
    )
    (standin / "cases" / "test_one.py").write_text(body)
    (standin / "cases" / "test_two.py").write_text(body)
    done = pytester.runpytest("cases", "--co", "-q", "--scylla-oracle")
    done.stdout.fnmatch_lines(
        [
            "*test_two.py::test_same: @pytest.mark.scylla: an evaluation "
            "named 'test_same' is already defined in cases/test_one.py*"
        ]
    )


def test_an_evaluation_outside_the_case_roots_says_where_it_must_live(
    standin: Path, pytester: pytest.Pytester
) -> None:
    (standin / "evals").mkdir()
    (standin / "evals" / "test_out.py").write_text(
        "import pytest\n\n\n@pytest.mark.scylla(case='alpha')\ndef test_out(scylla_run):\n"
        "    pass\n"
    )
    done = pytester.runpytest("evals", "--co", "-q", "-p", "no:randomly")
    done.stdout.fnmatch_lines(
        [
            "*evals/test_out.py::test_out: @pytest.mark.scylla: this "
            "evaluation lies outside the case roots (scylla_cases = cases)*"
        ]
    )
    # with a --scylla-* option the session evaluates, and the case is found by name
    done = pytester.runpytest("evals", "--co", "-q", "--scylla-oracle")
    done.stdout.fnmatch_lines(["evals/test_out.py::test_out[[]T0-00-r1[]]"])


def test_the_fixtures_outside_an_evaluation_say_what_is_missing(
    standin: Path, pytester: pytest.Pytester
) -> None:
    (standin / "cases" / "test_plain.py").write_text("def test_plain(scylla_run):\n    pass\n")
    done = pytester.runpytest("cases/test_plain.py", "--scylla-oracle", *workers(0))
    done.assert_outcomes(errors=1)
    done.stdout.fnmatch_lines(
        [
            "*test_plain: the scylla fixtures belong to evaluation runs; "
            "mark the test @pytest.mark.scylla(case=<case folder>)"
        ]
    )
