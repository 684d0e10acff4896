"""The session header's lines: the sandbox a session uses (`auto` decided here, once), what
it limits, and the evaluations a session that does not run them leaves out."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.config.sandbox import plugin_sandboxes
from pytest_scylla.config.settings import EXPERIMENT_KEY, SETTINGS_KEY
from pytest_scylla.core.folders import shown
from pytest_scylla.session import collect

SANDBOX_NOTE_KEY = pytest.StashKey[str]()
BYSTANDER_KEY = pytest.StashKey[tuple[Path, ...]]()  # case roots a session does not evaluate


def sandbox_line(config: pytest.Config) -> str:
    """The header's sandbox line. `auto` is decided here, once, by the controller: the settings
    then name the sandbox it chose, and xdist workers are handed that choice."""
    if SANDBOX_NOTE_KEY in config.stash:
        return config.stash[SANDBOX_NOTE_KEY]
    from pytest_scylla.run.sandbox import SandboxError, choose

    s = config.stash[SETTINGS_KEY]
    try:
        kind, note = choose(
            s.sandbox,
            real_model=s.oracle is None,
            image=s.image,
            sandboxes=plugin_sandboxes(config),
        )
        config.stash[SETTINGS_KEY] = replace(s, sandbox=kind.name)
        line = f"scylla: {note}" if note else f"scylla: sandbox={kind.name}"
        if kind.name == "docker":
            line += f" image={s.image}"
        elif s.docker_copy:  # only `auto` gets here: an explicit bwrap or local is refused
            line += "; --scylla-docker-copy does not apply (no container)"
    except SandboxError as exc:
        line = f"scylla: sandbox problem: {exc}"
    config.stash[SANDBOX_NOTE_KEY] = line
    return line


def limits_line(sandbox: str, limits: tuple[int, float, int]) -> str | None:
    """The header's limits line: what the chosen sandbox limits, and what it cannot."""
    from pytest_scylla.run.sandbox.limits import Limits, summary

    if sandbox == "bwrap":
        return "scylla: " + summary(Limits(*limits))
    if sandbox == "local":
        return "scylla: limits: none (local: processes, memory, /tmp and CPU are unbounded)"
    if sandbox == "docker":
        return (
            f"scylla: limits: memory={limits[0] >> 20}m, cpus={limits[1]:g}, "
            f"pids={limits[2]} (container)"
        )
    return None


def bystander_line(config: pytest.Config) -> list[str]:
    """One line where the project has evaluations this session leaves out (collected paths
    that hold them, or case roots its testpaths never reach); none where it has none."""
    roots = config.stash.get(BYSTANDER_KEY, ()) or tuple(
        r for r in collect.case_roots(config) if r.is_dir() and collect.case_files(r)
    )
    if not roots:
        return []
    named = " ".join(shown(r, config.invocation_params.dir) + "/" for r in roots)
    return [
        f"scylla: the evaluations in {named} are not run by this session; run them with "
        f"`pytest {named.split()[0]}` or `pytest --scylla-only`"
    ]


def header_lines(config: pytest.Config) -> list[str]:
    """The session header of a session that evaluates: options, model, sandbox, judges, folder."""
    s = config.stash[SETTINGS_KEY]
    lines = [
        f"scylla: runs={s.runs} tiers={','.join(s.tiers) if s.tiers else 'all'} "
        f"subtests={','.join(s.subtests) if s.subtests else 'all'} "
        f"tiers-dir={' over '.join(map(str, s.tier_dirs))}"
    ]
    if s.oracle:
        lines.append(f"scylla: SIMULATED MODEL (oracle={s.oracle}): no real model is called")
    else:
        lines.append(f"scylla: model={s.model} via the Anthropic API (real spend)")
    lines.append(sandbox_line(config))
    chosen = config.stash[SETTINGS_KEY]  # auto resolved by sandbox_line
    lines += filter(None, [limits_line(chosen.sandbox, chosen.limits)])
    lines.append(
        f"scylla: judges={','.join(j.label for j in s.judges)} (min {s.min_judges} "
        f"valid){' answered by the oracle: SIMULATED' if s.oracle else ''}"
    )
    lines.append(f"scylla: results in {config.stash[EXPERIMENT_KEY]}")
    return lines
