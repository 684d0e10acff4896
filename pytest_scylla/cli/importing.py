"""`scylla import SRC DEST`: a run tree of the paper's original implementation converted into an
experiment folder (`scylla report` rebuilds it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import reading, unwritable
from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `import` command on the `scylla` parser's subparsers."""
    imp = sub.add_parser(
        "import",
        help="convert a run tree of the paper's original implementation into an experiment folder",
    )
    imp.add_argument("src", type=Path)
    imp.add_argument("dest", type=Path)
    imp.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.results.importer import convert

    if unwritable("import", args.dest):
        return 2
    try:
        count = reading(
            "scylla import",
            lambda: convert(
                args.src, args.dest, lambda text: echo(f"scylla import: {text}", file=sys.stderr)
            ),
        )
    except (ValueError, KeyError) as exc:  # a shape no check knows yet
        echo(f"scylla import: {args.src}: cannot be read ({exc!r})", file=sys.stderr)
        return 2
    if count is None:
        return 2
    echo(
        f"imported {count} runs from {args.src} into {args.dest}; "
        f"rebuild with: scylla report {args.dest}"
    )
    return 0
