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


def _prepare(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None,
    *,
    missing: str,
    float_digits: int | None,
    true_false: tuple[str, str] = ("yes", "no"),
) -> tuple[list[str], list[list[str]]]:
    """Validate the arguments shared by all exporters and turn every value into text.

    Returns the column names and, per row, the cell texts in column order. With
    ``float_digits=None`` floats keep their full precision (``repr``).
    """
    if not isinstance(rows, (list, tuple)):
        raise TypeError("rows must be a list or tuple of mappings")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"row {index} is not a mapping but {type(row).__name__}")
    if columns is None:
        # dict.fromkeys keeps the order of first appearance and drops repeats.
        columns = list(dict.fromkeys(key for row in rows for key in row))
    else:
        columns = list(columns)
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
    if float_digits is not None and float_digits < 0:
        raise ValueError("float_digits must not be negative")

    def cell(value: Any) -> str:
        if value is None:
            return missing
        if isinstance(value, bool):
            return true_false[0] if value else true_false[1]
        if isinstance(value, float):
            return repr(value) if float_digits is None else f"{value:.{float_digits}f}"
        return str(value)

    body = [[cell(row.get(column)) for column in columns] for row in rows]
    return columns, body


def to_csv(
    rows: Sequence[Mapping[str, Any]],
    columns: Iterable[str] | None = None,
    *,
    missing: str = "",
    float_digits: int | None = None,
) -> str:
    """Render rows as CSV with a header line; lines end with a newline."""
    columns, body = _prepare(
        rows, columns, missing=missing, float_digits=float_digits, true_false=("true", "false")
    )

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
    columns, body = _prepare(rows, columns, missing=missing, float_digits=float_digits)

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
    columns, body = _prepare(rows, columns, missing=missing, float_digits=float_digits)

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
    columns, body = _prepare(rows, columns, missing=missing, float_digits=float_digits)

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
