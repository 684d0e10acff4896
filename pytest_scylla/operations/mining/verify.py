"""`scylla cases mine`, second step: a candidate commit verified by running its tests in the
sandbox a session would use, never on the host.

At the parent commit with only the commit's test changes, its test files and the few others
that test the modules it changes (`mine_related`) are run twice; then at the commit itself,
twice. Each test's outcome is read from a structured report (`mine_outcomes`), never from
printed text: a test fails when any of its reports did, a failing `subTest` included. The tests
that fail before (both tries) and pass after (both tries) are its fail-to-pass tests, exactly
those; the ones passing at both its pass-to-pass tests. A candidate is kept only when some test
fails to pass, every test of its own test files passes at the commit (but for a test failing at
both commits, both tries: something this environment lacks, such as an optional module; it is
listed in `broken`, counted in neither list and deselected by the checks), and both tries agree
on them (else: flaky, naming the first test that differed); a related file with a test failing
at the commit, or whose tries disagree, adds nothing, and when the related files cannot run or
make a run time out they are left out and the commit's own run alone. Tests that cannot run (a
missing module, a collection error, no test collected) reject it with the line that says why.
The workspaces are written from the commits' trees in a private temporary folder, every path
and link in them checked first (`mine_tree`): the repository is only read, through its
configuration-free mirror (`mine_git`)."""

from __future__ import annotations

import dataclasses
import re
import shlex
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_scylla.formats.spec import Check
from pytest_scylla.operations.mining import outcomes as mine_outcomes
from pytest_scylla.operations.mining import related as mine_related
from pytest_scylla.operations.mining import tree as mine_tree
from pytest_scylla.operations.mining.git import GitError, Source
from pytest_scylla.operations.mining.history import Commit, MineError, show
from pytest_scylla.operations.mining.outcomes import Outcome
from pytest_scylla.run.checks import check_env, run_check
from pytest_scylla.run.sandbox.base import Sandbox, base_env

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
    related: tuple[str, ...] = field(default=())  # test files beyond the commit's own, run too
    broken: tuple[str, ...] = ()  # tests of its files failing before and at the commit: left out

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


@dataclass(frozen=True)
class Ran:
    """One run of the tests: its exit code (None at the timeout), its printed output (for
    messages only) and each test's outcome from the report; `problem` when it was unreadable."""

    code: int | None
    output: str
    outcomes: dict[str, Outcome]
    problem: str = ""


Runner = Callable[[list[str], Path], Ran]  # (test files, workspace) -> the run


def sandboxed(box: Sandbox, private: Path, timeout: int) -> Runner:
    """Runs test files in a workspace under `private` inside `box`, as a case's checks run,
    with the outcome plugin on the path and past a collection error (a test file importing
    what only the commit adds must not stop the other files' tests); but for bytecode: no
    agent wrote in these workspaces (they are the repository's own commits), so Python reads
    the interpreter's compiled modules where they are (never writing any), and a run costs
    about a second less than without."""

    def run(files: list[str], workspace: Path) -> Ran:
        fresh = Path(tempfile.mkdtemp(prefix="env-", dir=private))
        env = check_env(base_env(fresh), fresh)
        env.pop("PYTHONPYCACHEPREFIX")
        plugin = mine_outcomes.install(fresh)
        path = ":".join([*(["src"] if (workspace / "src").is_dir() else []), str(plugin)])
        command = " ".join(
            [
                f"PYTHONPATH={shlex.quote(path)} {PYTEST} -p {mine_outcomes.MODULE}",
                "--continue-on-collection-errors",
                *(shlex.quote(f) for f in files),
            ]
        )
        check = Check(name="tests", run=command, timeout_seconds=timeout)
        result = run_check(
            check, workspace, env, wrap=lambda argv: box.wrap(argv, workspace, private)
        )
        outcomes: dict[str, Outcome] = {}
        try:  # reached from `private`, the folder bound writable: no link in the way followed
            outcomes = mine_outcomes.read(private, plugin.relative_to(private).as_posix())
        except mine_outcomes.ReportError as exc:
            problem = str(exc)
        else:
            problem = ""
        return Ran(result.exit_code, result.stdout + "\n" + result.stderr, outcomes, problem)

    return run


def cannot_run(ran: Ran) -> str:
    """Why the tests could not run at all ("" when they ran)."""
    if ran.code is None:
        return "the tests timed out"
    broken = [node for node, outcome in ran.outcomes.items() if "::" not in node]
    if ran.code in (2, 3, 4, 5) or broken or not ran.outcomes:
        lines = ran.output.splitlines()
        why = next((m.group(1) or m.group(3) for m in map(WHY.match, lines) if m), "")
        if not why and not ran.outcomes:  # pytest stopped before any test: its last word
            why = next((line for line in reversed(lines) if line.strip()), "")
        what = {5: "no test collected", 4: "pytest usage error", 3: "pytest internal error"}
        said = what.get(ran.code, "a collection error" if broken or ran.code == 2 else "")
        said = said or (f"no result: {ran.problem}" if ran.problem else "no result")
        return f"tests cannot run ({said}{': ' + why.strip()[:160] if why else ''})"
    if ran.problem:
        return f"the test report cannot be read ({ran.problem})"
    return ""


