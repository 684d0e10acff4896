from pathlib import Path

import pytest

from logq.cli import main

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "app.log")


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_count_by_level(capsys):
    code, out, _ = run(capsys, "count", EXAMPLE)
    assert code == 0
    assert out == "DEBUG     1\nINFO      5\nWARNING   4\nERROR     3\nCRITICAL  1\n"


def test_count_by_component(capsys):
    code, out, _ = run(capsys, "count", "--by", "component", "--level", "warning", EXAMPLE)
    assert code == 0
    assert out == "api          1\ncache        2\ndb           1\ndb.pool      3\nworker.mail  1\n"


def test_filter(capsys):
    code, out, _ = run(capsys, "filter", "--component", "worker", "--grep", "SMTP", EXAMPLE)
    assert code == 0
    assert out == "2024-05-01T08:12:00Z ERROR worker.mail: SMTP connection refused\n"


def test_tail(capsys):
    code, out, _ = run(capsys, "tail", "-n", "2", EXAMPLE)
    assert code == 0
    assert out.splitlines() == [
        "2024-05-01T08:12:00Z ERROR worker.mail: SMTP connection refused",
        "2024-05-01T08:12:30Z INFO worker.mail: retry scheduled in 60 s",
    ]


def test_strict_mode_reports_the_line(capsys):
    code, _, err = run(capsys, "count", "--strict", EXAMPLE)
    assert code == 1
    assert "line 7" in err


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "count", str(tmp_path / "missing.log"))
    assert code == 2
    assert "cannot read" in err


@pytest.mark.parametrize("argv", [["tail", "-n", "0", EXAMPLE], ["count", "--level", "x", EXAMPLE]])
def test_usage_errors(argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
