"""The sandbox interface every sandbox implements, and the `local` sandbox, which implements it
with no isolation beyond a process group and a private HOME; what bwrap and docker share."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from pytest_scylla.run.sandbox.processes import (
    Finished,
    own_children,
    start,
    subreaper,
    sweep,
    wait,
)

INSIDE_PORT = 8787  # the bridge's port inside bwrap's private network namespace
INSIDE_SOCKET_DIR = "/run/scylla"
BRIDGE = Path(__file__).with_name("bridge.py")
# the host's system folders a sandbox shows read-only (bwrap and docker's host image)
SYSTEM_TOPS = tuple(
    Path("/") / top for top in ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
)


def base_env(private: Path) -> dict[str, str]:
    """The environment every sandboxed process starts from: nothing of the user's own (no
    credential, no config), HOME and TMPDIR inside the run's private folder."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", os.defpath)
    return {
        "PATH": os.pathsep.join([bindir, path]),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "USER": os.environ.get("USER", "scylla"),
        "HOME": str(private / "home"),
        "TMPDIR": str(private / "tmp"),
        "NO_COLOR": "1",
    }


class SandboxError(RuntimeError):
    """The sandbox cannot be used (bubblewrap missing or refused)."""


class Sandbox:
    """Local: no isolation beyond a process group and a private HOME."""

    name = "local"

    def __init__(
        self, gateway_port: int = 0, socket_dir: Path | None = None, readable: Sequence[Path] = ()
    ) -> None:
        self.gateway_port = gateway_port
        self.socket_dir = socket_dir
        self.readable = tuple(readable)
        self.session = ""  # the pytest-scylla session this process serves (labels, logs)

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/run/{key}"

    def wrap(
        self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
    ) -> list[str]:
        """The argv that runs `argv` in this sandbox with `private` writable."""
        return list(argv)

    def failed_to_start(self, stderr_tail: str) -> str | None:
        """The sandbox's own error when it could not start the command (from its stderr)."""
        return None

    def executor(
        self, private: Path
    ) -> Callable[[list[str], Path, Mapping[str, str], float], tuple[int | None, str, str]] | None:
        """A way to run a check inside this sandbox without a host process (None: checks are
        started on the host through `wrap`)."""
        return None

    def close(self, private: Path) -> None:
        """The run whose private folder this is has ended: release what it held."""

    def assign(self, private: Path, image: str | None) -> None:
        """The image the run of this private folder uses (None: the session's). Only the
        docker sandbox runs images; the runtime never asks another for one."""
        if image not in (None, "host"):
            raise SandboxError(f"image {image}: only --scylla-sandbox=docker runs images")

    def describe(self, image: str | None) -> dict[str, Any]:
        """What a run's record notes of its sandbox beyond the name (docker: image, limits)."""
        return {}

    def cli(self, host_cli: Path, image: str | None) -> str:
        """The agent CLI as the sandbox starts it."""
        return str(host_cli)

    def cli_version(self, host_version: str, image: str | None) -> str:
        """The version of the agent CLI that runs in this sandbox (with `image`)."""
        return host_version

    def run(
        self,
        argv: Sequence[str],
        cwd: Path,
        private: Path,
        env: dict[str, str],
        stdin: str | None,
        timeout: float,
        stdout: IO[bytes] | int,
        stderr: IO[bytes] | int,
        bridge: bool = False,
    ) -> Finished:
        """Run `argv`, wait for it (at most `timeout` seconds), then stop whatever it left."""
        before = own_children()
        subreaper(True)
        try:
            began = time.monotonic()
            proc = start(self.wrap(argv, cwd, private, bridge), cwd, env, stdin, stdout, stderr)
            try:
                finished = wait(proc, timeout, began)
            finally:
                left = sweep(proc.pid, before)
        finally:
            subreaper(False)
        return replace(finished, leftovers=left)
