"""`scylla matrix DIR...`: the CLI support matrix of stored experiments, in markdown."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import reading
from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `matrix` command on the `scylla` parser's subparsers."""
    mtx = sub.add_parser(
        "matrix",
        help="the CLI support matrix of stored experiments: which "
        "tier components reached each CLI's model (from the ablation check of "
        "every run), which its adapter cannot express, in markdown",
    )
    mtx.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    mtx.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.config.extensions import ExtensionError, agents
    from pytest_scylla.results.support import matrix
    from pytest_scylla.results.tables import read_records

    dirs: list[Path] = args.dirs
    records = reading("scylla matrix", lambda: [r for d in dirs for r in read_records(d)])
    if records is None:
        return 2
    if not records:
        echo(f"scylla matrix: no runs in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    try:  # the registry's adapters (built in and plugins'): each says what its CLI cannot run
        adapters = agents(None)
    except ExtensionError as exc:
        echo(f"scylla matrix: {exc}", file=sys.stderr)
        return 2
    echo(matrix(records, adapters), end="")
    return 0
