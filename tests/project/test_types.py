"""The type checker on the package: mypy with the project's settings (`[tool.mypy]`, strict)
finds nothing, and a ratchet holds the stricter checks the package does not pass yet.

The ratchet's checks (`STRICTER`) are mypy's `--disallow-any-explicit` (each `Any` written out:
the `dict[str, Any]` rows and payloads that should be a `TypedDict` or a dataclass) and a few
error codes strict mode leaves off. `mypy-ratchet.txt` lists each module that still fails them
with its count of errors: a module not listed that fails, or a count that grows, fails the test;
a count that drops fails it too, until the file is written again (`python
tests/project/test_types.py`), so the file only ever shrinks. One mypy run serves both checks
(the stricter one reports what the project's settings report, and more): about 17 s cold,
under 3 s with its cache (`.mypy_cache/ratchet`)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RATCHET = Path(__file__).with_name("mypy-ratchet.txt")
# error codes of the ratchet (each the code mypy gives an error of the flags below)
RATCHET_CODES = frozenset(
    {
        "explicit-any",
        "possibly-undefined",
        "redundant-expr",
        "truthy-bool",
        "ignore-without-code",
        "mutable-override",
    }
)
STRICTER = (
    "--disallow-any-explicit",
    *(f"--enable-error-code={code}" for code in sorted(RATCHET_CODES - {"explicit-any"})),
)
ERROR = re.compile(r"^(?P<path>[^:\n]+):\d+: error: .*\[(?P<code>[a-z-]+)\]$", re.M)


def _mypy(targets: list[str], cache: Path, cwd: Path = ROOT) -> tuple[list[str], Counter[str]]:
    """(the errors of the project's settings, the ratchet's errors per file) of mypy on
    `targets`."""
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            f"--config-file={ROOT / 'pyproject.toml'}",
            f"--cache-dir={cache}",
            *STRICTER,
            *targets,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = list(ERROR.finditer(found.stdout))
    if found.returncode not in (0, 1) or (found.returncode == 1 and not errors):
        pytest.fail(f"mypy did not run:\n{found.stdout[-2000:]}{found.stderr[-2000:]}")
    plain = [m[0] for m in errors if m["code"] not in RATCHET_CODES]
    return plain, Counter(m["path"] for m in errors if m["code"] in RATCHET_CODES)


def _listed() -> dict[str, int]:
    """The ratchet file: `<path> <count>` a line (# comments)."""
    listed = {}
    for line in RATCHET.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            path, count = line.split()
            listed[path] = int(count)
    return listed


def _verdict(counts: Counter[str], listed: dict[str, int]) -> tuple[list[str], list[str]]:
    """(what got worse, what got better) of the counts against the ratchet file."""
    worse = [
        f"{path}: {n} (ratchet: {listed.get(path, 0)})"
        for path, n in sorted(counts.items())
        if n > listed.get(path, 0)
    ]
    better = [
        f"{path}: {counts.get(path, 0)} (ratchet: {n})"
        for path, n in sorted(listed.items())
        if counts.get(path, 0) < n
    ]
    return worse, better


def test_the_type_checker_passes_and_the_ratchet_holds() -> None:
    plain, counts = _mypy(["pytest_scylla"], ROOT / ".mypy_cache" / "ratchet")
    assert plain == [], "mypy (pyproject's [tool.mypy]) reports:\n" + "\n".join(plain)
    worse, better = _verdict(counts, _listed())
    assert worse == [], (
        "stricter mypy (" + " ".join(STRICTER) + ") reports more than tests/project/"
        "mypy-ratchet.txt allows; type these (a TypedDict, a dataclass, a Protocol, `object`):\n"
        + "\n".join(worse)
    )
    assert better == [], (
        "fewer errors than tests/project/mypy-ratchet.txt lists: shrink it with `python "
        "tests/project/test_types.py`:\n" + "\n".join(better)
    )


def test_the_checks_report_a_module_with_an_error(tmp_path: Path) -> None:
    """Positive control: a type error fails the plain check, an `Any` counts in the ratchet,
    and a count above the file's is reported."""
    (tmp_path / "wrong.py").write_text("def f() -> int:\n    return 'x'\n")
    (tmp_path / "loose.py").write_text(
        "from typing import Any\n\n\ndef g(x: Any) -> int:\n    return 1\n"
    )
    plain, counts = _mypy(["wrong.py", "loose.py"], ROOT / ".mypy_cache" / "control", tmp_path)
    [error] = plain
    assert "wrong.py:2: error: Incompatible return value" in error
    assert counts == Counter({"loose.py": 1})
    assert _verdict(counts, {}) == (["loose.py: 1 (ratchet: 0)"], [])
    assert _verdict(Counter(), {"loose.py": 1}) == ([], ["loose.py: 0 (ratchet: 1)"])


def _write() -> None:
    """Write the ratchet file from mypy's counts now (after they dropped)."""
    plain, counts = _mypy(["pytest_scylla"], ROOT / ".mypy_cache" / "ratchet")
    if plain:
        print("mypy reports errors (the test fails until they are fixed):", *plain, sep="\n")
    lines = [
        "# Modules that still fail tests/project/test_types.py's stricter mypy checks, with their",
        "# error counts (mostly an `Any` written out). Counts may only drop; rewrite with",
        "# `python tests/project/test_types.py` when they do.",
        *(f"{path} {n}" for path, n in sorted(counts.items())),
    ]
    RATCHET.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{RATCHET}: {len(counts)} modules, {sum(counts.values())} errors")


if __name__ == "__main__":
    _write()
