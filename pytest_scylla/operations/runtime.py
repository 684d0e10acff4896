"""What one pytest process sets up once and every run shares: the resolved settings, the
gateway, the sandbox, the CLI and its measured baselines. `build` makes it (or raises one clear
setup error); `Runtime` holds the settings whole rather than copies of their fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.tempdirs import clean_stale
from pytest_scylla.core.warm import import_soon
from pytest_scylla.formats.provenance import Conditions, conditions
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.judging import service
from pytest_scylla.operations.ledger import Ledger
from pytest_scylla.operations.starts import Starts
from pytest_scylla.run import baseline, bytecode
from pytest_scylla.run.agents import Agent, SetupError
from pytest_scylla.run.agents.claude_code import ADAPTER
from pytest_scylla.run.checks import NO_BYTECODE
from pytest_scylla.run.gateway import Gateway, UpstreamSetupError
from pytest_scylla.run.gateway.routes import (
    RetryPolicy,
    credential_headers,
    gemini_credential,
)
from pytest_scylla.run.sandbox import (
    SYSTEM_TOPS,
    Bwrap,
    Sandbox,
    SandboxError,
    choose,
    hide_environment,
    system_paths,
)

if TYPE_CHECKING:
    from pytest_scylla.config.settings import Settings

# what `build` raises for a setup problem (no CLI, no credential, no sandbox, no disk)
SETUP_ERRORS = (SetupError, UpstreamSetupError, SandboxError, OSError)


@dataclass
class Runtime:
    """The process's shared parts; everything a run needs beyond its `RunSpec`."""

    settings: Settings
    out: Path  # the experiment folder
    tiers: TierSet
    gateway: Gateway
    sandbox: Sandbox
    cli: Path
    cli_version: str
    agent: Agent = ADAPTER  # the CLI's adapter
    ledger: Ledger | None = None
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    bytecode: str = NO_BYTECODE  # the checks' PYTHONPYCACHEPREFIX (see `bytecode.prefix`)
    starts: Starts = field(default_factory=Starts.unlimited)  # the machine's (--scylla-starts)

    def model(self, spec: RunSpec) -> str:
        """The run's model: its model-axis model, else its subtest's, else the session's."""
        return spec.model or spec.subtest.model or self.settings.model

    def run_dir(self, spec: RunSpec) -> Path:
        return self.out / "runs" / spec.key.folder

    def image(self, spec: RunSpec) -> str | None:
        """The run's image (docker): its case's own, else the session's; None elsewhere, where
        a case that names one is not run (see `unrunnable`)."""
        if self.sandbox.name != "docker":
            return None
        return spec.case.image or self.settings.image

    def unrunnable(self, spec: RunSpec) -> str | None:
        """Why this sandbox cannot run the spec (a case that brings its own image), or None."""
        if spec.case.image and self.sandbox.name != "docker":
            return (
                f"case {spec.case.id} runs in its image {spec.case.image}: use "
                f"--scylla-sandbox=docker (this session's sandbox is {self.sandbox.name})"
            )
        return None

    def cli_version_of(self, spec: RunSpec) -> str:
        """The version of the agent CLI the run uses (an image brings its own)."""
        return self.sandbox.cli_version(self.cli_version, self.image(spec))

    def conditions(self, spec: RunSpec, evaluation: str | None = None) -> Conditions:
        """The run's input hashes, config hash and judge hash (see `provenance.conditions`);
        `evaluation`: a Python evaluation's source hash (it scores the run)."""
        s = self.settings
        image = self.image(spec)
        return conditions(
            spec,
            self.tiers,
            model=self.model(spec),
            cli_version=self.cli_version_of(spec),
            oracle=s.oracle,
            sandbox=self.sandbox.name,
            container=self.sandbox.describe(image),
            judges=[j.label for j in s.judges],
            min_judges=s.min_judges,
            panel=s.panel,
            evaluation=evaluation,
            agent=self.agent.name,
        )

    def baseline(self, spec: RunSpec) -> dict[str, Any]:
        """The baseline for the run's model, its subtest's tool configuration (its deny list
        and its settings' `permissions.deny`, which drop tools as the CLI decides) and its
        image."""
        sub = spec.subtest
        return self.baseline_for(
            self.model(spec), sub.tools_allow, baseline.denied(sub), self.image(spec)
        )

    def baseline_for(
        self,
        model: str,
        allow: tuple[str, ...] | None,
        deny: tuple[str, ...],
        image: str | None = None,
    ) -> dict[str, Any]:
        """The baseline of a model, tool configuration (the CLI's default system prompt
        differs by model) and image, measured once per process (and on disk)."""
        key = json.dumps([model, allow, deny, image])
        if key not in self.baselines:
            self.baselines[key] = baseline.measure(
                self.agent,
                self.gateway,
                self.sandbox,
                self.cli,
                self.sandbox.cli_version(self.cli_version, image),
                model,
                self.settings.cache_dir,
                allow,
                deny,
                image,
            )
        return self.baselines[key]


