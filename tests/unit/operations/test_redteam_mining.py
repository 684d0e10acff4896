"""Red team: `scylla cases mine` on a hostile repository (issue 44). Its history holds a tree
entry named `..`, a link that leaves the tree through another link, and the symlink chain of
CVE-2025-4517; its configuration runs commands during `git status`, `git archive` and `git
show`. Nothing is written outside the private folders and nothing of the repository's runs.
Each attack is first shown to work with the defence off (the positive control)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from pytest_scylla.operations.mining import git as mine_git
from pytest_scylla.operations.mining import history, mine, verify, write
from pytest_scylla.operations.mining import tree as mine_tree
from pytest_scylla.operations.mining.tree import Entry, UnsafeTree
from pytest_scylla.run.sandbox.base import Sandbox

from ...support import hostile_repos
from ...support.mining_repo import ENV, build, commit, digest


def _calc(where: Path) -> Path:
    repo = where / "calc"
    build(repo)
    return repo


def _outside(root: Path, name: str, private: Path) -> list[Path]:
    """Files called `name` under `root` but not under `private`."""
    return [p for p in root.rglob(name) if not p.is_relative_to(private)]


def test_a_dotdot_entry_is_never_written_outside_the_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _calc(tmp_path / "repo")
    sha, path = hostile_repos.dotdot(repo)
    private = tmp_path / "deep" / "private"
    with history.opened(repo) as source:
        found = history.read(source, sha)
        assert found is not None
        assert path in [c.path for c in found.tests]  # git lists it as a test file …
        served = mine_git.run(source, ["cat-file", "blob", f"{sha}:{path}"])
        assert served == b"PWNED = True\n"  # … and serves its content
        assert history.rejection(found, history.Limits()) == (
            f"an unsafe path: {path!r} holds an empty, '.' or '..' part"
        )
        with pytest.raises(UnsafeTree, match=r"holds an empty, '\.' or '\.\.' part"):
            verify.with_tests(source, found, private / "before")
        said = verify.verify(source, found, _never, private).reason
        assert said.startswith("its tree cannot be laid out safely (")
        kept = verify.Verdict(found, "", ("tests/test_sub.py::test_sub",), (), verify.PYTEST)
        with pytest.raises(UnsafeTree, match=r"holds an empty, '\.' or '\.\.' part"):
            write.write(source, kept, tmp_path / "out" / "cases")
        assert _outside(tmp_path, "test_pwned.py", private) == []
        # the positive control: without the path check, the same step writes beside `private`
        monkeypatch.setattr(mine_tree, "path_problem", lambda path: "")
        monkeypatch.setattr(history, "path_problem", lambda path: "")
        verify.with_tests(source, found, private / "before")
    assert _outside(tmp_path, "test_pwned.py", private) == [tmp_path / "deep" / "test_pwned.py"]
    assert (tmp_path / "deep" / "test_pwned.py").read_text() == "PWNED = True\n"


def _never(command: str, tree: Path) -> tuple[int | None, str]:
    raise AssertionError("nothing may run")


def test_mining_counts_a_commit_with_an_unsafe_path_and_runs_nothing(tmp_path: Path) -> None:
    repo = _calc(tmp_path / "repo")
    sha, _ = hostile_repos.dotdot(repo)

    class Refuses(Sandbox):
        def wrap(self, *args: object, **kwargs: object) -> list[str]:
            raise AssertionError("nothing may run")

    found = mine.mine(repo, mine.Options(revisions=f"{sha}~1..{sha}"), tmp_path / "out", Refuses())
    assert (found.candidates, dict(found.rejected)) == (0, {"an unsafe path": 1})
    assert not (tmp_path / "out").exists()


def test_the_tar_chain_of_cve_2025_4517_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """On this Python (3.11.7 here: unpatched) `git archive` extracted through tarfile's
    `data` filter writes `newfile` beside the folder; mining lays the same tree out itself and
    refuses it before writing anything."""
    repo = _calc(tmp_path / "repo")
    control, defended = tmp_path / "x" / "after", tmp_path / "y" / "after"  # the same length
    sha = hostile_repos.tar_chain(repo, control)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", sha], cwd=repo, capture_output=True, env=ENV, check=True
    ).stdout
    control.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hostile_repos.tarfile_unpatched():  # the positive control: the filter is bypassed
            tar.extractall(control, filter="data")
            assert (control.parent / "newfile").read_text() == "new"
        else:  # a patched Python refuses it itself
            with pytest.raises((OSError, KeyError, tarfile.TarError)):
                tar.extractall(control, filter="data")
    with history.opened(repo) as source:
        with pytest.raises(UnsafeTree, match="'a' is a file and a folder"):
            mine_tree.lay_out(source, sha, defended)
        found = history.read(source, sha)
        assert found is not None
        said = verify.verify(source, found, _never, tmp_path / "y" / "private").reason
    assert said == "its tree cannot be laid out safely ('a' is a file and a folder)"
    assert not defended.exists()
    assert not (tmp_path / "y" / "newfile").exists()


def test_a_link_that_leaves_through_another_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`x -> .` and `y -> x/..`: each looks inside on its own (`x/..` is `.` as text), but `y`
    is the folder above the tree. The tree's links are followed on the tree itself."""
    repo = _calc(tmp_path / "repo")
    (repo / "calc" / "x").symlink_to(".")
    (repo / "calc" / "y").symlink_to("x/../..")
    sha = commit(repo, "Links", {"calc/neg.py": "def neg(a):\n    return -a\n"})
    with history.opened(repo) as source:
        with pytest.raises(UnsafeTree, match="'calc/y' is a link out of the tree"):
            mine_tree.lay_out(source, sha, tmp_path / "a" / "tree")
        # the positive control: without the check, the link is written and leads out
        monkeypatch.setattr(mine_tree, "check_links", lambda links: None)
        mine_tree.lay_out(source, sha, tmp_path / "b" / "tree")
    assert (tmp_path / "b" / "tree" / "calc" / "y").resolve() == tmp_path / "b"