def own_files(commit: Commit) -> list[str]:
    """The commit's test files that are run (its conftest.py files only when it has no other)."""
    files = [c.path for c in commit.tests if c.status != "D" and c.path.endswith(".py")]
    return [f for f in files if Path(f).name != "conftest.py"] or files


def verify(source: Source, commit: Commit, run: Runner, private: Path) -> Verdict:
    """The verdict on one candidate (see the module's text)."""
    began = time.monotonic()
    before, after = private / "before", private / "after"
    try:
        with_tests(source, commit, before)
        mine_tree.lay_out(source, commit.sha, after)
    except (mine_tree.UnsafeTree, MineError, GitError, OSError) as exc:  # a link out …
        return Verdict(commit, f"its tree cannot be laid out safely ({exc})", seconds=0.0)
    own = own_files(commit)
    extra = mine_related.related(after, commit, own)
    verdict = judge(commit, own, extra, [run(own + extra, t) for t in (before, before)], run, after)
    if extra and verdict.reason.startswith(("tests cannot run", "the tests timed out")):
        verdict = judge(commit, own, [], [run(own, t) for t in (before, before)], run, after)
    return dataclasses.replace(verdict, seconds=_since(began))


def judge(
    commit: Commit, own: list[str], extra: list[str], was: list[Ran], run: Runner, after: Path
) -> Verdict:
    """The verdict from the two runs before (`was`) and two at the commit (run here)."""
    now = []
    for _ in range(2):
        ran = run(own + extra, after)
        if problem := cannot_run(ran):
            return Verdict(commit, problem + " at the commit")
        now.append(ran.outcomes)
    wavering = _wavering(was[0].outcomes, was[1].outcomes) + _wavering(now[0], now[1])
    unstable = {_file_of(n, own + extra) for n, _ in wavering}
    if ours := [(n, said) for n, said in wavering if _file_of(n, own + extra) not in extra]:
        node, said = ours[0]
        return Verdict(commit, f"flaky: a second try gave other results ({node}: {said})")
    at_commit, before = now[0], was[0].outcomes
    mine = {n for n in at_commit if _file_of(n, own)}
    failing = sorted(n for n in mine if at_commit[n] == "failed")
    broken = tuple(n for n in failing if "::" in n and before.get(n) == "failed")
    if failing := [n for n in failing if n not in broken]:
        return Verdict(commit, f"a test fails at the commit itself: {failing[0]}")
    kept = [
        f
        for f in extra
        if f not in unstable
        and all(at_commit[n] != "failed" for n in at_commit if _file_of(n, [f]))
    ]
    counted = sorted(n for n in at_commit if at_commit[n] == "passed" and _file_of(n, own + kept))
    f2p = tuple(n for n in counted if failed_before(n, before))
    p2p = tuple(n for n in counted if before.get(n) == "passed")
    if not f2p:
        return Verdict(commit, "no test fails before the change (nothing to fix)")
    if len(broken) > len(counted):
        return Verdict(commit, f"most of its tests fail at both commits here: {broken[0]}, …")
    command = pytest_command(after)
    return Verdict(commit, "", f2p, p2p, command, related=tuple(kept), broken=broken)


def failed_before(node: str, before: dict[str, Outcome]) -> bool:
    """Whether the test failed before the change: its own outcome, or its file's (or the
    session's) collection error. A test skipped or absent before did not fail."""
    if node in before:
        return before[node] == "failed"
    file = node.split("::", 1)[0]
    return before.get(file) == "failed" or before.get("") == "failed"


def _wavering(one: dict[str, Outcome], two: dict[str, Outcome]) -> list[tuple[str, str]]:
    """Each test whose outcome differs between two tries, with both outcomes
    ("failed then passed"; "absent" where a try has none), sorted by node id."""
    return [
        (n, f"{one.get(n, 'absent')} then {two.get(n, 'absent')}")
        for n in sorted(set(one) | set(two))
        if one.get(n) != two.get(n)
    ]


def _file_of(node: str, files: list[str]) -> str:
    """Which of `files` holds the test `node` ("" for none): node ids are relative to pytest's
    rootdir, which may be a folder below the workspace."""
    head = node.split("::", 1)[0]
    return next((f for f in files if head and (f == head or f.endswith("/" + head))), "")


def _since(began: float) -> float:
    return round(time.monotonic() - began, 2)
