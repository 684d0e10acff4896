"""The sandboxes on their own: what a sandboxed process can and cannot reach."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.run.gateway import Gateway
from pytest_scylla.run.sandbox import Bwrap, Sandbox, choose

from .conftest import needs_bwrap

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
    argv = sandbox.wrap([sys.executable, "-c", PROBE, str(ws), str(outside),
                         sandbox.base_url("x")], ws, private, bridge=True)
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


def test_bwrap_allows_only_the_workspace_and_the_gateway(gateway: Gateway,
                                                         tmp_path: Path) -> None:
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


def test_auto_prefers_bwrap_when_it_works() -> None:
    """Where bubblewrap works, `auto` picks it and has nothing to warn about (in CI, where
    bubblewrap is installed, this always runs)."""
    needs_bwrap()
    assert choose("auto") == (Bwrap, None)


def test_auto_falls_back_to_local_with_a_warning_when_bwrap_is_missing(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Where bubblewrap is not installed, `auto` falls back to the local sandbox and says so:
    the warning names the reason and that runs are NOT isolated."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap to be found
    kind, warning = choose("auto")
    assert kind is Sandbox
    assert warning is not None
    assert "NOT isolated" in warning
    assert "bubblewrap (bwrap) is not installed" in warning