def test_the_repositorys_own_configuration_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsmonitor (from an included file), a filter driver's clean and smudge commands, a
    post-index-change hook and gpg.program: git's porcelain in the repository runs all five
    (the positive control, what mining ran before); mining it, a case is verified and written,
    and none runs."""
    repo = _calc(tmp_path / "repo")
    markers = hostile_repos.configured(repo, tmp_path / "markers")
    hostile_repos.porcelain(repo)
    assert sorted(n for n, p in markers.items() if p.exists()) == sorted(hostile_repos.MARKERS)
    for marker in markers.values():
        marker.unlink()
    before = digest(repo)

    def runs(files: list[str], tree: Path) -> verify.Ran:
        failed = tree.name == "before"
        outcome = "failed" if failed else "passed"
        return verify.Ran(int(failed), "", {"tests/test_sub.py::test_sub": outcome})

    monkeypatch.setattr(verify, "sandboxed", lambda box, where, timeout: runs)
    out = tmp_path / "out"
    found = mine.mine(repo, mine.Options(revisions="HEAD~1..HEAD"), out, Sandbox())
    assert list(found.written) == [write.name_of(repo, history_head(repo))]
    assert [n for n, p in markers.items() if p.exists()] == []
    assert digest(repo) == before


def history_head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, env=ENV, check=True
    ).stdout.strip()


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ([Entry("100644", "0", "/etc/x")], "'/etc/x' is absolute or empty"),
        ([Entry("100644", "0", "a/.git/config")], "'a/.git/config' holds a '.git' part"),
        ([Entry("100644", "0", "a/.GIT./hooks")], "'a/.GIT./hooks' holds a '.git' part"),
        ([Entry("100644", "0", "a//b")], "'a//b' holds an empty, '.' or '..' part"),
        ([Entry("100644", "0", "a\nb")], "'a\\nb' holds a control character or is not UTF-8"),
        ([Entry("100644", "0", "a\udcffb")], "holds a control character or is not UTF-8"),
        ([Entry("100644", "0", "a"), Entry("100644", "1", "a")], "'a' is in the tree twice"),
        ([Entry("120000", "0", "a"), Entry("100644", "1", "a/b")], "'a' is a file and a folder"),
        ([Entry("040000", "0", "a")], "'a' has mode 040000"),
    ],
)
def test_every_unsafe_path_of_a_tree_is_named(entries: list[Entry], said: str) -> None:
    with pytest.raises(UnsafeTree) as refused:
        mine_tree.check(entries)
    assert said in str(refused.value)
