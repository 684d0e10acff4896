"""The `scylla` command: `validate` checks cases, tiers and rubrics without running anything;
`report`, `compare`, `matrix`, `import` and `plan` work on stored experiments; `init` starts a
project; `image` manages the docker sandbox's images and `sandbox` checks a sandbox works;
`ablate plan` designs an ablation of a project's own agent configuration; `cases mine` makes
cases from a repository's history.

Each command is one module of `cli/` whose `register(subparsers)` adds its parser and sets its
handler (`set_defaults(handler=...)`); `COMMANDS` lists them in the order `scylla --help` shows
them, and `main` runs the handler of the command given. What commands share is in
`cli/common.py`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_scylla import __version__
from pytest_scylla.cli import (
    ablate,
    check_case,
    compare,
    image,
    importing,
    init,
    matrix,
    mine,
    plan,
    report,
    sandbox,
    validate,
)
from pytest_scylla.core.terminal import echo

COMMANDS = (
    validate,
    report,
    compare,
    matrix,
    init,
    importing,
    plan,
    check_case,
    image,
    sandbox,
    ablate,
    mine,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scylla",
        description="pytest-scylla: evaluate agentic coding CLIs by ablation tiers. Runs are "
        "started with pytest (pytest cases/ ...); this command checks inputs and "
        "works on stored results.",
    )
    parser.add_argument("--version", action="version", version=f"pytest-scylla {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["plan"] and not {"-h", "--help"} & set(given[1:2]):
        return plan.plan(given[1:])  # everything after `plan` belongs to pytest, options first too
    from pytest_scylla.config.extensions import ExtensionError

    try:  # an option whose choices are the registry's names reads the plugins' offers
        args = parser.parse_args(given)
    except ExtensionError as exc:
        echo(f"scylla: {exc}", file=sys.stderr)
        return 2
    if args.command is None:
        parser.print_help()
        return 0
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
