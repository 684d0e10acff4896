from datetime import datetime, timezone

import pytest

from logq.query import count_by, format_table, select
from logq.records import parse_line

LINES = [
    "2024-05-01T08:00:00Z INFO api: started",
    "2024-05-01T08:01:00Z WARNING db.pool: busy",
    "2024-05-01T08:02:00Z ERROR db: down",
    "2024-05-01T08:03:00Z ERROR dbx: unrelated",
    "2024-05-01T08:04:00Z DEBUG api: tick",
]
RECORDS = [parse_line(line) for line in LINES]


def components(records):
    return [record.component for record in records]


def test_select_min_level():
    assert components(select(RECORDS, min_level="WARNING")) == ["db.pool", "db", "dbx"]


def test_select_component_includes_children_only():
    assert components(select(RECORDS, components=["db"])) == ["db.pool", "db"]


def test_select_time_window_is_half_open():
    since = datetime(2024, 5, 1, 8, 1, tzinfo=timezone.utc)
    until = datetime(2024, 5, 1, 8, 3, tzinfo=timezone.utc)
    assert components(select(RECORDS, since=since, until=until)) == ["db.pool", "db"]


def test_select_grep():
    assert components(select(RECORDS, grep="down")) == ["db"]


def test_count_by():
    assert count_by(RECORDS, "level") == {"INFO": 1, "WARNING": 1, "ERROR": 2, "DEBUG": 1}
    assert count_by(RECORDS, "component")["api"] == 2
    with pytest.raises(ValueError):
        count_by(RECORDS, "message")


def test_format_table():
    assert format_table([("api", 12), ("db.pool", 3)]) == ["api      12", "db.pool   3"]
    assert format_table([]) == []