def build(
    settings: Settings,
    out: Path,
    session_id: str,
    tiers: TierSet,
    agent: Agent = ADAPTER,
    sandboxes: Mapping[str, type[Sandbox]] | None = None,
) -> Runtime:
    """Set up the gateway, sandbox and CLI for this process, and measure the CLI's baseline so
    that a CLI that cannot run fails here, once. Raises one of `SETUP_ERRORS`."""
    clean_stale()  # run folders of processes that are gone (a killed session)
    if settings.oracle is None and settings.replay is None:
        _check_credentials(settings, agent)
    cli = agent.find_cli(settings.cli)
    cli_version = agent.version(cli)
    kind, _note = choose(
        settings.sandbox,
        real_model=settings.oracle is None,
        image=settings.image,
        sandboxes=sandboxes,
    )
    if kind is Sandbox and settings.oracle is None:
        hide_environment()
    packages = _package_folders(settings.cache_dir)
    gateway = Gateway().start()
    try:
        ledger = Ledger(out, session_id)
        gateway.retry = RetryPolicy(
            attempts=settings.retries, max_wait=settings.retry_wait, on_long_limit=ledger.pause
        )
        extra = _sandbox_options(kind, settings)
        # bwrap shows the links and what they link to read-only; elsewhere no bytecode is read
        pyc = bytecode.prefix(SYSTEM_TOPS + system_paths()) if kind.name == "bwrap" else None
        rt = Runtime(
            settings=settings,
            out=out,
            tiers=tiers,
            gateway=gateway,
            sandbox=kind(
                gateway.port,
                gateway.socket_dir,
                [*packages, *([pyc] if pyc else [])],
                **extra,
            ),
            cli=cli,
            cli_version=cli_version,
            agent=agent,
            ledger=ledger,
            bytecode=str(pyc or NO_BYTECODE),
            starts=Starts.for_cache(settings.cache_dir, settings.starts),
        )
        rt.sandbox.session = session_id
        rt.baseline_for(settings.model, None, ())
    except BaseException:
        gateway.stop()
        raise
    if any(j.kind == "anthropic" for j in settings.judges) and not service.remote():
        import_soon("anthropic")  # a slow first import (~1 s), made while the first run's
        # agent works, not in its judging (a worker's controller imports it for all of them)
    return rt


def _package_folders(cache_dir: Path) -> list[Path]:
    """Where MCP server packages are installed (run/mcp_install.py): read-only in a sandbox."""
    folders = [cache_dir / "npm", cache_dir / "pypi"]
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def _check_credentials(settings: Settings, agent: Agent) -> None:
    """The CLI's vendor credential, and the judges' (a missing one stops the session here,
    not each run's judging)."""
    (getattr(agent, "check_credential", None) or credential_headers)()
    upstreams = {j.upstream[0] for j in settings.judges if not j.upstream[1]}
    if "anthropic" in upstreams:
        credential_headers()
    if "gemini" in upstreams:
        gemini_credential(who="the gemini: judges")


def _sandbox_options(kind: type[Sandbox], settings: Settings) -> dict[str, Any]:
    """The settings the chosen sandbox class takes beyond the gateway and what it shows."""
    if kind.name == "docker":
        return {"image": settings.image, "limits": settings.limits, "copy": settings.docker_copy}
    return {"limits": settings.limits} if kind is Bwrap else {}
