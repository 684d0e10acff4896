"""`scylla cases mine REPO`: verified evaluation cases from a repository's own history (see
`mine_history`, `mine_verify` and `mine_write` for its three steps)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.operations.mining import gaps as mine_gaps
from pytest_scylla.operations.mining import history as mine_history
from pytest_scylla.operations.mining import verify as mine_verify
from pytest_scylla.operations.mining import write as mine_write
from pytest_scylla.operations.mining.git import Source
from pytest_scylla.operations.mining.history import Limits
from pytest_scylla.run.sandbox.base import Sandbox


@dataclass(frozen=True)
class Options:
    revisions: str = "HEAD"
    since: str | None = None
    most: int = 200  # first-parent commits looked at
    paths: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    timeout: int = 120  # seconds for one run of a candidate's tests
    issues: Path | None = None  # issue texts by number (123.md), for the prompts
    rewriter: Callable[..., tuple[str, dict[str, Any]]] | None = None  # --prompt-from-model


@dataclass
class Mined:
    commits: int = 0
    candidates: int = 0
    written: dict[str, Path] = field(default_factory=dict)  # case id -> its folder
    rejected: Counter[str] = field(default_factory=Counter)  # by reason, in short
    existing: int = 0  # candidates whose case --out already holds (not run again)
    seconds: float = 0.0
    flagged: set[str] = field(default_factory=set)  # cases whose prompt misses what tests need
    recorded: str = ""  # what the cases name as source.repo, and why

    def reject(self, reason: str) -> None:
        self.rejected[short(reason)] += 1


def short(reason: str) -> str:
    """A rejection's reason without its particulars (`too large`, `tests cannot run (…)`)."""
    head = reason.split(":", 1)[0]
    return head if "(" not in head or head.endswith(")") else head.split(" (", 1)[0]


def mine(
    repo: Path,
    options: Options,
    out: Path,
    box: Sandbox,
    say: Callable[[str], None] = lambda _: None,
    status: Callable[[str], None] = lambda _: None,
) -> Mined:
    """Every candidate of `repo`'s history verified in `box`; a case written into `out` for
    each verified one. `say` gets a line per candidate, `status` the progress line after each
    commit (`progress`). Raises `MineError` on input it cannot start from."""
    began = time.monotonic()
    with mine_history.opened(repo) as source:
        shas = mine_history.commits(
            source, options.revisions, options.since, options.most, list(options.paths)
        )
        found = Mined(commits=len(shas))
        named, why = mine_write.source_repo(source, out)
        found.recorded = f"{named} ({why})"
        say(f"the cases name the repository as source.repo: {found.recorded}")
        for i, sha in enumerate(shas, 1):
            status(progress(found, i - 1, began))
            _one(source, sha, options, out, box, say, found)
        status(progress(found, len(shas), began))
    found.seconds = round(time.monotonic() - began, 1)
    return found


def progress(found: Mined, done: int, began: float) -> str:
    """The progress line: commit i of N, candidates, kept, rejected, and the ETA (the time per
    commit so far times the commits left)."""
    rejected = sum(found.rejected.values())
    parts = [
        f"scylla cases mine: commit {min(done + 1, found.commits)} of {found.commits}",
        f"{found.candidates} candidates",
        f"{len(found.written)} kept",
        f"{rejected} rejected",
    ]
    if 0 < done < found.commits:
        left = (time.monotonic() - began) / done * (found.commits - done)
        parts.append(f"ETA {_duration(left)}")
    elif done >= found.commits:
        parts[0] = f"scylla cases mine: {found.commits} commits looked at"
    return ", ".join(parts)


