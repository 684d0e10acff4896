"""What the public fixtures give (`pytest_scylla.session.fixtures`): the run's workspace, the agent
run, and the judge panel's verdict. Read-only views over the run's record and artifacts."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_scylla.core.record import JudgeEntry, RunRecord, verdict_table
from pytest_scylla.core.runspec import RunSpec

if TYPE_CHECKING:
    from pytest_scylla.run.checks import CheckResult


class Unreadable(AssertionError):
    """A file the evaluation asked for is missing, a link, or not a regular file: the agent's
    work fails the evaluation's (implicit) assertion that it is there."""


class RunState(Protocol):
    """What a view reads of the item's run: its spec, its record as it stands, reuse."""

    spec: RunSpec
    record: RunRecord
    cached: bool


@dataclass(frozen=True)
class Workspace:
    """The run's workspace: `path` is the live folder (None when the run is reused from disk or
    re-scored); `run_dir` holds its record and artifacts."""

    spec: RunSpec
    path: Path | None
    run_dir: Path
    sandbox: str


class AgentRun:
    """What the agent did in one run. Everything in it was written by the agent or measured
    on its work: treat it as data (`read_text` never follows a link the agent made)."""

    def __init__(self, state: RunState, workspace: Workspace) -> None:
        self._state = state
        self.workspace = workspace

    @property
    def record(self) -> RunRecord:
        """The run's record as it stands (docs/outputs.md says what each field holds)."""
        return self._state.record

    @property
    def key(self) -> str:
        return self._state.spec.key.folder

    @property
    def cached(self) -> bool:
        """Reported from disk by a resumed session (the agent did not run now)."""
        return self._state.cached

    @property
    def outcome(self) -> str:
        """How the agent's part ended: `completed`, `timeout`, `budget_exceeded` or
        `agent_error` (the verdict decides pass or fail), or `fail` where the agent broke the
        run itself (replaced its workspace, broke the docker copy's or relay's bounds)."""
        classified = self.record.get("classified") or {}
        return classified.get("outcome") or "completed"

    @property
    def final_message(self) -> str:
        return self.record.get("final_message") or ""

    @property
    def diff(self) -> str:
        return self._artifact("diff.patch")

    @property
    def files(self) -> list[str]:
        return self._artifact("files.txt").split()

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The CLI's stream-json events, one dict per line (unparseable lines skipped)."""
        events = []
        for line in self._artifact("transcript.jsonl").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
        return events

    @property
    def usage(self) -> dict[str, Any]:
        return self.record.get("usage") or {}

    @property
    def tokens(self) -> dict[str, int]:
        return self.record.get("tokens") or {}

    @property
    def cost_usd(self) -> float | None:
        return self.record.get("cost_usd")

    @property
    def num_turns(self) -> int | None:
        return self.record.get("num_turns")

    @property
    def checks(self) -> list[CheckResult]:
        """The case's own checks, run in the sandbox on the agent's work."""
        from pytest_scylla.run.checks import CheckResult

        return [
            CheckResult(**{k: v for k, v in c.items() if k != "kind"})
            for c in self.record.get("checks") or []
            if c.get("kind") != "assert"
        ]

    @property
    def checks_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def ablation(self) -> dict[str, Any]:
        """Whether what the subtest declared reached the model (the gateway's check)."""
        return self.record.get("ablation") or {}

    @property
    def integrity(self) -> list[dict[str, str]]:
        """Tampering with protected or hidden files found before the checks."""
        return self.record.get("integrity") or []

    def read_text(self, path: str) -> str:
        """A file of the agent's workspace, without following any link it made. A missing,
        linked or non-regular file, or any file of a workspace the agent replaced, raises
        `Unreadable` (an AssertionError: the run fails)."""
        from pytest_scylla.run.hostile import HostileDataError, read
        from pytest_scylla.run.pinned import KIND

        if any(f.get("kind") == KIND for f in self.integrity):
            raise Unreadable(
                f"{path}: the agent replaced its workspace folder; nothing in it is read"
            )
        root = self.workspace.path
        if root is None:
            kept = self.workspace.run_dir / "workspace"
            if not kept.is_dir():
                raise RuntimeError(
                    f"the workspace of {self.key} is gone (the run is reused from disk); run "
                    "it again with --scylla-fresh, or keep workspaces with "
                    "--scylla-keep-workspaces"
                )
            root = kept
        try:
            return read(root, path).decode("utf-8", errors="replace")
        except FileNotFoundError:
            raise Unreadable(f"{path}: no such file in the agent's workspace") from None
        except HostileDataError as exc:
            raise Unreadable(str(exc)) from None

    def _artifact(self, name: str) -> str:
        path = self.workspace.run_dir / name
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


class Verdict:
    """The judge panel's verdict on a run, asked when first used (in the test body)."""

    def __init__(self, judge: Callable[[], RunRecord]) -> None:
        self._judge = judge

    def ask(self) -> RunRecord:
        """Ask the panel now (once) and return the run's record with its outcome."""
        return self._judge()

    @property
    def outcome(self) -> str:
        return self.ask().get("outcome") or ""

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    @property
    def score(self) -> float | None:
        return self.ask().get("score")

    @property
    def grade(self) -> str | None:
        return self.ask().get("grade")

    @property
    def reason(self) -> str:
        return self.ask().get("reason") or ""

    @property
    def judges(self) -> list[JudgeEntry]:
        return self.ask().get("judges") or []

    @property
    def consensus(self) -> dict[str, Any] | None:
        return self.ask().get("consensus")

    def table(self) -> str:
        """The verdict as the failure text of a run: judges, consensus, weakest items."""
        return verdict_table(self.ask())
