"""The sandboxes on their own: what a sandboxed process can and cannot reach.

Here the sessions; the in-process tests are in `tests/unit/run/sandbox/test_sandbox.py`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_scylla.run.gateway import Gateway
from pytest_scylla.run.sandbox import Bwrap, Sandbox, choose

from ..conftest import needs_bwrap

PROBE = r"""
import pathlib, socket, sys, urllib.request
ws, outside = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
(ws / "made-inside.txt").write_text("ok")
results = {}
for name, action in {
    "write_outside": lambda: outside.write_text("escaped"),
    "write_usr": lambda: pathlib.Path("/usr/escaped").write_text("x"),
    "dns": lambda: socket.getaddrinfo("pypi.org", 443),
    "internet": lambda: socket.create_connection(("1.1.1.1", 80), timeout=3).close(),
    "gateway": lambda: urllib.request.urlopen(urllib.request.Request(
        sys.argv[3], method="HEAD"), timeout=5).status,
}.items():
    try:
        results[name] = f"ok {action()}"
    except Exception as exc:
        results[name] = f"blocked {type(exc).__name__}"
print(results)
"""


def _probe(sandbox: Sandbox, gateway: Gateway, tmp_path: Path) -> dict[str, str]:
    private = tmp_path / "private"
    ws = private / "work"
    ws.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    argv = sandbox.wrap(
        [sys.executable, "-c", PROBE, str(ws), str(outside), sandbox.base_url("x")],
        ws,
        private,
        bridge=True,
    )
    done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (ws / "made-inside.txt").read_text() == "ok"  # the workspace is writable and shared
    results: dict[str, str] = eval(done.stdout)
    results["host_file"] = "exists" if outside.exists() else "absent"
    return results


@pytest.fixture
def gateway() -> Gateway:
    gw = Gateway().start()
    yield gw  # type: ignore[misc]
    gw.stop()


def test_bwrap_allows_only_the_workspace_and_the_gateway(gateway: Gateway, tmp_path: Path) -> None:
    """A process in the bwrap sandbox reaches the gateway and writes its workspace, and
    nothing else: no DNS, no internet, no write to /usr or to the host's /tmp."""
    needs_bwrap()
    results = _probe(Bwrap(gateway.port, gateway.socket_dir), gateway, tmp_path)
    assert results["gateway"] == "ok 200"  # through the unix-socket bridge
    assert results["dns"].startswith("blocked")
    assert results["internet"].startswith("blocked")
    assert results["write_usr"].startswith("blocked")
    assert results["host_file"] == "absent"  # /tmp inside is private: nothing reaches the host


def test_local_sandbox_is_reported_as_not_isolated(gateway: Gateway, tmp_path: Path) -> None:
    results = _probe(Sandbox(gateway.port, gateway.socket_dir), gateway, tmp_path)
    assert results["gateway"] == "ok 200"
    assert results["host_file"] == "exists"  # why auto prefers bwrap
    assert choose("local") == (Sandbox, None)


def _fake_installs(root: Path) -> dict[str, Path]:
    """A native install (~/.local/bin/claude -> ~/.local/share/claude/versions/X) next to other
    data in ~/.local, and an npm install (prefix/bin/tool -> ../lib/node_modules/@s/pkg/cli.js)."""
    local = root / "home" / ".local"
    version = local / "share" / "claude" / "versions" / "9.9.9"
    version.parent.mkdir(parents=True)
    version.write_text("#!/bin/sh\necho native-cli-ran\n")
    version.chmod(0o755)
    (local / "bin").mkdir()
    (local / "bin" / "claude").symlink_to(version)
    (local / "share" / "secret.txt").write_text("not for the agent\n")
    package = root / "npm" / "lib" / "node_modules" / "@s" / "pkg"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text("{}")
    (package / "dist" / "cli.js").write_text("")
    (package / "dist" / "cli.js").chmod(0o755)
    (root / "npm" / "bin").mkdir()
    (root / "npm" / "bin" / "ruff").symlink_to(package / "dist" / "cli.js")
    return {"local": local, "version": version, "package": package}


