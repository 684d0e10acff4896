"""`scylla sandbox [KIND]`: whether a sandbox works on this machine before a session (or a CI
job) counts on it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from pytest_scylla.cli.common import Registered
from pytest_scylla.core.terminal import echo

if TYPE_CHECKING:
    from pytest_scylla.run.sandbox import Sandbox


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
        help="the --scylla-sandbox value to check (default: auto)",
    ).choices = Registered(_kinds)  # `auto` and every registered sandbox that isolates
    box.add_argument(
        "--image",
        default="host",
        metavar="IMAGE",
        help="the --scylla-image the docker sandbox would run (default: host)",
    )
    box.set_defaults(handler=run)


def _kinds() -> list[str]:
    """`auto` and the registry's sandboxes (built in and plugins'), but `local`: it isolates
    nothing, so there is nothing to check."""
    from pytest_scylla.config.extensions import sandboxes

    return ["auto", *(name for name in sandboxes(None) if name != "local")]


def run(args: argparse.Namespace) -> int:
    """Which sandbox a session with `--scylla-sandbox=<kind>` would use here, or why none."""
    from pytest_scylla.config.extensions import ExtensionError, sandboxes
    from pytest_scylla.run.sandbox import SandboxError, choose

    try:
        chosen, note = choose(
            args.kind, real_model=True, image=args.image, sandboxes=sandboxes(None)
        )
        _check(chosen, args.image)
    except (SandboxError, ExtensionError) as exc:
        echo(f"scylla sandbox: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, SandboxError) else 2
    name = chosen.name if args.kind == "auto" else args.kind
    why = f" {note.partition(' ')[2]}" if note else ""  # "(auto: why it chose it)"
    echo(f"sandbox {name} works here{why}" + (f"; image {args.image}" if name == "docker" else ""))
    return 0


def _check(chosen: type[Sandbox], image: str) -> None:
    """Beyond `choose`'s own checks: the docker sandbox's engine and image; a plugin's sandbox
    built once with no arguments (a `SandboxError` it raises is why it cannot be used here)."""
    from pytest_scylla.run.sandbox import SandboxError, builtin, docker_unusable
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    if issubclass(chosen, Docker):
        problem = docker_unusable(image)
        if problem is not None:
            advice = (
                "`scylla image build --host` once"
                if image == "host"
                else f"`scylla image build --tag {image}`"
            )
            raise SandboxError(
                f"--scylla-sandbox=docker: {problem}; to fix: {advice}, "
                "with a Docker engine this user can reach"
            )
    elif chosen not in builtin().values():
        chosen()
