"""`scylla plan PYTEST ARGS`: runs, cost and time estimated before anything is spent (pytest
--scylla-plan: collects, runs nothing). Everything after `plan` is pytest's, options first
too (`main` hands it over before parsing)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """The `plan` command on the `scylla` parser's subparsers."""
    pln = sub.add_parser(
        "plan",
        help="estimate runs, cost and time before spending anything "
        "(runs pytest --scylla-plan: collects, runs nothing)",
    )
    pln.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        metavar="PYTEST ARGS",
        help="the pytest arguments of the session to plan, e.g. cases/ -n 4 "
        "--scylla-runs=10 --scylla-out=reports/main",
    )
    pln.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return plan(args.pytest_args)


def plan(pytest_args: list[str]) -> int:
    import subprocess

    return subprocess.call([sys.executable, "-m", "pytest", "-qq", "--scylla-plan", *pytest_args])
