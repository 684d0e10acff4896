"""YAML loading that remembers line numbers, and JSON-Schema validation that reports them.

Every problem in a case, tier or rubric file becomes a `Problem` (file, line, message); a file's
problems travel together in one `SpecError`, rendered as `path:line: message` lines.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import pickle
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_scylla.formats import fastcheck

Where = tuple[str | int, ...]

# libyaml's parser when PyYAML was built with it (its wheels are): the same nodes, marks and
# errors as the pure-Python one, parsed about ten times faster
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_REPORTED = 10


def display(path: Path) -> str:
    """A path as users should read it: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int | None
    message: str

    def __str__(self) -> str:
        where = display(self.path) if self.line is None else f"{display(self.path)}:{self.line}"
        return f"{where}: {self.message}"


class SpecError(Exception):
    """One or more problems with the files that define a case, tier or rubric."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sorted(set(problems), key=lambda p: (str(p.path), p.line or 0, p.message))
        super().__init__(str(self))

    def __str__(self) -> str:
        shown = [str(p) for p in self.problems[:MAX_REPORTED]]
        if len(self.problems) > MAX_REPORTED:
            shown.append(f"... and {len(self.problems) - MAX_REPORTED} more problems")
        return "\n".join(shown)

    @classmethod
    def one(cls, path: Path, line: int | None, message: str) -> SpecError:
        return cls([Problem(path, line, message)])


# control characters a text file of the project may not hold: all but tab, newline and carriage
# return (a terminal colour code pasted from a shell is the usual one: ESC, U+001B)
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def read_text(path: Path) -> str:
    """A case's or a tier's text file: UTF-8 without control characters, its line endings
    read as "\\n" (a file saved on Windows, CRLF, or an old Mac, CR, reads as any other).
    Anything else is a SpecError naming the line and the column (OSError is the caller's)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # an editor's byte-order mark is harmless
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        column = len(data[data.rfind(b"\n", 0, start) + 1 : start].decode("utf-8", "replace")) + 1
        raise SpecError.one(
            path,
            line,
            f"column {column}: byte 0x{data[start]:02x} is not UTF-8; save the file as UTF-8",
        ) from None
    found = CONTROL.search(text)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
        code = ord(found.group())
        hint = " (a terminal colour code?)" if code == 0x1B else ""
        raise SpecError.one(
            path, line, f"column {column}: control character U+{code:04X}{hint}; remove it"
        )
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class Document:
    """Parsed YAML data plus the 1-based line of every mapping key and sequence item."""

    path: Path
    data: Any
    lines: Mapping[Where, int]

    def line(self, where: Iterable[str | int] = ()) -> int:
        """The line of `where`, or of its nearest ancestor that has one (the file's first line)."""
        key = tuple(where)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return 1

    def problem(self, where: Iterable[str | int], message: str) -> Problem:
        return Problem(self.path, self.line(where), message)


def load_yaml(path: Path) -> Document:
    """Parse one YAML document, refusing duplicate keys, and note where everything is."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise SpecError.one(path, None, "file not found") from None
    except OSError as exc:
        raise SpecError.one(path, None, f"cannot read the file: {exc}") from None
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SpecError.one(path, 1, "the file is empty; expected a YAML mapping")
        lines: dict[Where, int] = {}
        data = _build(loader, node, (), lines, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(str(s) for s in (exc.context, exc.problem) if s)
        raise SpecError.one(path, line, f"YAML syntax error: {what}") from None
    except yaml.YAMLError as exc:
        raise SpecError.one(path, None, f"YAML error: {exc}") from None
    finally:
        loader.dispose()
    return Document(path, data, lines)


def _build(
    loader: yaml.SafeLoader, node: yaml.Node, where: Where, lines: dict[Where, int], path: Path
) -> Any:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves `<<` merge keys
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise SpecError.one(path, line, f"key {key!r} must be a string")
            if key in out:
                raise SpecError.one(
                    path,
                    line,
                    f"duplicate key '{key}' (first at line "
                    f"{lines[(*where, key)]}); keep one of them",
                )
            lines[(*where, key)] = line
            out[key] = _build(loader, value_node, (*where, key), lines, path)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*where, i)] = item.start_mark.line + 1
            items.append(_build(loader, item, (*where, i), lines, path))
        return items
    return loader.construct_object(node)


@cache
def schema(name: str) -> dict[str, Any]:
    """A schema shipped in `pytest_scylla/formats/schemas/<name>.schema.json`."""
    text = (
        resources.files("pytest_scylla.formats.schemas").joinpath(f"{name}.schema.json").read_text()
    )
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _infinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


@cache
def _validator(name: str) -> Any:
    """The schema's validator, its numbers finite: YAML's .inf and .nan are not amounts."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "number",
        lambda _checker, value: (
            Draft202012Validator.TYPE_CHECKER.is_type(value, "number") and not _infinite(value)
        ),
    )
    return validators.extend(Draft202012Validator, type_checker=checker)(schema(name))


# the schemas checked once a run (a report reads every run's record): compiled in front of
# jsonschema. A case, tier or rubric file is checked a few times a session, where jsonschema's
# cost does not matter and its keywords (anyOf, const, patterns) are many.
FAST = frozenset({"record"})


