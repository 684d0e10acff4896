"""The test files beyond a commit's own that its pass-to-pass tests come from: those at the
commit that test a module it changes, named after it (`recipes.py` -> `test_recipes.py` or
`recipes_test.py`) or importing it (`import pkg.recipes`, `from pkg.recipes import …`,
`from pkg import recipes`). A few at most, named ones first: each adds to every run's time."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from pytest_scylla.operations.mining.history import TEST_FILE, Commit
from pytest_scylla.run import hostile

MOST = 4  # related test files added to a commit's own
WALKED = 20_000  # files looked at in a tree, at most
READ = 1_000_000  # bytes of a test file read to find its imports


def modules(commit: Commit) -> list[tuple[str, ...]]:
    """The dotted names of the Python modules the commit changes (`src/` left out)."""
    found = []
    for change in commit.others:
        if not change.is_source:
            continue
        parts = PurePosixPath(change.path).with_suffix("").parts
        parts = parts[1:] if parts[:1] == ("src",) and len(parts) > 1 else parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts and all(p.isidentifier() for p in parts):
            found.append(tuple(parts))
    return sorted(set(found))


def imports(text: str, module: tuple[str, ...]) -> bool:
    """Whether Python source `text` imports `module` (one statement on one line)."""
    dotted = re.escape(".".join(module))
    ways = [rf"import\s+{dotted}\b", rf"from\s+{dotted}\s+import\b"]
    if len(module) > 1:
        package, name = re.escape(".".join(module[:-1])), re.escape(module[-1])
        ways.append(rf"from\s+{package}\s+import\s+[^#\n]*\b{name}\b")
    return re.search(rf"^\s*(?:{'|'.join(ways)})", text, re.MULTILINE) is not None


def test_files(tree: Path) -> list[str]:
    """The test files in `tree` (relative, sorted), no link followed, hidden folders skipped."""
    found: list[str] = []
    seen = 0
    for top, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        rel = PurePosixPath(Path(top).relative_to(tree).as_posix())
        for name in files:
            seen += 1
            if name != "conftest.py" and TEST_FILE.match(name):
                found.append(str(rel / name))
        if seen > WALKED:
            break
    return sorted(f for f in found if not (tree / f).is_symlink())


def related(tree: Path, commit: Commit, own: list[str], most: int = MOST) -> list[str]:
    """The test files of `tree` (the commit's) beyond `own` that test what the commit changes
    (see the module's text), at most `most`."""
    changed = modules(commit)
    if not changed:
        return []
    stems = {m[-1] for m in changed}
    files = [f for f in test_files(tree) if f not in own]
    named = [
        f
        for f in files
        if PurePosixPath(f).stem in {f"test_{s}" for s in stems} | {f"{s}_test" for s in stems}
    ]
    importing: list[str] = []
    for file in files:
        if file in named or len(named) + len(importing) >= most:
            continue
        try:
            text = hostile.read(tree, file, READ).decode("utf-8", errors="replace")
        except (hostile.HostileDataError, OSError):
            continue
        if any(imports(text, m) for m in changed):
            importing.append(file)
    return (named + importing)[:most]
