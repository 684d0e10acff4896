"""`scylla compare BASE CANDIDATE`: two experiments compared tier by tier and case by case
(compare.md, compare.json, compare.html); with --fail-on-regression, a CI gate."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import reading
from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `compare` command on the `scylla` parser's subparsers."""
    cmp = sub.add_parser(
        "compare",
        help="compare two experiments tier by tier and case by case: the change in "
        "pass rate, score, cost and Cost-of-Pass with bootstrap intervals and Holm-corrected "
        "tests; writes compare.md, compare.json and compare.html",
    )
    cmp.add_argument(
        "base", metavar="BASE", help="the base experiment folder (shards: folders joined by commas)"
    )
    cmp.add_argument(
        "candidate",
        metavar="CANDIDATE",
        help="the candidate experiment folder (shards: folders joined by commas)",
    )
    cmp.add_argument(
        "--out", type=Path, default=None, help="where to write (default: CANDIDATE/compare)"
    )
    cmp.add_argument(
        "--intersect",
        action="store_true",
        help="compare only the cases and tiers both sides have (else differing sets are refused)",
    )
    cmp.add_argument(
        "--fail-on-regression",
        type=float,
        default=None,
        metavar="POINTS",
        help="exit 1 when a pass rate drops significantly by more than POINTS "
        "percentage points (a CI gate)",
    )
    cmp.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.results.compare import differences as compare
    from pytest_scylla.results.compare import text as compare_text

    sides = [[Path(p) for p in str(given).split(",") if p] for given in (args.base, args.candidate)]
    out: Path = args.out or sides[1][0] / "compare"
    points = args.fail_on_regression
    if points is not None and not (math.isfinite(points) and points >= 0):
        echo(
            f"scylla compare: --fail-on-regression={points}: expected a number of "
            "percentage points >= 0, e.g. 5",
            file=sys.stderr,
        )
        return 2
    if problem := write_problem(out.resolve(), Path.cwd()):
        echo(f"scylla compare: --out {problem}", file=sys.stderr)
        return 2
    result = reading(
        "scylla compare", lambda: compare.compare(sides[0], sides[1], intersect=args.intersect)
    )
    if result is None:
        return 2
    compare_text.write(out, result, points)
    echo(compare_text.markdown(result, points), end="")
    echo(f"written: {out / 'compare.md'}, compare.json, compare.html")
    if points is not None and compare.regressions(result, points):
        return 1
    return 0
