"""MCP server packages from npm and PyPI, installed once per cache folder (file-locked) outside
any sandbox.

A sandbox has no network, so `npx -y <package>@<version>` or `uvx <package>` cannot download
there. Each pinned npm package is installed with `npm install --prefix <cache>/npm/<spec>
--ignore-scripts`, each pinned PyPI package into a venv of its own, `<cache>/pypi/<requirement>`,
from wheels only (`--only-binary=:all:`: no package's build script runs on the host), the first
time a run needs it; the run's MCP config then starts the installed entry point directly. Both
folders are shown read-only in the sandbox (operations/runtime.py). A server's `pass_env` names
variables of the user's environment it gets (the agent's own environment never has them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.core.environ import CREDENTIAL_PREFIXES, credential_free
from pytest_scylla.formats.pypi import Invocation, invocation
from pytest_scylla.run.sandbox.base import base_env
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


def install_wheels(server: str, requirement: str, entry: str, cache_dir: Path) -> Path:
    """The console script `entry` of the pinned PyPI `requirement` (`name==version`), installed
    once from wheels into its own venv, with the interpreter of this Python's installation."""
    prefix = cache_dir / "pypi" / requirement.replace("/", "+")
    marker = prefix / ".scylla-installed"
    with locked(cache_dir / "pypi" / ".lock"):
        if not marker.exists():
            shutil.rmtree(prefix, ignore_errors=True)  # a half-made one from a run that died
            _venv(server, requirement, prefix)
            marker.write_text(requirement + "\n", encoding="utf-8")
    script = prefix / "bin" / entry
    if not script.is_file():
        have = sorted(p.name for p in (prefix / "bin").iterdir() if p.name not in VENV_BIN)
        raise InstallError(
            f"MCP server '{server}': {requirement} has no command '{entry}' (it has: "
            f"{', '.join(have) or 'none'}); name one with `uvx --from {requirement} <command>`"
        )
    return script


VENV_BIN = {"python", "python3", f"python3.{sys.version_info.minor}", ".scylla-installed"}
VENV_BIN |= {"activate", "activate.csh", "activate.fish", "Activate.ps1"}


PIP = ("--only-binary=:all:", "--no-input", "--disable-pip-version-check")


