"""A fresh git working tree per run, holding the case's source at its pinned commit.

A source folder is committed into a new repository (fixed author and date, so the same folder
always gives the same commit). A `repo` + `commit` source is mirrored once per URL into a shared,
file-locked cache; each run then fetches only that commit's history into a new repository, so no
run sees another run's work or upstream commits made after the pinned one.

What the harness then writes into the workspace for the run (the tier overlay: the project's
own agent configuration removed or rewritten) is folded into that commit (`start`), so that the
agent starts from a clean checkout, as in the team's own, and never sees its configuration
rewritten in `git status` or in a commit of ours.

Before the agent starts, the harness copies the workspace's repository to a folder of its own:
after the agent, the workspace's `.git` is just files the agent wrote, and every diff is read
through the harness's copy (see `hostile`), against the commit the agent started from.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.core.environ import credential_free
from pytest_scylla.formats.spec import SELF, Case
from pytest_scylla.run import hostile

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "scylla",
    "GIT_AUTHOR_EMAIL": "scylla@localhost",
    "GIT_COMMITTER_NAME": "scylla",
    "GIT_COMMITTER_EMAIL": "scylla@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
BRANCH = "scylla"
NO_GC = ("-c", "gc.auto=0")  # no `gc --auto` (detached) in a repository about to be copied


class WorkspaceError(RuntimeError):
    """The workspace could not be made (an infrastructure failure, never the agent's)."""


def git(
    args: Sequence[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> str:
    full_env = {
        **credential_free(),
        **GIT_IDENTITY,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        **(env or {}),
    }
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=off", "-c", "init.defaultBranch=" + BRANCH, *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class Workspace:
    path: Path
    base_commit: str  # the commit the agent starts from (and is diffed against)
    git_dir: Path  # the harness's copy of the repository, made before the agent started
    task_commit: str  # the case's source at its pinned commit, before the run's setup

    def tree(self, root: Path | None = None) -> hostile.Tree:
        """The working tree at `root` (after the agent: `pinned.Pin.root`, the workspace
        reached through its descriptor), else at `path`."""
        return hostile.Tree(root or self.path, self.git_dir, self.base_commit)


def create(case: Case, dest: Path, cache_dir: Path, harness: Path) -> Workspace:
    """Make `dest` (which must not exist) a working tree of the case's source, with nothing
    written for a run (`checkout`, then `start`)."""
    return start(dest, checkout(case, dest, cache_dir), harness)


def start(dest: Path, task: str, harness: Path) -> Workspace:
    """The workspace `dest` (checked out at `task`) as the agent starts from it: what the
    harness wrote there since the checkout is folded into that commit (its parents, author and
    message kept; committer and date the harness's fixed ones), so `git status` is clean and
    the history holds no commit of ours; then the repository is copied to `harness/git`, a
    folder the agent cannot reach. The same writes give the same commit; none keep `task`."""
    if git(["rev-parse", "HEAD"], dest).strip() != task:
        raise WorkspaceError(f"workspace {dest} is not at its checkout {task[:12]}")
    git(["add", "-A"], dest)
    if git(["diff", "--cached", "--name-only", "--no-renames", "HEAD"], dest).strip():
        _fold(dest)
    base = git(["rev-parse", "HEAD"], dest).strip()
    shutil.copytree(dest / ".git", harness / "git", symlinks=True)
    return Workspace(dest, base, harness / "git", task)


def _fold(dest: Path) -> None:
    """The index committed in place of HEAD; the replaced commit's trail (reflog, its loose
    objects: the project's configuration as it was) taken out of the agent's repository."""
    amend = ["commit", "-q", "--amend", "--no-edit", "--allow-empty", "--no-verify"]
    git([*NO_GC, *amend, "--cleanup=verbatim"], dest)
    git(["reflog", "expire", "--expire=now", "--all"], dest)
    git(["prune", "--expire=now"], dest)


def checkout(case: Case, dest: Path, cache_dir: Path) -> str:
    """The source at its pinned commit in `dest`; returns that commit."""
    if dest.exists():
        raise WorkspaceError(f"workspace {dest} already exists")
    dest.mkdir(parents=True)
    if case.source.path is not None:
        shutil.copytree(case.source.path, dest, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(dest / ".git", ignore_errors=True)
        git(["init", "-q"], dest)
        git(["add", "-A"], dest)
        commit = ["commit", "-q", "--allow-empty", "--no-verify", "-m", f"{case.id}: task source"]
        git([*NO_GC, *commit], dest)
        return git(["rev-parse", "HEAD"], dest).strip()
    assert case.source.url is not None  # the repo as written, or `self` resolved
    assert case.source.commit is not None
    mirror = ensure_mirror(case.source.url, case.source.commit, cache_dir)
    git(["init", "-q"], dest)
    git(["fetch", "-q", "--no-tags", str(mirror), pin_ref(case.source.commit)], dest)
    git(["checkout", "-q", "-b", BRANCH, case.source.commit], dest)
    (dest / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
    if case.source.repo == SELF:  # the case's own folder at that commit: its hidden tests and
        inner = case.root.resolve().relative_to(Path(case.source.url or "/").resolve())
        if (dest / inner).exists():  # solution would be the agent's to read
            raise WorkspaceError(
                f"source: repo: self at {case.source.commit[:12]} already holds "
                f"this case's folder {inner}/ (its hidden tests and solution "
                "would be in the agent's workspace); pin a commit from before "
                "the case was added"
            )
    return case.source.commit


def pin_ref(commit: str) -> str:
    return f"refs/scylla/pins/{commit}"


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_mirror(url: str, commit: str, cache_dir: Path) -> Path:
    """One bare mirror per URL, shared by every run and worker; holds a ref pinning `commit`."""
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    mirror = cache_dir / "mirrors" / f"{name}.git"
    with locked(cache_dir / "mirrors" / f"{name}.lock"):
        if not (mirror / "HEAD").exists():
            tmp = Path(tempfile.mkdtemp(dir=mirror.parent, prefix=f"{name}.partial-"))
            git(["clone", "-q", "--mirror", url, str(tmp)], mirror.parent)
            tmp.rename(mirror)
        if git(["cat-file", "-t", commit], mirror, check=False).strip() != "commit":
            git(["fetch", "-q", "--prune", "origin"], mirror)
            if git(["cat-file", "-t", commit], mirror, check=False).strip() != "commit":
                raise WorkspaceError(
                    f"commit {commit} not found in {url}; check the case's source.commit"
                )
        git(["update-ref", pin_ref(commit), commit], mirror)
    return mirror


def diff(
    ws: Workspace,
    exclude: Sequence[str] = (),
    entries: Sequence[hostile.Entry] = (),
    root: Path | None = None,
) -> str:
    """Everything that changed since the pinned commit: committed, staged, unstaged and untracked
    files (not ignored ones), read through the harness's git directory; the workspace's own
    repository is neither used nor touched. `root`: see `Workspace.tree`."""
    return ws.tree(root).diff(exclude, entries)


def file_list(
    path: Path, entries: Sequence[hostile.Entry] | None = None, cut: bool = False
) -> list[str]:
    """Every file and link in the workspace (relative, sorted), `.git` excluded; links are
    listed, never followed."""
    if entries is None:
        entries, cut = hostile.walk(path)
    names = [e.rel for e in entries if e.kind != "dir"]
    if cut or len(names) > hostile.MAX_FILES:
        note = f"[... more files than {hostile.MAX_FILES}; list cut ...]"
        return [*names[: hostile.MAX_FILES], note]
    return names
