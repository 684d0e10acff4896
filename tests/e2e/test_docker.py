"""The docker sandbox against a real engine (CI starts dockerd): isolation, the timeout, what
the agent leaves running, containers of dead sessions, and whole runs at two workers.

Here the sessions; the in-process tests are in `tests/unit/run/sandbox/test_docker.py`."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.operations.ledger import SESSIONS
from pytest_scylla.run.gateway import Gateway

from ..conftest import needs_bwrap, needs_docker, require, workers
from .test_sandbox import DETACH, _probe


@pytest.fixture
def docker_sandbox(tmp_path: Path) -> object:
    needs_docker()
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    gw = Gateway().start()
    box = Docker(gw.port, gw.socket_dir)
    box.gateway = gw  # type: ignore[attr-defined]
    yield box
    box.close(tmp_path / "private")
    gw.stop()


def test_docker_allows_only_the_workspace_and_the_gateway(
    docker_sandbox: object, tmp_path: Path
) -> None:
    """Through `wrap` (the checks' path): the gateway answers through the bridge, the
    workspace is shared with the host, and nothing else is reachable or writable."""
    results = _probe(docker_sandbox, docker_sandbox.gateway, tmp_path)  # type: ignore[arg-type,attr-defined]
    assert results["gateway"] == "ok 200"
    assert results["dns"].startswith("blocked")
    assert results["internet"].startswith("blocked")
    assert results["write_usr"].startswith("blocked")
    assert results["host_file"] == "absent"


def test_docker_times_out_and_stops_what_the_command_left(
    docker_sandbox: object, tmp_path: Path
) -> None:
    box = docker_sandbox
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin"}
    left = box.run(
        ["/bin/sh", "-c", DETACH.format(t="97")],  # type: ignore[attr-defined]
        private / "work",
        private,
        env,
        None,
        30,
        subprocess.DEVNULL,
        subprocess.DEVNULL,
    )
    assert (left.exit_code, left.timed_out, left.leftovers) == (0, False, 4)
    out = private / "out.txt"
    with open(out, "wb") as handle:
        slow = box.run(
            ["/bin/sh", "-c", "echo started; exec sleep 60"],  # type: ignore[attr-defined]
            private / "work",
            private,
            env,
            "",
            2,
            handle,
            subprocess.DEVNULL,
        )
    assert slow.timed_out
    assert slow.exit_code is None
    assert 1.5 < slow.seconds < 10
    assert out.read_text() == "started\n"  # the output streamed to the host's file
    container = box.container(private)  # type: ignore[attr-defined]
    names = [p[-1] for p in container.top(ps_args="-eo pid,args")["Processes"]]
    assert names == ["sleep infinity"]  # only the keeper is left
    host = container.attrs["HostConfig"]  # the default limits, no network, a read-only root
    assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (4 << 30, 2 * 10**9, 1024)
    assert (host["NetworkMode"], host["ReadonlyRootfs"], host["CapDrop"]) == ("none", True, ["ALL"])


def test_a_local_engines_container_processes_are_read_from_its_cgroup(
    docker_sandbox: object, tmp_path: Path
) -> None:
    """On a local engine the sweep after each command reads the container's `cgroup.procs`
    (no engine round trip); it finds what the engine's `top` finds: the keeper left out, a
    process the command left counted, then killed."""
    box: Any = docker_sandbox
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    container = box.container(private)
    procs = box._procs[private]
    assert procs is not None
    assert container.id in str(procs)
    assert box._processes(private, container) == []  # the keeper only
    box.run(
        ["/bin/sh", "-c", "setsid sleep 9731 & echo started"],
        private / "work",
        private,
        {"PATH": "/usr/bin:/bin"},
        None,
        30,
        subprocess.DEVNULL,
        subprocess.DEVNULL,
    )
    container.exec_run(["/bin/sh", "-c", "setsid sleep 9732 >/dev/null 2>&1 &"])
    for _ in range(100):  # until it has become `sleep` (setsid forks, then execs)
        found = box._processes(private, container)
        if found == ["sleep 9732"]:
            break
        time.sleep(0.05)
    box._procs[private] = None  # control: the engine's `top`, as for a remote engine
    assert found == box._processes(private, container) == ["sleep 9732"]
    assert box.sweep(private) == 1
    assert box._processes(private, container) == []


def test_a_new_session_removes_containers_of_dead_sessions_only(tmp_path: Path) -> None:
    needs_docker()
    from pytest_scylla.run.sandbox.docker.engine import (
        IMAGE,
        LABEL,
        client,
        ensure_image,
        remove_orphans,
    )

    engine = client()
    ensure_image(engine)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    made = {}
    for name, pid in (("dead", gone.stdout.strip()), ("live", str(os.getpid()))):
        made[name] = engine.containers.run(
            IMAGE,
            ["/usr/bin/sleep", "infinity"],
            detach=True,
            network_mode="none",
            volumes={
                "/usr": {"bind": "/usr", "mode": "ro"},
                "/lib": {"bind": "/lib", "mode": "ro"},
                "/lib64": {"bind": "/lib64", "mode": "ro"},
            },
            labels={f"{LABEL}.pid": pid, f"{LABEL}.host": socket.gethostname()},
        )
    try:
        removed = remove_orphans(engine)
        names = {c.name for c in engine.containers.list(all=True, ignore_removed=True)}
        # gone (removed here, or by another session's start on this host in the meantime)
        assert made["dead"].name not in names
        assert made["live"].name not in removed
        made["live"].reload()
        assert made["live"].status == "running"  # a live session's container is untouched
    finally:
        for container in made.values():
            with contextlib.suppress(Exception):  # already removed
                container.remove(force=True)


@pytest.mark.slow  # the docker sandbox's own tests here stay; sessions under docker are slow
def test_runs_under_docker_at_two_workers(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    needs_docker()
    from pytest_scylla.run.sandbox.docker.engine import LABEL, client

    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "T0-01 or T1-01",
        *workers(2),
        *oracle,
        "--scylla-sandbox=docker",
        f"--scylla-out={out}",
        "--scylla-limits=memory=2g,pids=512",
    )
    done.assert_outcomes(passed=4)
    done.stdout.fnmatch_lines(["scylla: sandbox=docker image=host"])
    image_ids = set()
    for path in out.glob("runs/*/run.json"):
        rec = json.loads(path.read_text())
        assert rec["sandbox"] == "docker"
        assert [c["passed"] for c in rec["checks"]] == [True]  # checked inside the container
        assert rec["limits"] == {"memory": 2 << 30, "cpus": 2.0, "pids": 512}
        assert rec["image"]["ref"] == "host"
        image_ids.add(rec["image"]["id"])
    (image_id,) = image_ids
    assert image_id.startswith("sha256:")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["images"] == [{"ref": "host", "id": image_id}]
    assert manifest["options"]["limits"] == {"memory": 2 << 30, "cpus": 2.0, "pids": 512}
    # another limit is another condition: the stored runs are not silently mixed with new ones
    again = pytester.runpytest(
        "cases",
        "-k",
        "T0-01 and alpha",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-sandbox=docker",
        f"--scylla-out={out}",
        "--scylla-limits=memory=2g,pids=256",
    )
    again.assert_outcomes(errors=1)
    again.stdout.fnmatch_lines(
        [
            "*the stored run was made under other conditions*changed: "
            "container.limits.pids: 512 -> 256)*"
        ]
    )  # what changed, named
    sessions = [p.name for p in (out / SESSIONS).iterdir()]
    assert len(sessions) == 1
    engine = client()
    labelled = engine.containers.list(
        all=True, filters={"label": f"{LABEL}.session"}, ignore_removed=True
    )
    assert [c.name for c in labelled if c.labels[f"{LABEL}.session"] == sessions[0]] == []


def test_a_case_that_brings_its_own_image(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: Any
) -> None:
    """A case's `image:` runs only under docker: elsewhere its runs are skipped, saying so; an
    image the engine does not have is one clear error (never a pull), not a traceback."""
    needs_bwrap()
    needs_docker()
    edit(
        "cases/alpha/test.yaml",
        "solution: solution\n",
        "solution: solution\nimage: scylla-absent:0\n",
    )
    args = ("cases", "-k", "alpha and T0-01", "-p", "no:xdist", "-rs", *oracle)
    bw = pytester.runpytest(*args, "--scylla-sandbox=bwrap", f"--scylla-out={mini / 'bw'}")
    bw.assert_outcomes(skipped=1)
    bw.stdout.fnmatch_lines(
        [
            "*case alpha runs in its image scylla-absent:0: use "
            "--scylla-sandbox=docker (this session's sandbox is bwrap)*"
        ]
    )
    dk = pytester.runpytest(*args, "--scylla-sandbox=docker", f"--scylla-out={mini / 'dk'}")
    dk.assert_outcomes(errors=1)
    dk.stdout.fnmatch_lines(
        [
            "*infra_error: image scylla-absent:0 is not on the Docker engine "
            "*; build it with `scylla image build --tag scylla-absent:0`*"
        ]
    )
    assert "Traceback" not in dk.stdout.str()


BASE_IMAGE_ENV = "SCYLLA_TEST_BASE_IMAGE"  # a Debian image on the engine (.ci/run imports one)
TRUST = "/usr/local/share/scylla-trust"  # made by the shipped Dockerfile; absent on the host
BUILT = "scylla-agent:test-build"


def _engine_over_tcp() -> str:
    """The local engine seen as a remote one: a TCP forwarder on loopback to its unix socket
    (runs for the rest of the test process); its DOCKER_HOST."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def serve() -> None:
        while True:
            client, _ = listener.accept()
            engine = socket.socket(socket.AF_UNIX)
            engine.connect("/var/run/docker.sock")
            for a, b in ((client, engine), (engine, client)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{listener.getsockname()[1]}"


def _built_image() -> str:
    """`scylla image build` of the shipped Dockerfile on the local base image, for real (its
    layers are cached by the engine: the second build is quick); the tag."""
    needs_docker()
    from pytest_scylla.run.sandbox.docker.engine import client, image_present

    base = os.environ.get(BASE_IMAGE_ENV, "")
    require(
        None
        if base and image_present(client(), base)
        else f"no base image to build on (set {BASE_IMAGE_ENV}; .ci/run imports a debootstrap "
        "root filesystem)"
    )
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    built = subprocess.run(
        [
            str(Path(sys.executable).with_name("scylla")),
            "image",
            "build",
            "--base",
            base,
            "--tag",
            BUILT,
            *(["--ca-bundle", str(ca)] if ca.is_file() else []),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert f"built {BUILT} ({client().images.get(BUILT).id})" in built.stdout
    return BUILT


@pytest.mark.slow
def test_a_remote_engine_gets_the_run_by_copy_and_the_gateway_by_relay(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine over TCP (the local engine behind a loopback TCP forwarder) is remote: nothing
    of this machine can be bound into its containers, so the run's folder travels by copy and
    the gateway is reached through the relay; the host image is refused with one clear error."""
    tag = _built_image()
    monkeypatch.setenv("DOCKER_HOST", _engine_over_tcp())
    out = mini / "remote"
    done = pytester.runpytest(
        "cases",
        "-k",
        "T0-01 or T5-02",
        *workers(2),
        *oracle,
        "--scylla-sandbox=docker",
        f"--scylla-image={tag}",
        f"--scylla-out={out}",
    )
    done.assert_outcomes(passed=3)  # alpha and beta T0-01; alpha T5-02 with an MCP server
    records = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")]
    assert {r["transfer"] for r in records} == {"copy"}
    assert all(r["ablation"]["problems"] == [] for r in records)  # the MCP tools did reach it
    assert all(c["passed"] for r in records for c in r["checks"])
    assert all(r["api_calls"] >= 1 for r in records)  # through the relay to the gateway
    host = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-sandbox=docker",
        f"--scylla-out={mini / 'host'}",
    )
    host.stdout.fnmatch_lines(
        [
            "*the engine at * is remote, and the host image binds this "
            "machine's system into each container*"
        ]
    )
    assert "Traceback" not in host.stdout.str()


@pytest.mark.slow
def test_an_image_from_scylla_image_build_runs_a_case_with_its_own_cli(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: Any
) -> None:
    """`scylla image build` on a local Debian base (no registry): the shipped Dockerfile for
    real. A run with that image uses the image's CLI and toolchain (a check that passes only
    inside it; the host image is the control), records the image's id, and the image is a
    condition of its own: another config hash and another CLI baseline."""
    from pytest_scylla.run.agents.claude_code import PINNED_VERSION
    from pytest_scylla.run.sandbox.docker.engine import client

    tag = _built_image()
    image_id = client().images.get(tag).id
    edit(
        "cases/alpha/test.yaml",
        "checks:\n",
        f"checks:\n  - name: in-image\n    run: test -d {TRUST}\n",
    )
    records = {}
    for name, image in (("own", tag), ("host", "host")):
        out = mini / name
        done = pytester.runpytest(
            "cases",
            "-k",
            "alpha and T0-01",
            "-p",
            "no:xdist",
            *oracle,
            "--scylla-sandbox=docker",
            f"--scylla-image={image}",
            f"--scylla-out={out}",
        )
        records[name] = json.loads(next(out.glob("runs/*/run.json")).read_text())
        if name == "own":
            done.assert_outcomes(passed=1)
    own, host = records["own"], records["host"]
    assert own["image"] == {"ref": tag, "id": image_id}
    assert own["cli_version"] == PINNED_VERSION  # the image's own CLI, asked in the image
    assert [c["passed"] for c in own["checks"]] == [True, True]
    assert host["image"]["ref"] == "host"
    assert {c["name"]: c["passed"] for c in host["checks"]}["in-image"] is False  # control
    assert own["config_hash"] != host["config_hash"]
    cache = Path(oracle[1].split("=", 1)[1])
    assert len(list(cache.glob("baseline-claude-code-*-docker-*.json"))) >= 2  # one per image


def _containers_of(pid: int) -> list[object]:
    from pytest_scylla.run.sandbox.docker.engine import LABEL, client

    return client().containers.list(
        all=True, filters={"label": f"{LABEL}.pid={pid}"}, ignore_removed=True
    )


def _session(mini: Path, out: Path, oracle: list[str], delay: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SCYLLA_ORACLE_JUDGE_DELAY": delay}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-k",
            "alpha and T0-01",
            "-p",
            "no:xdist",
            *oracle,
            "--scylla-sandbox=docker",
            f"--scylla-out={out}",
        ],
        cwd=mini,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_for_container(pid: int, seconds: float = 60) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not _containers_of(pid):
        assert time.monotonic() < deadline, "no container appeared"
        time.sleep(0.2)


@pytest.mark.slow
def test_a_killed_sessions_containers_go_and_a_live_sessions_stay(
    mini: Path, oracle: list[str]
) -> None:
    """kill -9 of a session while its run's container exists (the judges are slow); another
    session is mid-run at the same time; a third session starts: the dead one's container is
    removed, the live one's is untouched."""
    needs_docker()
    import signal

    (mini / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    dead = _session(mini, mini / "dead", oracle, "200")
    live = _session(mini, mini / "live", oracle, "200")  # judged until the end: killed there
    try:
        _wait_for_container(dead.pid)
        os.killpg(dead.pid, signal.SIGKILL)  # at once: its run may not end before the kill
        dead.wait()
        assert _containers_of(dead.pid)  # left behind by the kill
        _wait_for_container(live.pid)
        third = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "cases",
                "-k",
                "beta and T0-01",
                "-p",
                "no:xdist",
                *oracle,
                "--scylla-sandbox=docker",
                f"--scylla-out={mini / 'third'}",
            ],
            cwd=mini,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert third.returncode == 0, third.stdout[-2000:]
        assert _containers_of(dead.pid) == []
        assert len(_containers_of(live.pid)) == 1  # the live session's run goes on
    finally:
        for proc in (dead, live):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for proc in (dead, live):
            for container in _containers_of(proc.pid):
                container.remove(force=True)  # type: ignore[attr-defined]
