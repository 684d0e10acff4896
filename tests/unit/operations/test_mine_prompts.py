"""`scylla cases mine`: prompts that state what the hidden tests check. A merge's task told from
the commits it brought in (and the pull request's issue text), release and version-bump commits
rejected, a prompt that misses an exact value or exception the tests need flagged (and
`--prompt-from-model` told what the tests check), root-level `test.py` found, `source.repo`
recorded so the case runs elsewhere, and the progress line. Each with a positive control."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_scylla.formats.spec import load_case
from pytest_scylla.operations.mining import gaps as mine_gaps
from pytest_scylla.operations.mining import history, mine, verify, write
from pytest_scylla.operations.mining.git import Source, without_credentials
from pytest_scylla.operations.mining.progress import Status
from pytest_scylla.run.sandbox.base import Sandbox

from ...support.mining_repo import commit, git

OPS = "def chunk(items, n):\n    return [items[i : i + n] for i in range(0, len(items), n)]\n"
GUARD = OPS.replace(
    "    return", "    if n < 0:\n        raise ValueError('n must be at least 0')\n    return"
)
TEST = (
    "from calc.ops import chunk\n\n\ndef test_chunk():\n    assert chunk('ab', 1) == ['a', 'b']\n"
)
SIZE = "from calc.ops import size\n\n\ndef test_size():\n    assert size(None) == 0\n"
NEG = """

