"""The docker sandbox's engine, images and containers: one container per run (keyed by its
private folder), made at the run's first command with no network, a read-only root and the
run's limits; its processes listed and killed after each command; removed with the run."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.run.sandbox.base import (
    BRIDGE,
    INSIDE_SOCKET_DIR,
    SYSTEM_TOPS,
    Sandbox,
    SandboxError,
)
from pytest_scylla.run.sandbox.docker import copy as docker_copy
from pytest_scylla.run.sandbox.docker.engine import (
    HOST,
    LABEL,
    Image,
    client,
    find_image,
    remove_orphans,
)
from pytest_scylla.run.sandbox.docker.tunnel import MARK, Relay
from pytest_scylla.run.sandbox.hostpaths import system_paths
from pytest_scylla.run.sandbox.limits import DEFAULT_LIMITS

KILL_ALL = ["sh", "-c", "kill -9 -1 2>/dev/null; true"]  # all but the keeper (pid 1), the shell
SETTLE_SECONDS = 2.0  # how long a finished command's own processes may take to end by themselves


def _procs_file(container: Any) -> Path | None:
    """The host's `cgroup.procs` file of a container on a local engine: its processes listed in
    a file read (a `top` through the engine costs a round trip). None where the engine's
    processes are not this machine's (a remote engine, an engine in a VM) or the file is not
    found: then `top` lists them."""
    with contextlib.suppress(Exception):
        container.reload()  # the SDK's attributes are those of before the start: no Pid yet
    pid = str(container.attrs.get("State", {}).get("Pid") or "0")
    try:
        lines = [] if pid == "0" else Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if container.id not in group:  # the container's own group (also: not a VM's pid)
            continue
        top = Path("/sys/fs/cgroup")
        if controllers:  # cgroup v1: the pids hierarchy
            if "pids" not in controllers.split(","):
                continue
            top = top / "pids"
        procs = top / group.lstrip("/") / "cgroup.procs"
        with contextlib.suppress(OSError):
            if pid in procs.read_text().split():
                return procs
    return None


def _end_processes(container: Any) -> None:
    """A relay dropped for a violation: the run's processes end now (their calls to the
    gateway could only hang until the run's timeout)."""
    with contextlib.suppress(Exception):  # (the container removed meanwhile)
        container.exec_run(KILL_ALL)


def image_python(image: Image) -> str:
    """The Python that runs the bridge and the relay in the image."""
    return sys.executable if image.host else "python3"


