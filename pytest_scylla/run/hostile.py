"""The workspace after the agent, read as hostile data.

Everything the agent could write is untrusted: its `.git` is just files, a symlink is never
followed, nothing it wrote runs outside the sandbox, and what is read back is bounded. The harness
keeps its own git directory (a copy of the workspace's, taken before the agent starts, outside
anything the agent can reach) and runs git on the workspace with an allow-listed environment and
none of the agent's configuration, hooks, filters, attributes drivers or fsmonitor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.run.hostile_git import HostileDataError as HostileDataError  # its errors
from pytest_scylla.run.hostile_git import git_env, held_fds, run_git

MAX_FILES = 20_000  # files named in files.txt and to the judges; beyond, the list says it was cut
MAX_ENTRIES = 500_000  # entries walked for the integrity scan; beyond, a finding says so
MAX_FILE_BYTES = 2_000_000  # a larger file is named in the diff, not read into it


@dataclass(frozen=True)
class Entry:
    """One thing in the workspace, seen with lstat."""

    rel: str
    kind: str  # file | link | dir | other | unreadable (a folder or entry that could not be read)
    size: int
    executable: bool = False


def _entry(rel: str, st: os.stat_result) -> Entry:
    kind = (
        "link"
        if stat.S_ISLNK(st.st_mode)
        else "dir"
        if stat.S_ISDIR(st.st_mode)
        else "file"
        if stat.S_ISREG(st.st_mode)
        else "other"
    )
    return Entry(rel, kind, st.st_size, bool(st.st_mode & 0o111))


def _listing(fd: int) -> list[tuple[str, os.stat_result | None]]:
    """(name, lstat or None when it cannot be read) of everything in the directory `fd`."""
    found: list[tuple[str, os.stat_result | None]] = []
    with os.scandir(fd) as names:
        for item in names:
            try:
                found.append((item.name, item.stat(follow_symlinks=False)))
            except OSError:
                found.append((item.name, None))
    return sorted(found, key=lambda pair: pair[0])


def _descend(name: str, fd: int) -> tuple[int, list[tuple[str, os.stat_result | None]]] | None:
    """(descriptor, listing) of the directory `name` in `fd`; None when it cannot be read."""
    try:
        sub = _open_dir(name, fd)
    except OSError:
        return None
    try:
        return sub, _listing(sub)
    except OSError:
        os.close(sub)
        return None


def walk(root: Path, limit: int = MAX_ENTRIES) -> tuple[list[Entry], bool]:
    """Every entry under `root` (the top `.git` skipped), never following a symlink; (entries,
    whether the list was cut at `limit`). Each directory is opened relative to its parent's
    descriptor, so depth does not matter (a path longer than the OS allows from the root is
    walked like any other); what cannot be read is an entry of kind `unreadable`, never
    skipped."""
    entries: list[Entry] = []
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    stack: list[tuple[int, str, Iterator[tuple[str, os.stat_result | None]]]] = [
        (top, "", iter(_listing(top)))
    ]
    try:
        while stack:
            fd, rel_dir, names = stack[-1]
            step = next(names, None)
            if step is None:
                os.close(stack.pop()[0])
                continue
            name, st = step
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if rel == ".git":
                continue
            entries.append(Entry(rel, "unreadable", 0) if st is None else _entry(rel, st))
            if len(entries) >= limit:
                return sorted(entries, key=lambda e: e.rel), True
            if entries[-1].kind == "dir":
                opened = _descend(name, fd)
                if opened is None:
                    entries[-1] = Entry(rel, "unreadable", 0)
                else:
                    stack.append((opened[0], rel, iter(opened[1])))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return sorted(entries, key=lambda e: e.rel), False


@dataclass(frozen=True)
class Tree:
    """The agent's working tree, read through the harness's own git directory."""

    root: Path
    git_dir: Path  # the harness's copy of the workspace's repository, out of the agent's reach
    base: str  # the pinned commit

    @contextlib.contextmanager
    def _env(self) -> Iterator[dict[str, str]]:
        # beside the git directory, in the run's claimed harness folder: a SIGKILLed session's
        # leftovers are removed with it by the next session
        with tempfile.TemporaryDirectory(prefix="git-", dir=self.git_dir.parent) as tmp:
            yield git_env(self.git_dir, self.root, Path(tmp) / "index", Path(tmp))

    def diff(self, exclude: Sequence[str] = (), entries: Sequence[Entry] = ()) -> str:
        """What changed since the pinned commit (committed or not, untracked files included,
        ignored ones not) as a binary-safe diff. Files over MAX_FILE_BYTES are named at the end
        instead of read."""
        big = [e.rel for e in entries if e.kind == "file" and e.size > MAX_FILE_BYTES]
        # git reaches files by their whole path: one longer than the OS allows is skipped
        deep = [e.rel for e in entries if e.kind != "dir" and too_deep(self.root, e.rel)]
        skip = [f":(exclude,literal){p}" for p in (*exclude, *big)]
        # the agent's ignore files are always shown: an ignore rule can hide work, even itself
        ignores = [
            f":(literal){e.rel}"
            for e in entries
            if e.kind == "file"
            and e.rel.rpartition("/")[2] == ".gitignore"
            and e.rel not in exclude
        ]
        # attributes (`-diff`, `binary`) could turn the agent's changes into an unreadable
        # binary patch: where the workspace has attribute files, every file is shown as text
        text = (
            ["--text"] if any(e.rel.rpartition("/")[2] == ".gitattributes" for e in entries) else []
        )
        with self._env() as env:
            # the index starts as the pinned commit: a tracked file an ignore rule matches
            # (`.*` matching `.github/`) is compared as git compares it, not taken for deleted
            run_git(["read-tree", self.base], env)
            run_git(["add", "-A", "--", ".", *skip], env)
            if ignores:
                run_git(["add", "-f", "--", *ignores], env)
            out = run_git(
                [
                    "diff",
                    "--cached",
                    "--binary",
                    *text,
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-color",
                    self.base,
                ],
                env,
            )
        notes = "".join(f"[harness: {p} is over {MAX_FILE_BYTES} bytes; not shown]\n" for p in big)
        notes += "".join(
            f"[harness: {p} lies deeper than git can reach (a path over {PATH_MAX} "
            "bytes); not shown]\n"
            for p in deep
        )
        return out.decode("utf-8", errors="replace") + notes

    def files(self) -> dict[str, tuple[str, str]]:
        """The pinned commit's files: {path: (git mode, blob id)}."""
        files = {}
        with self._env() as env:
            out = run_git(["ls-tree", "-r", "-z", "--full-tree", self.base], env)
        for line in out.decode("utf-8", errors="surrogateescape").split("\0"):
            if line:
                meta, _, path = line.partition("\t")
                mode, _kind, blob_id = meta.split()
                files[path] = (mode, blob_id)
        return files

    def blob(self, blob_id: str) -> bytes:
        with self._env() as env:
            return run_git(["cat-file", "blob", blob_id], env, limit=1 << 32)


