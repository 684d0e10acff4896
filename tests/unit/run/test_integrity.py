"""The workspace after the agent as hostile data: nothing it wrote runs or is followed on the
host, and what would game the checks is undone and recorded. Each attack is first shown to work
the naive way (the positive control), then shown to fail against the harness.

Here the in-process tests; the sessions are in `tests/e2e/test_integrity.py`."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, load_case
from pytest_scylla.run import hostile, integrity
from pytest_scylla.run.workspace import Workspace, create, diff, file_list

ROOT = Path(__file__).resolve().parents[3]


def case(name: str) -> Case:
    return load_case(ROOT / "cases" / name / "test.yaml", ROOT / "rubrics")


def make(case_: Case, tmp_path: Path) -> Workspace:
    return create(case_, tmp_path / "ws", tmp_path / "cache", harness=tmp_path / "harness")


def findings(case_: Case, ws: Workspace) -> list[tuple[str, str]]:
    entries, _ = hostile.walk(ws.path)
    return [(f.kind, f.path) for f in integrity.secure(case_, ws.tree(), entries)]


def test_the_agents_git_dir_replaced_by_a_pointer_or_deleted_changes_nothing(
    tmp_path: Path,
) -> None:
    c = case("test-001")
    ws = make(c, tmp_path)
    (ws.path / "hello.py").write_text("print('hi')\n")
    shutil.rmtree(ws.path / ".git")
    (ws.path / ".git").write_text(f"gitdir: {tmp_path / 'elsewhere'}\n")
    assert "+print('hi')" in diff(ws)
    assert file_list(ws.path) == ["README.md", "hello.py"]


# -- 2. hidden files never follow what the agent planted -------------------------------------


def test_hidden_files_are_not_written_through_planted_links(tmp_path: Path) -> None:
    c = case("test-002")
    assert c.hidden is not None
    hidden_rel = "scylla_hidden_tests/test_hidden_negative_amounts.py"
    host = tmp_path / "host"
    host.mkdir()
    victim = host / "victim.txt"
    victim.write_text("precious\n")
    ws = make(c, tmp_path)
    (ws.path / "scylla_hidden_tests").mkdir()
    (ws.path / hidden_rel).symlink_to(victim)
    # positive control: the naive copy writes through the link onto the host file
    control = tmp_path / "control"
    shutil.copytree(ws.path, control, symlinks=True)
    shutil.copytree(c.hidden, control, dirs_exist_ok=True)
    assert victim.read_text() != "precious\n"
    victim.write_text("precious\n")

    found = findings(c, ws)
    assert victim.read_text() == "precious\n"
    assert ("hidden_path", "scylla_hidden_tests") in found
    placed = ws.path / hidden_rel
    assert not placed.is_symlink()
    assert placed.read_bytes() == (c.hidden / hidden_rel).read_bytes()


def test_a_linked_parent_folder_is_replaced_not_followed(tmp_path: Path) -> None:
    """A hidden file whose folder exists at the pinned commit: the agent swaps that folder for a
    link to a host folder; the copy removes the link and writes a real folder."""
    c = case("test-002")
    host = tmp_path / "host"
    host.mkdir()
    hidden = tmp_path / "hidden"
    (hidden / "tests").mkdir(parents=True)
    (hidden / "tests" / "test_more.py").write_text("def test_x():\n    assert True\n")
    c = replace(c, hidden=hidden)
    ws = make(c, tmp_path)
    shutil.rmtree(ws.path / "tests")
    (ws.path / "tests").symlink_to(host)
    found = findings(c, ws)
    assert list(host.iterdir()) == []  # nothing written on the host
    assert ("hidden_path", "tests") in found
    assert (ws.path / "tests" / "test_more.py").is_file()
    assert not (ws.path / "tests").is_symlink()


# -- 3. planted test machinery is removed and recorded ---------------------------------------


def test_planted_conftest_startup_files_and_shadowing_modules_are_removed(tmp_path: Path) -> None:
    c = case("test-002")
    ws = make(c, tmp_path)
    planted = {
        "conftest.py": ("conftest", "import pytest\n"),
        "scylla_hidden_tests/conftest.py": ("conftest", "x = 1\n"),
        "sitecustomize.py": ("startup_file", "import os\n"),
        "usercustomize.py": ("startup_file", "import os\n"),
        "evil.pth": ("startup_file", "import os\n"),
        "ast.py": ("shadowing_module", "parse = None\n"),
        "scylla_hidden_tests/string.py": ("shadowing_module", "x = 1\n"),
    }
    for rel, (_, text) in planted.items():
        (ws.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.path / rel).write_text(text)
    (ws.path / "json").mkdir()  # a package shadowing json
    (ws.path / "json" / "__init__.py").write_text("")
    legit = ["fairshare/ast.py", "fairshare/io_helpers.py", "notes.py"]  # inside a package: fine
    for rel in legit:
        (ws.path / rel).write_text("x = 1\n")
    found = findings(c, ws)
    for rel, (kind, _) in planted.items():
        if not rel.startswith("scylla_hidden_tests/"):
            assert (kind, rel) in found
            assert not (ws.path / rel).exists()
    assert ("shadowing_module", "json") in found
    assert ("hidden_path", "scylla_hidden_tests") in found  # its folder was pre-created
    assert not (ws.path / "scylla_hidden_tests" / "conftest.py").exists()
    assert not (ws.path / "scylla_hidden_tests" / "string.py").exists()
    for rel in legit:
        assert (ws.path / rel).exists()
    assert (ws.path / "fairshare" / "__main__.py").exists()  # the case's own files stay


def test_protected_paths_are_restored_from_the_pinned_commit(tmp_path: Path) -> None:
    c = replace(case("test-002"), protected=("tests/**",))
    ws = make(c, tmp_path)
    original = (ws.path / "tests" / "test_cli.py").read_text()
    (ws.path / "tests" / "test_cli.py").write_text("def test_nothing():\n    pass\n")
    (ws.path / "tests" / "test_fake.py").write_text("def test_ok():\n    pass\n")
    (ws.path / "fairshare" / "money.py").write_text("# the agent's own work: kept\n")
    found = findings(c, ws)
    assert ("protected_path", "tests/test_cli.py") in found
    assert ("protected_path", "tests/test_fake.py") in found
    assert (ws.path / "tests" / "test_cli.py").read_text() == original
    assert not (ws.path / "tests" / "test_fake.py").exists()
    assert (ws.path / "fairshare" / "money.py").read_text() == "# the agent's own work: kept\n"


def test_a_clean_workspace_has_no_findings(tmp_path: Path) -> None:
    c = replace(case("test-002"), protected=("tests/**", "README.md"))
    ws = make(c, tmp_path)
    (ws.path / "fairshare" / "money.py").write_text("# changed\n")
    assert findings(c, ws) == []
    assert (ws.path / "scylla_hidden_tests").is_dir()


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/sub/deep.py", True),
        ("tests/**", "tests", True),
        ("tests/**", "testsx/a.py", False),
        ("tests/", "tests/a.py", True),
        ("*.cfg", "setup.cfg", True),
        ("*.cfg", "sub/setup.cfg", False),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src/ab.py", False),
    ],
)
def test_protected_globs(pattern: str, path: str, hit: bool) -> None:
    assert bool(integrity.glob_regex(pattern).match(path)) is hit


# -- 4. what is read back is bounded ---------------------------------------------------------


def test_big_files_are_named_not_read_and_links_are_listed_not_followed(tmp_path: Path) -> None:
    c = case("test-001")
    ws = make(c, tmp_path)
    with open(ws.path / "big.bin", "wb") as handle:
        handle.truncate(hostile.MAX_FILE_BYTES + 1)
    (ws.path / "outside").symlink_to("/etc")
    text = diff(ws, entries=hostile.walk(ws.path)[0])
    assert "big.bin is over" in text
    assert "GIT binary patch" not in text
    entries, cut = hostile.walk(ws.path)
    assert not cut
    assert {e.rel: e.kind for e in entries}["outside"] == "link"
    assert not any(e.rel.startswith("outside/") for e in entries)
    cut_entries, cut = hostile.walk(ws.path, limit=2)
    assert (len(cut_entries), cut) == (2, True)
    assert file_list(ws.path, cut_entries, cut)[-1].startswith("[... more files than")
    # a workspace too big to scan whole says so as a finding of its own
    found = [(f.kind, f.path) for f in integrity.secure(c, ws.tree(), cut_entries, cut)]
    assert ("unchecked", ".") in found
    assert os.path.exists(ws.path / "outside")


def test_an_ignore_rule_cannot_hide_itself_from_the_diff(tmp_path: Path) -> None:
    c = case("test-001")
    ws = make(c, tmp_path)
    (ws.path / "hello.py").write_text("print('hi')\n")
    (ws.path / ".gitignore").write_text("*.py\n.gitignore\n")
    assert "hello.py" not in diff(ws)  # the positive control: the rule hides the work...
    text = diff(ws, entries=hostile.walk(ws.path)[0])
    assert "+*.py" in text  # ...but the judges see the rule that does it
    assert "hello.py" in file_list(ws.path)


def test_attributes_cannot_turn_the_agents_changes_into_binary_patches(tmp_path: Path) -> None:
    c = case("test-001")
    ws = make(c, tmp_path)
    (ws.path / "hello.py").write_text("print('sneaky')\n")
    (ws.path / ".gitattributes").write_text("*.py binary\n")
    assert "sneaky" not in diff(ws)  # positive control: a binary patch hides the text
    assert "+print('sneaky')" in diff(ws, entries=hostile.walk(ws.path)[0])


def test_floods_of_git_warnings_do_not_stall_the_harness(tmp_path: Path) -> None:
    """Thousands of per-file warnings on stderr (here: CRLF conversion of 3,000 files) while
    the diff is read from stdout: the read finishes (a full stderr pipe would hang it)."""
    c = case("test-001")
    ws = make(c, tmp_path)
    (ws.path / ".gitattributes").write_text("* text eol=crlf\n")
    for i in range(3000):
        (ws.path / f"f{i:04d}-{'x' * 60}.txt").write_text("a\nb\n")
    text = diff(ws, entries=hostile.walk(ws.path)[0])
    assert text.count("diff --git") == 3001


PLANT = """import importlib.util, os, pathlib, py_compile
real = pathlib.Path("victim.py").resolve()
fake = pathlib.Path("fake.py")
fake.write_text('print("forged")'.ljust(len(real.read_bytes())))  # same size, same mtime:
st = real.stat()
os.utime(fake, (st.st_atime, st.st_mtime))  # the bytecode passes as the real file's
target = importlib.util.cache_from_source(str(real))
os.makedirs(os.path.dirname(target), exist_ok=True)
py_compile.compile(str(fake), cfile=target, dfile=str(real), doraise=True)
print("planted", target)
"""


@pytest.mark.parametrize("prefix", ["checks", "writable-control"])
def test_an_earlier_check_cannot_plant_bytecode_for_a_later_one(
    tmp_path: Path, prefix: str
) -> None:
    """A check runs the agent's code, which could write forged bytecode for a module a later
    check imports; the checks' Python uses no bytecode cache at all. The control, a writable
    cache folder (as a per-run one would be), shows the forgery works there."""
    from pytest_scylla.formats.spec import Check
    from pytest_scylla.run.checks import check_env, run_check

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "victim.py").write_text('print("real")  # the module a later check imports\n')
    env = check_env({"PATH": os.environ["PATH"]}, tmp_path / "fresh")
    if prefix == "writable-control":
        env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "fresh" / "pycache")
    planted = run_check(Check("plant", ("python", "-c", PLANT)), ws, env)
    later = run_check(Check("later", ("python", "-c", "import victim")), ws, env)
    if prefix == "checks":
        assert not planted.passed  # nowhere to write it
        assert later.stdout == "real\n"
    else:
        assert planted.passed, planted.stderr
        assert later.stdout == "forged\n"
