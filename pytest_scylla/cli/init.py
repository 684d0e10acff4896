"""`scylla init [DIR]`: an evaluation project started (pytest configuration, an example case,
.gitignore, CI workflows; existing files kept). What it writes is `cli.scaffold`'s."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import unwritable
from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `init` command on the `scylla` parser's subparsers."""
    ini = sub.add_parser(
        "init",
        help="start an evaluation project: pytest configuration, an "
        "example case, .gitignore, GitHub Actions and GitLab CI workflows "
        "(existing files are kept)",
    )
    ini.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=Path,
        help="the project folder, made if missing (default: .)",
    )
    ini.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.cli.scaffold import init, refused

    if unwritable("init", args.dir):
        return 2
    lines = init(args.dir)
    echo("\n".join(lines))
    if refused(lines):
        echo("scylla init: some files were not written (named above, with why)", file=sys.stderr)
        return 2
    echo(
        f"next: cd {args.dir} && pytest --scylla-oracle -n 2   (a simulated model; "
        "drop --scylla-oracle and set ANTHROPIC_API_KEY for a real run)"
    )
    return 0
