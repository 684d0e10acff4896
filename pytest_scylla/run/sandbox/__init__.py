"""How the agent CLI and the checks are started: `local` or `bwrap` (bubblewrap).

`local` runs the command in its own process group with the run's own HOME; at the timeout the
whole group is killed. `bwrap` runs it with no network at all (only the gateway, reached through a
unix socket that a small bridge inside relays to 127.0.0.1), a read-only system, and write access
only to the run's private folder (workspace and HOME). `auto` picks bwrap when it is installed and
works, else local (the pytest header then says so).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

INSIDE_PORT = 8787  # the bridge's port inside bwrap's private network namespace
INSIDE_SOCKET_DIR = "/run/scylla"
BRIDGE = Path(__file__).with_name("bridge.py")


def base_env(private: Path) -> dict[str, str]:
    """The environment every sandboxed process starts from: nothing of the user's own (no
    credential, no config), HOME and TMPDIR inside the run's private folder."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", os.defpath)
    return {"PATH": os.pathsep.join([bindir, path]), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "TERM": "dumb", "USER": os.environ.get("USER", "scylla"), "HOME": str(private / "home"),
            "TMPDIR": str(private / "tmp"), "NO_COLOR": "1"}


class SandboxError(RuntimeError):
    """The sandbox cannot be used (bubblewrap missing or refused)."""


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None: killed at the timeout
    timed_out: bool
    seconds: float


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def start(argv: Sequence[str], cwd: Path, env: dict[str, str], stdin: str | None,
          stdout: IO[bytes] | int, stderr: IO[bytes] | int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr)
    if stdin is not None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it may exit before it reads its input
            proc.stdin.write(stdin.encode())
        with contextlib.suppress(BrokenPipeError):  # the flush in close() may find it gone too
            proc.stdin.close()
    return proc


def wait(proc: subprocess.Popen[bytes], timeout: float, began: float) -> Finished:
    try:
        code: int | None = proc.wait(timeout=max(0.0, timeout - (time.monotonic() - began)))
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.wait()
        code, timed_out = None, True
    except BaseException:  # interrupted (Ctrl-C): the agent runs in its own session, stop it too
        _kill_group(proc)
        proc.wait()
        raise
    return Finished(exit_code=code, timed_out=timed_out,
                    seconds=round(time.monotonic() - began, 3))


class Sandbox:
    """Local: no isolation beyond a process group and a private HOME."""

    name = "local"

    def __init__(self, gateway_port: int = 0, socket_dir: Path | None = None,
                 readable: Sequence[Path] = ()) -> None:
        self.gateway_port = gateway_port
        self.socket_dir = socket_dir
        self.readable = tuple(readable)

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/run/{key}"

    def wrap(self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
             ) -> list[str]:
        """The argv that runs `argv` in this sandbox with `private` writable."""
        return list(argv)

    def failed_to_start(self, stderr_tail: str) -> str | None:
        """The sandbox's own error when it could not start the command (from its stderr)."""
        return None

    def run(self, argv: Sequence[str], cwd: Path, private: Path, env: dict[str, str],
            stdin: str | None, timeout: float, stdout: IO[bytes] | int,
            stderr: IO[bytes] | int, bridge: bool = False) -> Finished:
        began = time.monotonic()
        proc = start(self.wrap(argv, cwd, private, bridge), cwd, env, stdin, stdout, stderr)
        return wait(proc, timeout, began)


class Bwrap(Sandbox):
    name = "bwrap"

    def failed_to_start(self, stderr_tail: str) -> str | None:
        first = stderr_tail.lstrip().partition("\n")[0]
        return first if first.startswith("bwrap: ") else None

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{INSIDE_PORT}/run/{key}"

    def wrap(self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
             ) -> list[str]:
        args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                "--hostname", "scylla", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = Path("/") / top
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        # /tmp first: later binds under /tmp (the run's folder, caches) must stay visible
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for path in _system_paths() + self.readable:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--bind", str(private), str(private)]
        if bridge and self.socket_dir is not None:
            args += ["--dir", "/run", "--bind", str(self.socket_dir), INSIDE_SOCKET_DIR,
                     "--ro-bind", str(BRIDGE.parent), str(BRIDGE.parent)]
        args += ["--chdir", str(cwd), "--"]
        if bridge:
            socket_name = f"{INSIDE_SOCKET_DIR}/gateway.sock"
            args += [sys.executable, str(BRIDGE), str(INSIDE_PORT), socket_name, "--"]
        return args + list(argv)


@functools.lru_cache(maxsize=1)
def _system_paths() -> tuple[Path, ...]:
    """Read-only paths outside /usr the sandboxed tools need: this Python, the agent CLI."""
    paths: set[Path] = set()
    for prefix in {sys.base_prefix, sys.prefix, sys.exec_prefix}:
        p = Path(prefix).resolve()
        if not _under_usr(p):
            paths.add(p)
    for tool in ("claude", "node", "npx", "git", "ruff"):
        found = shutil.which(tool)
        if found:
            for p in (Path(found).parent, Path(found).resolve().parent):
                if not _under_usr(p) and not any(p.is_relative_to(q) for q in paths):
                    paths.add(_install_root(p))
    return tuple(sorted(paths))


def _under_usr(path: Path) -> bool:
    return path.is_relative_to("/usr") or path.is_relative_to("/etc")


def _install_root(bindir: Path) -> Path:
    """A tool's install folder: the parent of its bin/ when it has one."""
    return bindir.parent if bindir.name == "bin" else bindir


def bwrap_works() -> str | None:
    """None when bubblewrap can start a sandbox here; else why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr",
                            "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib",
                            "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc",
                            "--dev", "/dev", "--", "/usr/bin/true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:200]}"
    return None


def choose(kind: str) -> tuple[type[Sandbox], str | None]:
    """(sandbox class, warning) for the `--scylla-sandbox` value."""
    if kind == "local":
        return Sandbox, None
    problem = bwrap_works()
    if kind == "bwrap":
        if problem:
            raise SandboxError(f"--scylla-sandbox=bwrap: {problem}; install it (Debian/Ubuntu: "
                               "apt-get install bubblewrap) or use --scylla-sandbox=local")
        return Bwrap, None
    if problem:
        return Sandbox, (f"sandbox: local (NOT isolated: {problem}); the agent can write "
                         "anywhere this user can")
    return Bwrap, None
