"""Whether a path can serve as a folder: one to read must be a folder; one to write must be a
folder, or makeable as one, in a place this process can write. The path options check theirs
when pytest starts and the `scylla` command checks its own, so a bad path is one sentence
before anything runs, not a traceback (or a report written nowhere) at the end."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def shown(path: Path, base: Path) -> str:
    """`path` relative to `base` when inside it, else absolute."""
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)


def _not_a_folder(path: Path, base: Path) -> str:
    kind = "a file" if os.path.isfile(path) else "not a folder"
    return f"{shown(path, base)} is {kind}"


def read_problem(path: Path, base: Path, holding: str) -> str | None:
    """What keeps the absolute `path` from being a folder of `holding`; None when it is one."""
    if os.path.isdir(path):
        return None
    what = (
        _not_a_folder(path, base)
        if os.path.lexists(path)
        else f"{shown(path, base)} does not exist"
    )
    return f"{what}; expected a folder of {holding}"


def write_problem(path: Path, base: Path, probe: bool = True) -> str | None:
    """What keeps the absolute `path` from being a folder this process writes in (made if
    missing); None when nothing does. `probe` makes and removes an empty folder where the
    writing would start: permissions, read-only mounts and /proc all show up that way."""
    if os.path.lexists(path) and not os.path.isdir(path):
        return f"{_not_a_folder(path, base)}; expected a folder (made if missing)"
    nearest = path
    while not os.path.isdir(nearest):
        if nearest != path and os.path.lexists(nearest):
            return f"{_not_a_folder(nearest, base)}, so no folder can be made under it"
        nearest = nearest.parent
    if probe:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".scylla-probe-", dir=nearest))
        except OSError as exc:
            return f"cannot write in {shown(nearest, base)} ({exc.strerror or exc})"
    return None
