"""Measure `scylla cases mine` on real histories: candidates, verified, rejected by reason and
wall time, each verified case put through its oracle check.

    python bench/mining.py [--max 250] [--project cachetools] [--keep DIR]

The histories are the pinned bundles of `tests/fixtures/mining` (no network): each is cloned
into a temporary folder and mined there with the command a user runs, in bwrap."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "tests" / "fixtures" / "mining"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=250, help="first-parent commits per project")
    parser.add_argument("--project", action="append", help="cachetools, toolz (default: both)")
    parser.add_argument("--keep", type=Path, help="write the mined cases here, one folder each")
    args = parser.parse_args()
    for name in args.project or sorted(p.stem for p in BUNDLES.glob("*.bundle")):
        with tempfile.TemporaryDirectory(prefix="scylla-bench-mine-") as tmp:
            repo = Path(tmp) / name
            subprocess.run(
                ["git", "clone", "-q", str(BUNDLES / f"{name}.bundle"), str(repo)], check=True
            )
            out = (args.keep or Path(tmp)) / f"{name}-cases"
            began = time.monotonic()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest_scylla.cli",
                    "cases",
                    "mine",
                    str(repo),
                    "--max",
                    str(args.max),
                    "--out",
                    str(out),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            print(f"== {name}: exit {done.returncode}, {time.monotonic() - began:.0f} s wall")
            lines = done.stdout.splitlines()
            start = next(
                (i for i, line in enumerate(lines) if line.startswith("commits looked at")), 0
            )
            print("\n".join(line for line in lines if line.startswith(("ok ", "FAIL "))))
            print("\n".join(lines[start:]))
            if done.returncode:
                print(done.stderr[-2000:])
            if out.is_dir() and any(out.iterdir()):
                noop(out)


def noop(out: Path) -> None:
    """An oracle session with `noop` (the agent changes nothing) over every kept case: each
    must fail (the `solution` side is the command's own check)."""
    import json

    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scylla-bench-noop-") as where:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(out),
                "-q",
                "-p",
                "no:cacheprovider",
                "-o",
                f"scylla_cases={out}",
                "--scylla-oracle=noop",
                "--scylla-subtests=T0-01",
                "--scylla-runs=1",
                f"--scylla-out={where}",
                "--scylla-report=none",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        outcomes = [
            json.loads(p.read_text())["outcome"] for p in Path(where).glob("runs/*/run.json")
        ]
    passed = sum(o == "pass" for o in outcomes)
    print(
        f"noop session: {len(outcomes)} runs, {passed} passed, {len(outcomes) - passed} failed "
        f"({time.monotonic() - began:.0f} s)"
    )


if __name__ == "__main__":
    main()
