"""The run's workspace held by identity, not by name.

The agent can write in its private folder: it can rename its workspace and leave a link to a
host folder (or another folder) in its place, in its turn or from code a check imports. A
host-side step that then opened `private/work` by name would restore, delete, copy, diff and
show the judges whatever the agent put there. So the harness opens the private folder and the
workspace before the agent starts (never following a link) and keeps both descriptors:

- before each host-side step after the agent (the scan, the diff, the integrity restore, each
  check, the hidden copies, the judges' evidence, reading or keeping the workspace) `check`
  asks whether the names still are those very folders (same device and inode, no link);
- the host-side steps work through the workspace's descriptor (`root`, a /proc/self/fd path:
  opening it reaches that directory whatever its name has become), so not even a swap between
  the check and the step can redirect them.

A mismatch is for good (`replaced` stays set): the runner records a `workspace_replaced`
finding, fails the run and does nothing more with the workspace.

Under a sandbox that copies the run's folder back (docker copy mode), every copy makes a new
workspace folder on the host, where the agent cannot act: `check` takes the new one, provided
it is a real directory (a link that came back is the same finding).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pytest_scylla.run.hostile_git import HELD

KIND = "workspace_replaced"  # the integrity finding's kind
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Pin:
    """The private folder and its workspace `name`, opened before the agent starts."""

    def __init__(self, private: Path, name: str = "work", copies_back: bool = False) -> None:
        self.private, self.name, self.copies_back = private, name, copies_back
        self.replaced = ""  # why the folders are no longer the run's own ('' while they are)
        self._top = os.open(private, DIRECTORY)
        try:
            self._work = os.open(name, DIRECTORY, dir_fd=self._top)
        except OSError:
            os.close(self._top)
            raise

    @property
    def root(self) -> Path:
        """The workspace as the harness reaches it: through its descriptor, never its name."""
        return Path(f"{HELD}{self._work}")

    def check(self) -> str:
        """'' while the private folder and the workspace are the ones opened before the agent
        (under copy-back: a real directory, then held); else why not, for good."""
        if not self.replaced:
            self.replaced = self._private() or (
                self._renew() if self.copies_back else self._workspace()
            )
        return self.replaced

    def _private(self) -> str:
        try:
            now = os.stat(self.private, follow_symlinks=False)
        except OSError as exc:
            return f"the run's folder {self.private} is gone ({exc.strerror})"
        if not _same(now, os.fstat(self._top)):
            return f"the run's folder {self.private} was replaced"
        return ""

    def _workspace(self) -> str:
        try:
            now = os.stat(self.name, dir_fd=self._top, follow_symlinks=False)
        except OSError:
            return f"the workspace folder '{self.name}' was removed or renamed by the agent"
        if stat.S_ISLNK(now.st_mode):
            return (
                f"the workspace folder '{self.name}' was renamed by the agent and a symbolic "
                f"link put in its place (to {_target(self._top, self.name)!r})"
            )
        if not _same(now, os.fstat(self._work)):
            return (
                f"the workspace folder '{self.name}' was renamed by the agent and another "
                "put in its place"
            )
        return ""

    def _renew(self) -> str:
        """The workspace the latest copy back made (the host's own), held from now on."""
        try:
            fresh = os.open(self.name, DIRECTORY, dir_fd=self._top)
        except OSError:
            kind = _kind(self._top, self.name)
            return (
                f"the workspace folder '{self.name}' came back from the sandbox as {kind}, "
                "not a directory"
            )
        os.close(self._work)
        self._work = fresh
        return ""

    def close(self) -> None:
        for fd in (self._work, self._top):
            if fd >= 0:
                os.close(fd)
        self._work = self._top = -1


def _target(top: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=top)
    except OSError:
        return "?"


def _kind(top: int, name: str) -> str:
    """What `name` is, in words (for a finding)."""
    try:
        mode = os.stat(name, dir_fd=top, follow_symlinks=False).st_mode
    except OSError:
        return "nothing"
    if stat.S_ISLNK(mode):
        return f"a symbolic link (to {_target(top, name)!r})"
    if stat.S_ISDIR(mode):
        return "a directory the harness cannot open"
    return "a file" if stat.S_ISREG(mode) else "something else"
