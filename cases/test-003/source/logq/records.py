"""Parsing log lines into records.

A log line looks like::

    2024-05-01T12:00:03Z WARNING db.pool: connection pool 80% full

that is: an ISO 8601 timestamp, a level, a component name followed by a colon, and the message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_LINE_RE = re.compile(
    r"(?P<timestamp>\S+)\s+(?P<level>[A-Z]+)\s+(?P<component>[\w.-]+):\s?(?P<message>.*)"
)


class LogFormatError(ValueError):
    """A line is not a valid log record (raised in strict mode)."""


@dataclass(frozen=True)
class Record:
    """One parsed log line."""

    timestamp: datetime
    level: str
    component: str
    message: str
    raw: str

    @property
    def severity(self) -> int:
        return LEVELS.index(self.level)


def level_value(name: str) -> int:
    """Return the rank of a level name (case-insensitive); higher is more severe."""
    try:
        return LEVELS.index(name.upper())
    except ValueError:
        raise ValueError(f"unknown level {name!r}; expected one of {', '.join(LEVELS)}") from None


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 date or date-time; naive values are taken to be UTC."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value


def parse_line(line: str) -> Record | None:
    """Parse one line; return None when it is not a log record."""
    raw = line.rstrip("\n")
    match = _LINE_RE.fullmatch(raw)
    if match is None or match["level"] not in LEVELS:
        return None
    try:
        timestamp = parse_timestamp(match["timestamp"])
    except ValueError:
        return None
    return Record(timestamp, match["level"], match["component"], match["message"], raw)


def read_records(lines: Iterable[str], *, strict: bool = False) -> Iterator[Record]:
    """Yield the records in ``lines``.

    Blank lines are ignored. Other lines that are not records (continuation lines of a stack
    trace, for example) are skipped, or raise LogFormatError when ``strict`` is true.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = parse_line(line)
        if record is not None:
            yield record
        elif strict:
            raise LogFormatError(f"line {number}: not a log record: {line.rstrip()!r}")
