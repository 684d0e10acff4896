"""Private temp folders (a run's workspace and HOME, a gateway's socket folder), each marked
with the pid of the process that made it, so that the next session can remove the ones whose
process is gone (a SIGKILLed session) and leave alone those of live processes (another session
on this host)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

OWNER_FILE = "owner.pid"  # in each private folder: who may remove it


# a run's folder; a gateway's socket folder; the judge service's; the checks' bytecode links
PRIVATE_PREFIXES = ("scylla-run-", "scylla-gw-", "scylla-judge-", "scylla-pyc-")

_claimed: set[Path] = set()  # this process's private folders not yet removed


def claim_private(prefix: str = "scylla-run-") -> Path:
    """A private temp folder (a run's, or a gateway's), marked with this process's pid so that
    `clean_stale` can remove it once this process is gone."""
    private = Path(tempfile.mkdtemp(prefix=prefix))
    _claimed.add(private)
    (private / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
    return private


def release_private(private: Path) -> None:
    """Remove a private folder. If that is cut short (Ctrl-C while a big workspace is being
    removed), the folder stays claimed and `release_all` finishes the job at the session's end."""
    shutil.rmtree(private, ignore_errors=True)
    if not private.exists():
        _claimed.discard(private)


def claimed() -> frozenset[Path]:
    """The private folders this process holds now."""
    return frozenset(_claimed)


def release_all(keep: frozenset[Path] = frozenset()) -> list[Path]:
    """Remove every private folder this process still holds but `keep` (at a session's end: the
    runs an interruption cut short, whatever phase it cut; `keep`: what the process held before
    the session, e.g. a session run inside another). Returns those that were left."""
    left = sorted(_claimed - keep)
    for private in left:
        release_private(private)
    return left


def alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie, killed but not yet reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def clean_stale(temp_root: Path | None = None) -> list[Path]:
    """Remove the run and gateway folders left in the temp dir by processes that are gone (a
    SIGKILLed session); folders of live processes (another session on this host) are left
    alone."""
    root = temp_root or Path(tempfile.gettempdir())
    removed = []
    for folder in sorted(f for prefix in PRIVATE_PREFIXES for f in root.glob(f"{prefix}*")):
        owner = folder / OWNER_FILE
        try:
            pid = int(owner.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue  # not ours to judge (no owner file yet, or not a folder)
        if not alive(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
