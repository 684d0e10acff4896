"""An MCP server a team starts with `uvx` or `pipx run`, made one a sandbox can start.

A sandbox has no network, so uvx and pipx cannot download there: the run installs the package
on the host first, from wheels only, into a venv of its own (run/mcp_install.py), which needs
the server's `pypi` key: `{"requirement": "name==version", "entry": "<console script>"}`. The
forms read are the ones teams write in `.mcp.json`:

    uvx pkg [args]                      uvx pkg@1.2 [args]        uvx pkg==1.2 [args]
    uvx --from pkg==1.2 entry [args]    pipx run pkg [args]       pipx run --spec pkg==1.2 entry

An unpinned package is pinned at plan time to the newest version with wheels in the index pip
is configured with (`pip index versions`: pip.conf, PIP_INDEX_URL, ...), and the plan says so.
A package the index does not have, or has only as a source archive, is a SpecError naming the
file and the line. Any other option of uvx or pipx leaves the server as it is, with a note."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.core.environ import credential_free
from pytest_scylla.formats.npx import line_of
from pytest_scylla.formats.yamlmarks import SpecError

REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[A-Za-z0-9,._ -]*\])?(?:(==|@)(\S+))?$")
RANGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*(~=|!=|>=|<=|>|<|===|==\S*\*)")
UNINSTALLED = "not installed on the host, so it cannot start in a sandbox (no network)"
EXACT = re.compile(r"^\d[0-9A-Za-z.+!-]*$")
QUIET = {"-q", "--quiet", "--no-cache", "--no-progress", "--isolated"}
LAUNCHERS = {"uvx": ("uvx",), "uv": ("uv", "tool", "run"), "pipx": ("pipx", "run")}


@dataclass(frozen=True)
class Invocation:
    """What `uvx`/`pipx run` was asked to run: `spec` (the package as written), the console
    script `entry`, the arguments after it, and where `spec` and `entry` are in `args`."""

    spec: str
    entry: str
    rest: tuple[str, ...]
    at: int  # index of `spec` in args
    separate: bool  # spec given with --from/--spec (entry follows), else spec names the entry


def invocation(server: Mapping[str, Any]) -> Invocation | str | None:
    """The launch a uvx/pipx server makes; a note when it uses an option not understood here;
    None for any other command."""
    command = Path(str(server.get("command", ""))).name
    args = server.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return None
    words = [command, *args]
    launcher = next((w for w in LAUNCHERS.values() if tuple(words[: len(w)]) == w), None)
    if launcher is None:
        return None
    i = len(launcher) - 1  # index in args of the first word after the launcher
    spec_at = None
    while i < len(args) and args[i].startswith("-"):
        flag, _, value = args[i].partition("=")
        if flag in ("--from", "--spec") and not value and i + 1 < len(args):
            spec_at, i = i + 1, i + 2
        elif flag not in QUIET:
            return f"{command} option '{args[i]}' is not understood here"
        else:
            i += 1
    if i >= len(args):
        return None
    if spec_at is not None:
        return Invocation(args[spec_at], args[i], tuple(args[i + 1 :]), spec_at, True)
    name = REQUIREMENT.match(args[i])
    entry = name.group(1) if name else args[i]
    return Invocation(args[i], entry, tuple(args[i + 1 :]), i, False)


def pinned(path: Path, name: str, server: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The server with its `pypi` key (its package pinned), and a note when it was pinned here
    or cannot be installed; the server unchanged for any other command."""
    found = invocation(server)
    if found is None:
        return dict(server), ""
    if isinstance(found, str):
        return dict(server), f"{found}: {UNINSTALLED}"
    match = REQUIREMENT.match(found.spec)
    if match is None and not RANGE.match(found.spec):  # a folder, a file, a git URL
        return dict(server), f"'{found.spec}' is no package of an index: {UNINSTALLED}"
    if match is None:
        why = f"server '{name}': '{found.spec}' is no exact version; pin it as name==version"
        raise SpecError.one(path, line_of(path, found.spec), why)
    package, extras, version = match.group(1), match.group(2) or "", match.group(4)
    note = ""
    if version is None or version == "latest":
        version = _latest(path, name, package, found.spec)
        launcher = Path(str(server["command"])).name
        note = f"{launcher} package '{found.spec}' pinned at plan time to {package}=={version}"
        note += " (pip index versions)"
    elif not EXACT.match(version):
        why = f"server '{name}': '{found.spec}' is no exact version; pin it as {package}==<version>"
        raise SpecError.one(path, line_of(path, found.spec), why)
    requirement = f"{package}{extras}=={version}"
    args = _pinned_args(server["args"], found, requirement) if note else server["args"]
    pypi = {"requirement": requirement, "entry": found.entry}
    return {**server, "args": args, "pypi": pypi}, note


def _pinned_args(given: list[str], found: Invocation, requirement: str) -> list[str]:
    """`given` with the package pinned to `requirement`, as the launcher spells it."""
    args = list(given)
    if found.separate:  # --from / --spec
        args[found.at] = requirement
    elif args[0] == "run":  # pipx: the version goes by --spec
        args[found.at : found.at + 1] = ["--spec", requirement, found.entry]
    else:  # uvx's own spelling
        args[found.at] = requirement.replace("==", "@")
    return args


def _latest(path: Path, name: str, package: str, spec: str) -> str:
    """The newest version of `package` with wheels for this Python in pip's index."""
    line = line_of(path, spec)
    version, said = _versions(package, wheels=True)
    if version:
        return version
    if _versions(package, wheels=False)[0]:
        why = f"server '{name}': '{spec}' publishes no wheel for this Python, and the host "
        why += "never builds a package from source; install the server in the case's image"
        raise SpecError.one(path, line, why)
    why = f"server '{name}': package '{spec}' is not in the package index"
    raise SpecError.one(path, line, why + (f" ({said})" if said else ""))


def _versions(package: str, wheels: bool) -> tuple[str | None, str]:
    """The newest version pip finds (None if none) and pip's error line."""
    only: Sequence[str] = ["--only-binary=:all:"] if wheels else []
    command = [sys.executable, "-m", "pip", "index", "versions", *only, package]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, env=credential_free()
        )
    except subprocess.TimeoutExpired:
        return None, "pip index versions took over 120 s"
    first = done.stdout.split("\n", 1)[0].strip()
    found = re.match(r"^\S+ \((\S+)\)$", first) if done.returncode == 0 else None
    error = next((x for x in done.stderr.splitlines() if x.startswith("ERROR")), "")
    return (found.group(1) if found else None), error.strip()
