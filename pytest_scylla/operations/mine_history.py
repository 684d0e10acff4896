"""`scylla cases mine REPO`, first step: the candidate commits of a repository's history.

A candidate is a commit on the first-parent line (a merge counts as one change: its diff
against its first parent is the merged branch) that changes both source files and test files,
within the size limits. Everything here only reads the repository's history, through a private
mirror with none of the repository's configuration (`mine_git`): nothing in the repository is
written, checked out or configured, and no path in its history is trusted (`mine_tree`)."""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_scylla.operations import mine_git
from pytest_scylla.operations.mine_git import Source
from pytest_scylla.operations.mine_tree import UnsafeTree, path_problem

TEST_DIRS = {"test", "tests", "testing"}
TEST_FILE = re.compile(r"^(test_.*|.*_test|conftest)\.py$")


class MineError(ValueError):
    """Input `scylla cases mine` cannot start from: one line naming it and the fix."""


@dataclass(frozen=True)
class Limits:
    max_files: int = 12  # files a commit changes
    max_lines: int = 400  # lines added and removed, test files included


@dataclass(frozen=True)
class Change:
    path: str
    status: str  # A added, M modified, D deleted (renames are split into D and A)
    lines: int  # added + removed
    binary: bool = False

    @property
    def is_test(self) -> bool:
        parts = PurePosixPath(self.path).parts
        return any(p in TEST_DIRS for p in parts[:-1]) or bool(TEST_FILE.match(parts[-1]))

    @property
    def is_source(self) -> bool:
        return self.path.endswith(".py") and not self.is_test


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    subject: str
    body: str
    changes: tuple[Change, ...] = field(default=())

    @property
    def tests(self) -> list[Change]:
        return [c for c in self.changes if c.is_test]

    @property
    def others(self) -> list[Change]:
        """What the reference solution holds: every change that is not a test's."""
        return [c for c in self.changes if not c.is_test]


def _out(source: Source, args: list[str]) -> bytes:
    try:
        return mine_git.run(source, args)
    except mine_git.GitError as exc:
        raise MineError(f"{source.top}: {exc}") from exc


def _git(source: Source, *args: str) -> str:
    return _out(source, list(args)).decode("utf-8", errors="replace")


@contextlib.contextmanager
def opened(repo: Path) -> Iterator[Source]:
    """The repository to mine, through a private configuration-free mirror of its history
    (`mine_git`), after refusing what mining cannot start from."""
    if not repo.is_dir():
        raise MineError(f"{repo}: no such folder; give the path of a git repository")
    with tempfile.TemporaryDirectory(prefix="scylla-mine-home-") as home:
        found, shallow = mine_git.discover(repo, Path(home))
    if not found:
        raise MineError(f"{repo}: not a git repository (no .git here or above); give its path")
    top = Path(found)
    if shallow:
        raise MineError(
            f"{top}: a shallow clone: its history is cut, so commits lack their parents; "
            "run `git fetch --unshallow` there, or mine a full clone"
        )
    try:
        with mine_git.mirrored(top) as source:
            if first := mine_git.changed_files(source):
                raise MineError(
                    f"{top}: the work tree has uncommitted changes ({first}, …); commit or "
                    "stash them first: mining reads commits, and must not be mistaken for them"
                )
            yield source
    except mine_git.GitError as exc:
        raise MineError(str(exc)) from exc


def commits(
    source: Source, revisions: str, since: str | None, most: int, paths: list[str]
) -> list[str]:
    """The first-parent commits of `revisions` (`A..B` or one revision), newest first."""
    for rev in [r for r in re.split(r"\.\.\.?", revisions) if r]:
        if rev.startswith("-") or not mine_git.run(
            source, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], check=False
        ):
            raise MineError(
                f"{source.top}: revision '{rev}' does not exist; name a branch, tag or commit "
                "(e.g. HEAD, main, v1.2..HEAD)"
            )
    args = ["rev-list", "--first-parent", f"--max-count={most}", revisions]
    if since:
        args.insert(1, f"--since={since}")
    return _git(source, *args, "--", *paths).split()


def read(source: Source, sha: str) -> Commit | None:
    """The commit with its changes against its first parent; None for a root commit. Paths are
    read NUL-separated, as git stores them (checked later: `rejection`)."""
    parents = _git(source, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    if not parents:
        return None
    message = _git(source, "show", "-s", "--no-show-signature", "--format=%B", sha)
    subject, _, body = message.strip().partition("\n")
    diff = ["diff", "--no-renames", "--no-ext-diff", "--no-textconv", "-z", parents[0], sha]
    named = _raw(source, [*diff[:1], "--name-status", *diff[1:]])
    status = dict(zip(named[1::2], (code[:1] for code in named[::2]), strict=True))
    changes = []
    for line in _raw(source, [*diff[:1], "--numstat", *diff[1:]]):
        added, removed, path = line.split("\t", 2)
        binary = added == "-"
        lines = 0 if binary else int(added) + int(removed)
        changes.append(Change(path, status.get(path, "M"), lines, binary))
    return Commit(sha, parents[0], subject.strip(), body.strip(), tuple(changes))


def _raw(source: Source, args: list[str]) -> list[str]:
    """NUL-separated output, its paths as git stores them (bytes that are not UTF-8 kept as
    surrogates, which `path_problem` refuses)."""
    out = _out(source, args)
    return [p for p in out.decode("utf-8", errors="surrogateescape").split("\0") if p]


def rejection(commit: Commit, limits: Limits) -> str:
    """Why the commit is no candidate ("" when it is one)."""
    if problem := next(filter(None, (path_problem(c.path) for c in commit.changes)), ""):
        return f"an unsafe path: {problem}"
    if not commit.tests:
        return "no test file changed"
    if not any(c.is_source for c in commit.others):
        return "no source file changed" if commit.others else "only test files changed"
    if len(commit.changes) > limits.max_files:
        return f"too large: {len(commit.changes)} files (--max-files {limits.max_files})"
    lines = sum(c.lines for c in commit.changes)
    if lines > limits.max_lines:
        return f"too large: {lines} lines changed (--max-lines {limits.max_lines})"
    if any(c.binary for c in commit.changes):
        return "changes a binary file"
    if any(c.status == "D" for c in commit.others):
        return "deletes or renames a source file (a solution folder can only add and change)"
    if any(c.status not in "AMD" for c in commit.changes):
        return "changes a file's type (a link or submodule)"
    return ""


def show(source: Source, sha: str, path: str) -> bytes:
    """A file's content at a commit, raw (no filter or conversion); its path checked first."""
    if problem := path_problem(path):
        raise UnsafeTree(problem)
    return _out(source, ["cat-file", "blob", f"{sha}:{path}"])