class ChunkTests:
    def test_negative_n(self):
        with pytest.raises(ValueError, match="n must be at least 0"):
            chunk("abcd", -1)
        assert chunk("abcdef", 3) == ["abc", "def"]
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A history with a merged pull request, a release, a version bump and a plain fix."""
    path = tmp_path_factory.mktemp("prompts") / "calc"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    shas = {"root": commit(path, "Start", {"calc/__init__.py": "", "calc/ops.py": OPS})}
    shas["first"] = commit(path, "Add chunk's test", {"tests/test_ops.py": TEST})
    git(path, "checkout", "-q", "-b", "dev/neg")
    commit(
        path,
        "Raise for a negative n in chunk()\n\nchunk() looped forever on n < 0.",
        {"calc/ops.py": GUARD},
    )
    commit(path, "Test negative n", {"tests/test_ops.py": "import pytest\n" + TEST + NEG})
    git(path, "checkout", "-q", "main")
    message = "Merge pull request #12 from dev/neg\n\nRaise for a negative n in chunk()"
    git(path, "merge", "-q", "--no-ff", "-m", message, "dev/neg")
    shas["merge"] = git(path, "rev-parse", "HEAD")
    release = GUARD + "\n\ndef size(items):\n    return len(items)\n"
    shas["release"] = commit(
        path, "Version 11.0.1", {"calc/ops.py": release, "tests/test_size.py": TEST}
    )
    bumped = '__version__ = "1.0"\n'
    shas["v1"] = commit(path, "Set a version", {"calc/__init__.py": bumped})
    shas["bump"] = commit(
        path,
        "Tidy",
        {
            "calc/__init__.py": bumped.replace("1.0", "1.1"),
            "tests/test_v.py": "def test_v():\n    pass\n",
        },
    )
    shas["fix"] = commit(
        path,
        "Fix size of None",
        {"calc/ops.py": release.replace("len(items)", "len(items or ())"), "tests/test_n.py": SIZE},
    )
    return path, shas


@pytest.fixture(scope="module")
def source(repo: tuple[Path, dict[str, str]]) -> Iterator[Source]:
    with history.opened(repo[0]) as opened:
        yield opened


def _verdict(source: Source, sha: str, f2p: tuple[str, ...]) -> verify.Verdict:
    found = history.read(source, sha)
    assert found is not None
    return verify.Verdict(found, "", f2p, (), verify.PYTEST)


F2P = ("tests/test_ops.py::ChunkTests::test_negative_n",)


def test_a_merge_is_told_by_the_commits_it_brought_in_and_its_issue(
    repo: tuple[Path, dict[str, str]], source: Source, tmp_path: Path
) -> None:
    _, shas = repo
    verdict = _verdict(source, shas["merge"], F2P)
    assert len(verdict.commit.merged) == 2
    issues = tmp_path / "issues"
    issues.mkdir()
    (issues / "12.md").write_text("chunk('ab', -1) never returns")
    text = write.prompt(verdict, issues)
    assert "Merge pull request" not in text
    assert text.startswith(
        "Raise for a negative n in chunk()\n\nchunk() looped forever on n < 0.\n\nTest negative n"
    )
    assert text.count("Raise for a negative n in chunk()") == 1  # the PR title is its commit's
    assert "The issue it refers to (#12):\n\nchunk('ab', -1) never returns" in text
    data = write.document(source, verdict, tmp_path / "cases")
    assert data["name"] == "Raise for a negative n in chunk()"
    # the positive control: a plain commit's prompt is its message, as before
    plain = _verdict(source, shas["fix"], ("tests/test_n.py::test_size",))
    assert plain.commit.merged == ()
    assert write.prompt(plain).startswith("Fix size of None\n\nMake this change")
    named = dataclasses.replace(plain.commit, body="Fix formatting for test_iterator_negative")
    text = write.prompt(dataclasses.replace(plain, commit=named))
    assert "Fix formatting for a test\n" in text  # a test name that is no fail-to-pass test
    crlf = dataclasses.replace(plain.commit, body="Fixes #1.\r\n\r\nCo-authored-by: X <x@y.z>\r\n")
    text = write.prompt(dataclasses.replace(plain, commit=crlf))
    assert text.startswith("Fix size of None\n\nFixes #1.\n\nMake this change")  # six's trailers


def test_releases_and_version_bumps_are_no_candidates(
    repo: tuple[Path, dict[str, str]], source: Source
) -> None:
    _, shas = repo
    read = {kind: history.read(source, shas[kind]) for kind in ("release", "bump", "fix", "merge")}
    limits = history.Limits()
    release = read["release"]
    assert release is not None
    assert history.rejection(release, limits).startswith("a release or version bump: ")
    bump, fix, merge = read["bump"], read["fix"], read["merge"]
    assert bump is not None
    assert fix is not None
    assert merge is not None
    assert history.rejection(bump, limits) == ""  # its message says nothing: its diff does
    assert history.only_versions(source, bump)
    for kept in (fix, merge):  # the positive controls
        assert history.rejection(kept, limits) == ""
        assert not history.only_versions(source, kept)
    for subject in ("Version 11.0.1", "Release 2.3", "six 1.17.0", "Bump version to 2.0"):
        assert history.RELEASE.match(subject), subject
    for subject in ("Fix 3.12", "Add seekable.__getitem__", "Releases are signed now"):
        assert not history.RELEASE.match(subject), subject


def test_root_level_test_files_are_tests() -> None:
    tests = ["test.py", "tests.py", "test_six.py", "six_test.py", "a/b_tests.py", "conftest.py"]
    assert all(history.Change(p, "M", 1).is_test for p in tests)
    assert history.Change("six.py", "M", 1).is_source  # the positive control
    assert not history.Change("contest.py", "M", 1).is_test


def test_a_prompt_missing_what_the_tests_need_is_flagged(
    repo: tuple[Path, dict[str, str]], source: Source, tmp_path: Path
) -> None:
    _, shas = repo
    verdict = _verdict(source, shas["merge"], F2P)
    summary = mine_gaps.summarize(write.texts(source, verdict, verdict.commit.tests), F2P)
    assert summary.tests == ["ChunkTests::test_negative_n"]
    assert summary.raises == ["ValueError"]
    assert "chunk" in summary.calls
    added = GUARD  # what the solution adds
    gaps = mine_gaps.gaps(summary, added, "Raise for a negative n in chunk().")
    assert gaps == ["ValueError raised", "the exact value 'n must be at least 0'"]
    # the positive control: a prompt that states both is not flagged; test data never is
    said = "chunk() raises ValueError('n must be at least 0') for a negative n."
    assert mine_gaps.gaps(summary, added, said) == []
    assert mine_gaps.gaps(summary, added, said, defined=GUARD) == []  # it names chunk
    assert mine_gaps.gaps(summary, added, f"Fix #12. {said[8:]}", defined=GUARD) == [
        "changes to chunk()"  # a message that names no function under test
    ]
    described = mine_gaps.describe(summary)
    assert "ChunkTests::test_negative_n" in described
    assert "exceptions they expect: ValueError" in described
    assert "def " not in described  # no test source
    assert "with " not in described
    folder = write.write(source, verdict, tmp_path / "cases")
    write.flag(folder, gaps, "what n=0 does")
    case = load_case(folder / "test.yaml", tmp_path / "rubrics")
    assert "underspecified" in case.tags
    assert (
        "Underspecified: the hidden tests need ValueError raised, the exact value "
        "'n must be at least 0', which the prompt never states; and the prompt writer said: "
        "what n=0 does."
    ) in case.description


def test_the_source_repo_recorded_runs_elsewhere(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A clone's origin URL, its credentials taken out, read as data: the clone's configuration
    runs nothing (an fsmonitor that would write a file)."""
    path, _ = repo
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(path), str(clone)], check=True)
    url = "https://user:ghp_secret@example.com/team/calc.git"
    git(clone, "remote", "set-url", "origin", url)
    local = commit(clone, "Local only", {"calc/x.py": "x = 1\n"})  # pushed nowhere
    pwned = tmp_path / "pwned"
    git(clone, "config", "core.fsmonitor", f"touch {pwned}; false")
    with history.opened(clone) as opened:
        named, why = write.source_repo(opened, tmp_path / "cases")
        assert (named, why) == ("https://example.com/team/calc.git", "the URL of its origin remote")
        assert write.source_repo(opened, clone / "cases")[0] == "self"
        on = git(clone, "rev-parse", "HEAD~1")
        assert write.source_repo(opened, tmp_path / "cases", on)[0].startswith("https://")
    with history.opened(clone) as opened:
        named, why = write.source_repo(opened, tmp_path / "cases", local)
    assert (named, why) == (
        str(clone.resolve()),
        f"its path: {local[:12]} is on no branch of its origin remote",
    )
    assert not pwned.exists()
    subprocess.run(["git", "status"], cwd=clone, capture_output=True, check=False)
    assert pwned.exists()  # the positive control: git itself in the clone runs it
    with history.opened(path) as opened:  # the positive control: no remote, its path
        named, why = write.source_repo(opened, tmp_path / "cases")
    assert named == str(path.resolve())
    assert "this machine only" in why
    assert without_credentials("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert without_credentials("ssh://git:pw@host/x") == "ssh://git@host/x"
    assert without_credentials("https://u:p@ss@host/x?t=1") == "https://host/x"


def test_the_progress_line_is_rewritten_on_a_terminal_and_plain_in_a_log() -> None:
    found = mine.Mined(commits=50, candidates=4)
    found.rejected["too large"] += 9
    line = mine.progress(found, 10, 0.0)
    assert line.startswith("scylla cases mine: commit 11 of 50, 4 candidates, 0 kept, 9 rejected")
    assert ", ETA " in line
    tty = io.StringIO()
    status = Status(tty, tty=True)
    status.update("one")
    status.say("abc123 verified")
    status.update("two")
    status.close()
    assert (
        tty.getvalue() == "\rone\x1b[K\r\x1b[Kabc123 verified\n\rone\x1b[K\rtwo\x1b[K\r\x1b[Ktwo\n"
    )
    log = io.StringIO()
    status = Status(log, tty=False, interval=3600)
    status.update("one")
    status.say("abc123 verified")
    status.update("two")
    status.close()
    assert log.getvalue() == "abc123 verified\ntwo\n"  # no cursor moves; the last at the end


def test_a_mine_shows_progress_flags_and_says_what_it_recorded(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mine() over the history with the runs' verdicts given (the real runs are the e2e
    tests'): the progress after each commit, the merge flagged, the table counting it."""
    path, shas = repo

    def given(source: Source, found: history.Commit, *args: Any) -> verify.Verdict:
        f2p = F2P if found.sha == shas["merge"] else ("tests/test_n.py::test_size",)
        return verify.Verdict(found, "", f2p, (), verify.PYTEST, 1.0)

    monkeypatch.setattr(verify, "verify", given)
    said: list[str] = []
    shown: list[str] = []
    out = tmp_path / "cases"
    found = mine.mine(path, mine.Options(), out, Sandbox(), said.append, shown.append)
    assert sorted(found.written) == sorted(write.name_of(path, shas[k]) for k in ("merge", "fix"))
    assert found.flagged == {write.name_of(path, shas["merge"])}
    assert shown[0].startswith("scylla cases mine: commit 1 of 7, 0 candidates")
    assert shown[-1].startswith("scylla cases mine: 7 commits looked at, 2 candidates, 2 kept")
    assert said[0].startswith(f"the cases name the repository as source.repo: {path.resolve()}")
    table = mine.table(found)
    assert "flagged underspecified (the prompt misses what the tests need): 1" in table
    assert "      2  a release or version bump" in table  # by its message, by its diff
    data = yaml.safe_load((out / write.name_of(path, shas["merge"]) / "test.yaml").read_text())
    assert data["tags"][-1] == "underspecified"
    assert json.dumps(data)  # plain data


def test_the_prompt_writer_is_told_what_the_tests_check_and_says_what_is_open(
    repo: tuple[Path, dict[str, str]],
    source: Source,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--prompt-from-model under --simulated: the request carries the tests' summary (fenced,
    no test source) and the system prompt asks for `underspecified`; the answer's
    `underspecified` comes back with the call's record (here the oracle is made to give one)."""
    from pytest_scylla.operations.mining.prompt import SYSTEM, TOOL, Rewriter
    from pytest_scylla.run.gateway.oracle import task as oracle_task

    asked: list[dict[str, Any]] = []
    answer = oracle_task.task_call
    answers = iter(["the <b>message</b> text", "None."])

    def recorded(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        call = answer(request)
        return {**call, "input": {**call["input"], "underspecified": next(answers)}}

    monkeypatch.setattr(oracle_task, "task_call", recorded)
    _, shas = repo
    verdict = _verdict(source, shas["merge"], F2P)
    summary = mine_gaps.describe(
        mine_gaps.summarize(write.texts(source, verdict, verdict.commit.tests), F2P)
    )
    rewriter = Rewriter("claude-haiku-4-5", simulated=True, budget=1.0)
    try:
        task, said = rewriter(
            verdict, write.message(verdict), tmp_path / "calls.jsonl", tests=summary
        )
        _, nothing = rewriter(verdict, write.message(verdict), tmp_path / "again.jsonl")
    finally:
        rewriter.close()
    assert task.startswith("Task: Raise for a negative n in chunk()")
    assert said["underspecified"] == "the ‹b›message‹/b› text"  # defused like the task
    assert "underspecified" not in nothing  # "None." says nothing is open
    request = asked[0]
    assert "tests-summary" not in asked[1]["messages"][0]["content"]  # none given, none sent
    content = request["messages"][0]["content"]
    assert "What the hidden tests check:\n<tests-summary-" in content
    assert "exceptions they expect: ValueError" in content
    assert "pytest.raises" not in content  # a summary, not the source
    assert "underspecified" in SYSTEM
    assert "underspecified" in TOOL["input_schema"]["properties"]  # type: ignore[index]