PATH_MAX = 4096  # bytes of a path the OS (and so git) accepts from the root (Linux)


def too_deep(root: Path, rel: str) -> bool:
    """Whether `rel` under `root` is too long a path to be reached by name (only by descriptor);
    a `root` through a held descriptor counts as the path it stands for (git's view)."""
    named = Path(os.readlink(root)) if held_fds(str(root)) else root
    return len(os.fsencode(named / rel)) >= PATH_MAX


def readlink(root: Path, rel: str) -> str:
    """The target of the link at `rel` under `root` (never followed), reached by descriptor."""
    with parent_dir(root, rel, [], make=False) as (fd, name):
        return os.readlink(name, dir_fd=fd)


def no_follow(path: str, flags: int) -> int:
    """An `open()` opener that refuses a link in the last place."""
    return os.open(path, flags | os.O_NOFOLLOW)


# -- writing into the workspace without following anything the agent placed ----------------


def _open_dir(name: str, dir_fd: int) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)


def remove(name: str, dir_fd: int) -> None:
    """Remove whatever `name` is inside `dir_fd` (a link itself, never its target)."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def rel_problem(rel: str) -> str:
    """Why `rel` cannot name a place inside a folder ("" when it can): absolute or empty, a
    control character or not UTF-8, an empty, `.` or `..` part."""
    if not rel or rel.startswith("/"):
        return f"{rel!r} is absolute or empty"
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in rel):
        return f"{rel!r} holds a control character or is not UTF-8"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return f"{rel!r} holds an empty, '.' or '..' part"
    return ""


@contextlib.contextmanager
def parent_dir(
    root: Path, rel: str, cleared: list[str], make: bool = True, replace: bool = True
) -> Iterator[tuple[int, str]]:
    """(fd of the real directory that holds `rel`, its last name), making the directories on the
    way; anything that is not a real directory on the way is removed first and its path added to
    `cleared` (`make=False`: nothing is made or removed; a missing folder is an OSError;
    `replace=False`: missing folders are made, but a link or a file on the way is an OSError)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                nxt = _open_dir(part, fd)
            except OSError as exc:
                if not make or exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                    raise
                if exc.errno != errno.ENOENT:
                    if not replace:
                        raise
                    remove(part, fd)
                    cleared.append("/".join(parts[: i + 1]))
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = _open_dir(part, fd)
            os.close(fd)
            fd = nxt
        yield fd, parts[-1]
    finally:
        os.close(fd)


def place(root: Path, rel: str, data: bytes, mode: str = "100644") -> list[str]:
    """Write `data` at `rel` under `root` as a new file (a link for mode 120000) that nothing the
    agent made can redirect; returns the paths of what had to be removed first."""
    cleared: list[str] = []
    with parent_dir(root, rel, cleared) as (fd, name):
        with contextlib.suppress(FileNotFoundError):
            remove(name, fd)
            cleared.append(rel)
        if mode == "120000":
            os.symlink(data.decode("utf-8", errors="surrogateescape"), name, dir_fd=fd)
        else:
            perms = 0o755 if mode == "100755" else 0o644
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, perms, dir_fd=fd
            )
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
    return cleared


def delete(root: Path, rel: str) -> bool:
    """Remove `rel` under `root` if it is there (links themselves, never their targets)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nxt = _open_dir(part, fd)
            except OSError:
                return False  # a parent that is not a real directory: nothing of ours inside
            os.close(fd)
            fd = nxt
        try:
            remove(parts[-1], fd)
        except FileNotFoundError:
            return False
        return True
    finally:
        os.close(fd)


READ_LIMIT = 2_000_000  # bytes of one file an evaluation may read


def read(root: Path, rel: str, limit: int = READ_LIMIT) -> bytes:
    """The bytes of the regular file at `rel` under `root`, reached without following any link
    the agent made (a link, a FIFO, a device or a path leaving `root` is refused) and at most
    `limit` of them."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise HostileDataError(f"{rel!r}: not a path inside the workspace")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            nxt = _open_dir(part, fd)
            os.close(fd)
            fd = nxt
        out = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(out, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise HostileDataError(f"{rel}: not a regular file")
            data = handle.read(limit + 1)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise HostileDataError(
                f"{rel}: a symbolic link or a non-directory on the way; not followed"
            ) from None
        raise
    finally:
        os.close(fd)
    if len(data) > limit:
        raise HostileDataError(f"{rel}: larger than {limit} bytes")
    return data