def test_bwrap_binds_a_cli_install_not_the_folder_around_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gateway: Gateway
) -> None:
    """The CLI's own files are visible in the sandbox (it runs), the rest of ~/.local is not."""
    needs_bwrap()
    from pytest_scylla.run.sandbox import bwrap as sandbox_mod

    made = _fake_installs(tmp_path)
    monkeypatch.setenv(
        "PATH", f"{made['local'] / 'bin'}:{tmp_path / 'npm' / 'bin'}:{os.environ['PATH']}"
    )
    paths = sandbox_mod.system_paths.__wrapped__()
    assert made["local"] / "bin" / "claude" in paths
    assert made["version"] in paths
    assert made["package"] in paths  # the npm package folder, found through its package.json
    assert {p for p in paths if p == made["local"] or made["local"] in p.parents} == {
        made["local"] / "bin" / "claude",
        made["version"],
    }
    monkeypatch.setattr(sandbox_mod, "system_paths", lambda: paths)
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    secret = made["local"] / "share" / "secret.txt"
    argv = Bwrap(gateway.port, gateway.socket_dir).wrap(
        ["/bin/sh", "-c", f"claude; cat {secret} || echo secret-unreadable"],
        private / "work",
        private,
    )
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": os.environ["PATH"]},
    )
    assert "native-cli-ran" in done.stdout
    assert "secret-unreadable" in done.stdout
    assert "not for the agent" not in done.stdout
    # positive control: bound the old way (the folder around the command), the secret shows
    monkeypatch.setattr(sandbox_mod, "system_paths", lambda: (*paths, made["local"]))
    argv = Bwrap(gateway.port, gateway.socket_dir).wrap(
        ["/bin/sh", "-c", f"cat {secret}"], private / "work", private
    )
    assert (
        "not for the agent"
        in subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    )


DETACH = (
    "setsid sleep {t}1 & nohup sleep {t}2 >/dev/null 2>&1 & (sleep {t}3 &) ; "
    "sh -c 'sleep {t}4 &' ; echo started"
)


def _sleepers(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if entry.name.isdigit() and tag in cmdline:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_local_stops_what_the_agent_left_running_and_counts_it(tmp_path: Path) -> None:
    """Processes detached with setsid, nohup or a double fork outlive the command (the positive
    control, started the plain way); under the local sandbox they are killed when it exits, and
    the run records how many there were."""
    one, two = f"7{os.getpid()}", f"8{os.getpid()}"  # tags no other process has
    control = subprocess.run(
        ["/bin/sh", "-c", DETACH.format(t=one)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=30,
    )
    assert control.returncode == 0
    try:
        assert len(_sleepers(f"sleep {one}")) == 4
    finally:
        for pid in _sleepers(f"sleep {one}"):
            os.kill(pid, 9)
    private = tmp_path / "private"
    (private / "work").mkdir(parents=True)
    finished = Sandbox().run(
        ["/bin/sh", "-c", DETACH.format(t=two)],
        private / "work",
        private,
        {"PATH": os.environ["PATH"]},
        None,
        30,
        subprocess.DEVNULL,
        subprocess.DEVNULL,
    )
    assert finished.exit_code == 0
    assert finished.leftovers == 4
    assert _sleepers(f"sleep {two}") == []


def test_a_zombie_owner_counts_as_gone_for_stale_folders(tmp_path: Path) -> None:
    """A SIGKILLed session's processes may linger as zombies (killed, not yet reaped by their
    parent): their folders are stale all the same; a live owner's folder stays."""
    from pytest_scylla.core.tempdirs import OWNER_FILE, clean_stale

    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for name, pid in (("scylla-run-zombie", child.pid), ("scylla-run-live", os.getpid())):
        (tmp_path / name).mkdir()
        (tmp_path / name / OWNER_FILE).write_text(str(pid))
    try:
        assert clean_stale(tmp_path) == [tmp_path / "scylla-run-zombie"]
    finally:
        child.wait()
    assert (tmp_path / "scylla-run-live").is_dir()


def test_waiting_on_the_cli_works_past_file_number_1023() -> None:
    """The CLI's exit is awaited on a pidfd with poll: a process holding a thousand files (a
    long in-process session did) still waits; select(), the control, cannot watch that file."""
    import resource
    import select

    from pytest_scylla.run.sandbox import exited

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(1100)]
    try:
        assert max(held) > 1023
        proc = subprocess.Popen(["sleep", "0.2"])
        assert exited(proc, 10)
        assert proc.wait() == 0
        with pytest.raises(ValueError, match="out of range"):
            select.select([max(held)], [], [], 0)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
