"""How the agent CLI and the checks are started: `local`, `bwrap` (bubblewrap) or `docker`
(`sandbox/docker.py`).

`local` runs the command in its own process group with the run's own HOME; when it exits or
times out, the whole group is killed, and so is every process that left the group (`setsid`,
`nohup` and double forks are reparented to the harness, which is their subreaper); how many were
left behind is recorded. It isolates nothing else: the agent can read and write everything this
user can. `bwrap` runs it with no network at all (only the gateway, reached through a
unix socket that a small bridge inside relays to 127.0.0.1), a read-only system, and write access
only to the run's private folder (workspace and HOME). `auto` picks bwrap when it is installed and
works, else local (the pytest header then says so) — but never when the session calls a real
model with the user's credential: then it stops and says how to get bubblewrap.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from pytest_scylla.run.sandbox import limits as _limits
from pytest_scylla.run.sandbox.hostpaths import system_paths as system_paths
from pytest_scylla.run.sandbox.probe import bwrap_advice, bwrap_works

INSIDE_PORT = 8787  # the bridge's port inside bwrap's private network namespace
INSIDE_SOCKET_DIR = "/run/scylla"
BRIDGE = Path(__file__).with_name("bridge.py")
# the host's system folders a sandbox shows read-only (bwrap and docker's host image)
SYSTEM_TOPS = tuple(Path("/") / top for top in ("usr", "etc", "bin", "sbin", "lib", "lib32",
                                                  "lib64", "libx32"))


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
    leftovers: int = 0  # processes still running after the command ended (killed)
    refused: tuple[str, ...] = ()  # docker copy: what the run left that was not copied back


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _processes() -> dict[int, tuple[int, int]]:
    """{pid: (parent pid, process group)} of every process this user can see."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    fields = handle.read().rpartition(b")")[2].split()
            except OSError:
                continue
            found[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return found


def subreaper(on: bool) -> None:
    """Make this process the reaper of its orphaned descendants (Linux) while a command runs,
    so that a process the agent detached is reparented here, where it can be found and stopped;
    switched off again after, so that no other orphan is left here unreaped."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def hide_environment() -> None:
    """Make this process non-dumpable (Linux): its /proc entries, the credential in its initial
    environment among them, become unreadable to the agent under `local` (unless the agent runs
    as root, which no setting here can stop)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE


def sweep(group: int, before: set[int]) -> int:
    """Kill what is left of the process group `group` and every process reparented to this one
    since `before` (this process's children then), and reap them; returns how many there were."""
    me, killed = os.getpid(), set[int]()
    for _ in range(20):  # a killed parent's children are reparented a moment later
        new = {pid for pid, (ppid, pgrp) in _processes().items() if pid != me and pid not in
               killed and (pgrp == group or (ppid == me and pid not in before))}
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= new
        time.sleep(0.05)
    waiting, deadline = set(killed), time.monotonic() + 2
    while waiting and time.monotonic() < deadline:  # no zombie of ours is left behind
        for pid in list(waiting):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    waiting.discard(pid)
            except ChildProcessError:  # not (or no longer) ours: done once it is gone
                if not os.path.exists(f"/proc/{pid}"):
                    waiting.discard(pid)
        if waiting:
            time.sleep(0.02)
    return len(killed)


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


def exited(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether `proc` ends within `seconds`: woken by its exit (a pidfd; poll, as select fails
    past fd 1023), not by the standard library's timed wait (it looks every 50 ms)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (an old kernel): the polling wait
        with contextlib.suppress(subprocess.TimeoutExpired):
            return proc.wait(timeout=seconds) is not None
        return False
    poller = select.poll()
    try:
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0.0, seconds) * 1000))
    finally:
        os.close(fd)


def wait(proc: subprocess.Popen[bytes], timeout: float, began: float) -> Finished:
    try:
        timed_out = not exited(proc, timeout - (time.monotonic() - began))
        if timed_out:
            _kill_group(proc)
        code: int | None = None if timed_out else proc.wait()
        proc.wait()
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
        self.session = ""  # the pytest-scylla session this process serves (labels, logs)

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/run/{key}"

    def wrap(self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
             ) -> list[str]:
        """The argv that runs `argv` in this sandbox with `private` writable."""
        return list(argv)

    def failed_to_start(self, stderr_tail: str) -> str | None:
        """The sandbox's own error when it could not start the command (from its stderr)."""
        return None

    def executor(self, private: Path) -> Callable[
            [list[str], Path, Mapping[str, str], float], tuple[int | None, str, str]] | None:
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

    def run(self, argv: Sequence[str], cwd: Path, private: Path, env: dict[str, str],
            stdin: str | None, timeout: float, stdout: IO[bytes] | int,
            stderr: IO[bytes] | int, bridge: bool = False) -> Finished:
        """Run `argv`, wait for it (at most `timeout` seconds), then stop whatever it left."""
        me = os.getpid()
        before = {pid for pid, (ppid, _) in _processes().items() if ppid == me}
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


