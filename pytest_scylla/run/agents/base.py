"""What the npm-installed agent CLIs have in common: finding the pinned binary, asking its
version, and the components of the tiers that name Claude Code's own tools and settings (which
another CLI cannot express as declared)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.run.agents import SetupError
from pytest_scylla.run.gateway.routes import UpstreamSetupError


class NpmCli:
    """An adapter's binary: `binary` on PATH (or --scylla-cli), from npm `package` at `pinned`."""

    name: ClassVar[str]
    title: ClassVar[str]  # how messages name the CLI
    binary: ClassVar[str]
    package: ClassVar[str]
    pinned: ClassVar[str]
    version_env: ClassVar[dict[str, str]] = {}

    def find_cli(self, explicit: str | None) -> Path:
        found = shutil.which(explicit or self.binary)
        if found is None:
            raise SetupError(f"{self.title} '{explicit or self.binary}' not found on PATH; "
                             f"install it with `npm install -g {self.package}@{self.pinned}` "
                             "or point --scylla-cli at it")
        return Path(found)

    def version(self, cli: Path) -> str:
        return version(cli, tuple(sorted(self.version_env.items())))


class OpenAIUpstream:
    """Real runs go to OpenAI's API, or the OpenAI-compatible endpoint in OPENAI_BASE_URL, with
    the harness's OPENAI_API_KEY (the gateway sends it, never the CLI)."""

    upstream = "openai"
    title: ClassVar[str]

    @property
    def upstream_url(self) -> str:
        return os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")

    def check_credential(self) -> None:
        if not os.environ.get("OPENAI_API_KEY"):
            raise UpstreamSetupError(
                f"no model credential for {self.title}: set OPENAI_API_KEY (and "
                "OPENAI_BASE_URL for another OpenAI-compatible endpoint) in the environment "
                "pytest runs in, or run offline with --scylla-oracle (a SIMULATED model)")


@functools.lru_cache(maxsize=16)
def version(cli: Path, env: tuple[tuple[str, str], ...] = ()) -> str:
    """`<cli> --version`, run with nothing of the user's environment."""
    try:
        done = subprocess.run([str(cli), "--version"], capture_output=True, text=True,
                              timeout=60, env={"PATH": f"{cli.parent}:/usr/bin:/bin",
                                               "HOME": "/nonexistent", **dict(env)})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{cli} --version failed: {exc}") from None
    if done.returncode != 0:
        raise SetupError(f"{cli} --version exited {done.returncode}: "
                         f"{(done.stderr or done.stdout).strip()[:300]}")
    return done.stdout.strip()


def claude_only(sub: Subtest, cli: str, modes: tuple[str, ...],
                agents: str | None = None) -> str | None:
    """Why `cli` cannot run `sub` as declared when it lacks the system-prompt `modes` named and
    the tier's sub-agents, tool lists and settings name Claude Code's tools (None: it can).
    `agents`: another reason for sub-agents."""
    if sub.agents:
        return agents or (f"the tier's sub-agents name Claude Code's tools, which {cli} does "
                          "not have (the subtest declares agents)")
    if sub.tools_allow is not None or sub.tools_deny:
        return "the tier's tool lists name Claude Code's tools (the subtest restricts tools)"
    if sub.settings:
        return "the subtest's settings are Claude Code settings"
    if sub.system_prompt is not None and sub.system_prompt.mode in modes:
        return f"{cli} has no '{sub.system_prompt.mode}' system prompt mode"
    return None
