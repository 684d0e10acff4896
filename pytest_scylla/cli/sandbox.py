"""`scylla sandbox [KIND]`: whether a sandbox works on this machine before a session (or a CI
job) counts on it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pytest_scylla.core.terminal import echo

SANDBOXES = ("auto", "bwrap", "docker")


def register(sub: Any) -> None:
    """The `sandbox` command on the `scylla` parser's subparsers (`scylla sandbox [KIND]
    [--image IMAGE]`)."""
    box = sub.add_parser(
        "sandbox",
        help="check that a sandbox works here before a session "
        "counts on it (a CI step): says which one a session would use, or "
        "why none can and what to do; exit code 1 when it cannot",
    )
    box.add_argument(
        "kind",
        nargs="?",
        default="auto",
        choices=SANDBOXES,
        help="the --scylla-sandbox value to check (default: auto)",
    )
    box.add_argument(
        "--image",
        default="host",
        metavar="IMAGE",
        help="the --scylla-image the docker sandbox would run (default: host)",
    )
    box.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Which sandbox a session with `--scylla-sandbox=<kind>` would use here, or why none."""
    from pytest_scylla.run.sandbox import SandboxError, choose, docker_unusable

    try:
        chosen, note = choose(args.kind, real_model=True, image=args.image)
        if chosen.__name__ == "Docker":
            problem = docker_unusable(args.image)
            if problem is not None:
                advice = (
                    "`scylla image build --host` once"
                    if args.image == "host"
                    else f"`scylla image build --tag {args.image}`"
                )
                raise SandboxError(
                    f"--scylla-sandbox=docker: {problem}; to fix: {advice}, "
                    "with a Docker engine this user can reach"
                )
    except SandboxError as exc:
        echo(f"scylla sandbox: {exc}", file=sys.stderr)
        return 1
    name = chosen.__name__.lower()
    why = f" {note.partition(' ')[2]}" if note else ""  # "(auto: why it chose it)"
    echo(f"sandbox {name} works here{why}" + (f"; image {args.image}" if name == "docker" else ""))
    return 0
