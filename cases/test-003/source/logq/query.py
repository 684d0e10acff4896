"""Selecting and summarising records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime

from logq.records import Record, level_value


def select(
    records: Iterable[Record],
    *,
    min_level: str | None = None,
    components: Iterable[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    grep: str | None = None,
) -> Iterator[Record]:
    """Yield the records that pass every given criterion.

    ``components`` matches a component or any of its sub-components: ``db`` selects ``db`` and
    ``db.pool`` but not ``dbx``. ``since`` is inclusive and ``until`` exclusive. ``grep`` is a
    case-sensitive substring of the message.
    """
    threshold = level_value(min_level) if min_level else None
    wanted = tuple(components)
    for record in records:
        if threshold is not None and record.severity < threshold:
            continue
        if wanted and not any(_in_component(record.component, name) for name in wanted):
            continue
        if since is not None and record.timestamp < since:
            continue
        if until is not None and record.timestamp >= until:
            continue
        if grep is not None and grep not in record.message:
            continue
        yield record


def _in_component(component: str, name: str) -> bool:
    return component == name or component.startswith(name + ".")


def count_by(records: Iterable[Record], key: str) -> Counter[str]:
    """Count records by ``"level"`` or ``"component"``."""
    if key not in ("level", "component"):
        raise ValueError(f"cannot count by {key!r}")
    return Counter(getattr(record, key) for record in records)


def format_table(rows: Iterable[tuple[str, int]]) -> list[str]:
    """Lay out (name, number) rows as aligned text lines.

    Names are left-aligned and numbers right-aligned, separated by two spaces.
    """
    rows = list(rows)
    if not rows:
        return []
    name_width = max(len(name) for name, _ in rows)
    number_width = max(len(str(number)) for _, number in rows)
    return [f"{name:<{name_width}}  {number:>{number_width}}" for name, number in rows]
