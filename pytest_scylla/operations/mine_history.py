"""`scylla cases mine REPO`, first step: the candidate commits of a repository's history.

A candidate is a commit on the first-parent line (a merge counts as one change: its diff
against its first parent is the merged branch) that changes both source files and test files,
within the size limits. Everything here only reads the repository (`git rev-list`, `git
diff`, `git show`): nothing in it is written, checked out or configured."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_scylla.run.workspace import WorkspaceError, git

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


def _git(repo: Path, *args: str) -> str:
    try:
        return git(list(args), repo)
    except WorkspaceError as exc:
        raise MineError(str(exc)) from exc


def check_repo(repo: Path) -> Path:
    """The top of the work tree of `repo`, after refusing what mining cannot start from."""
    if not repo.is_dir():
        raise MineError(f"{repo}: no such folder; give the path of a git repository")
    found = git(["rev-parse", "--show-toplevel"], repo, check=False).strip()
    if not found:
        raise MineError(f"{repo}: not a git repository (no .git here or above); give its path")
    top = Path(found)
    if git(["rev-parse", "--is-shallow-repository"], top, check=False).strip() == "true":
        raise MineError(
            f"{top}: a shallow clone: its history is cut, so commits lack their parents; "
            "run `git fetch --unshallow` there, or mine a full clone"
        )
    dirty = git(["status", "--porcelain", "--untracked-files=no"], top, check=False)
    if dirty.strip():
        first = dirty.strip().splitlines()[0]
        raise MineError(
            f"{top}: the work tree has uncommitted changes ({first.strip()}, …); commit or "
            "stash them first: mining reads commits, and must not be mistaken for them"
        )
    return top


def commits(
    repo: Path, revisions: str, since: str | None, most: int, paths: list[str]
) -> list[str]:
    """The first-parent commits of `revisions` (`A..B` or one revision), newest first."""
    for rev in [r for r in re.split(r"\.\.\.?", revisions) if r]:
        if not git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo, check=False):
            raise MineError(
                f"{repo}: revision '{rev}' does not exist; name a branch, tag or commit "
                "(e.g. HEAD, main, v1.2..HEAD)"
            )
    args = ["rev-list", "--first-parent", f"--max-count={most}", revisions]
    if since:
        args.insert(1, f"--since={since}")
    return _git(repo, *args, "--", *paths).split()


def read(repo: Path, sha: str) -> Commit | None:
    """The commit with its changes against its first parent; None for a root commit."""
    parents = _git(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
    if not parents:
        return None
    message = _git(repo, "show", "-s", "--format=%B", sha)
    subject, _, body = message.strip().partition("\n")
    status = {}
    for line in _git(repo, "diff", "--no-renames", "--name-status", parents[0], sha).splitlines():
        code, _, path = line.partition("\t")
        status[path] = code[:1]
    changes = []
    for line in _git(repo, "diff", "--no-renames", "--numstat", parents[0], sha).splitlines():
        added, removed, path = line.split("\t", 2)
        binary = added == "-"
        lines = 0 if binary else int(added) + int(removed)
        changes.append(Change(path, status.get(path, "M"), lines, binary))
    return Commit(sha, parents[0], subject.strip(), body.strip(), tuple(changes))


def rejection(commit: Commit, limits: Limits) -> str:
    """Why the commit is no candidate ("" when it is one)."""
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


def git_bytes(repo: Path, *args: str) -> bytes:
    """What `git ARGS` prints in `repo`, as bytes (file contents, archives), with no user
    configuration or credential in its environment; a MineError naming the command if it
    fails."""
    import subprocess

    from pytest_scylla.core.environ import credential_free

    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        env={**credential_free(), "GIT_CONFIG_NOSYSTEM": "1"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise MineError(f"{repo}: git {' '.join(args)} failed: {done.stderr.decode()[:200]}")
    return done.stdout


def show(repo: Path, sha: str, path: str) -> bytes:
    """A file's content at a commit."""
    return git_bytes(repo, "show", f"{sha}:{path}")
