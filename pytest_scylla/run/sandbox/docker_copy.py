"""The workspace by copy (`--scylla-docker-copy`): a run's private folder (workspace, HOME,
prompt) goes into its container as a tar through the engine's API, and comes back the same way,
for engines that cannot bind-mount the host's folders.

What comes back was written by the agent and is extracted as hostile data: nothing is written
outside the private folder (names with `..` or absolute names, writes through a link, hard
links to files outside are refused member by member), links are made as links and never
followed, device files and set-uid bits are dropped, and the whole copy is cut at `MAX_BYTES`.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from pytest_scylla.run.sandbox import SandboxError

MAX_BYTES = 2 << 30  # what a run's folder may weigh when it comes back
KEEP = ("owner.pid",)  # host-side files of the private folder that stay as they are


def push(container: Any, private: Path, clear: bool = True) -> None:
    """Replace the container's copy of `private` with the host's (the folder itself owned by
    this user, as on the host); `clear=False`: into an empty place (a cache, once)."""
    if clear:
        code, said = container.exec_run(
            ["sh", "-c", 'test ! -d "$0" || find "$0" -mindepth 1 -delete', str(private)]
        )
        if code != 0:
            raise SandboxError(
                f"could not clear the run's folder in its container: "
                f"{bytes(said).decode(errors='replace')[-300:]}"
            )
    buf = io.BytesIO()
    top = f"{private.name}/" if clear else ""  # the run's folder is made; a cache's exists
    with tarfile.open(fileobj=buf, mode="w") as tar:
        if clear:
            tar.add(str(private), arcname=private.name, recursive=False)
        for entry in sorted(private.iterdir()):
            if entry.name not in KEEP:  # links stay links (no dereference)
                tar.add(str(entry), arcname=f"{top}{entry.name}")
    where = private.parent if clear else private
    if not container.put_archive(str(where), buf.getvalue()):
        raise SandboxError(f"the engine refused the copy of {private}")


def pull(container: Any, private: Path) -> list[str]:
    """Replace the host's `private` with what the container holds; returns the members that
    were refused (as `name: why`)."""
    stream, _stat = container.get_archive(str(private) + "/.")
    with tempfile.TemporaryFile() as spool:
        size = 0
        for chunk in stream:
            size += len(chunk)
            if size > MAX_BYTES:
                raise SandboxError(
                    f"the run's folder in its container is over "
                    f"{MAX_BYTES >> 30} GiB: not copied back"
                )
            spool.write(chunk)
        spool.seek(0)
        landing = Path(tempfile.mkdtemp(prefix=".pull-", dir=private))
        try:
            refused = _extract(spool, landing)
            for entry in list(private.iterdir()):
                if entry != landing and entry.name not in KEEP:
                    _remove(entry)
            for entry in list(landing.iterdir()):
                if entry.name not in KEEP:
                    os.rename(entry, private / entry.name)
        finally:
            shutil.rmtree(landing, ignore_errors=True)
    return refused


def _extract(spool: Any, landing: Path) -> list[str]:
    refused: list[str] = []

    def member_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        try:
            if member.issym():  # placed like any member; its target is data, never followed
                placed = tarfile.data_filter(member.replace(linkname="x", deep=False), dest)
                return placed.replace(linkname=member.linkname, deep=False)
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError as exc:
            refused.append(f"{member.name}: {type(exc).__name__}")
            return None

    with tarfile.open(fileobj=spool, mode="r|") as tar:
        for member in tar:
            name = member.name.removeprefix("./")
            if name in ("", "."):
                continue
            member.name = name
            with contextlib.suppress(FileExistsError):
                tar.extract(member, landing, filter=member_filter)
    return refused


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink()
