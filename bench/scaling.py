"""How a session scales with xdist workers when runs wait on the model, and its fixed costs.

    python bench/scaling.py [--workers 1,2,4,8] [--latency 1] [--select "test-001 and T0"]
                            [--runs 1] [--first-runs 1] [--agent claude-code] [--sandbox auto]
                            [--repeat 1]

Runs the same selection (default: case test-001 under tier T0, its 16 subtests, `--runs` runs
each; the first worker count `--first-runs` each) with the oracle at each worker count, every
model call delayed by `--latency` (SCYLLA_ORACLE_LATENCY: seconds, or a distribution such as
`lognormal:5,0.5`, drawn per run key and call), the terminal report only. For each: the
session's wall time, its throughput against the first worker count, the median run and its wait
for a start slot (`--scylla-starts`), the workers' start-up (session start to each worker's
first run), the session's fixed costs (before its first run starts, after its last ends), and
from /proc, sampled every 0.5 s: the machine's busy CPU-seconds over the session, the
controller's and the largest worker's proportional memory (PSS), and the whole session's peak
(every process under it, CLIs and sandboxes included). From the run records: the CPU-seconds of
a worker's start (its process's CPU when its first run began) and of a run's harness work (the
worker's own CPU during the run, the CLI and the checks' processes excluded). Then the same at
`--latency 0` without xdist: the fixed costs of a plain session. Sessions start from compiled
bytecode, as an installed package does (PYTHONDONTWRITEBYTECODE is dropped from their
environment). Prints a table; exits 0. The machine's numbers are noisy: compare ratios, and
repeat (`--repeat`) before trusting one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def _busy() -> float:
    """The machine's busy CPU-seconds since boot (all cores; /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICK  # idle and iowait are not busy


