"""`source: {repo: self, commit: ...}`: a case that lives in the repository it is about (#30
item 2). The case's commit is cloned from the repository's own root wherever it is checked out
and whichever folder pytest starts in; a relative path, a case outside any repository and a
pinned commit that already holds the case's folder are refused with what to do."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ..conftest import FIXTURES

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def _project(root: Path, commit: str | None = None, repo: str = "self") -> str:
    """A repository whose first commit is the buggy program, and whose second adds a case
    about it (pinned to the first, or to `commit`) with the mini project's tiers and rubrics."""
    _git(root, "init", "-q")
    shutil.copy(FIXTURES / "mini" / "cases" / "alpha" / "source" / "main.py", root / "main.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the program")
    first = _git(root, "rev-parse", "HEAD")
    for folder in ("tiers", "rubrics"):
        shutil.copytree(FIXTURES / "mini" / folder, root / folder)
    case = root / "cases" / "own"
    shutil.copytree(FIXTURES / "mini" / "cases" / "alpha", case)
    shutil.rmtree(case / "source")
    text = (case / "test.yaml").read_text().replace("id: alpha", "id: own")
    (case / "test.yaml").write_text(
        text.replace(
            "source:\n  path: source\n", f"source:\n  repo: {repo}\n  commit: {commit or first}\n"
        )
    )
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "a case about it")
    return first


@pytest.mark.parametrize("sandbox", ["bwrap", pytest.param("docker", marks=pytest.mark.slow)])
def test_a_case_of_its_own_repository_runs_from_any_folder(
    pytester: pytest.Pytester, oracle: list[str], tmp_path: Path, sandbox: str
) -> None:
    from ..conftest import needs_bwrap, needs_docker

    needs_docker() if sandbox == "docker" else needs_bwrap()
    root = tmp_path / "checkout"  # not the folder pytest starts in
    root.mkdir()
    first = _project(root)
    elsewhere = pytester.path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    pytester.chdir()
    done = subprocess.run(
        [
            "python",
            "-m",
            "pytest",
            str(root / "cases"),
            "-k",
            "T0-01",
            *oracle,
            f"--scylla-sandbox={sandbox}",
            f"--scylla-out={tmp_path / 'out'}",
            "-p",
            "no:xdist",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    rec = json.loads((tmp_path / "out" / "runs" / "own-T0-01-r1" / "run.json").read_text())
    assert rec["outcome"] == "pass"
    assert rec["source"]["repo"] == "self"  # as written: the same conditions on every checkout
    assert rec["source"]["commit"] == first
    assert "cases/" not in (tmp_path / "out" / "runs" / "own-T0-01-r1" / "files.txt").read_text()


@pytest.mark.parametrize(
    ("repo", "said"),
    [
        (
            ".",
            "is a relative path, which would be read from the harness's cache folder; write `self`",
        ),
        ("self", "repo: self, but no git repository holds"),
    ],
)
def test_a_repo_that_cannot_work_is_refused_at_collection(
    pytester: pytest.Pytester, tmp_path: Path, repo: str, said: str
) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    _project(root, repo=repo)
    if repo == "self":
        shutil.rmtree(root / ".git")  # the same files, in no repository
    result = pytester.runpytest_subprocess(
        str(root / "cases"), "--scylla-oracle", "--co", "--scylla-sandbox=bwrap"
    )
    result.stdout.fnmatch_lines([f"*cases/own/test.yaml:6: *{said}*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_pinned_commit_that_holds_the_case_is_refused(
    pytester: pytest.Pytester, oracle: list[str], tmp_path: Path
) -> None:
    """The case's own folder at the pinned commit would hand the agent its hidden tests and
    solution: the run is an infra_error saying which commit to pin instead."""
    from ..conftest import needs_bwrap

    needs_bwrap()
    root = tmp_path / "checkout"
    root.mkdir()
    _project(root)
    head = _git(root, "rev-parse", "HEAD")  # the commit that added the case
    text = (root / "cases/own/test.yaml").read_text()
    first = text.split("commit: ")[1].split()[0]
    (root / "cases/own/test.yaml").write_text(text.replace(first, head))
    done = subprocess.run(
        [
            "python",
            "-m",
            "pytest",
            "cases",
            "-k",
            "T0-01",
            *oracle,
            "--scylla-sandbox=bwrap",
            f"--scylla-out={tmp_path / 'out'}",
            "-p",
            "no:xdist",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rec = json.loads((tmp_path / "out" / "runs" / "own-T0-01-r1" / "run.json").read_text())
    assert rec["outcome"] == "infra_error", done.stdout[-2000:]
    assert "already holds this case's folder cases/own/" in rec["reason"]
    assert "pin a commit from before the case was added" in rec["reason"]
