"""The Docker engine as the docker sandbox uses it, through the docker SDK: the client the
environment selects, the images (the host toolchain image, imported without a registry; images
of one's own, never pulled) and the removal of containers that dead sessions left."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import tarfile
from dataclasses import dataclass
from typing import Any

from pytest_scylla.core.tempdirs import alive
from pytest_scylla.run.sandbox import SandboxError

IMAGE = "scylla-host:1"  # the host toolchain image: mount points only
HOST = "host"  # --scylla-image's name for it
MOUNT_POINTS = (
    "usr",
    "etc",
    "bin",
    "sbin",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "tmp",
    "run",
    "proc",
    "dev",
    "sys",
    "root",
    "home",
    "opt",
    "var",
    "srv",
    "mnt",
)
LABEL = "io.scylla"  # label prefix: .pid, .host, .session, .run


def client(timeout: int = 60) -> Any:
    """The engine the SDK's environment selects (DOCKER_HOST, else the current docker context,
    else the local socket), or SandboxError."""
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError:
        raise SandboxError(
            "--scylla-sandbox=docker needs the docker SDK: pip install 'pytest-scylla[docker]'"
        ) from None
    try:
        engine = None
        if not os.environ.get("DOCKER_HOST"):
            with contextlib.suppress(Exception):
                context = docker.ContextAPI.get_current_context()
                if context is not None and context.name != "default" and context.Host:
                    engine = docker.DockerClient(
                        base_url=context.Host, tls=context.TLSConfig, timeout=timeout
                    )
        engine = engine or docker.from_env(timeout=timeout)
        engine.ping()
    except Exception as exc:
        raise SandboxError(
            f"--scylla-sandbox=docker: no Docker engine answers ({exc}); start "
            "dockerd, or point DOCKER_HOST at an engine"
        ) from None
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
    path = next(
        (e[5:] for e in env if e.startswith("PATH=")),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    )
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
    for container in engine.containers.list(
        all=True, filters={"label": f"{LABEL}.pid"}, ignore_removed=True
    ):
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
