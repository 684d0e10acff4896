"""`uvx` / `pipx run` MCP servers planned so that a sandbox without network starts them
(`formats.pypi`): the generated `mcp/<name>.json` carries the `pypi` key (requirement and
console script) the run installs on the host from wheels; an unpinned package is pinned at plan
time from the index pip is configured with, saying so; a package the index does not have is one
line naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.formats import ablation_plan, pypi
from pytest_scylla.formats.agent_config import Configuration, read_claude_code
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError

TIME = "mcp-server-time"


def _project(tmp_path: Path, servers: dict[str, object]) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
    return root


def _written(root: Path, config: Configuration) -> dict[str, dict[str, Any]]:
    units = ablation_plan.factors(config)
    ablation_plan.write_tiers(config, units, ablation_plan.design(units), root / "abl")
    assert TierSet(root / "abl").errors == {}
    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "abl/mcp").glob("*.json"))}


@pytest.mark.parametrize(
    ("command", "args", "pypi_key", "rest"),
    [
        ("uvx", ["pkg@1.2", "--x"], ("pkg==1.2", "pkg"), ["--x"]),
        ("uvx", ["-q", "pkg==1.2"], ("pkg==1.2", "pkg"), []),
        ("uvx", ["--from", "pkg[cli]==1.2", "run-it"], ("pkg[cli]==1.2", "run-it"), []),
        ("/usr/bin/uv", ["tool", "run", "pkg@1.2"], ("pkg==1.2", "pkg"), []),
        ("pipx", ["run", "--spec", "pkg==1.2", "go", "a"], ("pkg==1.2", "go"), ["a"]),
        ("pipx", ["run", "pkg==1.2"], ("pkg==1.2", "pkg"), []),
    ],
)
def test_the_pinned_forms_carry_their_pypi_key(
    tmp_path: Path,
    command: str,
    args: list[str],
    pypi_key: tuple[str, str],
    rest: list[str],
) -> None:
    """Pinned already: no index is asked, nothing is said."""
    path = tmp_path / ".mcp.json"
    path.write_text("{}")
    server, note = pypi.pinned(path, "s", {"command": command, "args": args})
    assert server["pypi"] == {"requirement": pypi_key[0], "entry": pypi_key[1]}
    assert server["args"] == args  # pinned by the team: as they wrote it
    assert note == ""
    launch = pypi.invocation(server)  # what the run reads back to start the entry point
    assert isinstance(launch, pypi.Invocation)
    assert (launch.entry, list(launch.rest)) == (pypi_key[1], rest)


@pytest.mark.parametrize(
    "server",
    [
        {"command": "python3", "args": ["-m", "server"]},
        {"command": "npx", "args": ["-y", "x@1.0.0"]},
        {"command": "uvx", "args": []},
    ],
)
def test_other_commands_are_left_as_they_are(tmp_path: Path, server: dict[str, Any]) -> None:
    assert pypi.pinned(tmp_path / ".mcp.json", "s", server) == (server, "")


def test_an_option_not_understood_is_said_and_the_server_left(tmp_path: Path) -> None:
    server = {"command": "uvx", "args": ["--with", "extra", "pkg"]}
    kept, note = pypi.pinned(tmp_path / ".mcp.json", "s", server)
    assert kept == server
    assert note == f"uvx option '--with' is not understood here: {pypi.UNINSTALLED}"


@pytest.mark.parametrize("spec", [".", "./server", "git+https://example.org/s.git", "/opt/s"])
def test_a_local_or_git_package_is_said_and_the_server_left(tmp_path: Path, spec: str) -> None:
    server = {"command": "uvx", "args": ["--from", spec, "serve"]}
    kept, note = pypi.pinned(tmp_path / ".mcp.json", "s", server)
    assert kept == server
    assert note == f"'{spec}' is no package of an index: {pypi.UNINSTALLED}"


def test_a_version_range_is_one_line_asking_for_a_pin(tmp_path: Path) -> None:
    root = _project(tmp_path, {"t": {"command": "uvx", "args": ["--from", "pkg>=1", "pkg"]}})
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    assert str(caught.value).endswith(
        ".mcp.json:7: server 't': 'pkg>=1' is no exact version; pin it as name==version"
    )


def test_a_package_without_wheels_is_refused_at_plan_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index query stubbed at its boundary: the version exists only as a source archive."""
    monkeypatch.setattr(pypi, "_versions", lambda _p, wheels: (None if wheels else "1.0", ""))
    root = _project(tmp_path, {"s": {"command": "uvx", "args": ["sdist-only"]}})
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    message = str(caught.value)
    assert ".mcp.json:6: server 's': 'sdist-only' publishes no wheel for this Python" in message
    assert "never builds a package from source" in message


@pytest.mark.parametrize(
    ("command", "args"),
    [("uvx", [TIME, "--local-timezone=UTC"]), ("pipx", ["run", f"{TIME}", "--local-timezone=UTC"])],
)
def test_an_unpinned_server_is_pinned_at_plan_time(
    tmp_path: Path, command: str, args: list[str]
) -> None:
    """Asks the package index (about 1 s): the newest version with wheels, written into the
    args and the `pypi` key, and the plan says it pinned it."""
    root = _project(tmp_path, {"time": {"command": command, "args": args}})
    config = read_claude_code(root)
    written = _written(root, config)["time"]
    requirement = written["pypi"]["requirement"]
    assert requirement.startswith(f"{TIME}==")
    assert written["pypi"]["entry"] == TIME
    version = requirement.split("==")[1]
    if command == "uvx":
        assert written["args"] == [f"{TIME}@{version}", "--local-timezone=UTC"]
    else:
        assert written["args"] == ["run", "--spec", requirement, TIME, "--local-timezone=UTC"]
    reason = next(c.reason for c in config.components if c.id == "mcp:time")
    assert (
        reason
        == f"{command} package '{TIME}' pinned at plan time to {requirement} (pip index versions)"
    )


def test_a_package_the_index_does_not_have_is_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = "scylla-test-nonexistent-mcp-4f2a"
    root = _project(tmp_path, {"gone": {"command": "uvx", "args": [missing]}})
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    message = str(caught.value)
    assert f".mcp.json:6: server 'gone': package '{missing}' is not in the package index" in (
        message
    ), message
    assert "No matching distribution" in message
    assert "\n" not in message


def test_a_tier_cannot_pass_a_model_credential_to_a_server(tmp_path: Path) -> None:
    """`pass_env` (the user's variables a server gets) never names a credential of the harness:
    the tier set is refused where it is loaded, naming the file."""
    root = _project(tmp_path, {"local": {"command": "python3", "args": ["s.py"]}})
    _written(root, read_claude_code(root))
    resource = root / "abl/mcp/local.json"
    server = json.loads(resource.read_text())
    resource.write_text(json.dumps({**server, "pass_env": ["GITHUB_TOKEN"]}, indent=2))
    assert TierSet(root / "abl").errors == {}
    resource.write_text(json.dumps({**server, "pass_env": ["ANTHROPIC_API_KEY"]}, indent=2))
    errors = str(TierSet(root / "abl").errors)
    assert "local.json" in errors
    assert "never a model credential" in errors
