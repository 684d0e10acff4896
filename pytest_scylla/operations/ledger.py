"""What one session has spent and whether it is paused, shared by all of its processes (the
controller and every xdist worker) through small files in the experiment folder:

    <out>/.session/<session id>/<host>-<pid>.json   each process's own running totals
    <out>/.session/<session id>/pause.json          a usage-window limit: no new run before

Each process writes only its own file, atomically, so nothing is locked and nothing is lost when
a process dies; anyone sums them. The session id comes from the controller, so a resumed session
starts from zero spend (runs reused from disk cost nothing)."""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from pytest_scylla.core.record import read_dict, write_json

SESSIONS = ".session"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class Totals:
    spent_usd: float = 0.0
    runs: int = 0  # runs that spent (ran an agent or a judge) in this session
    passes: int = 0


@dataclass(frozen=True)
class Pause:
    until: float  # epoch seconds
    reason: str

    @property
    def remaining(self) -> float:
        return max(0.0, self.until - time.time())


class Ledger:
    def __init__(self, out: Path, session_id: str) -> None:
        self.dir = out / SESSIONS / session_id
        self.mine = self.dir / f"{socket.gethostname()}-{os.getpid()}.json"
        self._own = Totals()

    def add(self, dollars: float, passed: bool) -> None:
        """Count one finished run of this process."""
        self._own = Totals(
            self._own.spent_usd + dollars, self._own.runs + 1, self._own.passes + int(passed)
        )
        write_json(self.mine, asdict(self._own))

    def totals(self) -> Totals:
        """The whole session's, over every process's file."""
        files = [read_dict(p) for p in self.dir.glob("*.json") if p.name != "pause.json"]
        return Totals(
            spent_usd=sum((float(d.get("spent_usd") or 0) for d in files), 0.0),
            runs=sum(int(d.get("runs") or 0) for d in files),
            passes=sum(int(d.get("passes") or 0) for d in files),
        )

    def over_budget(self, budget: float | None) -> str | None:
        """Why no new run may start under `budget` (None: it may). A run is expected to cost
        what this session's runs cost on average; before any finished, the first may start."""
        if budget is None:
            return None
        t = self.totals()
        expected = t.spent_usd / t.runs if t.runs else 0.0
        if t.spent_usd + expected > budget or t.spent_usd >= budget:
            return (
                f"session budget ${budget:.2f} reached: ${t.spent_usd:.4f} spent on "
                f"{t.runs} runs (about ${expected:.4f} a run); not started"
            )
        return None

    def pause(self, seconds: float, reason: str) -> None:
        """Hold new runs for `seconds` (a later pause wins)."""
        until = time.time() + seconds
        current = self.paused()
        if current is None or current.until < until:
            write_json(self.dir / "pause.json", {"until": until, "reason": reason})

    def paused(self) -> Pause | None:
        data = read_dict(self.dir / "pause.json")
        if not data or float(data.get("until") or 0) <= time.time():
            return None
        return Pause(float(data["until"]), str(data.get("reason") or ""))
