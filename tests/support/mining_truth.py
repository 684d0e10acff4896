"""The truth a mined case's fail-to-pass list is held to, found apart from the miner (for
`bench/mining.py` and the mining corpus test): the case's hidden test files run at its pinned
parent and at the fix commit with pytest's own JUnit XML report (not the miner's outcome
plugin), in the same sandbox the miner uses (the repositories' tests are their code: never run
on the host); the tests that failed before and pass after are the ones whose outcome changed.
And a `noop` oracle session over mined cases, as a user's would run them."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_scylla.formats.spec import Check
from pytest_scylla.operations.mining import untouched as mine_untouched
from pytest_scylla.operations.mining.verify import PYTEST
from pytest_scylla.run.checks import check_env, run_check
from pytest_scylla.run.sandbox.base import base_env

REPORT = ".scylla-truth.xml"
MAX_REPORT = 50_000_000  # bytes


def _tree(repo: Path, sha: str, dest: Path) -> Path:
    """The commit's files (git archive of a pinned public bundle: data, nothing run)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", sha], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def _outcomes(report: Path, files: list[str]) -> dict[str, str]:
    """{node id: passed|failed|skipped} from a JUnit XML report (a failing subtest is a
    <failure> of its test's <testcase>; a file that failed to collect is an <error> of a
    <testcase> with no class, named by its module: recorded under the file's path)."""
    if report.is_symlink() or not report.is_file() or report.stat().st_size > MAX_REPORT:
        return {}
    modules = {f[:-3].replace("/", "."): f for f in files}
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        kinds = {child.tag: child.get("type", "") for child in case}
        if not classname and name in modules:
            found[modules[name]] = "failed"  # its collection failed
            continue
        module = max(
            (m for m in modules if classname == m or classname.startswith(m + ".")),
            key=len,
            default=None,
        )
        if module is None:
            continue
        inner = classname[len(module) + 1 :].replace(".", "::")
        node = f"{modules[module]}::{inner + '::' if inner else ''}{name}"
        if "failure" in kinds or "error" in kinds:
            found[node] = "failed"
        elif kinds.get("skipped", "pytest.xfail") != "pytest.xfail":
            found[node] = "skipped"
        else:
            found[node] = "passed"
    return found


@dataclass(frozen=True)
class Truth:
    fail_to_pass: list[str]  # what the case's fail-to-pass check runs
    flipped: list[str]  # the tests that failed at the parent and pass at the fix
    both: list[str]  # the tests passing at both


def changed(repo: Path, case: Path, box: Any, timeout: int = 600) -> Truth:
    """The case's fail-to-pass list beside the outcomes of its hidden files at both commits."""
    data = yaml.safe_load((case / "test.yaml").read_text(encoding="utf-8"))
    fix = data["description"].split("Mined from commit ", 1)[1].split()[0]
    hidden = mine_untouched.hidden_files(case / "hidden")
    files = sorted(f for f in hidden if f.endswith(".py") and Path(f).name != "conftest.py")
    with tempfile.TemporaryDirectory(prefix="scylla-truth-") as tmp:
        seen = []
        for side, sha in (("before", data["source"]["commit"]), ("after", fix)):
            tree = _tree(repo, sha, Path(tmp) / side)
            if side == "before":
                for rel, blob in hidden.items():
                    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                    (tree / rel).write_bytes(blob)
            path = "PYTHONPATH=src " if (tree / "src").is_dir() else ""
            command = f"{path}{PYTEST} --continue-on-collection-errors --junitxml={REPORT} "
            command += " ".join(files)
            fresh = Path(tempfile.mkdtemp(prefix="env-", dir=tmp))
            env = check_env(base_env(fresh), fresh)
            check = Check(name="truth", run=command, timeout_seconds=timeout)
            wrap = (lambda t: lambda argv: box.wrap(argv, t, Path(tmp)))(tree)
            run_check(check, tree, env, wrap=wrap)
            seen.append(_outcomes(tree / REPORT, files))
    was, now = seen
    flipped = sorted(
        n for n, o in now.items() if o == "passed" and "failed" in (was.get(n), _file(n, was))
    )
    both = sorted(n for n, o in now.items() if o == "passed" and was.get(n) == "passed")
    return Truth(sorted(mine_untouched.fail_to_pass(data)), flipped, both)


def _file(node: str, outcomes: dict[str, str]) -> str | None:
    """The outcome recorded for the file of `node` (a collection error), if any."""
    return outcomes.get(node.split("::", 1)[0])


def noop_runs(out: Path) -> list[dict[str, Any]]:
    """The run records of a `noop` oracle session (the agent changes nothing) over every case
    in `out`, one run each, in the sandbox as a user's session would run them."""
    with tempfile.TemporaryDirectory(prefix="scylla-noop-") as where:
        subprocess.run(
            [sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider",
             "-o", f"scylla_cases={out}", "--scylla-oracle=noop", "--scylla-subtests=T0-01",
             "--scylla-runs=1", f"--scylla-out={where}", "--scylla-report=none"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return [json.loads(p.read_text()) for p in sorted(Path(where).glob("runs/*/run.json"))]


def fail_to_pass_failed(record: dict[str, Any]) -> bool:
    """Whether the run failed with its `fail-to-pass` check failing (what a noop run must do)."""
    checks = {c.get("name"): c.get("passed") for c in record.get("checks") or []}
    return record.get("outcome") == "fail" and checks.get(mine_untouched.F2P) is False
