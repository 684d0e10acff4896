"""`scylla cases mine REPO`, first step: the candidate commits of a repository's history.

A candidate is a commit on the first-parent line (a merge counts as one change: its diff
against its first parent is the merged branch, and the messages of the commits it brought in
are read for its task) that changes both source files and test files, within the size limits,
and is no release or version bump (by its message, or a diff whose source lines change only in
a version's or copyright's numbers). Everything here only reads the repository's history,
through a private mirror with none of the repository's configuration (`mine_git`): nothing in
the repository is written, checked out or configured, and no path in its history is trusted
(`mine_tree`)."""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_scylla.operations.mining import git as mine_git
from pytest_scylla.operations.mining.git import Source
from pytest_scylla.operations.mining.tree import UnsafeTree, path_problem

TEST_DIRS = {"test", "tests", "testing"}
TEST_FILE = re.compile(r"^(test_.*|.*_tests?|tests?|conftest)\.py$")  # test.py at the root too
# a release or version bump: "Version 11.0.1", "Release 2.3", "six 1.17.0", "Bump version to 2.0"
RELEASE = re.compile(
    r"^(?:(?:release|version|(?!(?:fix|add|support|drop|remove|python|py|tests?)\b)[\w.-]+)\s+v?\d+(?:\.\d+)+\S*|v?\d+(?:\.\d+)+\S*"
    r"|bump(?:ed|s)?\b.*\bversion\b.*|(?:prepare|preparing|cut)\b.*\brelease\b.*"
    r"|release(?:d)?\s+(?:of\s+)?v?\d.*)$",
    re.I,
)
VERSIONISH = re.compile(r"version|copyright|release|\(c\)", re.I)
MAX_MERGED = 30  # messages of the commits a merge brought in, read for its task


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
    merged: tuple[
        str, ...
    ] = ()  # a merge's: the messages of the commits it brought in, oldest first

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
    merged = _merged(source, parents[0], sha) if len(parents) > 1 else ()
    return Commit(sha, parents[0], subject.strip(), body.strip(), tuple(changes), merged)


def _merged(source: Source, first: str, sha: str) -> tuple[str, ...]:
    """The messages of the (non-merge) commits a merge brought in: `first..sha`, oldest first."""
    log = ["log", "--no-merges", "--reverse", "--no-show-signature", "--format=%B%x00"]
    out = _git(source, *log, f"--max-count={MAX_MERGED}", f"{first}..{sha}")
    return tuple(m.strip() for m in out.split("\0") if m.strip())


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
    if released(commit):
        return f"a release or version bump: {commit.subject[:60]!r} (no task to state)"
    return ""


def released(commit: Commit) -> bool:
    """Whether the commit (or, for a merge, every commit it brought in) says it is a release
    or a version bump."""
    if commit.merged and RELEASE.match(commit.body.partition("\n")[0].strip()):
        return True  # a pull request titled so
    said = [m.partition("\n")[0] for m in commit.merged] or [commit.subject]
    return all(RELEASE.match(s.strip()) for s in said)


def only_versions(source: Source, commit: Commit) -> bool:
    """Whether every source line the commit changes is a version or copyright line whose only
    change is in its digits (`__version__ = "1.2"` to "1.3", `Copyright 2023` to 2024)."""
    changed = changed_lines(source, commit, [c.path for c in commit.others if c.is_source])
    if not changed or not all(VERSIONISH.search(line) for line in changed):
        return False
    digitless = Counter(re.sub(r"\d+", "0", line[1:]) for line in changed if line[0] == "-")
    return digitless == Counter(re.sub(r"\d+", "0", line[1:]) for line in changed if line[0] == "+")


def changed_lines(source: Source, commit: Commit, paths: list[str]) -> list[str]:
    """The lines the commit adds (`+…`) and removes (`-…`) in `paths`."""
    if not paths:
        return []
    diff = ["diff", "--no-ext-diff", "--no-textconv", "-U0", commit.parent, commit.sha, "--"]
    text = _git(source, *diff, *paths)
    return [
        line for line in text.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]


def show(source: Source, sha: str, path: str) -> bytes:
    """A file's content at a commit, raw (no filter or conversion); its path checked first."""
    if problem := path_problem(path):
        raise UnsafeTree(problem)
    return _out(source, ["cat-file", "blob", f"{sha}:{path}"])
