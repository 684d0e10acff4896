"""The positive control of the forged-folder tests (tests/unit/results/test_run_files.py,
tests/e2e/test_redteam_report.py): a run's files read by their paths, following whatever they
lead to, as `scylla report` read them before `results/run_files.py`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from pytest_scylla.results import run_files

SECRET = "HOST-SECRET-7f3a"  # what a file of the host's outside the folders holds


def _text(run: Path, name: str, limit: int) -> str | None:
    path = run / name
    return path.read_text(errors="replace")[:limit] if path.is_file() else None


@contextlib.contextmanager
def _lines(run: Path, name: str) -> Iterator[IO[str] | None]:
    path = run / name
    if not path.is_file():
        yield None
        return
    with path.open(errors="replace") as handle:
        yield handle


def read_by_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence off: a run's diff and transcript read by their paths."""
    monkeypatch.setattr(run_files, "text", _text)
    monkeypatch.setattr(run_files, "lines", _lines)
