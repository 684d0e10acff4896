"""The docker sandbox against a real engine (CI starts dockerd): isolation, the timeout, what
the agent leaves running, containers of dead sessions, and whole runs at two workers.

Here the in-process tests; the sessions are in `tests/e2e/test_docker.py`."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from ....conftest import needs_docker


def test_auto_picks_docker_when_an_engine_answers_and_the_image_is_on_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    needs_docker()
    from pytest_scylla.run.sandbox import Bwrap, SandboxError, choose
    from pytest_scylla.run.sandbox.docker.engine import client, ensure_image
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    ensure_image(client())  # what `scylla image build --host` (or a docker session) leaves
    kind, note = choose("auto")
    assert kind is Docker
    assert note == "sandbox=docker (auto: a Docker engine answers and image host is on it)"
    with pytest.raises(
        SandboxError,
        match=r"--scylla-image=scylla-absent:0 needs the docker "
        r"sandbox, and auto cannot use it: image scylla-absent:0 is not on",
    ):
        choose("auto", image="scylla-absent:0")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")  # no engine
    assert choose("auto")[0] is Bwrap


def test_a_container_removed_while_orphans_are_listed_is_passed_over(tmp_path: Path) -> None:
    """Another session may remove its run's container between the engine's list and the
    inspection of each listed container: the new session's start goes on (it ended in a 404
    `No such container` setup error before). The removal is made to fall in that window."""
    needs_docker()
    import docker.errors  # type: ignore[import-untyped]

    from pytest_scylla.run.sandbox.docker.engine import (
        IMAGE,
        LABEL,
        client,
        ensure_image,
        remove_orphans,
    )

    engine = client()
    ensure_image(engine)
    made = engine.containers.create(
        IMAGE,
        ["/usr/bin/sleep", "infinity"],
        network_mode="none",
        labels={f"{LABEL}.pid": str(os.getpid()), f"{LABEL}.host": socket.gethostname()},
    )
    inspect = engine.api.inspect_container

    def removed_first(ident: str) -> Any:  # the other session's removal lands in the window
        if made.id.startswith(ident) or ident.startswith(made.id):
            with contextlib.suppress(docker.errors.NotFound):
                made.remove(force=True)
        return inspect(ident)

    engine.api.inspect_container = removed_first
    try:
        assert made.name not in remove_orphans(engine)
        made = engine.containers.create(  # control: the SDK's plain list fails on it
            IMAGE,
            ["/usr/bin/sleep", "infinity"],
            network_mode="none",
            labels={f"{LABEL}.pid": str(os.getpid()), f"{LABEL}.host": socket.gethostname()},
        )
        with pytest.raises(docker.errors.NotFound):
            engine.containers.list(all=True, filters={"label": f"{LABEL}.pid"})
    finally:
        engine.api.inspect_container = inspect
        with contextlib.suppress(docker.errors.NotFound):
            made.remove(force=True)