class DockerContainers(Sandbox):
    """The engine, the images it runs and the run's containers (the docker sandbox's base)."""

    def __init__(
        self,
        gateway_port: int = 0,
        socket_dir: Path | None = None,
        readable: Sequence[Path] = (),
        image: str = HOST,
        limits: tuple[int, float, int] = DEFAULT_LIMITS,
        copy: bool = False,
    ) -> None:
        super().__init__(gateway_port, socket_dir, readable)
        self.engine = client()
        self.remote = not str(self.engine.api.base_url).startswith("http+docker://localhost")
        if self.remote and image == HOST:
            raise SandboxError(
                f"--scylla-sandbox=docker: the engine at {self.engine.api.base_url} is remote, "
                "and the host image binds this machine's system into each container: use an "
                "image of your own on that engine (scylla image build, with DOCKER_HOST set "
                "to it; then --scylla-image=<tag>)"
            )
        # the run's folder goes in and out by copy, the gateway through a relay: nothing of
        # this machine is bound into the container (always so on a remote engine)
        self.copy = copy or self.remote
        self._stale: set[Path] = set()  # copied back since: the container's copy is stale
        self._relays: dict[Path, Relay] = {}
        self.default = image
        memory, cpus, pids = limits
        self.limits = {"mem_limit": memory, "nano_cpus": int(cpus * 1e9), "pids_limit": pids}
        self._images: dict[str, Image] = {}
        self._cli_versions: dict[str, str] = {}
        self.image(image)  # a missing image is a setup error, before any run
        remove_orphans(self.engine)
        self._containers: dict[Path, Any] = {}
        self._assigned: dict[Path, Image] = {}
        self._procs: dict[Path, Path | None] = {}  # a container's cgroup.procs on this host
        self.pycache = Path(tempfile.gettempdir()) / "scylla-docker-exec-pycache"
        self._lock = threading.Lock()

    def image(self, ref: str | None) -> Image:
        """The image `ref` (None: the session's), looked up once."""
        ref = ref or self.default
        if ref not in self._images:
            self._images[ref] = find_image(self.engine, ref)
        return self._images[ref]

    def assign(self, private: Path, image: str | None) -> None:
        self._assigned[private] = self.image(image)

    def _mounts(self, private: Path, image: Image) -> dict[str, dict[str, str]]:
        binds = {}
        host = (*SYSTEM_TOPS, *system_paths()) if image.host else ()
        shared = () if self.copy else (*self.readable, BRIDGE.parent)
        for path in (*host, *shared):
            if path.exists():
                binds[str(path)] = {"bind": str(path), "mode": "ro"}
        if not self.copy:
            binds[str(private)] = {"bind": str(private), "mode": "rw"}
            if self.socket_dir is not None:
                binds[str(self.socket_dir)] = {"bind": INSIDE_SOCKET_DIR, "mode": "rw"}
        return binds

    def container(self, private: Path) -> Any:
        """The run's container (made on first use), keyed by its private folder."""
        with self._lock:
            found = self._containers.get(private)
            if found is not None:
                return found
            image = self._assigned.get(private) or self.image(None)
            if self.remote and image.host:
                raise SandboxError(
                    "the host image cannot run on a remote engine: give the "
                    "case an image of its own"
                )
            tmpfs = {"/tmp": "rw,nosuid,size=1g"}
            mounts = []
            if self.copy:  # the run's folder and the caches live in volumes of the
                # container's own (the engine's archive API does not see tmpfs), copied in by
                # `_ready`; the relay's socket in a tmpfs of the run's user
                from docker.types import Mount  # type: ignore[import-untyped]

                for path in (private.parent, *self.readable):
                    mounts.append(Mount(str(path), None, type="volume"))
                    tmpfs.pop(str(path), None)
                tmpfs[INSIDE_SOCKET_DIR] = (
                    f"rw,nosuid,uid={os.getuid()},gid={os.getgid()},mode=0700"
                )
                self._stale.add(private)
            made = self.engine.containers.run(
                image.id,
                ["sleep", "infinity"],
                detach=True,
                network_mode="none",
                read_only=True,
                tmpfs=tmpfs,
                mounts=mounts,
                volumes=self._mounts(private, image),
                user=f"{os.getuid()}:{os.getgid()}",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                hostname="scylla",
                init=False,
                environment={"PATH": image.path or os.defpath},
                labels={
                    f"{LABEL}.pid": str(os.getpid()),
                    f"{LABEL}.host": socket.gethostname(),
                    f"{LABEL}.session": self.session,
                    f"{LABEL}.run": private.name,
                },
                **self.limits,
            )
            self._containers[private] = made
            self._procs[private] = None if self.remote else _procs_file(made)
        if self.copy:
            self._start_relay(private, made, image)
        return made

    def _start_relay(self, private: Path, container: Any, image: Image) -> None:
        """Copy mode: the caches go in once, and the gateway relay starts."""
        try:
            for path in self.readable:
                if path.is_dir():
                    docker_copy.push(container, path, clear=False)
            if self.socket_dir is not None:
                self._relays[private] = Relay.start(
                    self.engine,
                    container.id,
                    image_python(image),
                    f"{INSIDE_SOCKET_DIR}/gateway.sock",
                    self.socket_dir / "gateway.sock",
                    f"{os.getuid()}:{os.getgid()}",
                    on_violation=lambda: _end_processes(container),
                )
        except BaseException:
            self.close(private)
            raise

    def close(self, private: Path) -> None:
        with self._lock:
            found = self._containers.pop(private, None)
            self._procs.pop(private, None)
            self._assigned.pop(private, None)
            self._stale.discard(private)
            relay = self._relays.pop(private, None)
        if relay is not None:
            relay.close()
        if found is not None:
            with contextlib.suppress(Exception):
                found.remove(force=True, v=True)

    def _ready(self, private: Path) -> Any:
        """The run's container, holding the host's current copy of the run's folder."""
        container = self.container(private)
        if self.copy and private in self._stale:
            docker_copy.push(container, private)
            self._stale.discard(private)
        return container

    def _settle(self, private: Path) -> None:
        """Give what the command started a moment to end by itself (a CLI that answers at
        once exits before its own helpers do): a process still running after SETTLE_SECONDS
        is a leftover. Without it the count, and what the helpers still wrote into the
        workspace, would depend on timing (bwrap's pid namespace ends them with the CLI)."""
        container = self.container(private)
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline and [
            args for args in self._processes(private, container) if not args.endswith(MARK)
        ]:
            time.sleep(0.05)

    def sweep(self, private: Path) -> int:
        """Kill every process of the run's container but its keeper; how many there were."""
        container = self.container(private)
        left = self._processes(private, container)
        if left:  # the gateway relay of copy mode too (the agent is done with the gateway)
            container.exec_run(KILL_ALL)
        return len([args for args in left if not args.endswith(MARK)])

    def _processes(self, private: Path, container: Any) -> list[str]:
        """The command lines of the container's processes but its keeper."""
        procs = self._procs.get(private)
        if procs is not None:
            keeper = str(container.attrs["State"]["Pid"])
            with contextlib.suppress(OSError):
                left = []
                for pid in procs.read_text().split():
                    with contextlib.suppress(OSError):  # (gone meanwhile)
                        if pid != keeper:
                            args = Path(f"/proc/{pid}/cmdline").read_bytes()
                            left.append(args.replace(b"\0", b" ").decode(errors="replace").strip())
                return left
        listed = container.top(ps_args="-eo pid,args").get("Processes") or []
        return [p[-1] for p in listed if "sleep infinity" not in " ".join(p)]
