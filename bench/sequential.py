"""Simulate `--scylla-stop=decided`: error rates and runs used against the fixed design.

    python bench/sequential.py [--reps 2000] [--runs 30] [--alpha 0.05] [--margin 0.10]
    python bench/sequential.py --replay tests/fixtures/haiku/runs.csv [--by tier]

Each replication draws Bernoulli outcomes for a reference cell and 8 cells with planted pass
rates, runs the sequential rule of `pytest_scylla.results.sequential` on them in run order (a
cell runs while its comparison is open, the reference while any is), and counts its runs and
its decisions. No CLI, no session: the decisions are a function of the outcomes in order, as in
a session. Prints, per scenario: the chance of any wrong decision (family-wise), the share of
cells that differ and were decided in the right direction, the runs used as a share of the
fixed design's (9 cells x --runs), and "fixed: right": the share of the differing cells that
Fisher's exact test with Holm over the 8 finds when applied once, to all --runs runs of the
same outcomes (the fixed design's one look at the end, not a test after every run).
`--replay` runs the rule over a stored experiment's runs.csv instead, in its runs' order, and
prints each comparison's decision and what the rule would have spent against what the
experiment spent.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_scylla.results.decisions import replay  # noqa: E402
from pytest_scylla.results.sequential import decide_all  # noqa: E402

SCENARIOS = {  # name: (reference pass rate, the 8 cells' pass rates)
    "all equal (0.5)": (0.5, [0.5] * 8),
    "all equal (0.2)": (0.2, [0.2] * 8),
    "differ by 0.3-0.5 (from 0.2)": (0.2, [0.5, 0.6, 0.7, 0.5, 0.6, 0.7, 0.5, 0.7]),
    "differ by 0.3-0.5 (from 0.5)": (0.5, [0.8, 0.9, 1.0, 0.2, 0.1, 0.0, 0.8, 0.2]),
    "mix: 4 equal, 4 differ by 0.5 (from 0.4)": (0.4, [0.4] * 4 + [0.9] * 4),
    "mix: 4 equal, 4 differ by 0.3-0.5 (from 0.5)": (0.5, [0.5] * 4 + [0.8, 0.9, 0.2, 0.0]),
}


def wrong(status: str, cell: float, ref: float, margin: float) -> bool:
    if status == "better":
        return cell <= ref
    if status == "worse":
        return cell >= ref
    if status == "equivalent":
        return abs(cell - ref) >= margin
    return False


@functools.cache
def fisher(x: int, r: int, n: int) -> float:
    from scipy.stats import fisher_exact

    return float(fisher_exact([[x, n - x], [r, n - r]])[1])


def holm(pvalues: list[float], alpha: float) -> list[bool]:
    """Holm's step-down rejections (statsmodels' multipletests runs gc.collect on every call,
    5 ms each: 80 % of this bench)."""
    order = sorted(range(len(pvalues)), key=pvalues.__getitem__)
    reject = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (len(pvalues) - rank):
            break
        reject[i] = True
    return reject


def fixed_right(outcomes: dict[str, dict[int, bool]], cells: list[float], ref: float) -> int:
    """The fixed design's answer on the same outcomes: Fisher's exact test of every cell
    against the reference on all runs, Holm over the 8; the differing cells it finds."""
    r = sum(outcomes["ref"].values())
    n = len(outcomes["ref"])
    tests = []
    for i in range(len(cells)):
        x = sum(outcomes[f"c{i}"].values())
        tests.append((fisher(x, r, n), x > r))
    reject = holm([p for p, _ in tests], 0.05)
    return sum(
        bool(rej) and above == (p > ref)
        for rej, (_, above), p in zip(reject, tests, cells, strict=True)
        if abs(p - ref) >= 0.1
    )


def replicate(
    rng: numpy.random.Generator, ref: float, cells: list[float], args: argparse.Namespace
) -> tuple[bool, int, int, int, int]:
    """(any wrong decision, differing cells decided right, differing cells, runs used, the
    differing cells the fixed design finds on the same outcomes)."""
    outcomes = {"ref": dict(enumerate(rng.random(args.runs) < ref, 1))}
    for i, p in enumerate(cells):
        outcomes[f"c{i}"] = dict(enumerate(rng.random(args.runs) < p, 1))
    found = decide_all(
        outcomes,
        {f"c{i}": "ref" for i in range(len(cells))},
        args.runs,
        args.alpha,
        args.margin,
        intervals=False,
    )
    any_wrong, right, differ, used = False, 0, 0, []
    for i, p in enumerate(cells):
        d = found[f"c{i}"]
        used.append(d.at if d.closed else args.runs)
        any_wrong |= wrong(d.status, p, ref, args.margin)
        if abs(p - ref) >= args.margin:
            differ += 1
            right += d.status == ("better" if p > ref else "worse")
    fixed = fixed_right(outcomes, cells, ref) if differ else 0
    return any_wrong, right, differ, sum(used) + max(used), fixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=30, help="the maximum runs per cell")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--margin", type=float, default=0.10)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--replay", type=Path, help="a stored experiment's runs.csv to replay")
    parser.add_argument("--by", choices=("subtest", "tier"), default="subtest")
    args = parser.parse_args()
    if args.replay:
        return replayed(args)
    print(
        f"{args.reps} replications, 8 cells vs a reference, at most {args.runs} runs each, "
        f"alpha {args.alpha} (Bonferroni: {args.alpha / 8:.5f} per comparison), margin "
        f"{args.margin}"
    )
    print(f"{'scenario':<46}{'P(any wrong)':>13}{'right':>8}{'runs used':>11}{'fixed: right':>14}")
    for name, (ref, cells) in SCENARIOS.items():
        start = time.perf_counter()
        rng = numpy.random.default_rng(args.seed)
        results = [replicate(rng, ref, cells, args) for _ in range(args.reps)]
        wrong_rate = sum(r[0] for r in results) / args.reps
        differ = sum(r[2] for r in results)
        right = sum(r[1] for r in results) / differ if differ else float("nan")
        fixed = sum(r[4] for r in results) / differ if differ else float("nan")
        used = sum(r[3] for r in results) / (args.reps * 9 * args.runs)
        print(
            f"{name:<46}{wrong_rate:>13.3f}{right:>8.1%}{used:>11.1%}{fixed:>14.1%}"
            f"   ({time.perf_counter() - start:.1f} s)"
        )


def replayed(args: argparse.Namespace) -> None:
    import csv
    from collections import Counter

    with args.replay.open(encoding="utf-8") as handle:
        table, counts = replay(list(csv.DictReader(handle)), args.by, args.alpha, args.margin)
    for row in table:
        when = f" at run {row['decided_at']}" if row["decided_at"] else ""
        print(
            f"{row['cell']:<24} vs {row['reference']:<20} {row['decision']}{when}, "
            f"{row['runs_used']} of {row['runs']} runs"
        )
    print(dict(Counter(r["decision"] for r in table)))
    print(
        f"runs {counts['runs_used']:.0f} of {counts['runs']:.0f}; "
        f"cost ${counts['cost_used_usd']:.2f} of ${counts['cost_usd']:.2f} "
        f"(saved ${counts['cost_usd'] - counts['cost_used_usd']:.2f})"
    )


if __name__ == "__main__":
    main()
