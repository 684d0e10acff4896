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
from collections.abc import Mapping
from pathlib import Path

from pytest_scylla.run.sandbox.base import (
    BRIDGE,
    INSIDE_PORT,
    INSIDE_SOCKET_DIR,
    SYSTEM_TOPS,
    Sandbox,
    SandboxError,
    base_env,
)
from pytest_scylla.run.sandbox.bwrap import Bwrap
from pytest_scylla.run.sandbox.hostpaths import system_paths
from pytest_scylla.run.sandbox.probe import bwrap_advice, bwrap_works
from pytest_scylla.run.sandbox.processes import (
    Finished,
    _processes,
    exited,
    hide_environment,
    own_children,
    start,
    subreaper,
    sweep,
    wait,
)

__all__ = [
    "BRIDGE",
    "INSIDE_PORT",
    "INSIDE_SOCKET_DIR",
    "SYSTEM_TOPS",
    "Bwrap",
    "Finished",
    "Sandbox",
    "SandboxError",
    "_processes",
    "base_env",
    "builtin",
    "bwrap_advice",
    "bwrap_works",
    "choose",
    "docker_unusable",
    "exited",
    "hide_environment",
    "own_children",
    "start",
    "subreaper",
    "sweep",
    "system_paths",
    "wait",
]


def docker_unusable(image: str = "host") -> str | None:
    """None when a Docker engine answers and `image` is on it (for `host`: the host toolchain
    image a docker session imported, or `scylla image build --host`); else why not. Cheap where
    no engine is configured: the SDK is imported only when there is one to ask."""
    configured = bool(
        os.environ.get("DOCKER_HOST")
        or os.environ.get("DOCKER_CONTEXT")
        or Path("/var/run/docker.sock").exists()
    )
    if not configured:
        config = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"
        with contextlib.suppress(OSError, ValueError):
            import json

            configured = json.loads(config.read_text()).get("currentContext") not in (
                None,
                "",
                "default",
            )
    if not configured:
        return "no Docker engine is configured (no DOCKER_HOST, context or /var/run/docker.sock)"
    from pytest_scylla.run.sandbox.docker import engine as docker

    try:
        engine = docker.client(timeout=5)
    except SandboxError as exc:
        return str(exc).removeprefix("--scylla-sandbox=docker: ")
    try:
        remote = not str(engine.api.base_url).startswith("http+docker://localhost")
        if remote and image == "host":
            return (
                f"the engine at {engine.api.base_url} is remote, and the host image runs "
                "only on a local one"
            )
        if not docker.image_present(engine, image):
            return f"image {image} is not on the Docker engine"
    finally:
        engine.close()
    return None


def builtin() -> dict[str, type[Sandbox]]:
    """The built-in sandboxes by name, offered through `pytest_scylla_sandboxes` like a
    plugin's (by `pytest_scylla.plugin`)."""
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    return {"local": Sandbox, "bwrap": Bwrap, "docker": Docker}


def choose(
    kind: str,
    real_model: bool = False,
    image: str = "host",
    sandboxes: Mapping[str, type[Sandbox]] | None = None,
) -> tuple[type[Sandbox], str | None]:
    """(sandbox class, note) for the `--scylla-sandbox` value: `auto`, or a name of `sandboxes`
    (the registry's: the built-in ones and those plugins add; default the built-in ones). The
    note says why `auto` chose what it chose. `auto` never falls back to `local`, with a real
    model (`real_model`: the user's credential) or with the oracle (its smoke test must fail
    where the real run would): where nothing isolates, it stops and says what to do."""
    if kind != "auto":
        chosen = (sandboxes or builtin())[kind]
        if chosen is Bwrap and (problem := bwrap_works()):
            raise SandboxError(
                f"--scylla-sandbox=bwrap: {problem}; to fix: {bwrap_advice(problem)}"
            )
        return chosen, None
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    no_docker = docker_unusable(image)
    if no_docker is None:
        return Docker, (
            f"sandbox=docker (auto: a Docker engine answers and image {image} is on it)"
        )
    if image != "host":
        raise SandboxError(
            f"--scylla-image={image} needs the docker sandbox, and auto cannot use it: {no_docker}"
        )
    problem = bwrap_works()
    if problem:  # the oracle stops here too: a smoke job must fail where the real job would
        why = (
            "this session calls a real model with your credential: an unisolated agent "
            "could read it and everything else this user can"
            if real_model
            else "a session with a real model would stop here, so this one does too"
        )
        raise SandboxError(
            f"--scylla-sandbox=auto: no sandbox isolates here (bubblewrap: {problem}; docker: "
            f"{no_docker}), and {why}. To fix: {bwrap_advice(problem)}; or pass "
            "--scylla-sandbox=local to run unisolated knowingly"
        )
    return Bwrap, f"sandbox=bwrap (auto: bubblewrap works; no docker: {no_docker})"
