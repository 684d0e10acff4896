"""Hidden acceptance tests for `logq top`, run through the command line after the agent."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LOG = """\
2024-06-01T10:00:00Z INFO web: started
2024-06-01T10:00:05Z WARNING web.auth: slow login 900 ms
2024-06-01T10:01:00Z ERROR web.auth: token check failed
2024-06-01T10:02:00Z ERROR payments: card declined by gateway
2024-06-01T10:02:30Z CRITICAL payments.ledger: write failed
  File "ledger.py", line 9
2024-06-01T10:03:00Z WARNING search: index stale
2024-06-01T10:04:00Z WARNING search: index stale
2024-06-01T10:05:00Z ERROR web.auth: token check failed
2024-06-01T10:06:00Z DEBUG payments: heartbeat
2024-06-01T10:07:00Z WARNING queue: backlog 1200
2024-06-01T10:08:00Z ERROR queue: consumer crashed
2024-06-01T10:09:00Z WARNING alerts: disk 85%
2024-06-01T10:10:00Z INFO search: reindex done
"""


def logq(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "logq", *args],
        check=False,
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "service.log"
    path.write_text(LOG, encoding="utf-8")
    return str(path)


def lines(*rows):
    return "".join(f"{row}\n" for row in rows)


# --- the new command ---------------------------------------------------------------------


def test_top_defaults(log):
    result = logq("top", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "web.auth  3", "queue     2", "search    2", "alerts    1", "payments  1"
    )


@pytest.mark.parametrize("flag", ["-n", "--lines"])
def test_top_limit(log, flag):
    result = logq("top", flag, "2", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines("web.auth  3", "queue     2")


def test_top_limit_larger_than_the_number_of_components(log):
    result = logq("top", "-n", "50", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "web.auth         3",
        "queue            2",
        "search           2",
        "alerts           1",
        "payments         1",
        "payments.ledger  1",
    )


def test_top_level(log):
    result = logq("top", "--level", "error", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "web.auth         2", "payments         1", "payments.ledger  1", "queue            1"
    )


def test_top_level_critical(log):
    result = logq("top", "--level", "CRITICAL", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines("payments.ledger  1")


def test_top_depth(log):
    result = logq("top", "--depth", "1", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "web       3", "payments  2", "queue     2", "search    2", "alerts    1"
    )


def test_top_time_window(log):
    result = logq("top", "--since", "2024-06-01T10:05", "--until", "2024-06-01T10:09", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines("queue     2", "web.auth  1")


def test_top_reads_stdin():
    result = logq("top", "-n", "1", "-", stdin=LOG)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines("web.auth  3")


def test_top_sums_over_files(log):
    result = logq("top", "-n", "2", log, log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines("web.auth  6", "queue     4")


def test_top_without_matches_prints_nothing(log):
    result = logq("top", "--since", "2024-06-02", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args", [["-n", "0"], ["-n", "two"], ["--depth", "0"], ["--level", "LOUD"], ["--since", "x"]]
)
def test_top_usage_errors(log, args):
    result = logq("top", *args, log)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr


def test_top_strict(log):
    result = logq("top", "--strict", log)
    assert result.returncode == 1
    assert "line 6" in result.stderr


def test_top_missing_file(tmp_path):
    result = logq("top", str(tmp_path / "missing.log"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr


def test_top_is_listed_in_help():
    result = logq("--help")
    assert result.returncode == 0
    assert "top" in result.stdout
    assert logq("top", "--help").returncode == 0


# --- existing behaviour is unchanged -----------------------------------------------------


def test_count_unchanged(log):
    result = logq("count", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "DEBUG     1", "INFO      2", "WARNING   5", "ERROR     4", "CRITICAL  1"
    )


def test_count_by_component_unchanged(log):
    result = logq("count", "--by", "component", "--level", "error", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "payments         1", "payments.ledger  1", "queue            1", "web.auth         2"
    )


def test_filter_unchanged(log):
    result = logq("filter", "--component", "web", "--level", "warning", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "2024-06-01T10:00:05Z WARNING web.auth: slow login 900 ms",
        "2024-06-01T10:01:00Z ERROR web.auth: token check failed",
        "2024-06-01T10:05:00Z ERROR web.auth: token check failed",
    )
    result = logq("filter", "--grep", "stale", "--until", "2024-06-01T10:04", log)
    assert result.stdout == lines("2024-06-01T10:03:00Z WARNING search: index stale")


def test_tail_unchanged(log):
    result = logq("tail", "-n", "2", log)
    assert result.returncode == 0, result.stderr
    assert result.stdout == lines(
        "2024-06-01T10:09:00Z WARNING alerts: disk 85%",
        "2024-06-01T10:10:00Z INFO search: reindex done",
    )
    assert logq("tail", "-n", "0", log).returncode == 2


def test_count_strict_unchanged(log):
    result = logq("count", "--strict", log)
    assert result.returncode == 1
    assert "line 6" in result.stderr
