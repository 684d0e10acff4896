"""The `docker` sandbox, through the docker SDK: one container per run (its private folder),
created at the run's first command and removed when the run is released.

The container has no network (`network_mode=none`: the gateway is reached through the same
bridge as under bwrap), a read-only root filesystem, a fresh `/tmp`, no capabilities, no new
privileges, CPU, memory and process limits, and write access to the run's private folder
(workspace and HOME) only. Its image (`docker_engine`) is the host toolchain image, into which
the host's system folders, this Python and the agent CLI's own files are bound read-only as
bwrap binds them, or an image of one's own that brings its toolchain and CLI. The run's folder
and the gateway's unix socket are bound into it; with `copy` (a remote engine, or
`--scylla-docker-copy`) nothing of the run is bound: the folder travels by copy
(`docker_copy`) and the gateway's connections through a relay on an exec's stdio
(`docker_relay`). Containers carry labels naming the session, the process and the host; a new
session removes those of dead processes on its host (a SIGKILLed session), never a live one's.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from pytest_scylla.run.sandbox.base import BRIDGE, INSIDE_PORT, INSIDE_SOCKET_DIR, SandboxError
from pytest_scylla.run.sandbox.docker import copy as docker_copy
from pytest_scylla.run.sandbox.docker.containers import DockerContainers, image_python
from pytest_scylla.run.sandbox.processes import Finished

OUTPUT_KEPT = 1 << 20  # bytes of a check's stdout and of its stderr kept (then truncated)
EXEC_HELPER = Path(__file__).with_name("execute.py")  # run by path: no package imports


class Docker(DockerContainers):
    name = "docker"

    def describe(self, image: str | None) -> dict[str, Any]:
        memory, cpus, pids = (
            self.limits["mem_limit"],
            self.limits["nano_cpus"] / 1e9,
            self.limits["pids_limit"],
        )
        return {
            "image": self.image(image).to_json(),
            "limits": {"memory": memory, "cpus": cpus, "pids": pids},
            "transfer": "copy" if self.copy else "bind",
        }

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
                    found.id,
                    ["claude", "--version"],
                    remove=True,
                    network_mode="none",
                    user=f"{os.getuid()}:{os.getgid()}",
                    environment={"HOME": "/tmp"},
                    read_only=True,
                    tmpfs={"/tmp": "rw"},
                    **self.limits,
                )
            except Exception as exc:
                raise SandboxError(
                    f"image {found.ref}: `claude --version` did not run in it "
                    f"({str(exc)[:300]}); an image for the docker sandbox needs "
                    "the agent CLI (build one with `scylla image build`)"
                ) from None
            self._cli_versions[found.id] = bytes(said).decode(errors="replace").split()[0]
        return self._cli_versions[found.id]

    def base_url(self, key: str) -> str:
        return f"http://127.0.0.1:{INSIDE_PORT}/run/{key}"

    def wrap(
        self, argv: Sequence[str], cwd: Path, private: Path, bridge: bool = False
    ) -> list[str]:
        """A host command that runs `argv` in the run's container (the checks use it)."""
        container = self._ready(private)
        return [
            sys.executable,
            "-X",
            f"pycache_prefix={self.pycache}",
            str(EXEC_HELPER),
            str(self.pycache),
            container.id,
            str(cwd),
            "--",
            *self._inside(argv, bridge, private),
        ]

    def _inside(self, argv: Sequence[str], bridge: bool, private: Path) -> list[str]:
        if not bridge:
            return list(argv)
        image = self._assigned.get(private) or self.image(None)
        bridge_code = ["-c", BRIDGE.read_text()] if self.copy else [str(BRIDGE)]
        return [
            image_python(image),
            *bridge_code,
            str(INSIDE_PORT),
            f"{INSIDE_SOCKET_DIR}/gateway.sock",
            "--",
            *argv,
        ]

    def _env(self, env: Mapping[str, str], private: Path) -> dict[str, str]:
        """The run's environment; in an image of its own, with that image's PATH."""
        image = self._assigned.get(private) or self.image(None)
        return dict(env) if image.host else {**env, "PATH": image.path}

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
        handle = api.exec_create(
            container.id,
            command,
            environment=self._env(env, private),
            workdir=str(cwd),
            stdout=True,
            stderr=True,
        )
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
        self._settle(private)
        left = self.sweep(private)
        refused, violations = self._copy_back(container, private)
        return Finished(
            exit_code=None if timed_out else code,
            timed_out=timed_out,
            seconds=seconds,
            leftovers=left,
            refused=tuple(refused),
            violations=tuple(violations),
        )

    def _copy_back(self, container: Any, private: Path) -> tuple[list[str], list[str]]:
        """Copy mode: what the command left, back to the host as data: (the members refused,
        the bounds the run broke: its relay dropped, its folder over the copy-back's bounds,
        when the host's copy stays as it was)."""
        if not self.copy:
            return [], []
        relay = self._relays.get(private)
        violations = [relay.violation] if relay is not None and relay.violation else []
        self._stale.add(private)
        try:
            return docker_copy.pull(container, private), violations
        except docker_copy.OverLimit as exc:
            return [], [*violations, f"copy-back refused: {exc}"]

    def executor(self, private: Path) -> Any:
        """Checks run through the SDK from this process: no helper process per check."""

        def execute(
            argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float
        ) -> tuple[int | None, str, str]:
            container = self._ready(private)
            began = time.monotonic()
            api = self.engine.api
            handle = api.exec_create(
                container.id,
                ["/usr/bin/timeout", "-s", "KILL", str(max(1, int(timeout))), *argv],
                environment=self._env(env, private),
                workdir=str(cwd),
            )
            kept: list[list[bytes]] = [[], []]
            sizes = [0, 0]
            for chunks in api.exec_start(handle["Id"], stream=True, demux=True):
                for i, data in enumerate(chunks):
                    if data and sizes[i] < OUTPUT_KEPT:  # a flood is cut, never held whole
                        kept[i].append(data)
                        sizes[i] += len(data)
            code = api.exec_inspect(handle["Id"]).get("ExitCode")
            timed_out = (
                code == 128 + signal.SIGKILL and time.monotonic() - began >= int(timeout) - 0.5
            )
            self.sweep(private)  # what the check left running
            out, err = (b"".join(k).decode(errors="replace") for k in kept)
            if self.copy:  # back to the host, as data, where the hidden files are put back
                self._stale.add(private)  # before the next check (pushed again)
                try:
                    docker_copy.pull(container, private)
                except docker_copy.OverLimit as exc:  # the agent's code ran: its check fails
                    code = code or 1
                    err += f"\n[harness: {exc}; the check fails]\n"
            return None if timed_out else code, out, err

        return execute
