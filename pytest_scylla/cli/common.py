"""What several `scylla` commands share: the names a registry offers as an option's choices,
reading stored files (one line naming a bad one), and the check of a folder a command writes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo

T = TypeVar("T")


class Registered:
    """An option's choices: the names the registry offers (`config.extensions`), asked when
    argparse first needs them (a value to check, a `--help` to show), so that the commands that
    never ask load no plugin. Set on the action after `add_argument` (which would ask)."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self.names = names
        self.known: tuple[str, ...] | None = None

    def _known(self) -> tuple[str, ...]:
        if self.known is None:
            self.known = tuple(self.names())
        return self.known

    def __contains__(self, value: object) -> bool:
        return value in self._known()

    def __iter__(self) -> Iterator[str]:
        return iter(self._known())


def reading(command: str, read: Callable[[], T]) -> T | None:
    """What `read()` returns; None once a file it reads is unreadable or not what it should be,
    said in one line naming the file (`path[:line]: ...`), for exit code 2."""
    from pytest_scylla.results.inputs import ReportInputError

    try:
        return read()
    except ReportInputError as exc:
        echo(exc, file=sys.stderr)
    except OSError as exc:
        echo(_os_error(exc, command), file=sys.stderr)
    return None


def _os_error(exc: OSError, command: str) -> str:
    """`path: reason` for a file the system would not let us read or write."""
    return f"{exc.filename}: {exc.strerror}" if exc.filename else f"{command}: {exc}"


def unwritable(command: str, folder: Path) -> bool:
    """The folder a command writes, checked before anything else (said when it cannot be)."""
    problem = write_problem(folder.resolve(), Path.cwd())
    if problem:
        echo(f"scylla {command}: {problem}", file=sys.stderr)
    return bool(problem)
