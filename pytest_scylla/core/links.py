"""Symbolic links in a user's project: followed for reading only while they stay inside it, never
written through.

A team's configuration read into tier files (`scylla ablate plan`) and a project scaffolded into a
folder (`scylla init`) must not carry a host file into every arm, nor write into another folder,
because a link in the project points there. A `LinkOut` names the link, where it points and what
to do."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

LOOP = "a folder that holds the link, so a copy would never end: remove it"
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW  # a new file, never through a link


class LinkOut(Exception):
    """A link that would take a read or a write out of the project (or a write through a link)."""

    def __init__(self, link: Path, target: str, why: str) -> None:
        self.link, self.target, self.why = link, target, why
        super().__init__(f"{link}: a link to {target}: {why}")


def _target(link: Path) -> str:
    return os.readlink(link)


def leaving(root: Path, path: Path) -> Path | None:
    """The first link on the way from `root` to `path` (`path` itself included) whose target
    lies outside `root`; None when every link on the way stays inside it."""
    base = root.resolve()
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if here.is_symlink() and not here.resolve().is_relative_to(base):
            return here
    return None


def _outside(root: Path, what: str) -> str:
    return (
        f"outside the project {root.resolve()}; {what} only from inside it: copy what it points "
        "to into the project instead of linking it"
    )


def check_read(root: Path, path: Path, what: str) -> None:
    """Raise `LinkOut` when reading `path` would follow a link out of `root`; `what` says who
    reads what (`scylla ablate plan reads a configuration`)."""
    link = leaving(root, path)
    if link is not None:
        raise LinkOut(link, _target(link), _outside(root, what))


def links_out(root: Path, folder: Path, what: str) -> Iterator[tuple[Path, str]]:
    """(link, why and what to do) for each link under `folder` that leaves `root` or loops back
    into a folder that holds it; links that stay inside are followed (each real folder walked
    once), as a copy that follows links would."""
    base = root.resolve()
    seen: set[Path] = set()
    todo = [folder]
    while todo:
        here = todo.pop()
        real = here.resolve()
        if real in seen or not here.is_dir():
            continue
        seen.add(real)
        for entry in sorted(here.iterdir()):
            if entry.is_symlink():
                target = entry.resolve()
                if not target.is_relative_to(base):
                    yield entry, _outside(root, what)
                    continue
                if entry.is_dir() and real.is_relative_to(target):
                    yield (
                        entry,
                        "a folder that holds the link, so a copy would never end: remove it",
                    )
                    continue
            if entry.is_dir():
                todo.append(entry)


def check_tree(root: Path, folder: Path, what: str) -> None:
    """Raise `LinkOut` for the first link under `folder` that `links_out` finds."""
    for link, why in links_out(root, folder, what):
        raise LinkOut(link, _target(link), why)


def write_new(root: Path, rel: str, text: str) -> bool:
    """Write `text` as the new file `root/rel`, making the folders on the way, through no link:
    each folder is opened by handle refusing links, the file created only where nothing is.
    False when something is already there (kept); `LinkOut` names a link on the way (or a
    dangling link in the file's place)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(len(parts) - 1):
            nxt = _folder(root, parts[: i + 1], fd)
            os.close(fd)
            fd = nxt
        try:
            out = os.open(parts[-1], NEW, 0o644, dir_fd=fd)
        except FileExistsError:
            if os.path.islink(root / rel) and not os.path.exists(root / rel):
                raise _no_write(root / rel) from None
            return False
        with os.fdopen(out, "w", encoding="utf-8") as handle:
            handle.write(text)
        return True
    finally:
        os.close(fd)


def _folder(root: Path, parts: list[str], fd: int) -> int:
    """The handle of folder `parts[-1]` inside `fd` (made if missing); a link there is refused."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(parts[-1], flags, dir_fd=fd)
    except FileNotFoundError:
        os.mkdir(parts[-1], 0o755, dir_fd=fd)
        return os.open(parts[-1], flags, dir_fd=fd)
    except OSError as exc:
        path = root.joinpath(*parts)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and path.is_symlink():
            raise _no_write(path) from None
        if exc.errno == errno.ENOTDIR:
            raise NotADirectoryError(
                exc.errno, "not a folder, where one is needed", str(path)
            ) from None
        raise


def _no_write(link: Path) -> LinkOut:
    return LinkOut(
        link,
        _target(link),
        "nothing is written through a link; make it a real folder or file, or remove it",
    )
