"""The `bwrap` sandbox (bubblewrap): no network but the gateway's bridge, a read-only system,
write access to the run's private folder only; with `--scylla-limits`, a cgroup of its own."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_scylla.run.sandbox import limits as _limits
from pytest_scylla.run.sandbox.base import (
    BRIDGE,
    INSIDE_PORT,
    INSIDE_SOCKET_DIR,
    SYSTEM_TOPS,
    Sandbox,
    SandboxError,
)
from pytest_scylla.run.sandbox.hostpaths import system_paths


class Bwrap(Sandbox):
    name = "bwrap"

    def __init__(
        self,
        gateway_port: int = 0,
        socket_dir: Path | None = None,
        readable: Sequence[Path] = (),
        limits: tuple[int, float, int] | None = None,
    ) -> None:
        super().__init__(gateway_port, socket_dir, readable)
        self.limits = None if limits is None else _limits.Limits(*limits)
        self.groups: dict[Path, _limits.Group] = {}  # by private folder, until close()

    def failed_to_start(self, stderr_tail: str) -> str | None:
        first = stderr_tail.lstrip().partition("\n")[0]
        return first if first.startswith("bwrap: ") else None

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{INSIDE_PORT}/run/{key}"

    def close(self, private: Path) -> None:
        group = self.groups.pop(private, None)
        if group is not None:
            _limits.remove(group)

    def _confine(self, private: Path) -> tuple[list[str], list[str]]:
        """(argv prefix that joins the run's cgroup, bwrap's /tmp arguments)."""
        if self.limits is None:
            return [], ["--tmpfs", "/tmp"]
        if private not in self.groups:
            try:
                self.groups[private] = _limits.create(self.limits)
            except OSError as exc:
                raise SandboxError(
                    f"--scylla-limits under bwrap: cannot make the run's cgroup "
                    f"({exc}); run where /sys/fs/cgroup is writable, or use "
                    "--scylla-sandbox=docker"
                ) from exc
        return (
            _limits.wrapper(self.groups[private]),
            ["--size", str(self.limits.tmp), "--tmpfs", "/tmp"],
        )

    def wrap(
        self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
    ) -> list[str]:
        prefix, tmp = self._confine(private)
        if prefix and shutil.which("bwrap") is None:  # the cgroup's wrapper would exec it:
            # the same error as starting a missing bwrap directly, before any process starts
            raise FileNotFoundError(2, os.strerror(2), "bwrap")
        args = [
            *prefix,
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "scylla",
        ]
        for path in SYSTEM_TOPS:
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        # /tmp first: later binds under /tmp (the run's folder, caches) must stay visible
        args += ["--proc", "/proc", "--dev", "/dev", *tmp]
        for path in system_paths() + self.readable:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--bind", str(private), str(private)]
        if bridge and self.socket_dir is not None:
            args += [
                "--dir",
                "/run",
                "--bind",
                str(self.socket_dir),
                INSIDE_SOCKET_DIR,
                "--ro-bind",
                str(BRIDGE.parent),
                str(BRIDGE.parent),
            ]
        args += ["--chdir", str(cwd), "--"]
        if bridge:
            socket_name = f"{INSIDE_SOCKET_DIR}/gateway.sock"
            args += [sys.executable, str(BRIDGE), str(INSIDE_PORT), socket_name, "--"]
        return args + list(argv)
