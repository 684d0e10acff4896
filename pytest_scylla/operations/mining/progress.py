"""`scylla cases mine`: its progress while it runs (commit i of N, candidates, kept, rejected,
ETA: `mine.progress`), as the session's progress line shows a session's.

On a terminal the line is rewritten in place, and each line said about a candidate is printed
above it; in a log (no terminal, or `CI` set) there is no cursor to move back, so the line is
printed as a plain line of its own every `LOG_INTERVAL` seconds and once at the end."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TextIO

from pytest_scylla.core.terminal import safe

LOG_INTERVAL = 30.0


class Status:
    def __init__(
        self, stream: TextIO | None = None, tty: bool | None = None, interval: float = LOG_INTERVAL
    ) -> None:
        self.stream = stream or sys.stdout
        if tty is None:
            tty = self.stream.isatty() and os.environ.get("CI", "").lower() in ("", "0", "false")
        self.tty, self.interval = tty, interval
        self.shown = ""  # the line on the terminal now (tty)
        self.last = ""  # the newest line given
        self.printed = time.monotonic()

    def say(self, line: str) -> None:
        """A line of its own (above the progress line on a terminal)."""
        self._clear()
        self.stream.write(safe(line) + "\n")
        if self.tty and self.last:
            self._draw(self.last)
        self.stream.flush()

    def update(self, line: str) -> None:
        """The progress line, now `line`."""
        self.last = line
        if self.tty:
            self._draw(line)
        elif time.monotonic() - self.printed >= self.interval:
            self.printed = time.monotonic()
            self.stream.write(safe(line) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """The progress line's last state as a line of its own (what follows starts below)."""
        self._clear()
        if self.last:
            self.stream.write(safe(self.last) + "\n")
            self.last = ""
        self.stream.flush()

    def _draw(self, line: str) -> None:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        text = safe(line)[: max(width, 20)]
        self.stream.write(f"\r{text}\x1b[K")
        self.shown = text

    def _clear(self) -> None:
        if self.tty and self.shown:
            self.stream.write("\r\x1b[K")
            self.shown = ""
