"""`npx -y <package>` MCP servers planned so that a sandbox without network starts them
(`formats.npx`): the generated `mcp/<name>.json` carries the `npm` key the run installs on the
host; an unpinned package is pinned at plan time from the npm registry, saying so; a package
the registry does not have is one line naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.formats import ablation_plan
from pytest_scylla.formats.agent_config import Configuration, read_claude_code
from pytest_scylla.formats.npx import PINNED
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError

MEMORY = "@modelcontextprotocol/server-memory"


def _project(tmp_path: Path, servers: dict[str, object]) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
    return root


def _written(root: Path, config: Configuration) -> dict[str, dict[str, object]]:
    units = ablation_plan.factors(config)
    ablation_plan.write_tiers(config, units, ablation_plan.design(units), root / "abl")
    assert TierSet(root / "abl").errors == {}
    return {p.stem: json.loads(p.read_text()) for p in sorted((root / "abl/mcp").glob("*.json"))}


def test_a_pinned_npx_server_carries_its_npm_key(tmp_path: Path) -> None:
    spec = f"{MEMORY}@2026.8.31"
    root = _project(
        tmp_path,
        {
            "memory": {"command": "npx", "args": ["-y", spec], "env": {"A": "b"}},
            "local": {"command": "python3", "args": ["tools/server.py"]},
        },
    )
    config = read_claude_code(root)
    written = _written(root, config)
    assert written["memory"]["npm"] == spec
    assert written["memory"]["args"] == ["-y", spec]
    assert "npm" not in written["local"]  # only npx servers are installed from npm
    note = {c.id: c.reason for c in config.components}
    assert note["mcp:memory"] == ""  # pinned already: nothing to say


@pytest.mark.parametrize("spec", [MEMORY, f"{MEMORY}@latest"])
def test_an_unpinned_npx_server_is_pinned_at_plan_time(tmp_path: Path, spec: str) -> None:
    """Asks the npm registry (about 2 s): the newest version, written into the args and the
    `npm` key, and the plan says it pinned it."""
    root = _project(tmp_path, {"memory": {"command": "npx", "args": ["--yes", spec, "--x"]}})
    config = read_claude_code(root)
    written = _written(root, config)["memory"]
    pinned = str(written["npm"])
    assert PINNED.match(pinned)
    assert pinned.startswith(f"{MEMORY}@")
    assert written["args"] == ["--yes", pinned, "--x"]
    reason = next(c.reason for c in config.components if c.id == "mcp:memory")
    assert reason == f"npx package '{spec}' pinned at plan time to {pinned} (npm view)"


def test_a_package_the_registry_does_not_have_is_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = "@scylla-test-nonexistent/no-such-server-4f2a"
    root = _project(tmp_path, {"gone": {"command": "npx", "args": ["-y", missing]}})
    with pytest.raises(SpecError) as caught:
        read_claude_code(root)
    message = str(caught.value)
    assert f".mcp.json:7: server 'gone': npx package '{missing}' is not in the npm registry" in (
        message
    ), message
    assert "E404" in message
    assert "\n" not in message
