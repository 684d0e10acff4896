"""Long campaigns, the promises of README "Long campaigns" not covered elsewhere: how runs reported
from disk look, a stored judge_error judged again, the manifest's changed inputs, merging folders
that share a run, plan estimates from sibling folders, the session budget and a usage-window
pause across xdist workers, and Ctrl-C recording the runs in flight. Real CLI, oracle upstream.

Most of them read one campaign of five sessions into one experiment folder (module fixture):
judges failing, the same command healed (re-scored), again (from disk, `-v`), again (from disk,
progress letters), then after a rubric and tier-file edit one run again with --scylla-fresh.

Here the in-process tests; the sessions are in `tests/e2e/test_operations.py`."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from ...conftest import FIXTURES

SELECTION = "alpha and (T0-00 or T0-01)"
KEYS = ("alpha-T0-00-r1", "alpha-T0-01-r1")
# Two of the three default judges never answer a valid verdict: 1 valid < --scylla-min-judges=2.
JUDGE_FAULT = "never-valid:claude-opus-4-8,never-valid:claude-sonnet-5"
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")  # its import costs every session (and worker) ~1 s


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("runs/*/run.json")}


def _environment(tmp: Path, **extra: str) -> dict[str, str]:
    """A user's shell: nothing of this test session's pytest or oracle settings; TMPDIR short,
    since the gateway's unix socket path must stay under 108 bytes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SCYLLA_"))}
    return {**env, "TMPDIR": str(tmp), **extra}


@dataclass(frozen=True)
class Stage:
    """One session's output and what the experiment folder held after it."""

    output: str
    returncode: int
    records: dict[str, dict[str, Any]]
    model_calls: dict[str, str]  # run key -> its model_calls.jsonl
    judge_calls: dict[str, str]
    manifest: dict[str, Any]


@dataclass(frozen=True)
class Campaign:
    root: Path  # a copy of the mini project
    out: Path  # <root>/reports/exp
    cache: Path  # its --scylla-cache-dir (the CLI baseline is measured there)
    stages: dict[str, Stage]
    digests: dict[str, list[str]]  # edited file -> [sha256 before, after the edit]

    def dump(self, path: Path) -> None:
        data = {
            **asdict(self),
            "root": str(self.root),
            "out": str(self.out),
            "cache": str(self.cache),
        }
        path.write_text(json.dumps(data))

    @classmethod
    def load(cls, path: Path) -> Campaign:
        data = json.loads(path.read_text())
        return cls(
            Path(data["root"]),
            Path(data["out"]),
            Path(data["cache"]),
            {k: Stage(**v) for k, v in data["stages"].items()},
            data["digests"],
        )


def _run_campaign(root: Path, cache: str) -> Campaign:
    """The five sessions, each snapshotted."""
    shutil.copytree(FIXTURES / "mini", root)
    (root / "pytest.ini").write_text(
        f"[pytest]\naddopts = -p no:cacheprovider -p no:benchmark {' '.join(NO_HYPOTHESIS)}\n"
    )
    out = root / "reports" / "exp"
    tmp = Path(tempfile.mkdtemp(prefix="scy-"))
    stages: dict[str, Stage] = {}

    def session(name: str, *args: str, **env: str) -> None:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "cases",
                "-p",
                "no:xdist",
                "--scylla-oracle=mixed",
                cache,
                f"--scylla-out={out}",
                "--scylla-progress=0",
                *args,
            ],
            cwd=root,
            env=_environment(tmp, **env),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert (out / "manifest.json").is_file(), proc.stdout + proc.stderr
        runs = out / "runs"
        stages[name] = Stage(
            proc.stdout + proc.stderr,
            proc.returncode,
            _records(out),
            {k: (runs / k / "model_calls.jsonl").read_text() for k in KEYS},
            {k: (runs / k / "judge_calls.jsonl").read_text() for k in KEYS},
            json.loads((out / "manifest.json").read_text()),
        )

    try:
        session("judge_error", "-k", SELECTION, "-v", SCYLLA_ORACLE_JUDGE_FAULT=JUDGE_FAULT)
        session("rejudged", "-k", SELECTION, "-v")
        session("quiet", "-k", SELECTION, "-rA")  # letters, and the summary's words
        rubric, tier = root / "rubrics" / "basic.yaml", root / "tiers" / "T0.yaml"
        before = [_sha256(rubric), _sha256(tier)]
        rubric.write_text(rubric.read_text().replace("pass_threshold: 0.6", "pass_threshold: 0.5"))
        tier.write_text(
            tier.read_text().replace("the default system prompt", "the CLI's own system prompt")
        )
        after = [_sha256(rubric), _sha256(tier)]
        session("fresh", "-k", "alpha and T0-01", "--scylla-fresh")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Campaign(
        root,
        out,
        Path(cache.partition("=")[2]),
        stages,
        {"rubrics/basic.yaml": [before[0], after[0]], "tiers/T0.yaml": [before[1], after[1]]},
    )


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory, oracle: list[str]) -> Campaign:
    """The campaign, run once per test run: under xdist the first worker to need it runs it
    (in the folder the workers' temp folders share) and the others read its snapshot, since
    each worker would otherwise run its own copy of a module fixture."""
    base = tmp_path_factory.getbasetemp()
    home = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "scylla-campaign"
    home.mkdir(exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = home / "campaign.json"
        if not saved.is_file():
            _run_campaign(home / "project", oracle[1]).dump(saved)
        return Campaign.load(saved)


def test_paper_format_folders_sharing_runs_are_kept_twice_with_a_warning(tmp_path: Path) -> None:
    """Two copies of the paper's exported dryrun (7 runs each, runs.csv format): 14 runs, each
    of the second copy renamed and named in a warning, never silently merged into 7."""
    from pytest_scylla.results.tables import load

    dryrun = Path(__file__).parents[2] / "fixtures" / "dryrun"
    a, b = tmp_path / "A", tmp_path / "B"
    for folder in (a, b):
        folder.mkdir()
        for name in ("runs.csv", "judges.csv", "criteria.csv"):
            shutil.copy(dryrun / name, folder / name)
    with (dryrun / "runs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    tables = load([a, b])
    assert len(tables.runs) == 2 * len(rows) == 14
    assert len({r["run_key"] for r in tables.runs}) == 14
    assert len(tables.warnings) == len(rows)
    assert all(f"is in {a.resolve()} and {b.resolve()}" in w for w in tables.warnings)
    assert sum(str(r["run_key"]).startswith("B/") for r in tables.runs) == len(rows)
