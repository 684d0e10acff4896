"""`scylla cases mine`: a commit's tree written into a private folder, every path in it treated
as hostile.

A repository's history can hold any tree git can store: entries named `..` or `.git`, the same
name twice, a file that is also a folder, links to absolute paths or out of the tree through
other links. Nothing here extracts an archive (tarfile's `data` filter alone is no defence on
Pythons before 3.11.13, 3.12.11 and 3.13.4: CVE-2025-4517): the tree is listed, every path and
link checked against the whole tree before anything is written, and the files written from
their blobs by descriptor, never through a link."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.operations.mining.git import Source, blobs, run
from pytest_scylla.run import hostile

FILE_MODES = {"100644": "100644", "100664": "100644", "100755": "100755"}
LINK, SUBMODULE = "120000", "160000"
MAX_LINKS = 40  # links followed resolving one link (the kernel's own limit)


class UnsafeTree(ValueError):
    """A tree that cannot be laid out safely: what in it is refused."""


@dataclass(frozen=True)
class Entry:
    mode: str
    oid: str
    path: str


def path_problem(path: str) -> str:
    """Why `path` (from a repository's history) is unsafe to write under a folder ("" when it
    is safe): absolute, empty, `.`, `..` or `.git` parts, control characters, not UTF-8."""
    if problem := hostile.rel_problem(path):
        return problem
    for part in path.split("/"):
        if part.lower().rstrip(". ") == ".git":
            return f"{path!r} holds a '.git' part"
    return ""


def entries(source: Source, sha: str) -> list[Entry]:
    """Every file, link and submodule of the commit's tree (paths as git stores them)."""
    found = []
    for line in run(source, ["ls-tree", "-r", "-z", "--full-tree", sha]).split(b"\0"):
        if line:
            meta, _, path = line.partition(b"\t")
            mode, _kind, oid = meta.decode().split()
            found.append(Entry(mode, oid, path.decode("utf-8", errors="surrogateescape")))
    return found


def check(found: list[Entry]) -> None:
    """Refuse a tree with an unsafe path, an unknown mode, a path twice, a file that is also a
    folder, or a link that leaves the tree (followed through the tree's own links)."""
    paths: set[str] = set()
    for entry in found:
        if problem := path_problem(entry.path):
            raise UnsafeTree(problem)
        if entry.mode not in FILE_MODES and entry.mode not in (LINK, SUBMODULE):
            raise UnsafeTree(f"{entry.path!r} has mode {entry.mode}")
        if entry.path in paths:
            raise UnsafeTree(f"{entry.path!r} is in the tree twice")
        paths.add(entry.path)
    for entry in found:
        parts = entry.path.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in paths:
                raise UnsafeTree(f"{'/'.join(parts[:i])!r} is a file and a folder")


def check_links(links: dict[str, str]) -> None:
    """Every link's target resolved on the tree itself (its links followed, never the disk's):
    refused when absolute or when it climbs above the tree's top."""
    for path, target in links.items():
        if target.startswith("/"):
            raise UnsafeTree(f"{path!r} is a link to an absolute path")
        if not stays_inside(links, path.split("/")[:-1], target):
            raise UnsafeTree(f"{path!r} is a link out of the tree")


def stays_inside(links: dict[str, str], where: list[str], target: str) -> bool:
    """Whether `target`, followed from the folder `where`, stays inside the tree."""
    pending, current, followed = target.split("/"), list(where), 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                return False
            current.pop()
            continue
        name = "/".join([*current, part])
        if name not in links:
            current.append(part)
            continue
        followed += 1
        if followed > MAX_LINKS or links[name].startswith("/"):
            return False
        pending = links[name].split("/") + pending
    return True


def lay_out(source: Source, sha: str, dest: Path) -> None:
    """The commit's tree written into `dest` (made here): refused with `UnsafeTree` before
    anything is written when anything in it is unsafe."""
    found = entries(source, sha)
    check(found)
    content = blobs(source, [e.oid for e in found if e.mode != SUBMODULE])
    links = {
        e.path: content[e.oid].decode("utf-8", errors="surrogateescape")
        for e in found
        if e.mode == LINK
    }
    if bad := [p for p, t in links.items() if not t or "\0" in t]:
        raise UnsafeTree(f"{bad[0]!r} is a link to nothing")
    check_links(links)
    dest.mkdir(parents=True, exist_ok=True)
    for entry in found:  # files first, links last: no write goes through a link
        if entry.mode in FILE_MODES:
            write(dest, entry.path, content[entry.oid], FILE_MODES[entry.mode])
        elif entry.mode == SUBMODULE:
            with hostile.parent_dir(dest, entry.path, []) as (fd, name):
                os.mkdir(name, 0o755, dir_fd=fd)
    for path, target in links.items():
        write(dest, path, target.encode("utf-8", errors="surrogateescape"), LINK)


def write(root: Path, path: str, data: bytes, mode: str = "100644") -> None:
    """`data` written at `path` under `root` by descriptor (a link for mode 120000), after the
    path is checked: no part of the way is ever followed out of `root`."""
    if problem := path_problem(path):
        raise UnsafeTree(problem)
    hostile.place(root, path, data, mode)


def delete(root: Path, path: str) -> None:
    """`path` under `root` removed if it is there (a link itself, never its target)."""
    if problem := path_problem(path):
        raise UnsafeTree(problem)
    hostile.delete(root, path)
