"""Red team (#29 items 2 and 8): one check must not defeat another, and depth must not hide a
file from the scan. Each attack is first shown to work the old way (the positive control), then
shown to fail against the harness.

Here the in-process tests; the sessions are in `tests/e2e/test_redteam_checks.py`."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, Check, load_case
from pytest_scylla.run import checks, hostile, integrity
from pytest_scylla.run.workspace import Workspace, create, diff, file_list

from ...conftest import needs_docker
from ...support.check_attack import EVIL, HIDDEN, REAL

ROOT = Path(__file__).resolve().parents[3]


def two_check_case(tmp_path: Path) -> Case:
    """test-001's source; a first check that imports the agent's module, a second that runs
    a hidden script the agent's code fails."""
    base = load_case(ROOT / "cases" / "test-001" / "test.yaml", ROOT / "rubrics")
    hidden = tmp_path / "hidden"
    (hidden / "scylla_hidden_tests").mkdir(parents=True)
    (hidden / HIDDEN).write_text(REAL)
    return replace(
        base,
        hidden=hidden,
        protected=(),
        checks=(
            Check(name="imports", run="python -c 'import evil'", timeout_seconds=30),
            Check(name="hidden-tests", run=f"python {HIDDEN}", timeout_seconds=60),
        ),
    )


def agent_workspace(case: Case, tmp_path: Path) -> Workspace:
    ws = create(case, tmp_path / "ws", tmp_path / "cache", harness=tmp_path / "harness")
    (ws.path / "evil.py").write_text(EVIL)
    entries, cut = hostile.walk(ws.path)
    assert integrity.secure(case, ws.tree(), entries, cut) == []  # nothing planted yet
    return ws


def test_an_earlier_check_cannot_rewrite_a_later_checks_hidden_test(tmp_path: Path) -> None:
    case = two_check_case(tmp_path)
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    # positive control: the checks the old way (the hidden files copied in once) are fooled
    old_ws = agent_workspace(case, tmp_path / "old")
    old = {r.name: r for r in checks.run_checks(case, old_ws.path, env, tmp_path / "old-f")}
    assert old["imports"].passed
    assert old["hidden-tests"].passed, old["hidden-tests"].stdout  # the fake test ran

    ws = agent_workspace(case, tmp_path / "new")
    found: list[integrity.Finding] = []

    def between(after: str) -> None:
        found.extend(integrity.recheck(case, ws.tree(), after))

    began = time.monotonic()
    new = {
        r.name: r
        for r in checks.run_checks(case, ws.path, env, tmp_path / "new-f", between=between)
    }
    assert not new["hidden-tests"].passed  # the real hidden test ran, and fails
    assert "VALUE is 0" in new["hidden-tests"].stderr
    kinds = {(f.kind, f.path) for f in found}
    assert ("hidden_changed", HIDDEN) in kinds
    assert ("hidden_path", "scylla_hidden_tests/extra_helper.py") in kinds
    assert all("after check 'imports'" in f.detail for f in found)
    # the detached rewriter was stopped with the first check: the real file stays in place
    time.sleep(0.5)
    assert (ws.path / HIDDEN).read_text() == REAL
    assert time.monotonic() - began < 30


# -- item 8: depth does not hide a file ------------------------------------------------------

DEPTH, NAME = 300, "d" * 20


