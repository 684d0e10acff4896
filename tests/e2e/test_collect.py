"""Collection as users run it: ids, selection by -k/-m/options, payload files never collected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import MINI_ITEMS, workers


def ids(result: pytest.RunResult) -> list[str]:
    return [line.split("::", 1)[1] for line in result.outlines if "test.yaml::" in line]


def test_collect_only_lists_every_run(mini: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("cases", "--co", "-q")
    result.assert_outcomes()
    assert ids(result) == MINI_ITEMS
    assert f"cases/alpha/test.yaml::{MINI_ITEMS[0]}" in result.outlines


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-k", "alpha and T5"], ["alpha[T5-01-r1]", "alpha[T5-02-r1]"]),
        (["-m", "T5"], ["alpha[T5-01-r1]", "alpha[T5-02-r1]"]),
        (["-m", "documentation"], [i for i in MINI_ITEMS if i.startswith("beta")]),
        (["-m", "tiny and T1"], ["alpha[T1-01-r1]", "alpha[T1-02-r1]"]),
        (["--scylla-tiers=T1,T5"], [i for i in MINI_ITEMS if "[T1" in i or "[T5" in i]),
        (
            ["--scylla-subtests=T0-02,01"],
            [
                "alpha[T0-01-r1]",
                "alpha[T0-02-r1]",
                "alpha[T1-01-r1]",
                "alpha[T5-01-r1]",
                "beta[T0-01-r1]",
                "beta[T0-02-r1]",
                "beta[T1-01-r1]",
            ],
        ),
        (["--scylla-subtests=02-rules"], ["alpha[T0-02-r1]", "beta[T0-02-r1]"]),
        (
            ["--scylla-tiers=T5", "--scylla-runs=2"],
            ["alpha[T5-01-r1]", "alpha[T5-01-r2]", "alpha[T5-02-r1]", "alpha[T5-02-r2]"],
        ),
    ],
)
def test_selection(
    mini: Path, pytester: pytest.Pytester, args: list[str], expected: list[str]
) -> None:
    result = pytester.runpytest("cases", "--co", "-q", *args)
    assert ids(result) == expected


def test_runs_option_multiplies_items(mini: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("cases", "--co", "-q", "--scylla-runs=3")
    got = ids(result)
    assert len(got) == 3 * len(MINI_ITEMS)
    assert got[:3] == ["alpha[T0-00-r1]", "alpha[T0-00-r2]", "alpha[T0-00-r3]"]


def test_ini_keys_mirror_options_and_cli_wins(mini: Path, pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider\nscylla_runs = 2\nscylla_tiers = T0\n"
    )
    assert len(ids(pytester.runpytest("cases", "--co", "-q"))) == 2 * 3 * 2
    overridden = ids(
        pytester.runpytest("cases", "--co", "-q", "--scylla-runs=1", "--scylla-tiers=T1")
    )
    assert overridden == ["alpha[T1-01-r1]", "alpha[T1-02-r1]", "beta[T1-01-r1]", "beta[T1-02-r1]"]


def test_a_single_case_file_can_be_named(mini: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("cases/beta/test.yaml", "--co", "-q")
    assert ids(result) == [i for i in MINI_ITEMS if i.startswith("beta")]


def test_payload_files_in_a_case_are_never_collected(mini: Path, pytester: pytest.Pytester) -> None:
    (mini / "cases/alpha/source/test_payload.py").write_text("def test_x():\n    assert 0\n")
    (mini / "cases/alpha/hidden").mkdir()
    (mini / "cases/alpha/hidden/test_hidden.py").write_text("def test_y():\n    assert 0\n")
    result = pytester.runpytest("cases", "--co", "-q")
    assert ids(result) == MINI_ITEMS
    assert "test_payload" not in result.stdout.str()


def test_items_point_at_the_case_yaml(mini: Path, pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems("cases/alpha/test.yaml")
    path, line, label = items[0].reportinfo()
    assert Path(path) == mini / "cases/alpha/test.yaml"
    assert line == 0  # `id:` is on the first line
    assert label.startswith("alpha[T0-00-r1]")
    assert {m.name for m in items[0].iter_markers()} >= {
        "T0",
        "bug-fixing",
        "python",
        "tiny",
        "scylla",
    }


@pytest.mark.parametrize("n", [0, 2])
def test_strict_markers_accept_tier_category_and_tag_marks(
    standin: Path, pytester: pytest.Pytester, n: int
) -> None:
    """Markers are registered on the controller and on every worker (stand-in runner)."""
    result = pytester.runpytest(
        "cases", "--strict-markers", "-W", "error", "-m", "T0 and bug-fixing and tiny", *workers(n)
    )
    counts = result.parseoutcomes()
    assert counts.get("passed", 0) + counts.get("failed", 0) == 3, counts  # alpha's T0 runs
    assert "errors" not in counts
    assert "warnings" not in counts


def test_bare_pytest_at_the_root_runs_no_evaluations(
    mini: Path, pytester: pytest.Pytester, edit: Callable[[str, str, str], None]
) -> None:
    pytester.makeini("[pytest]\ntestpaths = tests\naddopts = -p no:cacheprovider\n")
    (mini / "tests").mkdir()
    (mini / "tests/test_unit.py").write_text("def test_ok():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