def _venv(server: str, requirement: str, prefix: Path) -> None:
    """A venv at `prefix` holding `requirement` and its dependencies, all from wheels."""
    pip = [sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python")]
    steps = [
        [sys.executable, "-m", "venv", "--without-pip", str(prefix)],
        [*pip, "install", *PIP, requirement],
    ]
    for step in steps:
        done = subprocess.run(
            step, capture_output=True, text=True, timeout=600, env=credential_free()
        )
        if done.returncode != 0:
            shutil.rmtree(prefix, ignore_errors=True)
            said = [x for x in done.stderr.splitlines() if x.startswith("ERROR")]
            if any("No matching distribution" in x for x in said):
                raise InstallError(
                    f"MCP server '{server}': {requirement} (or a package it needs) has no "
                    "wheel for this Python, and the host never builds a package from source "
                    f"({said[-1]}); pin a version that publishes wheels, or install the server "
                    "in the case's image"
                )
            tail = " ".join(said) or done.stderr.strip()[-500:]
            raise InstallError(f"MCP server '{server}': pip install {requirement} failed: {tail}")


def localize(
    config: dict[str, Any], declarations: dict[str, dict[str, Any]], cache_dir: Path
) -> dict[str, Any]:
    """Rewrite the `npx -y <pinned>`, `uvx`/`pipx run` servers of an MCP config to their
    installed entry points, and give each server the variables its `pass_env` names."""
    node = shutil.which("node") or "node"
    for name, server in config.get("mcpServers", {}).items():
        declared = declarations.get(name, {})
        spec = declared.get("npm")
        args = list(server.get("args", []))
        if spec and server.get("command") == "npx" and spec in args:
            rest = args[args.index(spec) + 1 :]
            server["command"] = node
            server["args"] = [str(install(spec, cache_dir)), *rest]
        if declared.get("pypi") or isinstance(invocation(server), Invocation):
            _from_pypi(name, server, declared.get("pypi"), cache_dir)
        _pass_env(name, server, declared.get("pass_env") or [])
        _unpassed(name, server)
    return config


def _from_pypi(
    name: str, server: dict[str, Any], pypi: dict[str, str] | None, cache_dir: Path
) -> None:
    """The server started from the venv its pinned package is installed in."""
    launch = invocation(server)
    if pypi is None:
        raise InstallError(
            f"MCP server '{name}' is started by {Path(server['command']).name}, which downloads "
            "its package, and a sandbox has no network: give its declaration the `pypi` key "
            '({"requirement": "name==version", "entry": "<command>"}; `scylla ablate plan` '
            "writes it) so that the run installs the package on the host, or leave the server "
            "out of the arm"
        )
    if not isinstance(launch, Invocation):
        raise InstallError(
            f"MCP server '{name}': its `pypi` key needs a `uvx` or `pipx run` command that "
            f"runs {pypi['entry']}; it has {server.get('command')!r}"
        )
    script = install_wheels(name, pypi["requirement"], pypi["entry"], cache_dir)
    server["command"] = "/bin/sh"
    server["args"] = ["-c", LAUNCH, str(script.parent.parent), script.name, *launch.rest]


# How the venv's console script starts in a sandbox: with the venv's interpreter (this host's
# Python, which bwrap and the docker host image show); in an image without it, with the
# image's python3 if it is the same version (the wheels are built for it), else a clear line.
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
SAME = f"import sys; sys.exit(sys.version_info[:2] != {tuple(sys.version_info[:2])})"
LAUNCH = (
    'v="$0"; e="$1"; shift; p="$v/bin/python"\n'
    'if [ ! -x "$p" ]; then\n'
    f'  p=python3; export PYTHONPATH="$v/{SITE}"\n'
    f'  "$p" -c \'{SAME}\' 2>/dev/null || {{ echo "scylla: $e needs Python '
    f"{sys.version_info.major}.{sys.version_info.minor} (its wheels were installed for it), "
    'which this image lacks: install it in the image, or use the bwrap sandbox" >&2; exit 1; }\n'
    "fi\n"
    'exec "$p" "$v/bin/$e" "$@"\n'
)


def _pass_env(name: str, server: dict[str, Any], names: list[str]) -> None:
    """The user's values of `names` in the server's env and for its `${NAME}`s: never a model
    credential the harness holds."""
    env = server.setdefault("env", {})
    for var in names:
        if var.startswith((*CREDENTIAL_PREFIXES, "SCYLLA_")):
            raise InstallError(
                f"MCP server '{name}': pass_env names {var}, a credential of the harness that "
                "never reaches an agent; give the server a key of its own"
            )
        value = os.environ.get(var)
        if value is None:
            raise InstallError(
                f"MCP server '{name}': pass_env names {var}, which is not set here; set it "
                "before the run, or drop it from the server's pass_env"
            )
        server["args"] = [_filled(a, var, value) for a in server.get("args", [])]
        env.update({key: _filled(text, var, value) for key, text in env.items()})
        env.setdefault(var, value)


def _unpassed(name: str, server: dict[str, Any]) -> None:
    """A `${VAR}` without a default left in the server's args or env that the agent's
    environment does not have (none of the user's variables are in it): the CLI would hand it
    to the server as those very characters, so the run stops and says how to pass it."""
    known = set(base_env(Path("/")))
    for text in [*server.get("args", []), *server.get("env", {}).values()]:
        for match in re.finditer(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", str(text)):
            var = match.group(1)
            if var not in known and not var.startswith(("CLAUDE_", *CREDENTIAL_PREFIXES)):
                raise InstallError(
                    f"MCP server '{name}': its ${{{var}}} would reach it as those very "
                    "characters (the agent's environment has none of your variables): name "
                    f"{var} in its declaration's pass_env, or give it a default "
                    f"(${{{var}:-value}})"
                )


def _filled(text: str, var: str, value: str) -> str:
    """`text` with `${var}` and `${var:-default}` replaced by `value`."""
    return re.sub(r"\$\{" + re.escape(var) + r"(:-[^}]*)?\}", lambda _m: value, text)
