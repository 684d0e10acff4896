"""The host's files a bwrap sandbox shows read-only besides the system folders."""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path


@functools.lru_cache(maxsize=1)
def system_paths() -> tuple[Path, ...]:
    """Read-only paths outside /usr the sandboxed tools need: this Python's prefix, and for the
    agent CLI and its helpers their own files only (the command itself and its package folder),
    never a whole folder such as ~/.local that holds other programs and data."""
    paths: set[Path] = set()
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        p = Path(prefix).resolve()
        if not _under_usr(p):
            paths.add(p)
    for tool in ("claude", "node", "npx", "git", "ruff"):
        found = shutil.which(tool)
        if found:
            for p in (Path(found).absolute(), _install_root(Path(found).resolve())):
                if not _under_usr(p) and not any(p.is_relative_to(q) for q in paths):
                    paths.add(p)
    return tuple(sorted(paths))


def _under_usr(path: Path) -> bool:
    return path.is_relative_to("/usr") or path.is_relative_to("/etc")


def _install_root(target: Path) -> Path:
    """The folder a command's real file belongs to: its npm package (the nearest folder with a
    package.json inside node_modules), else the file alone."""
    for folder in target.parents:
        scope = folder.parent.parent if folder.parent.name.startswith("@") else folder.parent
        if scope.name == "node_modules" and (folder / "package.json").is_file():
            return folder
        if folder.name == "node_modules":
            break
    return target
