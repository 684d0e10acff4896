"""Measure `scylla cases mine` on real histories: candidates, verified, rejected by reason and
wall time, each verified case put through its oracle check.

    python bench/mining.py [--max 250] [--project cachetools] [--keep DIR]

The histories are the pinned bundles of `tests/fixtures/mining` (no network): each is cloned
into a temporary folder and mined there with the command a user runs, in bwrap. Per project it
prints the miner's own table (candidates, kept, rejected by reason), then two measures of the
kept cases: the share whose fail-to-pass list is exactly the tests whose outcome changed
between parent and fix (found apart from the miner: `tests/support/mining_truth.py`, pytest's
JUnit XML, in bwrap; goal 100 %), and the share passing their oracle check among those whose
solution changes a file over Claude Code's 25,000-token Read cap (about 100,000 bytes; goal
100 %); then a noop session over every kept case (each must fail)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "tests" / "fixtures" / "mining"
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=250, help="first-parent commits per project")
    parser.add_argument(
        "--project", action="append", help="cachetools, more-itertools, six, toolz (default: all)"
    )
    parser.add_argument(
        "--range", default=None, help="a revision range to mine instead of --max (A..B)"
    )
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
                    *([args.range] if args.range else ["--max", str(args.max)]),
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
                measures(repo, out, done.stdout)
                noop(out)


BIG = 100_000  # bytes: about 25,000 tokens, the most Claude Code's Read shows at once


def measures(repo: Path, out: Path, said: str) -> None:
    """The exactness of each kept case's fail-to-pass list, and the oracle on big files."""
    from pytest_scylla.cli.mine import _sandbox
    from tests.support.mining_truth import changed

    box = _sandbox("bwrap")
    exact, big, big_ok = [], 0, 0
    for case in sorted(p for p in out.iterdir() if (p / "test.yaml").is_file()):
        truth = changed(repo, case, box)
        exact.append(truth.fail_to_pass == truth.flipped)
        if not exact[-1]:
            print(f"  {case.name}: fail-to-pass {truth.fail_to_pass}, changed {truth.flipped}")
        solution = case / "solution"
        sizes = [p.stat().st_size for p in solution.rglob("*") if p.is_file()]
        if any(size > BIG for size in sizes):
            big += 1
            big_ok += f"ok   {case.name}" in said
    share = f"{sum(exact)}/{len(exact)} ({100 * sum(exact) / max(len(exact), 1):.0f} %)"
    print(f"fail-to-pass exactly the tests whose outcome changed: {share}")
    print(f"oracle check passed where the solution changes a file over {BIG} bytes: {big_ok}/{big}")


def noop(out: Path) -> None:
    """An oracle session with `noop` (the agent changes nothing) over every kept case: each
    must fail, its fail-to-pass check failing (the `solution` side is the command's own)."""
    from tests.support.mining_truth import fail_to_pass_failed, noop_runs

    began = time.monotonic()
    records = noop_runs(out)
    failed = sum(fail_to_pass_failed(r) for r in records)
    print(
        f"noop session: {len(records)} runs, {failed} failed with their fail-to-pass check "
        f"failing ({time.monotonic() - began:.0f} s)"
    )


if __name__ == "__main__":
    main()
