"""A team's MCP server started with `uvx` (a real package from PyPI, `mcp-server-time`, which
publishes wheels) planned by `scylla ablate plan`, installed on the host from wheels and
started in the sandbox without network, through the real Claude Code CLI under the oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from .test_docker import _built_image

SERVER = {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]}


def _runs(pytester: pytest.Pytester, mini: Path, oracle: list[str], out: Path, *more: str) -> Any:
    return pytester.runpytest(
        "cases",
        *oracle,
        f"--scylla-tiers-dir={mini / 'ablation'}",
        "--scylla-packaged-tiers=under",
        "--scylla-tiers=T0",
        "-k",
        "alpha",
        "-p",
        "no:xdist",
        f"--scylla-out={out}",
        *more,
    )


def _plan(mini: Path) -> dict[str, Any]:
    """`scylla ablate plan` on the case's source whose .mcp.json has the uvx server; the
    server's declaration."""
    source = mini / "cases" / "alpha" / "source"
    (source / ".mcp.json").write_text(json.dumps({"mcpServers": {"time": SERVER}}, indent=2))
    assert main(["ablate", "plan", str(source), "--out", str(mini / "ablation")]) == 0
    declared: dict[str, Any] = json.loads((mini / "ablation/mcp/time.json").read_text())
    assert declared["pypi"]["requirement"].startswith("mcp-server-time==")
    return declared


def _records(out: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in sorted(out.glob("runs/*/run.json"))]
    return {r["subtest_name"]: r for r in found}


@pytest.mark.slow  # a pip install from PyPI (about 10 s) and four oracle runs (about 60 s)
@pytest.mark.each_sandbox  # bwrap, and docker
def test_a_uvx_server_is_installed_on_the_host_and_starts_in_the_sandbox(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The full arm's requests carry the server's tools and every arm passes the ablation
    check. The control: the same server without its `pypi` key (nothing installed on the host)
    cannot start in the sandbox, one infra_error naming the server and the fix."""
    declared = _plan(mini)
    done = _runs(pytester, mini, oracle, mini / "out")
    records = _records(mini / "out")
    assert records, done.stdout.str()[-3000:]
    for name, record in records.items():
        assert record["outcome"] == "pass", (name, record["reason"])
        assert record["ablation"]["problems"] == [], name
    full = next(r for n, r in records.items() if n.endswith("-full"))
    assert full["ablation"]["observed"]["mcp_servers"] == ["time"]
    none = next(r for n, r in records.items() if n.endswith("-none"))
    assert none["ablation"]["observed"]["mcp_servers"] == []

    del declared["pypi"]  # the control: started by uvx in the sandbox, as the team wrote it
    (mini / "ablation/mcp/time.json").write_text(json.dumps(declared, indent=2))
    _runs(pytester, mini, oracle, mini / "control")
    control = _records(mini / "control")
    record = next(r for n, r in control.items() if n.endswith("-full"))
    assert record["outcome"] == "infra_error", record["reason"]
    assert "MCP server 'time'" in record["reason"]
    assert "`pypi`" in record["reason"]


@pytest.mark.slow  # builds (or reuses) the agent image, two oracle runs in it
def test_a_uvx_server_starts_in_an_image_of_ones_own(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """An image from `scylla image build` has its own python3, not this host's that the venv
    links to: the server runs on the image's python3 (the same version here) over the venv."""
    tag = _built_image()
    _plan(mini)
    more = ("--scylla-sandbox=docker", f"--scylla-image={tag}")
    done = _runs(pytester, mini, oracle, mini / "image", *more)
    records = _records(mini / "image")
    assert len(records) == 2, done.stdout.str()[-3000:]
    for name, record in records.items():
        assert record["outcome"] == "pass", (name, record["reason"])
        assert record["ablation"]["problems"] == [], name
    full = next(r for n, r in records.items() if n.endswith("-full"))
    assert full["ablation"]["observed"]["mcp_servers"] == ["time"]
