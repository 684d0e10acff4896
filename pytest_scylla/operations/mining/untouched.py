"""`scylla cases mine`, the last check of a written case: what a noop agent would get. Its
untouched source (the pinned commit with the case's hidden files in place, as a session lays
it out before any agent) must fail each of its fail-to-pass tests, run as its `fail-to-pass`
check runs them (those tests alone, not their whole files: a test that passes alone but fails
after its neighbours is caught here), each test's outcome read from the structured report
(`mine_outcomes`). The oracle session (`case_check`) sees only the check's exit status: that one
of its tests fails there; this sees every one."""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pytest_scylla.operations.mining import git as mine_git
from pytest_scylla.operations.mining import tree as mine_tree
from pytest_scylla.operations.mining.git import Source
from pytest_scylla.operations.mining.verify import Runner, failed_before, sandboxed
from pytest_scylla.run import hostile
from pytest_scylla.run.sandbox.base import Sandbox

F2P = "fail-to-pass"


@contextlib.contextmanager
def history(repo: Path) -> Iterator[Source]:
    """The mined repository's history, read as mining read it (a private configuration-free
    mirror); its work tree may now hold the cases just written (`repo: self`)."""
    with tempfile.TemporaryDirectory(prefix="scylla-mine-home-") as home:
        top, _ = mine_git.discover(repo, Path(home))
    with mine_git.mirrored(Path(top or repo)) as source:
        yield source


def fail_to_pass(data: Any) -> list[str]:
    """The node ids the case's `fail-to-pass` check runs ([] for a case without one)."""
    checks = data.get("checks") if isinstance(data, dict) else None
    check = next((c for c in checks or [] if isinstance(c, dict) and c.get("name") == F2P), None)
    run = check.get("run") if check else None
    return [t for t in shlex.split(run) if "::" in t] if isinstance(run, str) else []


def hidden_files(hidden: Path) -> dict[str, bytes]:
    """The case's hidden files by path, no link followed."""
    found = {}
    for top, _, files in os.walk(hidden):
        for name in files:
            rel = (Path(top) / name).relative_to(hidden).as_posix()
            found[rel] = hostile.read(hidden, rel)
    return found


def problem(folder: Path, source: Source, run: Runner, private: Path) -> str:
    """Why the untouched source of the case in `folder` does not fail each of its
    fail-to-pass tests ("" when it does)."""
    data = yaml.safe_load((folder / "test.yaml").read_text(encoding="utf-8"))
    nodes = fail_to_pass(data)
    if not nodes:
        return f"its {F2P} check names no test"
    tree = private / "untouched"
    try:
        mine_tree.lay_out(source, str(data["source"]["commit"]), tree)
        for rel, content in hidden_files(folder / "hidden").items():
            mine_tree.write(tree, rel, content)
    except (mine_tree.UnsafeTree, mine_git.GitError, hostile.HostileDataError, OSError) as exc:
        return f"its untouched source cannot be laid out ({exc})"
    ran = run(nodes, tree)
    if ran.code is None:
        return f"its {F2P} tests timed out on the untouched source"
    if ran.problem:
        return f"its {F2P} tests' report on the untouched source cannot be read ({ran.problem})"
    passing = [n for n in nodes if not failed_before(n, ran.outcomes)]
    if passing:
        return (
            f"the untouched source does not fail {len(passing)} of its {len(nodes)} {F2P} "
            f"test(s) ({passing[0]}: {ran.outcomes.get(passing[0], 'not run')}): a noop agent "
            "would pass them"
        )
    return ""


def check(folder: Path, source: Source, box: Sandbox, timeout: int) -> str:
    """`problem`, its runs in `box` in a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="scylla-untouched-") as private:
        try:
            return problem(folder, source, sandboxed(box, Path(private), timeout), Path(private))
        finally:  # what the sandbox holds for the folder (docker: its container) let go
            box.close(Path(private))
