"""`scylla cases mine`, second step: a candidate commit verified by running its tests in the
sandbox a session would use, never on the host.

At the parent commit with only the commit's test changes, its tests are run twice; then at the
commit itself, twice. The tests that fail before and pass after are its fail-to-pass tests, the
ones passing at both its pass-to-pass tests. A candidate is kept only when some test fails to
pass, every test of its test files passes at the commit, and both tries agree (else: flaky).
Tests that cannot run (a missing module, a collection error, no test collected) reject it with
the line that says why. The workspaces are written from the commits' trees in a private
temporary folder, every path and link in them checked first (`mine_tree`): the repository is
only read, through its configuration-free mirror (`mine_git`)."""

from __future__ import annotations

import re
import shlex
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.formats.spec import Check
from pytest_scylla.operations import mine_tree
from pytest_scylla.operations.mine_git import GitError, Source
from pytest_scylla.operations.mine_history import Commit, MineError, show
from pytest_scylla.run.checks import check_env, run_check
from pytest_scylla.run.sandbox.base import Sandbox, base_env

RESULT = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (.+?)(?: - .*)?$")
WHY = re.compile(r"^E\s+(\w*(Error|Exception)\b.*)$|^(\w*Error: .*)$")
PYTEST = "python -m pytest -q -rA -p no:cacheprovider -p no:randomly -p no:scylla"


@dataclass(frozen=True)
class Verdict:
    commit: Commit
    reason: str  # "" when verified
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    command: str = ""  # the pytest command the checks run (with its PYTHONPATH)
    seconds: float = 0.0

    @property
    def kept(self) -> bool:
        return not self.reason


def pytest_command(tree: Path) -> str:
    """The test command of a checkout: `src/` layouts get it on the path first (the host's
    installed copy of the package must not stand in for the workspace's)."""
    return f"PYTHONPATH=src {PYTEST}" if (tree / "src").is_dir() else PYTEST


def with_tests(source: Source, commit: Commit, dest: Path) -> None:
    """The parent's tree with the commit's test changes applied."""
    mine_tree.lay_out(source, commit.parent, dest)
    for change in commit.tests:
        if change.status == "D":
            mine_tree.delete(dest, change.path)
        else:
            mine_tree.write(dest, change.path, show(source, commit.sha, change.path))


Runner = Callable[[str, Path], tuple[int | None, str]]


def sandboxed(box: Sandbox, private: Path, timeout: int) -> Runner:
    """Runs a shell command in a workspace under `private` inside `box`: (exit code, output),
    as a case's checks run, but for bytecode: no agent wrote in these workspaces (they are the
    repository's own commits), so Python reads the interpreter's compiled modules where they
    are (never writing any), and a run costs about a second less than without them."""

    def run(command: str, workspace: Path) -> tuple[int | None, str]:
        fresh = Path(tempfile.mkdtemp(prefix="env-", dir=private))
        env = check_env(base_env(fresh), fresh)
        env.pop("PYTHONPYCACHEPREFIX")
        check = Check(name="tests", run=command, timeout_seconds=timeout)
        result = run_check(
            check, workspace, env, wrap=lambda argv: box.wrap(argv, workspace, private)
        )
        return result.exit_code, result.stdout + "\n" + result.stderr

    return run


def results(output: str) -> dict[str, bool]:
    """{node id: passed} from pytest's -rA summary (xfail counts as passing, xpass not)."""
    found = {}
    for line in output.splitlines():
        if match := RESULT.match(line.strip()):
            found[match.group(2).strip()] = match.group(1) in ("PASSED", "XFAIL")
    return found


def cannot_run(code: int | None, output: str, found: dict[str, bool]) -> str:
    """Why the tests could not run at all ("" when they ran)."""
    if code is None:
        return "the tests timed out"
    broken = [node for node in found if "::" not in node and not found[node]]
    if code in (2, 3, 4) or broken or not found:
        why = next((m.group(1) or m.group(3) for m in map(WHY.match, output.splitlines()) if m), "")
        what = {5: "no test collected", 4: "pytest usage error", 3: "pytest internal error"}
        said = what.get(code or 0, "a collection error" if broken or code == 2 else "no result")
        return f"tests cannot run ({said}{': ' + why.strip()[:160] if why else ''})"
    return ""


def verify(source: Source, commit: Commit, run: Runner, private: Path) -> Verdict:
    """The verdict on one candidate (see the module's text)."""
    began = time.monotonic()
    before, after = private / "before", private / "after"
    try:
        with_tests(source, commit, before)
        mine_tree.lay_out(source, commit.sha, after)
    except (mine_tree.UnsafeTree, MineError, GitError, OSError) as exc:  # a link out …
        return Verdict(commit, f"its tree cannot be laid out safely ({exc})", seconds=0.0)
    files = [c.path for c in commit.tests if c.status != "D" and c.path.endswith(".py")]
    files = [f for f in files if Path(f).name != "conftest.py"] or files
    command = pytest_command(after)
    full = f"{command} {' '.join(shlex.quote(f) for f in files)}"
    tries = []
    for tree in (before, before, after, after):
        code, output = run(full, tree)
        found = results(output)
        if (problem := cannot_run(code, output, found)) and tree == after:
            return Verdict(commit, problem + " at the commit", seconds=_since(began))
        tries.append((found, problem))
    spent = _since(began)
    if tries[0][0] != tries[1][0] or tries[2][0] != tries[3][0]:
        return Verdict(commit, "flaky: a second try gave other results", seconds=spent)
    at_commit = tries[2][0]
    failing = sorted(n for n, ok in at_commit.items() if not ok)
    if failing:
        return Verdict(commit, f"a test fails at the commit itself: {failing[0]}", seconds=spent)
    was = tries[0][0]
    f2p = tuple(sorted(n for n in at_commit if not was.get(n, False)))
    p2p = tuple(sorted(n for n in at_commit if was.get(n, False)))
    if not f2p:
        return Verdict(commit, "no test fails before the change (nothing to fix)", seconds=spent)
    return Verdict(commit, "", f2p, p2p, command, spent)


def _since(began: float) -> float:
    return round(time.monotonic() - began, 2)
