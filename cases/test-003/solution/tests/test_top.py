from pathlib import Path

import pytest

from logq.cli import main
from logq.query import rank_components
from logq.records import parse_line

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "app.log")


def records(*specs):
    return [
        parse_line(f"2024-05-01T08:00:00Z {level} {component}: message")
        for level, component in specs
    ]


def test_rank_components_orders_by_count_then_name():
    ranked = rank_components(
        records(("ERROR", "b"), ("ERROR", "a"), ("ERROR", "c"), ("ERROR", "c")), limit=5
    )
    assert ranked == [("c", 2), ("a", 1), ("b", 1)]


def test_rank_components_limit_and_depth():
    specs = [("ERROR", "db.pool"), ("ERROR", "db"), ("ERROR", "api.v2"), ("ERROR", "cache")]
    assert rank_components(records(*specs), limit=2, depth=1) == [("db", 2), ("api", 1)]


def test_top_defaults(capsys):
    assert main(["top", EXAMPLE]) == 0
    assert capsys.readouterr().out == (
        "db.pool      3\ncache        2\napi          1\ndb           1\nworker.mail  1\n"
    )


def test_top_with_options(capsys):
    assert main(["top", "--depth", "1", "--level", "error", "-n", "2", EXAMPLE]) == 0
    assert capsys.readouterr().out == "db   2\napi  1\n"


def test_top_prints_nothing_without_matches(capsys):
    assert main(["top", "--since", "2030-01-01", EXAMPLE]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv", [["-n", "0"], ["--depth", "0"], ["--level", "LOUD"]])
def test_top_usage_errors(argv):
    with pytest.raises(SystemExit) as exit_info:
        main(["top", *argv, EXAMPLE])
    assert exit_info.value.code == 2
