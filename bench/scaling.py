"""How a session scales with xdist workers when runs wait on the model, and its fixed costs.

    python bench/scaling.py [--workers 1,2,4,8] [--latency 1] [--select "test-001 and T0"]
                            [--agent claude-code] [--sandbox auto] [--repeat 1]

Runs the same selection (default: case test-001 under tier T0, 16 runs) with the oracle at each
worker count, every model call delayed by `--latency` seconds (SCYLLA_ORACLE_LATENCY), the
terminal report only. For each: the session's wall time, its throughput against the first
worker count, the workers' start-up (session start to each worker's first run), and the
session's fixed costs: before its first run starts and after its last run ends (read from the
runs' millisecond start and finish times). Then the same at `--latency 0` without xdist: the
fixed costs of a plain session. Sessions start from compiled bytecode, as an installed package
does (PYTHONDONTWRITEBYTECODE is dropped from their environment). Prints a table; exits 0. The
machine's numbers are noisy: compare ratios, and repeat (`--repeat`) before trusting one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def session(
    workers: int,
    latency: float,
    select: str,
    agent: str,
    cache: Path,
    out: Path,
    sandbox: str = "auto",
) -> dict[str, float]:
    """One session; its wall time, fixed costs and worker start-ups, in seconds."""
    env = {**os.environ, "SCYLLA_ORACLE_LATENCY": str(latency)}
    # as an installed package starts: from compiled bytecode (pip compiles at install; pytest
    # caches its assertion rewrites), which a PYTHONDONTWRITEBYTECODE=1 shell would not write
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "cases",
        "-p",
        "no:cacheprovider",
        "-q",
        # hypothesis's plugin comes with this project's dev tools, not with pytest-scylla
        # (a user's session does not load it); it imports hypothesis at the session's end
        "-p",
        "no:hypothesispytest",
        "--scylla-oracle",
        f"--scylla-agent={agent}",
        f"--scylla-cache-dir={cache}",
        f"--scylla-out={out}",
        f"--scylla-sandbox={sandbox}",
        "-k",
        select,
        *(["-n", str(workers)] if workers else ["-p", "no:xdist"]),
    ]
    began = time.time()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    ended = time.time()
    if done.returncode != 0:
        sys.exit(f"session failed ({' '.join(argv)}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    recs = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    starts = sorted(datetime.fromisoformat(r["started_at"]).timestamp() for r in recs)
    ends = [datetime.fromisoformat(r["finished_at"]).timestamp() for r in recs]
    firsts = starts[: max(1, workers)]  # each worker's first run starts when it is ready
    return {
        "runs": len(recs),
        "wall": ended - began,
        "before": starts[0] - began,
        "after": ended - max(ends),
        "ready_last": firsts[-1] - began,
        "run_s": statistics.median(r["timings"]["total_s"] for r in recs),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--select", default="test-001 and T0")
    ap.add_argument("--agent", default="claude-code")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--sandbox",
        default="auto",
        help="--scylla-sandbox (default auto: docker when an engine and the image are there)",
    )
    args = ap.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="scylla-scaling-") as tmp:
        cache = Path(tmp) / "cache"
        session(
            1,
            0,
            args.select,
            args.agent,
            cache,
            Path(tmp) / "warm",  # baselines, caches
            args.sandbox,
        )
        print(
            f"{args.select!r}, {args.agent}, {args.latency:g} s per model call, sandbox "
            f"{args.sandbox}"
        )
        print(
            f"{'workers':>7} {'runs':>4} {'wall s':>7} {'x vs first':>10} {'run s':>6} "
            f"{'ready s':>7} {'before s':>8} {'after s':>7}"
        )
        base = None
        for n in counts:
            found = [
                session(
                    n,
                    args.latency,
                    args.select,
                    args.agent,
                    cache,
                    Path(tmp) / f"n{n}-{i}",
                    args.sandbox,
                )
                for i in range(args.repeat)
            ]
            row = {k: statistics.median(f[k] for f in found) for k in found[0]}
            throughput = row["runs"] / row["wall"]
            base = base or throughput
            print(
                f"{n:>7} {row['runs']:>4.0f} {row['wall']:>7.1f} {throughput / base:>9.2f}x "
                f"{row['run_s']:>6.2f} {row['ready_last']:>7.2f} {row['before']:>8.2f} "
                f"{row['after']:>7.2f}"
            )
        fixed = [
            session(0, 0, args.select, args.agent, cache, Path(tmp) / f"fixed{i}", args.sandbox)
            for i in range(max(3, args.repeat))
        ]
        before = statistics.median(f["before"] for f in fixed)
        after = statistics.median(f["after"] for f in fixed)
        print(
            f"fixed cost, no xdist, no latency: before the first run {before:.2f} s + after "
            f"the last {after:.2f} s = {before + after:.2f} s (median of {len(fixed)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
