"""What the npm-installed agent CLIs have in common: finding the pinned binary, asking its
version, and reading the tiers' components that name Claude Code's own tools and settings (a
CLI expresses them through its own tool names, or cannot express them as declared)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

from pytest_scylla.formats.tiers import Subtest, TierSet, agent_tools
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
            raise SetupError(
                f"{self.title} '{explicit or self.binary}' not found on PATH; "
                f"install it with `npm install -g {self.package}@{self.pinned}` "
                "or point --scylla-cli at it"
            )
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
                "pytest runs in, or run offline with --scylla-oracle (a SIMULATED model)"
            )


@functools.lru_cache(maxsize=16)
def version(cli: Path, env: tuple[tuple[str, str], ...] = ()) -> str:
    """`<cli> --version`, run with nothing of the user's environment."""
    try:
        done = subprocess.run(
            [str(cli), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": f"{cli.parent}:/usr/bin:/bin", "HOME": "/nonexistent", **dict(env)},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupError(f"{cli} --version failed: {exc}") from None
    if done.returncode != 0:
        raise SetupError(
            f"{cli} --version exited {done.returncode}: "
            f"{(done.stderr or done.stdout).strip()[:300]}"
        )
    return done.stdout.strip()


def inexpressible(
    sub: Subtest,
    tiers: TierSet | None,
    cli: str,
    modes: tuple[str, ...],
    names: dict[str, str],
    nested: bool,
) -> str | None:
    """Why `cli` cannot run `sub` as declared (None: it can): a system-prompt mode of `modes`
    (the ones it lacks), Claude Code settings, or a tool (of the tier's lists or of a
    sub-agent's, read from `tiers` when given) that `names` (Claude Code's tool -> the CLI's)
    has no equivalent for; `nested`: whether its sub-agents may call sub-agents."""
    if sub.settings:
        return "the subtest's settings are Claude Code settings"
    if sub.system_prompt is not None and sub.system_prompt.mode in modes:
        return f"{cli} has no '{sub.system_prompt.mode}' system prompt mode"
    for tool in (*(sub.tools_allow or ()), *sub.tools_deny):
        if tool not in names:
            return f"{cli} has no equivalent of Claude Code's tool '{tool}' (the subtest's tools)"
    for agent in sub.agents:
        if tiers is None:  # its resources unknown here (the support matrix's probe)
            break
        for tool in agent_tools(tiers, agent) or ():
            if tool == "Agent" and not nested:
                return (
                    f"{cli}'s sub-agents cannot call sub-agents (agent '{agent}' has the "
                    "Agent tool)"
                )
            if tool not in names:
                return f"{cli} has no equivalent of Claude Code's tool '{tool}' (agent '{agent}')"
    return None


def mapped(names: dict[str, str], tools: tuple[str, ...] | None) -> list[str] | None:
    """Claude Code's tool names as the CLI names them (`inexpressible` has vetted them)."""
    return None if tools is None else [names[t] for t in tools if t in names]


class GeminiUpstream:
    """Real runs go to Google's Gemini API, or the endpoint in GOOGLE_GEMINI_BASE_URL, with the
    harness's GEMINI_API_KEY (or GOOGLE_API_KEY): the gateway sends it as `x-goog-api-key`,
    never the CLI (which holds a dummy key)."""

    upstream = "gemini"
    title: ClassVar[str]

    @property
    def upstream_url(self) -> str:
        from pytest_scylla.run.gateway import gemini_wire

        return gemini_wire.base_url()

    def check_credential(self) -> None:
        from pytest_scylla.run.gateway.routes import gemini_credential

        gemini_credential(who=self.title)