class Bwrap(Sandbox):
    name = "bwrap"

    def __init__(self, gateway_port: int = 0, socket_dir: Path | None = None,
                 readable: Sequence[Path] = (), limits: tuple[int, float, int] | None = None
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
                raise SandboxError(f"--scylla-limits under bwrap: cannot make the run's cgroup "
                                   f"({exc}); run where /sys/fs/cgroup is writable, or use "
                                   "--scylla-sandbox=docker") from exc
        return (_limits.wrapper(self.groups[private]),
                ["--size", str(self.limits.tmp), "--tmpfs", "/tmp"])

    def wrap(self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
             ) -> list[str]:
        prefix, tmp = self._confine(private)
        if prefix and shutil.which("bwrap") is None:  # the cgroup's wrapper would exec it:
            # the same error as starting a missing bwrap directly, before any process starts
            raise FileNotFoundError(2, os.strerror(2), "bwrap")
        args = [*prefix, "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                "--hostname", "scylla"]
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
            args += ["--dir", "/run", "--bind", str(self.socket_dir), INSIDE_SOCKET_DIR,
                     "--ro-bind", str(BRIDGE.parent), str(BRIDGE.parent)]
        args += ["--chdir", str(cwd), "--"]
        if bridge:
            socket_name = f"{INSIDE_SOCKET_DIR}/gateway.sock"
            args += [sys.executable, str(BRIDGE), str(INSIDE_PORT), socket_name, "--"]
        return args + list(argv)


def docker_unusable(image: str = "host") -> str | None:
    """None when a Docker engine answers and `image` is on it (for `host`: the host toolchain
    image a docker session imported, or `scylla image build --host`); else why not. Cheap where
    no engine is configured: the SDK is imported only when there is one to ask."""
    configured = bool(os.environ.get("DOCKER_HOST") or os.environ.get("DOCKER_CONTEXT")
                      or Path("/var/run/docker.sock").exists())
    if not configured:
        config = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"
        with contextlib.suppress(OSError, ValueError):
            import json

            configured = json.loads(config.read_text()).get("currentContext") not in (
                None, "", "default")
    if not configured:
        return "no Docker engine is configured (no DOCKER_HOST, context or /var/run/docker.sock)"
    from pytest_scylla.run.sandbox import docker_engine as docker

    try:
        engine = docker.client(timeout=5)
    except SandboxError as exc:
        return str(exc).removeprefix("--scylla-sandbox=docker: ")
    try:
        remote = not str(engine.api.base_url).startswith("http+docker://localhost")
        if remote and image == "host":
            return (f"the engine at {engine.api.base_url} is remote, and the host image runs "
                    "only on a local one")
        if not docker.image_present(engine, image):
            return f"image {image} is not on the Docker engine"
    finally:
        engine.close()
    return None


def choose(kind: str, real_model: bool = False, image: str = "host",
           plugins: Mapping[str, type[Sandbox]] | None = None
           ) -> tuple[type[Sandbox], str | None]:
    """(sandbox class, note) for the `--scylla-sandbox` value (or a name of `plugins`). The
    note says why `auto` chose what it chose. `auto` never falls back to `local`, with a real
    model (`real_model`: the user's credential) or with the oracle (its smoke test must fail
    where the real run would): where nothing isolates, it stops and says what to do."""
    if kind in (plugins or {}):
        return (plugins or {})[kind], None
    if kind == "local":
        return Sandbox, None
    no_docker: str | None = None
    if kind in ("docker", "auto"):
        from pytest_scylla.run.sandbox.docker import Docker

        if kind == "docker":
            return Docker, None
        no_docker = docker_unusable(image)
        if no_docker is None:
            return Docker, (f"sandbox=docker (auto: a Docker engine answers and image {image} "
                            "is on it)")
        if image != "host":
            raise SandboxError(f"--scylla-image={image} needs the docker sandbox, and auto "
                               f"cannot use it: {no_docker}")
    problem = bwrap_works()
    if kind == "bwrap" and problem:
        raise SandboxError(f"--scylla-sandbox=bwrap: {problem}; to fix: {bwrap_advice(problem)}")
    if problem:  # the oracle stops here too: a smoke job must fail where the real job would
        why = ("this session calls a real model with your credential: an unisolated agent "
               "could read it and everything else this user can" if real_model else
               "a session with a real model would stop here, so this one does too")
        raise SandboxError(
            f"--scylla-sandbox=auto: no sandbox isolates here (bubblewrap: {problem}; docker: "
            f"{no_docker}), and {why}. To fix: {bwrap_advice(problem)}; or pass "
            "--scylla-sandbox=local to run unisolated knowingly")
    if kind == "auto":
        return Bwrap, f"sandbox=bwrap (auto: bubblewrap works; no docker: {no_docker})"
    return Bwrap, None
