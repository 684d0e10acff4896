"""The bytecode the checks' Python may read: links to this interpreter's own compiled standard
library and pytest's packages, in a folder the sandbox shows read-only; never the agent's.

Without any bytecode, a check's Python compiles every module it imports from source: a check
that runs pytest spends 0.6 of its 1.4 CPU-seconds on that. Bytecode next to the sources cannot
be trusted: the agent, or an earlier check running its code, can plant a .pyc in the workspace
that stands in for the source a judge reads. So the checks' PYTHONPYCACHEPREFIX names a folder
of this process's own that holds links to the bytecode of the modules this process has loaded
from its interpreter's standard library and the test runner's packages, only where the sandbox
shows those read-only. Not every module: a link costs about 0.1 ms to make, and a process that
has loaded pandas and scipy holds 5,000 modules. Nothing else has an entry there: the
workspace's modules and the hidden tests are compiled from their source, as before. A link gone
stale (a package upgraded since) is refused by Python's own check of the source's size and
modification time.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from pytest_scylla.core.tempdirs import claim_private, release_private

PREFIX = "scylla-pyc-"
# what the checks' Python most often loads: the standard library, and pytest with what it needs
LINKED = frozenset(sys.stdlib_module_names) | {
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "py",
}


def library() -> list[Path]:
    """This interpreter's library folders: its standard library and site-packages."""
    return [
        Path(sysconfig.get_path(kind)) for kind in ("stdlib", "platstdlib", "purelib", "platlib")
    ]


def _roots(folders: Iterable[Path], readonly: Iterable[Path]) -> tuple[str, ...]:
    """The `folders` (resolved) that lie under a read-only path."""
    shown = [Path(p).resolve() for p in readonly]
    found = {os.path.realpath(folder) for folder in folders}
    return tuple(sorted(r for r in found if any(Path(r).is_relative_to(p) for p in shown)))


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    return any(path.startswith(root + os.sep) for root in roots)


def mirror(
    into: Path,
    readonly: Iterable[Path],
    modules: Iterable[ModuleType] | None = None,
    folders: Iterable[Path] | None = None,
) -> int:
    """Link into `into`, laid out as a PYTHONPYCACHEPREFIX, the bytecode of every module of
    `modules` (default: those of `LINKED` this process has loaded) whose source and bytecode
    files both lie in `folders` (default: `library()`) under a `readonly` path. Returns how
    many links."""
    roots = _roots(library() if folders is None else folders, readonly)
    if modules is None:
        modules = [
            module for name, module in list(sys.modules.items()) if name.partition(".")[0] in LINKED
        ]
    made = 0
    for module in modules:
        spec = getattr(module, "__spec__", None)
        source, cached = getattr(spec, "origin", None), getattr(spec, "cached", None)
        if not (
            isinstance(source, str)
            and isinstance(cached, str)
            and source.endswith(".py")
            and os.path.isabs(source)
        ):
            continue
        real_source, real_cached = os.path.realpath(source), os.path.realpath(cached)
        if not (
            _inside(real_source, roots)
            and _inside(real_cached, roots)
            and os.path.isfile(real_cached)
        ):
            continue
        # where a check's Python looks: under the folder it found the source in, as spelled
        for folder in {os.path.dirname(source), os.path.dirname(real_source)}:
            link = into / folder.lstrip(os.sep) / os.path.basename(real_cached)
            if not os.path.lexists(link):
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(real_cached)
                made += 1
    return made


def prefix(readonly: Iterable[Path]) -> Path | None:
    """A new private folder mirroring this process's bytecode (see `mirror`); None when it
    cannot be made (the checks then read no bytecode, and are only slower)."""
    into = claim_private(PREFIX)
    try:
        mirror(into, readonly)
    except OSError:
        release_private(into)
        return None
    return into
