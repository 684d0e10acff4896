"""The files `scylla report` and `scylla import` read, checked as they are read: run records
(`runs.jsonl`, `runs/<key>/run.json`), CSV exports (the original implementation's or ours, also
as a spreadsheet saves them again) and the original's JSON files. What cannot be read as meant
is refused with one `ReportInputError`, `path[:line]: what is wrong; what is expected`, never
read as a wrong number."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pytest_scylla.core.outcomes import OUTCOMES
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import EXAMPLE, folder_problem
from pytest_scylla.formats.yamlmarks import SpecError, check_value

RECORD = "a run record as pytest-scylla writes it"
NOT_APPLICABLE = ("", "N/A")  # the original's not-applicable numbers; an empty cell: missing
# 0,75 or 1,5E-05 as a spreadsheet in a comma locale writes them
DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+(?:[eE][+-]?\d+)?")
LONGEST = 200  # characters of a bad value quoted in a message


class ReportInputError(ValueError):
    """A folder or file `scylla report` or `scylla import` cannot read; the message is one
    `path[:line]: ...` line."""


def _short(text: str) -> str:
    return text if len(text) <= LONGEST else text[:LONGEST] + "..."


def read_text(path: Path) -> str:
    """A UTF-8 file's text; the byte-order mark a spreadsheet writes first is dropped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return decode(data, path)


def decode(data: bytes, path: Path) -> str:
    """The text of the bytes read from `path` (see `read_text`)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReportInputError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x}); "
            'expected UTF-8 (a spreadsheet\'s "CSV UTF-8")'
        ) from None


def read_json(path: Path, expected: str, text: str | None = None) -> Any:
    """A JSON file's value (its `text`, when read already); `expected` says what the file
    should hold."""
    try:
        return json.loads(read_text(path) if text is None else text)
    except json.JSONDecodeError as exc:
        raise ReportInputError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg} at column "
            f"{exc.colno}); expected {expected}"
        ) from None


def read_object(path: Path, expected: str) -> dict[str, Any]:
    """A JSON file holding one object; `expected` says what the file should hold."""
    value = read_json(path, expected)
    if not isinstance(value, dict):
        raise ReportInputError(f"{path}: {_what(value)}, not a JSON object; expected {expected}")
    return value


def _what(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"the value {_short(json.dumps(value))}"


def check(value: Any, schema: str, where: str, expected: str) -> None:
    """Refuse `value` unless it fits the named schema (formats/schemas/<schema>.schema.json);
    `where` is the `path[:line]` it came from."""
    try:
        check_value(value, schema, Path(where))
    except SpecError as exc:
        problem = _short(exc.problems[0].message)  # the first, in a fixed order
        hint = "" if "; expected" in problem else f"; expected {expected}"
        raise ReportInputError(f"{where}: {problem}{hint}") from None


def run_record(value: Any, where: str) -> RunRecord:
    """`value` if it is a run record the reports can read (record.schema.json); `where` is the
    `path[:line]` it came from."""
    if not isinstance(value, dict):
        raise ReportInputError(
            f"{where}: {_what(value)}, not a JSON object; expected {RECORD} "
            "(an object with run_key, tier and outcome)"
        )
    check(value, "record", where, RECORD)
    if problem := folder_problem(value["run_key"]):
        raise ReportInputError(
            f"{where}: run_key {_short(repr(value['run_key']))} {problem}; refused: a run key "
            f"is {EXAMPLE}, its folder one inside runs/"
        )
    if value["outcome"] not in OUTCOMES:
        raise ReportInputError(
            f"{where}: outcome is {_short(repr(value['outcome']))}; expected "
            f"one of: {', '.join(OUTCOMES)}"
        )
    return cast(RunRecord, value)


@dataclass(frozen=True)
class Layout:
    """What a CSV export holds: the columns it must have, the columns whose cells are numbers
    or True/False, those whose cells must not be empty and those with a few allowed values."""

    required: tuple[str, ...]
    numbers: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    filled: tuple[str, ...] = ()
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def read_csv(
    path: Path, layout: Layout, notes: list[str] | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) for each row of a CSV export with a header (line 1), read as `layout` says:
    not-applicable and empty cells as None, True/False cells as "True"/"False", numbers as
    written except a decimal comma read as a point. The separator is the one the header uses
    (`,`, or `;` and a tab as spreadsheets in some locales save); a decimal comma is read only
    in a file not separated by commas, where it cannot be a separator; such a file is named in
    `notes`, so that a reader knows how it was read."""
    text = read_text(path)
    header_line = text.split("\n", 1)[0]
    separator = max((",", ";", "\t"), key=header_line.count)  # a comma when none is used
    if separator != "," and notes is not None:
        notes.append(
            f"{path}: not comma-separated: read with {separator!r} as the separator "
            "and decimal commas as points (as a spreadsheet in a comma-decimal locale "
            "saves it); save it comma-separated if that is not what it holds"
        )
    reader = csv.reader(io.StringIO(text, newline=None), delimiter=separator)
    try:
        header = [name.strip() for name in next(reader, [])]
    except csv.Error as exc:
        raise ReportInputError(f"{path}:1: {exc}; expected a CSV header") from None
    if not any(header):  # no header at all: an export of no rows (no judges, say)
        return []
    missing = [name for name in layout.required if name not in header]
    if missing:
        raise ReportInputError(
            f"{path}:1: no column {', '.join(map(repr, missing))}; "
            f"{path.name} needs {', '.join(layout.required)}"
        )
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise ReportInputError(f"{path}:1: column {twice[0]!r} is in the header twice; keep one")
    out: list[tuple[int, dict[str, Any]]] = []
    while True:
        try:
            cells = next(reader, None)
        except csv.Error as exc:
            raise ReportInputError(f"{path}:{reader.line_num}: {exc}; expected CSV text") from None
        if cells is None:
            return out
        if not any(cell.strip() for cell in cells):  # a blank line, or one of separators only
            continue
        line = reader.line_num
        if len(cells) != len(header):
            raise ReportInputError(
                f"{path}:{line}: {len(cells)} cells, the header has {len(header)}; expected "
                f"one cell per column (a cell holding {separator!r} is quoted)"
            )
        row = {
            name: _cell(path, line, name, cell, layout, separator != ",")
            for name, cell in zip(header, cells, strict=True)
        }
        out.append((line, row))


