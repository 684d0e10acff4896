"""`scylla check-case [CASE ...]`: whether a case can tell a solved task from an unsolved one,
checked the way the project's own tests would: one oracle run per case (the scripted model
applies the reference solution through the real CLI, in the sandbox) must pass every check,
and the case's untouched source must fail at least one of them (else the checks test nothing);
a mined case's untouched source must fail its `fail-to-pass` check itself (else a noop agent
earns it; that each of its tests fails there, not only one, the mining verified per test).
Runs no real model and spends nothing."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.terminal import echo, safe
from pytest_scylla.session.collect import case_files

F2P = "fail-to-pass"  # the check of a mined case that the untouched source must fail


def register(sub: Any) -> None:
    """The `check-case` command on the `scylla` parser's subparsers."""
    chk = sub.add_parser(
        "check-case",
        help="check that each case tells a solved task from an "
        "unsolved one: an oracle run (the reference solution, through the real "
        "CLI and sandbox) passes every check, and the untouched source fails one "
        "(no real model, nothing spent); exit code 1 when a case does not",
    )
    chk.add_argument(
        "cases",
        nargs="*",
        type=Path,
        metavar="CASE",
        help="case folders, or folders above them (default: cases)",
    )
    chk.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return check_cases(args.cases, [])


def check_cases(given: list[Path], pytest_args: list[str]) -> int:
    """Exit code: 0 when every case passes both tests, 1 when one does not, 2 on bad input."""
    files = _files(given)
    if files is None:
        return 2
    said, problem = verdicts(files, pytest_args)
    for verdict in said.values():
        echo(safe(verdict))
    if problem:
        echo(safe(problem), file=sys.stderr)
    return 1 if any(not v.startswith("ok") for v in said.values()) else 0


def verdicts(files: list[Path], pytest_args: list[str]) -> tuple[dict[str, str], str]:
    """({case id: `ok …` or `FAIL …`}, the session's own output when it made no run at all)."""
    subtest = _subtest(files)
    with tempfile.TemporaryDirectory(prefix="scylla-check-") as out:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *_session_args(files, subtest),
                f"--scylla-out={out}",
                "--scylla-report=none",
                *pytest_args,
            ],
            capture_output=True,
            text=True,
        )
        records = {}
        for path in Path(out).glob("runs/*/run.json"):
            rec = json.loads(path.read_text(encoding="utf-8"))
            records[rec["case"]] = rec
    said = {}
    for file in files:
        case_id = _case_id(file)
        again = shlex.join(["pytest", *_session_args([file], subtest)])
        said[case_id] = _verdict(case_id, records.get(case_id), again)
    problem = ""
    if not records and done.returncode not in (0, 1):  # the session itself could not start
        problem = done.stdout[-2000:] + done.stderr[-2000:]
    return said, problem


def _session_args(files: list[Path], subtest: str) -> list[str]:
    """The oracle session's arguments for these case files: their folders' parents are its case
    roots wherever they are (`cases/` or not), so that the files are collected as cases and
    nothing else beside them (a mined case's hidden tests import the project) is collected."""
    roots = sorted({str(f.resolve().parent.parent) for f in files})
    return [
        *map(str, files),
        "-p",
        "no:cacheprovider",
        "-q",
        "-o",
        "scylla_cases=" + "\n".join(roots),
        "--scylla-oracle=solution",
        f"--scylla-subtests={subtest}",
        "--scylla-runs=1",
    ]


def _files(given: list[Path]) -> list[Path] | None:
    files: list[Path] = []
    for path in given or [Path("cases")]:
        found = case_files(path) if path.is_dir() else [path] if path.is_file() else []
        if not found:
            echo(
                f"scylla check-case: {path}: no case here (a folder holding test.yaml, or "
                "the cases/ folder above them)",
                file=sys.stderr,
            )
            return None
        files += found
    return files


def _subtest(files: list[Path]) -> str:
    """The vanilla subtest (T0-01) of the project's tiers, else its first one."""
    from pytest_scylla.formats import PACKAGED
    from pytest_scylla.formats.tiers import TierSet

    root = next((p for f in files for p in f.resolve().parents if (p / "tiers").is_dir()), None)
    tiers = TierSet(root / "tiers" if root else PACKAGED)
    refs = [s.ref for t in tiers.tiers.values() for s in t.subtests]
    return "T0-01" if "T0-01" in refs or not refs else refs[0]


def _case_id(file: Path) -> str:
    import yaml

    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return file.parent.name
    return str(data.get("id", file.parent.name)) if isinstance(data, dict) else file.parent.name


def _verdict(case_id: str, rec: dict[str, Any] | None, again: str) -> str:
    """`again`: the command that runs this case's oracle session alone, to see why."""
    if rec is None:
        return (
            f"FAIL {case_id}: no run was made (the case did not collect or the session "
            f"stopped; run `{again}` to see why)"
        )
    checks = rec.get("checks") or []
    failed = [c for c in checks if not c.get("passed")]
    from pytest_scylla.run.gateway.oracle import failure as oracle_failure

    oracle_failed = oracle_failure.failure(rec)  # the harness's scripted model, not the case
    if oracle_failed is not None:
        return f"FAIL {case_id}: {oracle_failed[:600]}"
    if rec.get("outcome") == Outcome.INFRA_ERROR or not checks:
        return f"FAIL {case_id}: the run did not reach its checks: {rec.get('reason', '')[:300]}"
    if failed:
        return f"FAIL {case_id}: the reference solution fails check(s) " + "; ".join(
            f"{c['name']} ({str(c.get('reason', ''))[:200]})" for c in failed
        )
    before = rec.get("source_checks")
    if not isinstance(before, dict):
        return (
            f"FAIL {case_id}: the untouched source's checks could not be run: "
            f"{rec.get('source_checks_error', 'no result')}"
        )
    flipped = sorted(name for name, passed in before.items() if not passed)
    if before.get(F2P) is True:
        return (
            f"FAIL {case_id}: the untouched source passes the {F2P} check: a noop agent would "
            f"earn it (its tests must fail before the change; mine the commit again)"
        )
    if not flipped:
        return (
            f"FAIL {case_id}: the untouched source already passes every check: the checks "
            "cannot tell a solved task from an unsolved one (add one the task must flip)"
        )
    return (
        f"ok   {case_id}: the reference solution passes all {len(checks)} checks; the "
        f"untouched source fails {', '.join(flipped)}"
    )
