"""What comes back from a container (`--scylla-docker-copy`), extracted member by member as
hostile data, never by tarfile's own extraction: its `data` filter alone is no defence on
Pythons before 3.11.13, 3.12.11 and 3.13.4 (CVE-2025-4517: a chain of links whose expansion
passes PATH_MAX, where the filter's `realpath` stops resolving, lets a member out).

Every name is checked first (nothing absolute, no empty, `.` or `..` part, no control
character); every member is then made from the landing folder down, one folder at a time, each
opened by descriptor without following a link (`hostile.parent_dir`): a member under a link or
a file an earlier member placed is refused, never written through it. Files are made new
(never opened when something is there), their data streamed, their set-uid, set-gid and sticky
bits and the write bits of others dropped; links are made as links and never followed; a hard
link only to a file this archive placed; FIFOs, devices, sparse members and anything else are
refused. A refused member is told as why, the copy goes on."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from pytest_scylla.run import hostile

CHUNK = 1 << 16  # bytes of a file written at a time
REFUSED = {  # what making a member met, told as why it was not copied back
    errno.ELOOP: "a link on the way: never followed",
    errno.ENOTDIR: "a file or a link on the way: never followed",
    errno.EEXIST: "already there: an archive names each place once",
    errno.ENAMETOOLONG: "a name too long",
    errno.EMLINK: "too many hard links to one file",
}
SPECIAL = "a FIFO, a device or a sparse file: not copied back"


def normal(name: str) -> str:
    """A member's name as the engine spells it (`./work/x`), relative to the landing."""
    return name.removeprefix("./")


def file_mode(mode: int) -> int:
    """A file's permissions as tarfile's `data` filter keeps them: no set-uid, set-gid or sticky
    bit, no write for others, read and write for its owner, executable only if by its owner."""
    mode &= 0o755
    if not mode & stat.S_IXUSR:
        mode &= ~0o111
    return mode | 0o600


@dataclass
class Landing:
    """The folder members land in, and the files placed there so far (what a hard link may
    name)."""

    root: Path
    files: set[str] = field(default_factory=set)

    def place(self, tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
        """`member` made under the root; why it was refused ("" when it was placed)."""
        name = normal(member.name)
        if name in ("", "."):
            return ""  # the landing itself
        if problem := hostile.rel_problem(name):
            return problem
        if member.issparse() or not (
            member.isreg() or member.isdir() or member.issym() or member.islnk()
        ):
            return SPECIAL
        try:
            with hostile.parent_dir(self.root, name, [], replace=False) as (fd, last):
                return self._make(tar, member, fd, last)
        except OSError as exc:
            if exc.errno in REFUSED:
                return REFUSED[exc.errno]
            raise

    def _make(self, tar: tarfile.TarFile, member: tarfile.TarInfo, fd: int, last: str) -> str:
        name = normal(member.name)
        if member.isdir():
            return _folder(fd, last)
        if member.issym():
            if not member.linkname or "\0" in member.linkname:
                return "a link to nothing"
            os.symlink(member.linkname, last, dir_fd=fd)  # data: never followed
            return ""
        if member.islnk():
            target = normal(member.linkname)
            if target not in self.files:
                return "a hard link to no file this copy placed: not copied back"
            with hostile.parent_dir(self.root, target, [], make=False) as (at, source):
                os.link(source, last, src_dir_fd=at, dst_dir_fd=fd, follow_symlinks=False)
        else:
            _write(tar, member, fd, last)
        self.files.add(name)
        return ""


def _folder(fd: int, name: str) -> str:
    """A folder made (one already there from an earlier member's way is kept)."""
    try:
        os.mkdir(name, 0o755, dir_fd=fd)
    except FileExistsError:
        if not stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise
    return ""


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, fd: int, name: str) -> None:
    """The member's data, streamed into a new file `name` in `fd` (never one that is there)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    data = tar.extractfile(member)
    if data is None:  # never for a regular member
        raise tarfile.ReadError(f"{member.name}: no data")
    with os.fdopen(os.open(name, flags, 0o600, dir_fd=fd), "wb") as out:
        while chunk := data.read(CHUNK):
            out.write(chunk)
        out.flush()
        os.fchmod(out.fileno(), file_mode(member.mode))
        with contextlib.suppress(OSError, OverflowError, ValueError):  # a time out of range
            os.utime(out.fileno(), (member.mtime, member.mtime))