def _cell(
    path: Path, line: int, column: str, cell: str, layout: Layout, decimal_comma: bool
) -> str | None:
    """One cell read as its column says (see `read_csv`)."""
    where = f"{path}:{line}: column {column!r} is {_short(repr(cell))}"
    if cell.strip().upper() in NOT_APPLICABLE:
        if column in layout.filled:
            raise ReportInputError(
                f"{path}:{line}: column {column!r} is empty; expected "
                f"{'True or False' if column in layout.flags else 'a value'}"
            )
        return None
    if column in layout.flags:
        if cell.strip().lower() not in ("true", "false"):
            raise ReportInputError(f"{where}; expected True or False")
        return "True" if cell.strip().lower() == "true" else "False"
    if column in layout.numbers:
        text = cell.strip()
        if DECIMAL_COMMA.fullmatch(text):
            if not decimal_comma:
                raise ReportInputError(
                    f"{where}, a decimal comma in a comma-separated file; "
                    "expected a decimal point (or the file saved with ; "
                    "separators)"
                )
            cell = text.replace(",", ".")
        try:
            finite = math.isfinite(float(cell))
        except ValueError:
            finite = False
        if not finite:
            raise ReportInputError(f"{where}; expected a number, N/A or an empty cell")
    if column in layout.choices and cell not in layout.choices[column]:
        raise ReportInputError(
            f"{where}; expected one of: {', '.join(layout.choices[column])}, or an empty cell"
        )
    return cell