@cache
def _fast(name: str) -> fastcheck.Check | None:
    return fastcheck.compiled(json.dumps(schema(name))) if name in FAST else None


# Where documents found valid are remembered (the settings' cache folder; None: nowhere). Every
# xdist worker parses and checks every case and tier file again: a document seen valid before,
# the same data under the same schema, is not checked again (jsonschema is not even imported).
_known_valid: Path | None = None
_write_valid = False  # a session that only collects reads what is known, adds nothing
VALIDITY = b"1"  # part of each remembered key: a change of what validation means changes it


def remember_valid(folder: Path | None, write: bool = True) -> None:
    """Remember valid documents in `folder` (None: nowhere); `write`: add the newly valid."""
    global _known_valid, _write_valid
    _known_valid, _write_valid = folder, write


@cache
def _schema_text(name: str) -> bytes:
    return json.dumps(schema(name), sort_keys=True).encode()


def _validity_mark(doc: Document, schema_name: str) -> Path | None:
    """The file that says `doc` is valid under the schema, named by a hash of both."""
    if _known_valid is None:
        return None
    try:
        data = pickle.dumps(doc.data, protocol=5)
    except (pickle.PicklingError, TypeError, ValueError, RecursionError):
        return None
    key = hashlib.sha256(
        b"\0".join([VALIDITY, schema_name.encode(), _schema_text(schema_name), data])
    )
    return _known_valid / key.hexdigest()


def validate(doc: Document, schema_name: str) -> None:
    """Raise a SpecError listing every way `doc` breaks the named schema (a compiled check
    accepts the valid documents first: formats/fastcheck.py; a document found valid before is
    not checked again: `remember_valid`)."""
    if fastcheck.accepts(_fast(schema_name), doc.data):
        return
    mark = _validity_mark(doc, schema_name)
    if mark is not None and mark.is_file():
        return
    _check(doc, schema_name)
    if mark is not None and _write_valid:
        with contextlib.suppress(OSError):  # a cache that cannot be written is no error
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()


def _check(doc: Document, schema_name: str) -> None:
    errors = list(_validator(schema_name).iter_errors(doc.data))
    typed = {tuple(err.absolute_path) for err in errors if err.validator == "type"}
    problems = [
        _problem(doc, err)
        for err in errors  # .inf: the type error alone, no minimum
        if err.validator == "type"
        or not _infinite(err.instance)
        or tuple(err.absolute_path) not in typed
    ]
    if problems:
        raise SpecError(problems)


def check_value(value: Any, schema_name: str, path: Path) -> None:
    """Validate a value that did not come from YAML (e.g. JSON or front matter), no line marks."""
    validate(Document(path, value, {}), schema_name)


def _loc(where: Where) -> str:
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the top level"


def _kind(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "true/false",
        int: "an integer",
        float: "a number",
        type(None): "empty (null)",
    }.get(type(value), type(value).__name__)


_TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


def _problem(doc: Document, err: Any) -> Problem:
    where: Where = tuple(err.absolute_path)
    loc = _loc(where)
    hint = err.schema.get("x-hint") if isinstance(err.schema, dict) else None
    expected = f"; expected {hint}" if hint else ""
    kind = err.validator
    if kind == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {})
        unknown = [k for k in err.instance if k not in allowed]
        first = unknown[0] if unknown else ""
        names = ", ".join(f"'{k}'" for k in unknown)
        return doc.problem(
            (*where, first),
            f"unknown key {names} in {loc}; allowed keys: {', '.join(sorted(allowed))}",
        )
    if kind == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return doc.problem(where, f"missing required key '{missing}' in {loc}")
    if kind == "type" and _infinite(err.instance) and "number" in err.validator_value:
        spelled = ".nan" if math.isnan(err.instance) else "-.inf" if err.instance < 0 else ".inf"
        return doc.problem(where, f"{loc} must be a finite number, not {spelled}")
    if kind == "type":
        wanted = err.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        names = " or ".join(_TYPES.get(t, t) for t in wanted)
        return doc.problem(
            where, f"{loc} must be {names}, not {_kind(err.instance)} ({err.instance!r})"
        )
    if kind == "enum":
        options = ", ".join(str(v) for v in err.validator_value)
        return doc.problem(where, f"{loc} is {err.instance!r}; expected one of: {options}")
    if kind == "propertyNames":
        return doc.problem(
            (*where, err.instance), f"name {err.instance!r} in {loc} is not allowed: {err.message}"
        )
    if kind == "pattern":
        return doc.problem(
            where,
            f"{loc} is {err.instance!r}, which is not valid"
            f"{expected or f'; expected a match of {err.validator_value}'}",
        )
    if kind in ("minItems", "minProperties", "minLength") and not err.instance:
        return doc.problem(where, f"{loc} must not be empty")
    if kind == "uniqueItems":
        return doc.problem(where, f"{loc} lists the same entry twice; remove the duplicate")
    if kind in ("oneOf", "anyOf", "maxProperties") and hint:
        return doc.problem(where, f"{loc} is not valid{expected}")
    if kind == "not" and isinstance(err.instance, dict):
        return doc.problem(where, f"{loc} has a key that is not allowed here: {err.message}")
    return doc.problem(where, f"{loc}: {err.message}{expected}")
