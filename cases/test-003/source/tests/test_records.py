from datetime import datetime, timezone

import pytest

from logq.records import LogFormatError, level_value, parse_line, parse_timestamp, read_records


def test_parse_line():
    record = parse_line("2024-05-01T08:05:40Z WARNING db.pool: pool 75% busy\n")
    assert record is not None
    assert record.timestamp == datetime(2024, 5, 1, 8, 5, 40, tzinfo=timezone.utc)
    assert record.level == "WARNING"
    assert record.component == "db.pool"
    assert record.message == "pool 75% busy"
    assert record.raw == "2024-05-01T08:05:40Z WARNING db.pool: pool 75% busy"


@pytest.mark.parametrize(
    "line",
    [
        "Traceback (most recent call last):",
        "2024-05-01T08:05:40Z NOTICE db: unknown level",
        "yesterday INFO db: bad timestamp",
        "2024-05-01T08:05:40Z INFO no colon here",
    ],
)
def test_parse_line_rejects(line):
    assert parse_line(line) is None


def test_level_value_is_case_insensitive():
    assert level_value("warning") == level_value("WARNING") > level_value("info")


def test_level_value_rejects_unknown_levels():
    with pytest.raises(ValueError, match="unknown level"):
        level_value("loud")


def test_parse_timestamp_defaults_to_utc():
    assert parse_timestamp("2024-05-01") == datetime(2024, 5, 1, tzinfo=timezone.utc)


def test_read_records_skips_junk():
    lines = ["2024-05-01T08:00:00Z INFO api: up\n", "  at foo()\n", "\n"]
    assert [record.component for record in read_records(lines)] == ["api"]


def test_read_records_strict():
    with pytest.raises(LogFormatError, match="line 2"):
        list(read_records(["2024-05-01T08:00:00Z INFO api: up\n", "  at foo()\n"], strict=True))
