"""MCP server packages from npm, installed once per cache folder (file-locked) outside any sandbox.

A sandbox has no network, so `npx -y <package>@<version>` cannot download there. Each pinned
package is installed with `npm install --prefix <cache>/npm/<package>@<version>` the first time a
run needs it; the run's MCP config then starts the installed entry point directly.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from pytest_scylla.core.environ import credential_free
from pytest_scylla.run.workspace import locked

PINNED = re.compile(r"^(@?[^@\s]+)@(\d[^\s]*)$")


class InstallError(RuntimeError):
    """An MCP server package could not be installed (an infrastructure problem)."""


def install(spec: str, cache_dir: Path) -> Path:
    """The executable of the pinned npm package `spec` (`name@version`), installing it once."""
    match = PINNED.match(spec)
    if match is None:
        raise InstallError(f"MCP package '{spec}' is not pinned as name@version")
    name = match.group(1)
    prefix = cache_dir / "npm" / spec.replace("/", "+")
    marker = prefix / ".scylla-installed"
    with locked(cache_dir / "npm" / ".lock"):
        if not marker.exists():
            npm = shutil.which("npm")
            if npm is None:
                raise InstallError(f"npm is needed to install MCP server {spec}; install Node.js")
            prefix.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(prefix),
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                    spec,
                ],
                capture_output=True,
                text=True,
                timeout=600,
                env=credential_free(),
            )
            if done.returncode != 0:
                raise InstallError(f"npm install {spec} failed: {done.stderr.strip()[-500:]}")
            marker.write_text(spec + "\n", encoding="utf-8")
    package = json.loads((prefix / "node_modules" / name / "package.json").read_text("utf-8"))
    bins = package.get("bin")
    entry = bins if isinstance(bins, str) else next(iter((bins or {}).values()), None)
    if not entry:
        raise InstallError(f"{spec} declares no executable (package.json 'bin')")
    return (prefix / "node_modules" / name / entry).resolve()


def localize(
    config: dict[str, Any], declarations: dict[str, dict[str, Any]], cache_dir: Path
) -> dict[str, Any]:
    """Rewrite `npx -y <pinned>` servers of an MCP config to their installed entry points."""
    node = shutil.which("node") or "node"
    for name, server in config.get("mcpServers", {}).items():
        spec = declarations.get(name, {}).get("npm")
        args = list(server.get("args", []))
        if spec and server.get("command") == "npx" and spec in args:
            rest = args[args.index(spec) + 1 :]
            server["command"] = node
            server["args"] = [str(install(spec, cache_dir)), *rest]
    return config