def _duration(value: float) -> str:
    seconds = round(value)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _one(
    source: Source,
    sha: str,
    options: Options,
    out: Path,
    box: Sandbox,
    say: Callable[[str], None],
    found: Mined,
) -> None:
    """One commit of the history: rejected, kept as mined before, or verified and written."""
    commit = mine_history.read(source, sha)
    if commit is None:
        found.reject("the root commit (no parent to start from)")
        return
    if reason := mine_history.rejection(commit, options.limits):
        found.reject(reason)
        return
    if mine_history.only_versions(source, commit):
        found.reject("a release or version bump: only version or copyright numbers change")
        return
    found.candidates += 1
    if (out / mine_write.name_of(source.top, sha)).exists():  # mined before: maybe edited since
        found.existing += 1
        say(f"{sha[:12]} already in {out}: kept as it is")
        return
    with tempfile.TemporaryDirectory(prefix="scylla-mine-") as private:
        where = Path(private)
        try:
            verdict = mine_verify.verify(
                source, commit, mine_verify.sandboxed(box, where, options.timeout), where
            )
        finally:  # what the sandbox holds for the folder (docker: its container) let go
            box.close(where)
    if not verdict.kept:
        say(f"{sha[:12]} rejected: {verdict.reason} ({verdict.seconds:.0f} s)")
        found.reject(verdict.reason)
        return
    _keep(source, verdict, options, out, say, found)


def _keep(
    source: Source,
    verdict: mine_verify.Verdict,
    options: Options,
    out: Path,
    say: Callable[[str], None],
    found: Mined,
) -> None:
    """A verified commit's case: written, its prompt maybe rewritten by a model, and flagged
    when the prompt misses what its hidden tests need (`mine_gaps`)."""
    commit, sha = verdict.commit, verdict.commit.sha
    folder = mine_write.write(source, verdict, out, options.issues)
    texts = mine_write.texts(source, verdict, commit.tests)
    tests = mine_gaps.summarize(texts, verdict.fail_to_pass)
    answer = ""
    if options.rewriter is not None:
        said = mine_write.message(verdict, options.issues)
        task, info = options.rewriter(
            verdict, said, folder / "prompt_calls.jsonl", tests=mine_gaps.describe(tests)
        )
        mine_write.retell(folder, verdict, task, info)
        answer = str(info.get("underspecified") or "")
    found.written[folder.name] = folder
    say(
        f"{sha[:12]} verified: {len(verdict.fail_to_pass)} fail-to-pass, "
        f"{len(verdict.pass_to_pass)} pass-to-pass ({verdict.seconds:.0f} s) -> {folder}"
    )
    added = mine_history.changed_lines(source, commit, [c.path for c in commit.others])
    prompt = (folder / "prompt.md").read_text(encoding="utf-8")
    defined = "\n".join(mine_write.texts(source, verdict, commit.others).values())
    gaps = mine_gaps.gaps(tests, "\n".join(a[1:] for a in added if a[:1] == "+"), prompt, defined)
    if gaps or answer:
        mine_write.flag(folder, gaps, answer)
        found.flagged.add(folder.name)
        say(f"{sha[:12]} underspecified: the tests need {', '.join(gaps) or answer}")


def drop(found: Mined, case: str, reason: str) -> None:
    """A written case that failed its own check: removed, and counted with its reason."""
    folder = found.written.pop(case, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    found.reject(reason)


def table(found: Mined) -> list[str]:
    lines = [
        f"commits looked at: {found.commits}",
        f"candidates (source and tests changed, within the limits): {found.candidates}",
        f"verified and written: {len(found.written)}",
        *(
            [f"already in --out (kept as they are, not run again): {found.existing}"]
            if found.existing
            else []
        ),
        *(
            [f"flagged underspecified (the prompt misses what the tests need): {flagged}"]
            if (flagged := len(found.flagged & set(found.written)))
            else []
        ),
        "rejected:",
    ]
    lines += [f"  {n:>5}  {reason}" for reason, n in found.rejected.most_common()] or ["  none"]
    if found.recorded:
        lines.append(f"source.repo in the cases: {found.recorded}")
    lines.append(f"time: {found.seconds:.0f} s")
    return lines