def plant_deep(root: Path, leaf: str, data: bytes) -> str:
    """`leaf` DEPTH folders down (a path far over PATH_MAX), made by descriptor."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(DEPTH):
        os.mkdir(NAME, dir_fd=fd)
        nxt = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    out = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, data)
    os.close(out)
    os.close(fd)
    return "/".join([NAME] * DEPTH + [leaf])


def test_a_conftest_planted_300_folders_down_is_found_and_removed(tmp_path: Path) -> None:
    case = load_case(ROOT / "cases" / "test-001" / "test.yaml", ROOT / "rubrics")
    ws = create(case, tmp_path / "ws", tmp_path / "cache", harness=tmp_path / "harness")
    (ws.path / "shallow").mkdir()
    (ws.path / "shallow" / "conftest.py").write_text("import os\n")  # control: shallow
    deep = plant_deep(ws.path, "conftest.py", b"import os\n")
    assert len(os.fsencode(ws.path / deep)) > 4096
    # positive control: a walk by path does not see the deep file
    by_path = {
        os.path.relpath(os.path.join(d, f), ws.path)
        for d, _, names in os.walk(ws.path)
        for f in names
    }
    assert "shallow/conftest.py" in by_path
    assert deep not in by_path

    entries, cut = hostile.walk(ws.path)
    assert not cut
    listed = {e.rel: e.kind for e in entries}
    assert listed[deep] == "file"
    assert deep in file_list(ws.path, entries)  # files.txt and the judges' list
    assert f"[harness: {deep} lies deeper than git can reach" in diff(ws, entries=entries)
    found = {(f.kind, f.path) for f in integrity.secure(case, ws.tree(), entries, cut)}
    assert ("conftest", "shallow/conftest.py") in found
    assert ("conftest", deep) in found
    assert not (ws.path / "shallow" / "conftest.py").exists()
    with pytest.raises(FileNotFoundError):
        hostile.read(ws.path, deep)
    assert deep not in {e.rel for e in hostile.walk(ws.path)[0]}


def test_a_folder_the_walk_cannot_open_is_a_finding_not_a_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = load_case(ROOT / "cases" / "test-001" / "test.yaml", ROOT / "rubrics")
    ws = create(case, tmp_path / "ws", tmp_path / "cache", harness=tmp_path / "harness")
    (ws.path / "closed").mkdir()
    (ws.path / "closed" / "conftest.py").write_text("import os\n")
    opened = hostile._open_dir

    def refuse(name: str, dir_fd: int) -> int:  # as a folder closed to the harness would
        if name == "closed":
            raise PermissionError(13, "Permission denied", name)
        return opened(name, dir_fd)

    monkeypatch.setattr(hostile, "_open_dir", refuse)
    entries, cut = hostile.walk(ws.path)
    kinds = {e.rel: e.kind for e in entries}
    assert kinds["closed"] == "unreadable"
    assert "closed/conftest.py" not in kinds  # what the walk could not see ...
    monkeypatch.setattr(hostile, "_open_dir", opened)
    found = {(f.kind, f.path): f.detail for f in integrity.secure(case, ws.tree(), entries, cut)}
    assert "not checked; removed before the checks" in found["unreadable", "closed"]  # ... is
    assert not (ws.path / "closed").exists()  # a finding, and gone before the checks


@pytest.mark.parametrize("copy", [False, True], ids=["bind", "copy"])
def test_in_docker_a_later_check_still_runs_the_real_hidden_file(
    tmp_path: Path, copy: bool
) -> None:
    """The same attack with the checks run in a container (bind-mounted or, with
    --scylla-docker-copy, copied in and out): the host puts the hidden files back between the
    checks, and the container sees what the host put back."""
    needs_docker()
    from pytest_scylla.run.sandbox.docker.sandbox import Docker

    case = two_check_case(tmp_path)
    private = tmp_path / "private"
    private.mkdir()
    ws = create(case, private / "work", tmp_path / "cache", harness=tmp_path / "harness")
    (ws.path / "evil.py").write_text(EVIL)
    entries, cut = hostile.walk(ws.path)
    integrity.secure(case, ws.tree(), entries, cut)
    box = Docker(copy=copy)
    found: list[integrity.Finding] = []
    try:
        results = {
            r.name: r
            for r in checks.run_checks(
                case,
                ws.path,
                {"PATH": os.environ["PATH"]},
                private / "fresh",
                execute=box.executor(private),
                between=lambda after: found.extend(integrity.recheck(case, ws.tree(), after)),
            )
        }
    finally:
        box.close(private)
    assert results["imports"].passed, results["imports"].stderr
    assert not results["hidden-tests"].passed
    assert "VALUE is 0" in results["hidden-tests"].stderr
    assert ("hidden_changed", HIDDEN) in {(f.kind, f.path) for f in found}
