"""Reading a declared option (`options.OPTIONS`): its `--scylla-*` value over its `scylla_*` ini
key, and where it came from, for error messages that name the flag or the file and key."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.config.options import BY_DEST, LIST_KEYS, TYPED_INI
from pytest_scylla.core.folders import read_problem, shown, write_problem

TRUTH = "true or false (also yes/no, on/off, 1/0)"
# pytest 9 warns of a TOML list for a string key with this class; pytest 8 has no such warning
REMOVED_IN_10: type[Warning] = getattr(
    pytest, "PytestRemovedIn10Warning", pytest.PytestDeprecationWarning
)


def value(config: pytest.Config, dest: str) -> tuple[Any, str]:
    """(value, where it came from) with CLI over ini."""
    cli = config.getoption(dest)
    if cli is not None:
        return cli, f"--{dest.replace('_', '-')}"
    return ini(config, dest)


def flag(config: pytest.Config, dest: str) -> bool:
    """An on/off switch: its `--scylla-*` flag, else its ini key. An ini value that is not a
    boolean is a usage error naming the file, the key and the values allowed."""
    if config.getoption(dest):
        return True
    try:
        return bool(config.getini(dest))
    except (ValueError, TypeError, pytest.UsageError) as exc:  # "invalid truth value 'always'"
        # (pytest 9.2 raises it as a UsageError from the ValueError or TypeError; 9.0 bare)
        cause = _cause(exc)
        origin = _origin(config, dest)
        said = (
            f"{_native_toml(config, dest)!r} is not a boolean"
            if isinstance(cause, TypeError)
            else str(cause)
        )
        example = "true" if _in_toml(config) else "yes"
        raise pytest.UsageError(
            f"{origin}: {said}; expected {TRUTH}, e.g. {dest} = {example}"
        ) from None


def ini(config: pytest.Config, dest: str) -> tuple[Any, str]:
    """A string ini key's (value, where it came from: `-o key`, or `<file>: key`). A key of
    several items (LIST_KEYS) written as a list is read as its items comma-separated; any other
    key written as a list is refused."""
    with warnings.catch_warnings():  # pytest warns of a TOML list for a string key: read here
        warnings.simplefilter("ignore", REMOVED_IN_10)
        try:
            raw = config.getini(dest)
        except (TypeError, ValueError, pytest.UsageError) as exc:  # native TOML
            # ([tool.pytest]): a list (or a number) for a string key (pytest 9.2 raises the
            # TypeError as a UsageError); or a number key whose value is no number
            _no_number(config, dest, exc)
            if not _in_toml(config):
                raise
            raw = _native_toml(config, dest)
    origin = _origin(config, dest)
    text = raw.strip() if isinstance(raw, str) else ""
    bracketed = dest in LIST_KEYS and text.startswith("[") and text.endswith("]")
    if not isinstance(raw, list) and not bracketed:
        return raw if isinstance(raw, str) else str(raw), origin
    if dest not in LIST_KEYS:
        said = json.dumps(raw) if isinstance(raw, list) else text
        raise pytest.UsageError(f"{origin}: {said} is a list; expected one value")
    items = (
        [str(x) for x in raw]
        if isinstance(raw, list)
        else [x.strip().strip("'\"") for x in text[1:-1].split(",")]
    )
    return ",".join(x.strip() for x in items if x.strip()), origin


def _no_number(config: pytest.Config, dest: str, exc: Exception) -> None:
    """A number key (pytest 8.4 and later type them) whose value is no number: a usage error
    naming the file, the key and an example."""
    kind = BY_DEST[dest].kind if dest in BY_DEST else "str"
    if not TYPED_INI or kind not in ("int", "float"):
        return
    if _in_toml(config) and isinstance(_native_toml(config, dest), list):
        return
    expected, example = ("a whole number", "3") if kind == "int" else ("a number", "60")
    raise pytest.UsageError(
        f"{_origin(config, dest)}: {_cause(exc)}; expected {expected}, e.g. {dest} = {example}"
    ) from None


def _cause(exc: Exception) -> BaseException:
    """The ValueError or TypeError that pytest 9.2 raises as a UsageError's cause."""
    return exc.__cause__ if isinstance(exc, pytest.UsageError) and exc.__cause__ else exc


def _origin(config: pytest.Config, dest: str) -> str:
    """Where an ini key's value came from: `-o key`, or `<file>: key`."""
    overrides = config.getoption("override_ini") or ()
    if any(str(o).partition("=")[0].strip() == dest for o in overrides):
        return f"-o {dest}"
    if config.inipath is not None:
        return f"{shown(config.inipath, config.invocation_params.dir)}: {dest}"
    return dest


def _in_toml(config: pytest.Config) -> bool:
    return config.inipath is not None and config.inipath.suffix == ".toml"


def _native_toml(config: pytest.Config, dest: str) -> Any:
    """A key's value as written in a native TOML table (`[tool.pytest]` of pyproject.toml,
    `[pytest]` of pytest.toml), where pytest refuses a value of another type than the key's."""
    import tomllib

    assert config.inipath is not None  # a TypeError comes only from a TOML file
    data = tomllib.loads(config.inipath.read_text(encoding="utf-8"))
    if config.inipath.name == "pyproject.toml":
        return data.get("tool", {}).get("pytest", {}).get(dest)
    return data.get("pytest", {}).get(dest)


def as_list(raw: Any) -> tuple[str, ...] | None:
    """A comma- (or line-) separated value as a tuple of its items; None when empty."""
    items = tuple(x.strip() for x in str(raw).replace("\n", ",").split(",") if x.strip())
    return items or None


def folder(config: pytest.Config, dest: str, holding: str | None = None) -> Path | None:
    """A folder option, None when not set: the CLI's relative to the invocation folder, the
    ini's to the ini file's. It must be a folder of `holding` (read) or, without `holding`, one
    this session can write (the probe left to the controller)."""
    cli = config.getoption(dest)
    raw, origin = (cli, f"--{dest.replace('_', '-')}") if cli else ini(config, dest)
    text = str(raw or "")
    if not text:
        return None
    here = config.invocation_params.dir
    base = here if cli else config.inipath.parent if config.inipath else config.rootpath
    path = (base / text).resolve()
    if holding is None:
        problem = write_problem(path, here, probe=not hasattr(config, "workerinput"))
    else:
        problem = read_problem(path, here, holding)
    if problem:
        raise pytest.UsageError(f"{origin}={raw!r}: {problem}")
    return path
