"""Progress beside pytest's own: every few seconds a line with runs done of total (and how many
came from disk), passes, the session's spend against its budget, the ETA, and a pause when an
upstream usage limit holds new runs. Controller only; at -n 0 and under xdist alike.

A line rewritten in place would fight pytest's own progress output (dots, percentages, xdist's
status), so it is a status line at a steady rhythm: every 10 s on a terminal, every 60 s in a log
(CI), `--scylla-progress=SECONDS` to choose, 0 for none. It is written when a run's report
arrives (between tests, when pytest captures nothing) and, under xdist, where the controller
runs no test itself, also by a timer, so a pause with no report coming in still shows."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_scylla.core.record import of_report
from pytest_scylla.core.runspec import is_run_item
from pytest_scylla.core.terminal import safe
from pytest_scylla.operations.ledger import Ledger

if TYPE_CHECKING:
    from pytest_scylla.config.settings import Settings

TTY_INTERVAL, LOG_INTERVAL = 10.0, 60.0


def _duration(value: float) -> str:
    seconds = round(value)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    def __init__(self, config: pytest.Config, s: Settings, out: Path, session_id: str) -> None:
        self.config = config
        self.budget = s.budget_usd
        tty = (
            config.get_terminal_writer().hasmarkup
            if config.pluginmanager.get_plugin("terminalreporter")
            else False
        )
        self.interval = (
            s.progress if s.progress is not None else (TTY_INTERVAL if tty else LOG_INTERVAL)
        )
        if s.plan:
            self.interval = 0.0
        self.ledger = Ledger(out, session_id)
        self.total = self.done = self.cached = self.passes = self.skipped = self.ran = 0
        self.spent = 0.0
        self.began = time.monotonic()
        self._stop = threading.Event()
        self._last = ""
        self._printed = 0.0
        self._lock = threading.Lock()

    # -- counting -----------------------------------------------------------------------------
    # Only runs count (items with a run id): a session of ordinary tests shows no line at all.
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = max(self.total, sum(is_run_item(i.nodeid) for i in session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, sum(is_run_item(i) for i in ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        finished = report.when in ("call", "???") or (report.when == "setup" and not report.passed)
        if not finished or not is_run_item(report.nodeid):
            return
        self.done += 1
        rec = of_report(report)
        if report.skipped:
            self.skipped += 1
        if rec is not None:
            if rec.get("outcome") == "pass":
                self.passes += 1
            if rec.get("cached"):
                self.cached += 1
            else:
                self.ran += 1
                self.spent += float(rec.get("cost_usd") or 0) + float(
                    rec.get("judge_cost_usd") or 0
                )
        if self.interval > 0 and time.monotonic() - self._printed >= self.interval:
            self._write()

    # -- the line -----------------------------------------------------------------------------
    def line(self) -> str:
        parts = [
            f"scylla: {self.done}/{self.total or '?'} runs"
            + (f" ({self.cached} from disk)" if self.cached else ""),
            f"{self.passes} pass",
        ]
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        parts.append(
            f"spend ${self.spent:.4f}"
            + (f" of ${self.budget:.2f} budget" if self.budget is not None else "")
        )
        remaining = max(0, self.total - self.done)
        if self.ran and remaining:
            per_run = (time.monotonic() - self.began) / self.ran  # parallelism included
            parts.append(f"ETA {_duration(per_run * remaining)}")
        pause = self.ledger.paused()
        if pause is not None:
            until = datetime.fromtimestamp(pause.until, UTC)
            parts.append(
                f"PAUSED until {until:%H:%M:%S} UTC by an upstream usage limit ({pause.reason})"
            )
        return ", ".join(parts)

    def _write(self) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        with self._lock:
            self._printed = time.monotonic()
            if reporter is None or not self.total or self.done >= self.total:
                return
            text = self.line()
            if text == self._last and self.ledger.paused() is None:
                return  # nothing new: keep quiet
            self._last = text
            reporter.ensure_newline()
            writer = getattr(reporter, "_tw", None)
            if writer is not None and writer.width_of_current_line:  # after xdist's dots
                reporter.write("\n")
            reporter.write_line(safe(text), cyan=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            if time.monotonic() - self._printed >= self.interval:
                self._write()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.began = self._printed = time.monotonic()
        # a timer only on an xdist controller: at -n 0 the tests run in this process, and a
        # line written while pytest captures their output would land in a test's output
        if self.interval > 0 and getattr(self.config.option, "dist", "no") != "no":
            threading.Thread(target=self._tick, name="scylla-progress", daemon=True).start()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._stop.set()
