"""Exporters that turn a list of records (mappings) into a table in some text format.

Every exporter takes the same arguments:

``rows``
    a list or tuple of mappings, one per table row.
``columns``
    the column names in order. By default, every key that occurs in any row, in order of first
    appearance.
``missing``
    the text for a value that is absent or None.
``float_digits``
    how many decimals to show for floats.

Booleans are written as yes/no (CSV: true/false, so that the file stays machine readable, and
CSV keeps full float precision unless ``float_digits`` is given).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def to_csv(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    *,
    missing: str = "",
    float_digits: int | None = None,
) -> str:
    """Render rows as CSV with a header line; lines end with a newline."""
    if not isinstance(rows, (list, tuple)):
        raise TypeError("rows must be a list or tuple of mappings")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"row {index} is not a mapping but {type(row).__name__}")
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    else:
        columns = list(columns)
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
    if float_digits is not None and float_digits < 0:
        raise ValueError("float_digits must not be negative")
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if value is None:
                cells.append(missing)
            elif isinstance(value, bool):
                cells.append("true" if value else "false")
            elif isinstance(value, float):
                if float_digits is None:
                    cells.append(repr(value))
                else:
                    cells.append(f"{value:.{float_digits}f}")
            else:
                cells.append(str(value))
        body.append(cells)

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([str(column) for column in columns])
    writer.writerows(body)
    return buffer.getvalue()


def to_markdown(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    *,
    missing: str = "",
    float_digits: int = 2,
) -> str:
    """Render rows as a GitHub-flavoured Markdown table.

    Pipes are escaped and line breaks become ``<br>`` so that every row stays on one line.
    """
    if not isinstance(rows, (list, tuple)):
        raise TypeError("rows must be a list or tuple of mappings")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"row {index} is not a mapping but {type(row).__name__}")
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    else:
        columns = list(columns)
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
    if float_digits < 0:
        raise ValueError("float_digits must not be negative")
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if value is None:
                cells.append(missing)
            elif isinstance(value, bool):
                cells.append("yes" if value else "no")
            elif isinstance(value, float):
                cells.append(f"{value:.{float_digits}f}")
            else:
                cells.append(str(value))
        body.append(cells)

    def escape(text: str) -> str:
        return text.replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>")

    if not columns:
        return ""
    lines = ["| " + " | ".join(escape(str(column)) for column in columns) + " |"]
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    for cells in body:
        lines.append("| " + " | ".join(escape(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def to_html(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    *,
    missing: str = "",
    float_digits: int = 2,
) -> str:
    """Render rows as an HTML ``<table>`` with a ``<thead>`` and a ``<tbody>``."""
    if not isinstance(rows, (list, tuple)):
        raise TypeError("rows must be a list or tuple of mappings")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"row {index} is not a mapping but {type(row).__name__}")
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    else:
        columns = list(columns)
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
    if float_digits < 0:
        raise ValueError("float_digits must not be negative")
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if value is None:
                cells.append(missing)
            elif isinstance(value, bool):
                cells.append("yes" if value else "no")
            elif isinstance(value, float):
                cells.append(f"{value:.{float_digits}f}")
            else:
                cells.append(str(value))
        body.append(cells)

    out = ["<table>", "  <thead>", "    <tr>"]
    for column in columns:
        out.append(f"      <th>{html.escape(str(column))}</th>")
    out += ["    </tr>", "  </thead>", "  <tbody>"]
    for cells in body:
        out.append("    <tr>")
        for cell in cells:
            out.append(f"      <td>{html.escape(cell)}</td>")
        out.append("    </tr>")
    out += ["  </tbody>", "</table>"]
    return "\n".join(out) + "\n"


def to_text(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    *,
    missing: str = "",
    float_digits: int = 2,
) -> str:
    """Render rows as a plain-text table with aligned columns and a dashed rule.

    Columns are separated by two spaces; trailing spaces are removed from every line.
    """
    if not isinstance(rows, (list, tuple)):
        raise TypeError("rows must be a list or tuple of mappings")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"row {index} is not a mapping but {type(row).__name__}")
    if columns is None:
        columns = []
        for row in rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
    else:
        columns = list(columns)
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
    if float_digits < 0:
        raise ValueError("float_digits must not be negative")
    body = []
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if value is None:
                cells.append(missing)
            elif isinstance(value, bool):
                cells.append("yes" if value else "no")
            elif isinstance(value, float):
                cells.append(f"{value:.{float_digits}f}")
            else:
                cells.append(str(value))
        body.append(cells)

    if not columns:
        return ""
    header = [str(column) for column in columns]
    widths = [len(name) for name in header]
    for cells in body:
        widths = [max(width, len(cell)) for width, cell in zip(widths, cells)]
    lines = ["  ".join(name.ljust(width) for name, width in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * width for width in widths))
    for cells in body:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip())
    return "\n".join(lines) + "\n"
