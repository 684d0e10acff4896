"""`scylla image build|list|rm`: the docker sandbox's images (--scylla-sandbox=docker)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `image` command on the `scylla` parser's subparsers."""
    img = sub.add_parser("image", help="the docker sandbox's images (--scylla-sandbox=docker)")
    img_sub = img.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    _add_build_parser(img_sub)
    img_sub.add_parser(
        "list",
        help="the images pytest-scylla made on the Docker engine: tag, "
        "id, size, Claude Code version",
    )
    rm = img_sub.add_parser(
        "rm",
        help="remove images pytest-scylla made (never another image: use docker rmi for those)",
    )
    rm.add_argument("tags", nargs="+", metavar="TAG", help="as `scylla image list` shows them")
    img.set_defaults(handler=run)


def _add_build_parser(img_sub: Any) -> None:
    """`scylla image build` and its options."""
    bld = img_sub.add_parser(
        "build",
        help="build the agent image (the pinned Claude Code CLI, git, Python, Node) "
        "from the package's Dockerfile, or with --host set up the host toolchain image",
    )
    bld.add_argument(
        "--base",
        default=None,
        metavar="IMAGE",
        help="the image to build on, e.g. one with a case's toolchain; Debian-like "
        "(apt-get) (default: debian:bookworm-slim)",
    )
    bld.add_argument(
        "--tag",
        default=None,
        help="the new image's name (default: "
        "scylla-agent:<CLI version>); use it with --scylla-image=<tag>",
    )
    bld.add_argument(
        "--cli-version",
        default=None,
        metavar="VERSION",
        help="the Claude Code version to install (default: the pinned one)",
    )
    bld.add_argument(
        "--ca-bundle",
        type=Path,
        default=None,
        metavar="FILE",
        help="CA certificates the build trusts for its downloads (behind a "
        "TLS-inspecting proxy), e.g. /etc/ssl/certs/ca-certificates.crt",
    )
    bld.add_argument(
        "--host",
        action="store_true",
        help="only set up the host toolchain image (no download): an empty image "
        "into which this machine's system and CLI are bound read-only",
    )


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.run.sandbox import SandboxError

    try:
        if args.image_command == "build":
            return _build(args)
        if args.image_command == "list":
            return _list()
        return _remove(args.tags)
    except SandboxError as exc:
        echo(f"scylla image {args.image_command}: {exc}", file=sys.stderr)
        return 1


def _build(args: argparse.Namespace) -> int:
    from pytest_scylla.run.agents.claude_code import PINNED_VERSION
    from pytest_scylla.run.sandbox import images

    if args.ca_bundle is not None and not args.ca_bundle.is_file():
        echo(
            f"scylla image build: --ca-bundle {args.ca_bundle}: not a file; expected a PEM "
            "file of CA certificates",
            file=sys.stderr,
        )
        return 2
    if args.host:
        if args.base or args.tag or args.cli_version or args.ca_bundle:
            echo(
                "scylla image build: --host takes no other option (the host image has "
                "no base, tag or CLI of its own)",
                file=sys.stderr,
            )
            return 2
        echo(f"host toolchain image ready: {images.host()} (--scylla-image=host, the default)")
        return 0
    tag, image_id = images.build(
        base=args.base or images.DEFAULT_BASE,
        tag=args.tag,
        cli_version=args.cli_version or PINNED_VERSION,
        ca_bundle=args.ca_bundle,
    )
    echo(
        f"built {tag} ({image_id}); run with: pytest cases/ --scylla-sandbox=docker "
        f"--scylla-image={tag}"
    )
    return 0


def _list() -> int:
    from pytest_scylla.run.sandbox import images

    found = images.made()
    if not found:
        echo(
            "no pytest-scylla images on the Docker engine (make one with `scylla image "
            "build` or `scylla image build --host`)"
        )
        return 0
    echo(f"{'tag':<36}{'id':<14}{'size':>10}  claude code")
    for made in found:
        echo(f"{made.tag:<36}{made.id[7:19]:<14}{made.size_mb:>8.0f}MB  {made.cli_version}")
    return 0


def _remove(tags: list[str]) -> int:
    from pytest_scylla.run.sandbox import images

    ours = {made.tag for made in images.made()}
    strangers = [t for t in tags if t not in ours]
    if strangers:
        echo(
            f"scylla image rm: {', '.join(strangers)}: not an image pytest-scylla made (see "
            "`scylla image list`); nothing removed. Remove other images with docker rmi",
            file=sys.stderr,
        )
        return 2
    for tag in tags:
        images.remove(tag)
        echo(f"removed {tag}")
    return 0
