"""Red team (#44): the agent renames its workspace folder and leaves a link to a host folder
(or another folder) in its place. Each attack is first shown to work on the steps as they took
the workspace by name (the positive control), then shown to fail against the pinned workspace.

Here the in-process tests; the sessions are in `tests/e2e/test_redteam_folder.py`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, Check, load_case
from pytest_scylla.run import checks, hostile, integrity, pinned
from pytest_scylla.run.workspace import Workspace, create, diff, file_list

ROOT = Path(__file__).resolve().parents[3]
SECRET = "host secret: not for the agent"
PYPROJECT = '[tool.pytest.ini_options]\naddopts = "-q"\n'


def victim_case(tmp_path: Path) -> Case:
    """test-001's source; a hidden test and protected tests, as a case has."""
    base = load_case(ROOT / "cases" / "test-001" / "test.yaml", ROOT / "rubrics")
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_hidden.py").write_text("def test_hidden():\n    pass\n")
    return replace(
        base,
        hidden=hidden,
        protected=("README.md",),
        checks=(
            Check(name="first", run="true", timeout_seconds=30),
            Check(name="second", run="true", timeout_seconds=30),
        ),
    )


def host_folder(where: Path) -> Path:
    """A folder of the host's the agent points its link at: a project's machinery and a
    secret."""
    where.mkdir(parents=True)
    (where / "conftest.py").write_text("# the user's own conftest\n")
    (where / "sitecustomize.py").write_text("# the user's own start-up file\n")
    (where / "pyproject.toml").write_text(PYPROJECT)
    (where / "README.md").write_text("the user's readme\n")
    (where / "secret.txt").write_text(SECRET + "\n")
    return where


def swap(ws: Workspace, target: Path) -> None:
    """The agent's move: its workspace renamed, a link to `target` in its place."""
    ws.path.rename(ws.path.with_name("work.orig"))
    ws.path.symlink_to(target)


def run_workspace(case: Case, tmp_path: Path) -> Workspace:
    private = tmp_path / "private"
    private.mkdir(parents=True)
    ws = create(case, private / "work", tmp_path / "cache", harness=tmp_path / "harness")
    (ws.path / "hello.py").write_text("print('Hello, World!')\n")  # the agent's work
    return ws


def untouched(host: Path) -> None:
    assert (host / "conftest.py").is_file()
    assert (host / "sitecustomize.py").is_file()
    assert (host / "pyproject.toml").read_text() == PYPROJECT
    assert (host / "README.md").read_text() == "the user's readme\n"
    assert not (host / "tests").exists()  # no hidden file copied in


def test_control_steps_by_name_work_on_the_linked_host_folder(tmp_path: Path) -> None:
    """The positive control: the scan, the diff and the integrity restore, given the
    workspace's name as they were, delete the host's machinery, restore files over its own,
    copy the hidden tests in and put its secret into the diff."""
    case = victim_case(tmp_path)
    ws = run_workspace(case, tmp_path)
    host = host_folder(tmp_path / "host")
    swap(ws, host)
    entries, cut = hostile.walk(ws.path)
    patch = diff(ws, (), entries)
    found = {(f.kind, f.path) for f in integrity.secure(case, ws.tree(), entries, cut)}
    assert SECRET in patch
    assert "secret.txt" in file_list(ws.path, entries, cut)
    assert {("conftest", "conftest.py"), ("startup_file", "sitecustomize.py")} <= found
    assert not (host / "conftest.py").exists()
    assert not (host / "sitecustomize.py").exists()
    assert (host / "README.md").read_text() != "the user's readme\n"  # "restored" over it
    assert (host / "tests" / "test_hidden.py").is_file()


Pinned = tuple[Case, Workspace, pinned.Pin]


@pytest.fixture(params=[False, True], ids=["bound", "copies-back"])
def held(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Pinned]:
    """A run's workspace with the agent's work, pinned as before the agent (also as under a
    sandbox that copies the run's folder back)."""
    case = victim_case(tmp_path)
    ws = run_workspace(case, tmp_path)
    pin = pinned.Pin(ws.path.parent, copies_back=request.param)
    yield case, ws, pin
    pin.close()


def test_a_workspace_swapped_for_a_link_is_found(tmp_path: Path, held: Pinned) -> None:
    _, ws, pin = held
    assert pin.check() == ""
    host = host_folder(tmp_path / "host")
    swap(ws, host)
    why = pin.check()
    assert "symbolic link" in why
    assert str(host) in why
    os.unlink(ws.path)  # put back by name: what was found stays found
    ws.path.with_name("work.orig").rename(ws.path)
    assert pin.check() == why
    untouched(host)


@pytest.mark.parametrize("planted", ["folder", "file", "nothing"])
def test_anything_else_in_the_workspaces_place_is_found(planted: str, held: Pinned) -> None:
    """Under copy-back a real folder is taken instead: each copy back makes a new workspace
    folder, the host's own (the agent cannot act on the host's copy)."""
    _, ws, pin = held
    ws.path.rename(ws.path.with_name("work.orig"))
    if planted == "folder":
        ws.path.mkdir()
        (ws.path / "new.txt").write_text("copied back\n")
    elif planted == "file":
        ws.path.write_text("x")
    if pin.copies_back and planted == "folder":
        assert pin.check() == ""
        assert (pin.root / "new.txt").read_text() == "copied back\n"
    else:
        assert "work" in pin.check()


def test_a_swap_after_the_check_changes_nothing_the_steps_reach(
    tmp_path: Path, held: Pinned
) -> None:
    """A swap between the check and the step: the steps, through the descriptor held from
    before the agent, work on the agent's own workspace, never on the linked folder."""
    case, ws, pin = held
    assert pin.check() == ""
    host = host_folder(tmp_path / "host")
    swap(ws, host)  # after the check
    entries, cut = hostile.walk(pin.root)
    patch = diff(ws, (), entries, pin.root)
    found = integrity.secure(case, ws.tree(pin.root), entries, cut)
    assert found == []  # the agent's own workspace holds nothing planted
    assert "hello.py" in patch
    assert SECRET not in patch
    assert "secret.txt" not in file_list(pin.root, entries, cut)
    untouched(host)
    kept = ws.path.with_name("work.orig")
    assert (kept / "tests" / "test_hidden.py").is_file()  # where the hidden files went


def test_the_run_folder_replaced_is_found(tmp_path: Path) -> None:
    ws = run_workspace(victim_case(tmp_path), tmp_path)
    private = ws.path.parent
    pin = pinned.Pin(private)
    try:
        private.rename(tmp_path / "moved")
        private.symlink_to(tmp_path / "moved")
        assert "run's folder" in pin.check()
    finally:
        pin.close()


def test_a_link_in_the_workspaces_place_before_the_pin_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir()
    (private / "work").symlink_to(host_folder(tmp_path / "host"))
    with pytest.raises(NotADirectoryError):  # the link is not followed
        pinned.Pin(private)


def test_halt_in_between_ends_the_checks(tmp_path: Path) -> None:
    case = victim_case(tmp_path)
    seen: list[str] = []

    def between(after: str) -> None:
        seen.append(after)
        raise checks.Halt

    env = {"PATH": os.environ["PATH"]}
    results = checks.run_checks(case, tmp_path, env, tmp_path / "fresh", between=between)
    assert [r.name for r in results] == ["first"]
    assert seen == ["first"]