def _tree(root: int) -> dict[int, int]:
    """Every process under `root` (itself included): pid -> parent pid."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    inside, grew = {root}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in inside} - inside
        inside |= more
        grew = bool(more)
    return {p: parents.get(p, 0) for p in inside}


def _pss(pid: int) -> int:
    """A process's proportional set size in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class Sampler(threading.Thread):
    """Samples a session's process tree every 0.5 s: the controller's PSS, each worker's (the
    controller's Python children), and the whole tree's sum, keeping each one's peak."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.done = root, threading.Event()
        self.controller = self.worker = self.session = 0
        self.cpu: dict[int, float] = {}  # each process's CPU-seconds at its last sample

    def run(self) -> None:
        while not self.done.wait(0.5):
            tree = _tree(self.root)
            sizes = {pid: _pss(pid) for pid in tree}
            workers = [sizes[p] for p, parent in tree.items() if parent == self.root]
            self.controller = max(self.controller, sizes.get(self.root, 0))
            self.worker = max([self.worker, *workers])
            self.session = max(self.session, sum(sizes.values()))
            for pid in [self.root, *(p for p, parent in tree.items() if parent == self.root)]:
                with contextlib.suppress(OSError, ValueError, IndexError):
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    self.cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK


def session(
    workers: int,
    latency: str,
    select: str,
    agent: str,
    cache: Path,
    out: Path,
    sandbox: str = "auto",
    runs: int = 1,
) -> dict[str, float]:
    """One session; its wall time, fixed costs and worker start-ups, in seconds; its CPU and
    memory."""
    env = {**os.environ, "SCYLLA_ORACLE_LATENCY": latency}
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
        f"--scylla-runs={runs}",
        *(["-n", str(workers)] if workers else ["-p", "no:xdist"]),
    ]
    busy, began = _busy(), time.time()
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        sampler = Sampler(proc.pid)
        sampler.start()
        code = proc.wait(timeout=3600)
        ended, busy = time.time(), _busy() - busy
        sampler.done.set()
        sampler.join()
        log.seek(0)
        text = log.read()
    if code != 0:
        sys.exit(f"session failed ({' '.join(argv)}):\n{text[-4000:]}")
    recs = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    starts = sorted(datetime.fromisoformat(r["started_at"]).timestamp() for r in recs)
    ends = [datetime.fromisoformat(r["finished_at"]).timestamp() for r in recs]
    firsts = starts[: max(1, workers)]  # each worker's first run starts when it is ready
    failed = [r["run_key"] for r in recs if r["outcome"] != "pass"]
    if failed:
        print(f"  {len(failed)} runs did not pass: {failed[:5]}", file=sys.stderr)
    timings = [r["timings"] for r in recs]
    return {
        "runs": len(recs),
        "failed": len(failed),
        "wall": ended - began,
        "before": starts[0] - began,
        "after": ended - max(ends),
        "ready_last": firsts[-1] - began,
        "run_s": statistics.median(t["total_s"] for t in timings),
        "agent_s": _median(t.get("agent_s") for t in timings),
        "wait_s": _median(t.get("start_wait_s") for t in timings),
        "checks_s": _median(t.get("checks_s") for t in timings),
        "judge_s": _median(r.get("judge_duration_seconds") for r in recs),
        "busy": busy,
        "controller_mb": sampler.controller / 2**20,
        "worker_mb": sampler.worker / 2**20,
        "session_mb": sampler.session / 2**20,
        "controller_cpu": sampler.cpu.get(proc.pid, float("nan")),
        "start_cpu": _median(_first_runs(recs)),
        "harness_cpu": _median(t.get("harness_cpu_s") for t in timings),
        "agent_cpu": _median(t.get("agent_cpu_s") for t in timings),
    }


def _first_runs(recs: list[dict]) -> list[float]:
    """The process CPU each worker (or the session) had spent when its first run began."""
    firsts: dict[str, dict] = {}
    for rec in sorted(recs, key=lambda r: r["started_at"]):
        firsts.setdefault(rec.get("worker", ""), rec)
    return [r["timings"].get("process_cpu_before_s") for r in firsts.values()]


def _median(values: object) -> float:
    found = [v for v in values if v is not None]  # type: ignore[attr-defined]
    return statistics.median(found) if found else float("nan")


COLUMNS = (
    ("workers", "{:>7}"),
    ("runs", "{:>4.0f}"),
    ("failed", "{:>6.0f}"),
    ("wall s", "{:>7.1f}"),
    ("x vs first", "{:>9.2f}x"),
    ("run s", "{:>6.2f}"),
    ("wait s", "{:>6.2f}"),
    ("agent s", "{:>7.2f}"),
    ("checks s", "{:>8.2f}"),
    ("judge s", "{:>7.2f}"),
    ("ready s", "{:>7.2f}"),
    ("busy CPU-s", "{:>10.1f}"),
    ("ctl CPU-s", "{:>9.1f}"),
    ("start CPU-s", "{:>11.2f}"),
    ("run CPU-s", "{:>9.3f}"),
    ("CLI CPU-s", "{:>9.2f}"),
    ("ctl MB", "{:>6.0f}"),
    ("worker MB", "{:>9.0f}"),
    ("session MB", "{:>10.0f}"),
)


def _row(n: int, row: dict[str, float], base: float) -> str:
    values = [
        n,
        row["runs"],
        row["failed"],
        row["wall"],
        row["runs"] / row["wall"] / base,
        row["run_s"],
        row["wait_s"],
        row["agent_s"],
        row["checks_s"],
        row["judge_s"],
        row["ready_last"],
        row["busy"],
        row["controller_cpu"],
        row["start_cpu"],
        row["harness_cpu"],
        row["agent_cpu"],
        row["controller_mb"],
        row["worker_mb"],
        row["session_mb"],
    ]
    return " ".join(fmt.format(v) for (_, fmt), v in zip(COLUMNS, values, strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--latency", default="1", help="seconds, or a SCYLLA_ORACLE_LATENCY form")
    ap.add_argument("--select", default="test-001 and T0")
    ap.add_argument("--runs", type=int, default=1, help="--scylla-runs (default 1)")
    ap.add_argument("--first-runs", type=int, default=None, help="for the first count")
    ap.add_argument("--agent", default="claude-code")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fixed", type=int, default=3, help="plain sessions for the fixed cost")
    ap.add_argument(
        "--sandbox",
        default="auto",
        help="--scylla-sandbox (default auto: docker when an engine and the image are there)",
    )
    args = ap.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="scylla-scaling-") as tmp:
        cache = Path(tmp) / "cache"
        # baselines, caches
        session(1, "0", args.select, args.agent, cache, Path(tmp) / "warm", args.sandbox)
        print(f"{args.select!r}, {args.agent}, latency {args.latency}, sandbox {args.sandbox}")
        print(" ".join(f"{name:>{len(fmt.format(0))}}" for name, fmt in COLUMNS))
        base = None
        for index, n in enumerate(counts):
            runs = args.first_runs if index == 0 and args.first_runs else args.runs
            found = [
                session(
                    n,
                    args.latency,
                    args.select,
                    args.agent,
                    cache,
                    Path(tmp) / f"n{n}-{i}",
                    args.sandbox,
                    runs,
                )
                for i in range(args.repeat)
            ]
            row = {k: statistics.median(f[k] for f in found) for k in found[0]}
            base = base or row["runs"] / row["wall"]
            print(_row(n, row, base), flush=True)
        fixed = [
            session(0, "0", args.select, args.agent, cache, Path(tmp) / f"fixed{i}", args.sandbox)
            for i in range(args.fixed)
        ]
        if fixed:
            before = statistics.median(f["before"] for f in fixed)
            after = statistics.median(f["after"] for f in fixed)
            print(
                f"fixed cost, no xdist, no latency: before the first run {before:.2f} s + after "
                f"the last {after:.2f} s = {before + after:.2f} s (median of {len(fixed)})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
