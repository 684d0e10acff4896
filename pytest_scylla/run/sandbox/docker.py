"""The `docker` sandbox, through the docker SDK: one container per run (its private folder),
created at the run's first command and removed when the run is released.

The container has no network (`network_mode=none`: the gateway is reached through the same
unix-socket bridge as under bwrap), a read-only root filesystem, a fresh `/tmp`, no capabilities,
no new privileges, CPU, memory and process limits, and write access to the run's private folder
(workspace and HOME) only. The image is the host toolchain image: an imported image of empty
mount points (no registry involved) into which the host's system folders, this Python and the
agent CLI's own files are bound read-only, as bwrap binds them. Containers carry labels naming
the session, the process and the host; a new session removes those of dead processes on its host
(a SIGKILLed session), never a live session's.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_scylla.core.tempdirs import alive
from pytest_scylla.run.sandbox import (
    BRIDGE,
    INSIDE_PORT,
    INSIDE_SOCKET_DIR,
    SYSTEM_TOPS,
    Finished,
    Sandbox,
    SandboxError,
    docker_copy,
    system_paths,
)

IMAGE = "scylla-host:1"  # the host toolchain image: mount points only
HOST = "host"  # --scylla-image's name for it
MOUNT_POINTS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "tmp", "run",
                "proc", "dev", "sys", "root", "home", "opt", "var", "srv", "mnt")
LABEL = "io.scylla"  # label prefix: .pid, .host, .session, .run
OUTPUT_KEPT = 1 << 20  # bytes of a check's stdout and of its stderr kept (then truncated)
EXEC_HELPER = Path(__file__).with_name("docker_exec.py")  # run by path: no package imports


def client(timeout: int = 60) -> Any:
    """The engine the SDK's environment selects (DOCKER_HOST, else the current docker context,
    else the local socket), or SandboxError."""
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError:
        raise SandboxError("--scylla-sandbox=docker needs the docker SDK: pip install "
                           "'pytest-scylla[docker]'") from None
    try:
        engine = None
        if not os.environ.get("DOCKER_HOST"):
            with contextlib.suppress(Exception):
                context = docker.ContextAPI.get_current_context()
                if context is not None and context.name != "default" and context.Host:
                    engine = docker.DockerClient(base_url=context.Host, tls=context.TLSConfig,
                                                 timeout=timeout)
        engine = engine or docker.from_env(timeout=timeout)
        engine.ping()
    except Exception as exc:
        raise SandboxError(f"--scylla-sandbox=docker: no Docker engine answers ({exc}); start "
                           "dockerd, or point DOCKER_HOST at an engine") from None
    return engine


def ensure_image(engine: Any) -> str:
    """The host toolchain image, imported once from a tar of empty folders (no registry)."""
    with contextlib.suppress(Exception):
        return str(engine.images.get(IMAGE).id)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in MOUNT_POINTS:
            entry = tarfile.TarInfo(name)
            entry.type, entry.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(entry)
    repository, tag = IMAGE.split(":")
    engine.api.import_image_from_data(buf.getvalue(), repository=repository, tag=tag)
    return str(engine.images.get(IMAGE).id)


@dataclass(frozen=True)
class Image:
    """A run's image: `ref` as asked (`host` or a reference), the engine's id of it, and for an
    image of its own the PATH its configuration sets."""

    ref: str
    id: str
    path: str = ""

    @property
    def host(self) -> bool:
        return self.ref == HOST

    def to_json(self) -> dict[str, str]:
        return {"ref": self.ref, "id": self.id}


def find_image(engine: Any, ref: str) -> Image:
    """The image `ref` on the engine (never pulled: a run's image is a condition the user
    chooses), or SandboxError saying how to get it."""
    if ref == HOST:
        return Image(HOST, ensure_image(engine))
    try:
        found = engine.images.get(ref)
    except Exception as exc:
        raise SandboxError(
            f"image {ref} is not on the Docker engine ({type(exc).__name__}); build it with "
            f"`scylla image build --tag {ref}`, or `docker pull {ref}` first (runs never pull)"
            ) from None
    env = (found.attrs.get("Config") or {}).get("Env") or []
    path = next((e[5:] for e in env if e.startswith("PATH=")),
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return Image(ref, str(found.id), path)


def image_present(engine: Any, ref: str) -> bool:
    """Whether `ref` (for `host`: the host toolchain image) is already on the engine."""
    try:
        engine.images.get(IMAGE if ref == HOST else ref)
    except Exception:
        return False
    return True


def remove_orphans(engine: Any) -> list[str]:
    """Remove containers of processes on this host that are gone (a killed session)."""
    removed = []
    for container in engine.containers.list(all=True, filters={"label": f"{LABEL}.pid"}):
        labels = container.labels
        if labels.get(f"{LABEL}.host") != socket.gethostname():
            continue  # another machine's: not ours to judge
        try:
            pid = int(labels.get(f"{LABEL}.pid", ""))
        except ValueError:
            continue
        if not alive(pid):
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
                removed.append(container.name)
    return removed


class Docker(Sandbox):
    name = "docker"

    def __init__(self, gateway_port: int = 0, socket_dir: Path | None = None,
                 readable: Sequence[Path] = (), image: str = HOST,
                 limits: tuple[int, float, int] = (4 << 30, 2.0, 1024), copy: bool = False
                 ) -> None:
        super().__init__(gateway_port, socket_dir, readable)
        self.engine = client()
        if not str(self.engine.api.base_url).startswith("http+docker://localhost"):
            raise SandboxError(
                f"--scylla-sandbox=docker: the engine at {self.engine.api.base_url} is remote, "
                "and remote engines are not supported yet (the gateway is reached through a "
                "unix socket bound into each container); use a local engine")
        self.copy = copy  # the private folder goes in and out by copy, not a bind mount
        self._stale: set[Path] = set()  # copied back since: the container's copy is stale
        self.default = image
        memory, cpus, pids = limits
        self.limits = {"mem_limit": memory, "nano_cpus": int(cpus * 1e9), "pids_limit": pids}
        self._images: dict[str, Image] = {}
        self._cli_versions: dict[str, str] = {}
        self.image(image)  # a missing image is a setup error, before any run
        remove_orphans(self.engine)
        self._containers: dict[Path, Any] = {}
        self._assigned: dict[Path, Image] = {}
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

    def describe(self, image: str | None) -> dict[str, Any]:
        memory, cpus, pids = (self.limits["mem_limit"], self.limits["nano_cpus"] / 1e9,
                              self.limits["pids_limit"])
        return {"image": self.image(image).to_json(),
                "limits": {"memory": memory, "cpus": cpus, "pids": pids},
                "transfer": "copy" if self.copy else "bind"}

    def cli(self, host_cli: Path, image: str | None) -> str:
        return str(host_cli) if self.image(image).host else "claude"

    def cli_version(self, host_version: str, image: str | None) -> str:
        """The agent CLI's version in `image` (its own CLI, asked once per image)."""
        found = self.image(image)
        if found.host:
            return host_version
        if found.id not in self._cli_versions:
            try:
                said = self.engine.containers.run(
                    found.id, ["claude", "--version"], remove=True, network_mode="none",
                    user=f"{os.getuid()}:{os.getgid()}", environment={"HOME": "/tmp"},
                    read_only=True, tmpfs={"/tmp": "rw"}, **self.limits)
            except Exception as exc:
                raise SandboxError(f"image {found.ref}: `claude --version` did not run in it "
                                   f"({str(exc)[:300]}); an image for the docker sandbox needs "
                                   "the agent CLI (build one with `scylla image build`)"
                                   ) from None
            self._cli_versions[found.id] = bytes(said).decode(errors="replace").split()[0]
        return self._cli_versions[found.id]

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{INSIDE_PORT}/run/{key}"

    def _mounts(self, private: Path, image: Image) -> dict[str, dict[str, str]]:
        binds = {}
        host = (*SYSTEM_TOPS, *system_paths()) if image.host else ()
        for path in (*host, *self.readable, BRIDGE.parent):
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
            tmpfs = {"/tmp": "rw,nosuid,size=1g"}
            mounts = []
            if self.copy:  # the run's folder lives in a volume of the container's own (the
                # engine's archive API does not see tmpfs), copied in by `_ready`
                from docker.types import Mount  # type: ignore[import-untyped]

                mounts.append(Mount(str(private.parent), None, type="volume"))
                tmpfs.pop(str(private.parent), None)
                self._stale.add(private)
            made = self.engine.containers.run(
                image.id, ["sleep", "infinity"], detach=True, network_mode="none",
                read_only=True, tmpfs=tmpfs, mounts=mounts,
                volumes=self._mounts(private, image), user=f"{os.getuid()}:{os.getgid()}",
                cap_drop=["ALL"], security_opt=["no-new-privileges"], hostname="scylla",
                init=False, environment={"PATH": image.path or os.defpath},
                labels={f"{LABEL}.pid": str(os.getpid()), f"{LABEL}.host": socket.gethostname(),
                        f"{LABEL}.session": self.session, f"{LABEL}.run": private.name},
                **self.limits)
            self._containers[private] = made
            return made

    def close(self, private: Path) -> None:
        with self._lock:
            found = self._containers.pop(private, None)
            self._assigned.pop(private, None)
            self._stale.discard(private)
        if found is not None:
            with contextlib.suppress(Exception):
                found.remove(force=True, v=True)

    def wrap(self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
             ) -> list[str]:
        """A host command that runs `argv` in the run's container (the checks use it)."""
        container = self._ready(private)
        return [sys.executable, "-X", f"pycache_prefix={self.pycache}", str(EXEC_HELPER),
                str(self.pycache), container.id, str(cwd), "--",
                *self._inside(argv, bridge, private)]

    def _ready(self, private: Path) -> Any:
        """The run's container, holding the host's current copy of the run's folder."""
        container = self.container(private)
        if self.copy and private in self._stale:
            docker_copy.push(container, private)
            self._stale.discard(private)
        return container

    def _inside(self, argv: Sequence[str], bridge: bool, private: Path) -> list[str]:
        if not bridge:
            return list(argv)
        image = self._assigned.get(private) or self.image(None)
        python = sys.executable if image.host else "python3"
        return [python, str(BRIDGE), str(INSIDE_PORT), f"{INSIDE_SOCKET_DIR}/gateway.sock",
                "--", *argv]

    def _env(self, env: Mapping[str, str], private: Path) -> dict[str, str]:
        """The run's environment; in an image of its own, with that image's PATH."""
        image = self._assigned.get(private) or self.image(None)
        return dict(env) if image.host else {**env, "PATH": image.path}

    def run(self, argv: Sequence[str], cwd: Path, private: Path, env: dict[str, str],
            stdin: str | None, timeout: float, stdout: IO[bytes] | int,
            stderr: IO[bytes] | int, bridge: bool = False) -> Finished:
        """Run `argv` in the run's container, at most `timeout` seconds (the coreutils
        `timeout` inside kills it); then kill whatever it left running there."""
        began = time.monotonic()
        command = self._inside(argv, bridge, private)
        if stdin is not None:
            prompt = private / ".scylla-stdin"
            prompt.write_text(stdin, encoding="utf-8")
            command = ["/bin/sh", "-c", 'exec "$@" < "$0"', str(prompt), *command]
            self._stale.add(private)
        container = self._ready(private)
        command = ["/usr/bin/timeout", "-s", "KILL", str(max(1, int(timeout))), *command]
        api = self.engine.api
        handle = api.exec_create(container.id, command, environment=self._env(env, private),
                                 workdir=str(cwd),
                                 stdout=True, stderr=True)
        try:
            for out, err in api.exec_start(handle["Id"], stream=True, demux=True):
                for data, target in ((out, stdout), (err, stderr)):
                    if data and not isinstance(target, int):
                        target.write(data)
        except BaseException:  # interrupted: nothing of the run may go on
            self.close(private)
            raise
        code = api.exec_inspect(handle["Id"]).get("ExitCode")
        seconds = round(time.monotonic() - began, 3)
        timed_out = code == 128 + signal.SIGKILL and seconds >= int(timeout) - 0.5
        left = self.sweep(private)
        refused: list[str] = []
        if self.copy:  # what the command left comes back to the host, as data
            refused = docker_copy.pull(container, private)
            self._stale.add(private)
        return Finished(exit_code=None if timed_out else code, timed_out=timed_out,
                        seconds=seconds, leftovers=left, refused=tuple(refused))

    def executor(self, private: Path) -> Any:
        """Checks run through the SDK from this process: no helper process per check."""
        def execute(argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float
                    ) -> tuple[int | None, str, str]:
            container = self._ready(private)
            began = time.monotonic()
            api = self.engine.api
            handle = api.exec_create(
                container.id, ["/usr/bin/timeout", "-s", "KILL", str(max(1, int(timeout))),
                               *argv], environment=self._env(env, private), workdir=str(cwd))
            kept: list[list[bytes]] = [[], []]
            sizes = [0, 0]
            for chunks in api.exec_start(handle["Id"], stream=True, demux=True):
                for i, data in enumerate(chunks):
                    if data and sizes[i] < OUTPUT_KEPT:  # a flood is cut, never held whole
                        kept[i].append(data)
                        sizes[i] += len(data)
            code = api.exec_inspect(handle["Id"]).get("ExitCode")
            timed_out = code == 128 + signal.SIGKILL and \
                time.monotonic() - began >= int(timeout) - 0.5
            self.sweep(private)  # what the check left running
            out, err = (b"".join(k).decode(errors="replace") for k in kept)
            return None if timed_out else code, out, err
        return execute

    def sweep(self, private: Path) -> int:
        """Kill every process of the run's container but its keeper; how many there were."""
        container = self.container(private)
        listed = container.top(ps_args="-eo pid,args").get("Processes") or []
        left = [p for p in listed if "sleep infinity" not in " ".join(p)]
        if left:  # kill(-1): every process but the keeper (pid 1) and the shell itself
            container.exec_run(["sh", "-c", "kill -9 -1 2>/dev/null; true"])
        return len(left)
