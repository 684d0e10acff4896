"""An MCP server a team starts with `npx -y <package>[@<version>]`, made one a sandbox can start.

A sandbox has no network, so npx cannot download there: the run installs the package on the
host first (run/mcp_install.py), which needs the server's `npm` key, `name@version`. A pinned
package gets that key as it is; an unpinned one (`pkg`, `pkg@latest`, `pkg@^1.2`) is resolved
and pinned at plan time with `npm view`, and the plan says so. A package the registry does not
have is a SpecError naming the file and the line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_scylla.core.environ import credential_free
from pytest_scylla.formats.yamlmarks import SpecError, read_text

PINNED = re.compile(r"^(@?[^@\s]+)@(\d[^\s]*)$")  # as run/mcp_install.py installs them
NAMED = re.compile(r"^(@?[^@\s]+)(?:@(\S+))?$")
QUIET = {"-y", "--yes", "-q", "--quiet"}


def _package_at(server: Mapping[str, Any]) -> int | None:
    """The index in `args` of the package `npx` runs (after its -y/--yes flags), or None when
    the server is not started by npx so (a `-p`/`--package` form is left as it is)."""
    if Path(str(server.get("command", ""))).name != "npx":
        return None
    args = server.get("args") or []
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            return None
        if arg not in QUIET:
            return None if arg.startswith("-") else i
    return None


def pinned(path: Path, name: str, server: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The server with its `npm` key (its package pinned), and a note when it was pinned here;
    the server unchanged for any other command."""
    at = _package_at(server)
    if at is None:
        return dict(server), ""
    spec = server["args"][at]
    if PINNED.match(spec):
        return {**server, "npm": spec}, ""
    match = NAMED.match(spec)
    if match is None:
        raise SpecError.one(
            path, line_of(path, spec), f"server '{name}': '{spec}' is no npm package"
        )
    exact = f"{match.group(1)}@{_latest(path, name, spec)}"
    args = [*server["args"][:at], exact, *server["args"][at + 1 :]]
    note = f"npx package '{spec}' pinned at plan time to {exact} (npm view)"
    return {**server, "args": args, "npm": exact}, note


def _latest(path: Path, name: str, spec: str) -> str:
    """The newest version of `spec` (a name, or a name and a range) in the npm registry."""
    npm = shutil.which("npm")
    line = line_of(path, spec)
    if npm is None:
        why = f"server '{name}': npm is needed to pin '{spec}' (install Node.js), or pin it"
        raise SpecError.one(path, line, why + " yourself as name@version")
    found, said = None, "npm view took over 120 s"
    try:
        done = subprocess.run(
            [npm, "view", spec, "version", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=credential_free(),
        )
        said = done.stderr
        found = json.loads(done.stdout or "null") if done.returncode == 0 else None
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        pass
    version = found[-1] if isinstance(found, list) and found else found
    if not isinstance(version, str) or not version:
        error = next((x for x in said.splitlines() if "E404" in x or "ERR" in x or "120" in x), "")
        why = f"server '{name}': npx package '{spec}' is not in the npm registry"
        raise SpecError.one(path, line, why + (f" ({error.strip()})" if error else ""))
    return version


def line_of(path: Path, spec: str) -> int | None:
    """The line of the file that names `spec` (as a JSON or TOML string)."""
    quoted = json.dumps(spec)
    for number, text in enumerate(read_text(path).split("\n"), start=1):
        if quoted in text:
            return number
    return None
