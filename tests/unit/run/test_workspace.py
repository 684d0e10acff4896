"""Workspaces: the source at its pinned commit, nothing leaked, every change visible in the diff."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_scylla.formats.spec import Case, Source, load_case
from pytest_scylla.run import workspace as wsmod
from pytest_scylla.run.workspace import WorkspaceError, create, diff, file_list, git

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def case() -> Case:
    return load_case(ROOT / "cases/test-001/test.yaml", ROOT / "rubrics")


def test_folder_source_is_committed_deterministically(case: Case, tmp_path: Path) -> None:
    one = create(case, tmp_path / "one", tmp_path / "cache", tmp_path / "h" / "one")
    two = create(case, tmp_path / "two", tmp_path / "cache", tmp_path / "h" / "two")
    assert one.base_commit == two.base_commit
    assert len(one.base_commit) == 40
    assert file_list(one.path) == ["README.md"]
    assert diff(one) == ""
    with pytest.raises(WorkspaceError, match="already exists"):
        create(case, tmp_path / "one", tmp_path / "cache", tmp_path / "h" / "one")


def test_diff_shows_committed_staged_unstaged_and_untracked_work(
    case: Case, tmp_path: Path
) -> None:
    ws = create(case, tmp_path / "ws", tmp_path / "cache", tmp_path / "h" / "ws")
    (ws.path / "committed.py").write_text("x = 1\n")
    git(["add", "committed.py"], ws.path)
    git(["commit", "-q", "-m", "agent commit"], ws.path)
    (ws.path / "README.md").write_text("changed\n")
    (ws.path / "staged.py").write_text("y = 2\n")
    git(["add", "staged.py"], ws.path)
    (ws.path / "new dir").mkdir()
    (ws.path / "new dir/untracked.py").write_text("z = 3\n")
    (ws.path / "CLAUDE.md").write_text("overlay\n")
    status_before = git(["status", "--porcelain"], ws.path)
    text = diff(ws, exclude=["CLAUDE.md"])
    for name in ("committed.py", "README.md", "staged.py", "new dir/untracked.py"):
        assert f"b/{name}" in text
    assert "CLAUDE.md" not in text
    assert git(["status", "--porcelain"], ws.path) == status_before  # own index untouched
    assert file_list(ws.path) == [
        "CLAUDE.md",
        "README.md",
        "committed.py",
        "new dir/untracked.py",
        "staged.py",
    ]


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with a pinned commit and a later 'future fix' commit."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git(["init", "-q"], repo)
    (repo / "lib.py").write_text("def f():\n    return 0\n")
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "start"], repo)
    pinned = git(["rev-parse", "HEAD"], repo).strip()
    (repo / "lib.py").write_text("def f():\n    return 42  # the future fix\n")
    git(["commit", "-qam", "the fix"], repo)
    future = git(["rev-parse", "HEAD"], repo).strip()
    return repo, pinned, future


def test_repo_source_holds_only_the_pinned_history(
    case: Case, tmp_path: Path, upstream: tuple[Path, str, str]
) -> None:
    repo, pinned, future = upstream
    remote = replace(case, source=Source(repo=repo.as_uri(), commit=pinned, url=repo.as_uri()))
    ws = create(remote, tmp_path / "ws", tmp_path / "cache", tmp_path / "h" / "ws")
    assert ws.base_commit == pinned
    assert git(["rev-parse", "HEAD"], ws.path).strip() == pinned
    assert (ws.path / "lib.py").read_text() == "def f():\n    return 0\n"
    assert git(["log", "--all", "--format=%H"], ws.path).split() == [pinned]
    assert git(["cat-file", "-t", future], ws.path, check=False).strip() == ""
    assert not (ws.path / ".git/FETCH_HEAD").exists()


def test_mirror_is_shared_and_locked_across_concurrent_runs(
    case: Case, tmp_path: Path, upstream: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, pinned, _ = upstream
    remote = replace(case, source=Source(repo=repo.as_uri(), commit=pinned, url=repo.as_uri()))
    clones = []
    real_git = wsmod.git

    def counting_git(args: list[str], cwd: Path, **kw: object) -> str:
        if args[:1] == ["clone"]:
            clones.append(args)
        return real_git(args, cwd, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(wsmod, "git", counting_git)
    with ThreadPoolExecutor(4) as pool:
        made = list(
            pool.map(
                lambda i: create(
                    remote, tmp_path / f"ws{i}", tmp_path / "cache", tmp_path / "h" / f"ws{i}"
                ),
                range(4),
            )
        )
    assert {w.base_commit for w in made} == {pinned}
    assert len(clones) == 1
    assert len(list((tmp_path / "cache/mirrors").glob("*.git"))) == 1


def test_unknown_commit_is_a_clear_error(
    case: Case, tmp_path: Path, upstream: tuple[Path, str, str]
) -> None:
    repo, _, _ = upstream
    missing = "0" * 40
    remote = replace(case, source=Source(repo=repo.as_uri(), commit=missing, url=repo.as_uri()))
    with pytest.raises(WorkspaceError, match=f"commit {missing} not found in"):
        create(remote, tmp_path / "ws", tmp_path / "cache", tmp_path / "h" / "ws")


def test_tracked_files_an_ignore_rule_matches_are_diffed_as_git_diffs_them(
    case: Case, tmp_path: Path
) -> None:
    """A repository whose .gitignore matches files it tracks (more-itertools ignores `.*` yet
    tracks `.github/` and `.pre-commit-config.yaml`): a run that touches neither shows neither
    (they once showed as deleted), one that edits or deletes such a file shows that change, and
    an untracked file the rule matches stays out, as in `git diff`."""
    source = tmp_path / "src"
    (source / ".github" / "workflows").mkdir(parents=True)
    (source / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (source / ".pre-commit-config.yaml").write_text("repos: []\n")
    (source / "lib.py").write_text("x = 1\n")
    git(["init", "-q"], source)
    git(["add", "-A"], source)
    (source / ".gitignore").write_text(".*\n!.gitignore\n")
    git(["add", ".gitignore"], source)
    git(["commit", "-q", "-m", "tracked dot files, ignored by a rule"], source)
    pinned = git(["rev-parse", "HEAD"], source).strip()
    repo_case = replace(
        case, source=Source(repo=str(source), commit=pinned, url=str(source), path=None)
    )
    ws = create(repo_case, tmp_path / "ws", tmp_path / "cache", tmp_path / "h" / "ws")
    (ws.path / "lib.py").write_text("x = 2\n")
    text = diff(ws)
    assert "b/lib.py" in text
    assert ".github" not in text  # untouched: not shown as deleted
    assert ".pre-commit-config.yaml" not in text
    (ws.path / ".pre-commit-config.yaml").write_text("repos: [agent]\n")
    (ws.path / ".github" / "workflows" / "ci.yml").unlink()
    (ws.path / ".env").write_text("SECRET=1\n")  # untracked and ignored
    text = diff(ws)
    assert "+repos: [agent]" in text
    assert "deleted file mode 100644" in text.split("a/.github/workflows/ci.yml", 1)[1]
    assert ".env" not in text
