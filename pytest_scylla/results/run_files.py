"""A stored run's files as `scylla report` reads them (`runs/<key>/run.json`, the diff and the
transcript shown in report.html): given the run folder `<folder>/runs/<key>`, each is reached
from the experiment folder one name at a time without following any link, and only when each is
what it should be (a key and a file name that are one name each, real folders, a regular file).
A folder handed to the report may be forged: a run folder or file replaced by a link to a file
of the host's is refused (`ReportInputError`), never read into the report."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pytest_scylla.core.runspec import folder_problem
from pytest_scylla.results.inputs import ReportInputError

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _refused(path: Path, why: str) -> ReportInputError:
    return ReportInputError(
        f"{path}: not read ({why}); a run's files are read inside its run folder only, "
        "never through a link"
    )


def _open_at(fd: int, name: str, flags: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(path, "a link or not a folder on the way") from None
        raise


def _place(run: Path, name: str) -> tuple[Path, str]:
    """(the experiment folder, the run's key) of the run folder `run` (`<folder>/runs/<key>`),
    when `run` is one and `name` one name in it; else refused."""
    folder, key = run.parent.parent, run.name
    for part in (key, name):  # one name each: `../x` would walk out, whatever is followed
        if problem := folder_problem(part):
            raise _refused(run / name, f"{part!r} {problem}")
    if run.parent.name != "runs":
        raise _refused(run / name, "not in the runs/ folder of an experiment folder")
    return folder, key


@contextlib.contextmanager
def opened(run: Path, name: str) -> Iterator[IO[bytes]]:
    """The file `name` of the run folder `run` (`<folder>/runs/<key>`) open for reading (see
    the module's docstring); a missing file is a FileNotFoundError."""
    folder, key = _place(run, name)
    path = run / name
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the folder given
    try:
        for part in ("runs", key):
            inner = _open_at(fd, part, FOLDER, path)
            os.close(fd)
            fd = inner
        out = _open_at(fd, name, FILE, path)
    finally:
        os.close(fd)
    with os.fdopen(out, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _refused(path, "not a regular file")
        yield handle


def read(run: Path, name: str, limit: int) -> bytes:
    """The first `limit` bytes of a run's file (see `opened`); more is an error."""
    with opened(run, name) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ReportInputError(f"{run / name}: larger than {limit} bytes")
    return data


def text(run: Path, name: str, limit: int) -> str | None:
    """The start of a run's text file, at most `limit` bytes; None when it is absent."""
    try:
        with opened(run, name) as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def lines(run: Path, name: str) -> Iterator[IO[str] | None]:
    """A run's text file open as text (see `opened`); None when it is absent."""
    with contextlib.ExitStack() as stack:
        try:
            handle: IO[bytes] | None = stack.enter_context(opened(run, name))
        except FileNotFoundError:
            handle = None
        yield None if handle is None else io.TextIOWrapper(handle, "utf-8", errors="replace")
