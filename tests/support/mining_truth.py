"""The truth a mined case's fail-to-pass list is held to, found apart from the miner (for
`bench/mining.py`): the case's hidden test files run at its pinned parent and at the fix commit
with pytest's own JUnit XML report (not the miner's outcome plugin), in the same sandbox the
miner uses; the tests that failed before and pass after are the ones whose outcome changed."""

from __future__ import annotations

import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from pytest_scylla.formats.spec import Check
from pytest_scylla.operations import mine_untouched
from pytest_scylla.operations.mine_verify import PYTEST
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
    <failure> of its test's <testcase>)."""
    if report.is_symlink() or not report.is_file() or report.stat().st_size > MAX_REPORT:
        return {}
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        file = next((f for f in files if classname.startswith(f[:-3].replace("/", "."))), None)
        if file is None:
            continue
        inner = classname[len(file) - 2 :].replace(".", "::")
        node = f"{file}::{inner + '::' if inner else ''}{name}"
        kinds = {child.tag: child.get("type", "") for child in case}
        if "failure" in kinds or "error" in kinds:
            found[node] = "failed"
        elif kinds.get("skipped", "pytest.xfail") != "pytest.xfail":
            found[node] = "skipped"
        else:
            found[node] = "passed"
    return found


def changed(repo: Path, case: Path, box: Any, timeout: int = 600) -> tuple[list[str], list[str]]:
    """(the case's fail-to-pass list, the tests whose outcome changed from failed to passed)."""
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
            command = f"{path}{PYTEST} --junitxml={REPORT} " + " ".join(files)
            fresh = Path(tempfile.mkdtemp(prefix="env-", dir=tmp))
            env = check_env(base_env(fresh), fresh)
            check = Check(name="truth", run=command, timeout_seconds=timeout)
            wrap = (lambda t: lambda argv: box.wrap(argv, t, Path(tmp)))(tree)
            run_check(check, tree, env, wrap=wrap)
            seen.append(_outcomes(tree / REPORT, files))
    was, now = seen
    flipped = sorted(n for n, o in now.items() if o == "passed" and was.get(n) == "failed")
    return sorted(mine_untouched.fail_to_pass(data)), flipped
