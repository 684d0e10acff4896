"""A session of the mini project's alpha T0-01 under docker whose agent runs one shell command
(the oracle's attack script): its result, its run's record and its run folder (the workspace
kept). `copy`: the run's folder by copy (`--scylla-docker-copy`), else bind-mounted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def run_command(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    copy: bool = True,
) -> tuple[pytest.RunResult, dict[str, Any], Path]:
    attack = mini / "attack.json"
    step = {"name": "Bash", "input": {"command": command, "description": "the attack"}}
    attack.write_text(json.dumps({"steps": [[step]], "final": "Done."}))
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(attack))
    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-sandbox=docker",
        f"--scylla-out={out}",
        "--scylla-keep-workspaces",
        *(["--scylla-docker-copy"] if copy else []),
    )
    run_dir = out / "runs" / "alpha-T0-01-r1"
    return done, json.loads((run_dir / "run.json").read_text()), run_dir
