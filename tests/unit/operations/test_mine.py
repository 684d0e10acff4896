"""`scylla cases mine`: which commits are candidates and why the others are not, the input it
refuses (one line each, the repository untouched), what a verdict rests on, and the prompt
written from a commit message. The runs in the sandbox are in `tests/e2e/test_mine.py`."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.formats.spec import load_case
from pytest_scylla.operations.mining import history, verify, write
from pytest_scylla.operations.mining.git import Source

from ...support.mining_repo import build, digest, git


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    where = tmp_path_factory.mktemp("mine") / "calc"
    return where, build(where)


@pytest.fixture(scope="module")
def source(repo: tuple[Path, dict[str, str]]) -> Iterator[Source]:
    """The repository as mining reads it: through its private configuration-free mirror."""
    with history.opened(repo[0]) as opened:
        yield opened


def test_each_kind_of_commit_is_told_apart(
    repo: tuple[Path, dict[str, str]], source: Source
) -> None:
    _, shas = repo
    limits = history.Limits()
    reasons = {}
    for kind, sha in shas.items():
        commit = history.read(source, sha)
        reasons[kind] = "root" if commit is None else history.rejection(commit, limits)
    assert reasons == {
        "root": "root",
        "fix": "",
        "feature": "",
        "docs": "no test file changed",
        "tests": "only test files changed",
        "flaky": "",  # a candidate: only running it shows the flakiness
        "missing": "",
        "delete": "deletes or renames a source file (a solution folder can only add and change)",
    }
    fix = history.read(source, shas["fix"])
    assert fix is not None
    assert [c.path for c in fix.tests] == ["tests/test_ops.py"]
    assert [c.path for c in fix.others] == ["calc/ops.py"]
    assert history.rejection(fix, history.Limits(max_lines=3)).startswith("too large: ")
    assert (
        history.rejection(fix, history.Limits(max_files=1)) == "too large: 2 files (--max-files 1)"
    )
    # first-parent order, newest first, bounded by --max
    assert history.commits(source, "HEAD", None, 3, []) == [
        shas["delete"],
        shas["missing"],
        shas["flaky"],
    ]
    assert history.commits(source, f"{shas['docs']}..HEAD", None, 100, ["calc"]) == [
        shas["delete"],
        shas["missing"],
        shas["flaky"],
    ]


def _said(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["cases", "mine", *args, "--sandbox", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1  # one line, no traceback
    return err


def test_bad_input_is_one_clear_line_and_the_repository_is_untouched(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = repo
    before = digest(path)
    out = str(tmp_path / "out")
    assert "not a git repository" in _said(capsys, str(tmp_path), "--out", out)
    assert "no such folder" in _said(capsys, str(tmp_path / "nope"), "--out", out)
    said = _said(capsys, str(path), "v9..HEAD", "--out", out)
    assert "revision 'v9' does not exist" in said
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{path}", str(shallow)], check=True
    )
    assert "a shallow clone" in _said(capsys, str(shallow), "--out", out)
    (shallow / "calc" / "ops.py").write_text("changed\n")
    assert "git fetch --unshallow" in _said(capsys, str(shallow), "--out", out)
    dirty = tmp_path / "dirty"
    subprocess.run(["git", "clone", "-q", str(path), str(dirty)], check=True)
    (dirty / "calc" / "ops.py").write_text("changed\n")
    assert "uncommitted changes" in _said(capsys, str(dirty), "--out", out)
    assert "--max=0: expected 1 or more" in _said(capsys, str(path), "--max", "0", "--out", out)
    assert "--out cannot write in /proc" in _said(capsys, str(path), "--out", "/proc/scylla")
    assert digest(path) == before
    assert not (tmp_path / "out").exists()


ADD, SUB = "tests/test_ops.py::test_add", "tests/test_ops.py::test_sub_gives_the_difference"
RUN = verify.Ran(1, "", {ADD: "passed", SUB: "failed"})


def test_a_verdict_rests_on_both_tries_before_and_after(
    repo: tuple[Path, dict[str, str]], source: Source, tmp_path: Path
) -> None:
    """The verdict's logic on given outcomes (the real runs are the e2e test's): fail-to-pass
    and pass-to-pass from the outcomes, flaky when two tries differ, rejected when a test fails
    at the commit or cannot run there."""
    path, shas = repo
    fix = history.read(source, shas["fix"])
    assert fix is not None
    fixed = verify.Ran(0, "", {ADD: "passed", SUB: "passed"})

    def runs(*outputs: verify.Ran) -> verify.Runner:
        given = iter(outputs)
        return lambda files, tree: next(given)

    found = verify.verify(source, fix, runs(RUN, RUN, fixed, fixed), tmp_path / "a")
    assert found.kept
    assert found.fail_to_pass == (SUB,)
    assert found.pass_to_pass == (ADD,)
    assert verify.verify(source, fix, runs(RUN, fixed, fixed, fixed), tmp_path / "b").reason == (
        f"flaky: a second try gave other results ({SUB}: failed then passed)"
    )
    assert verify.verify(source, fix, runs(fixed, fixed, RUN, RUN), tmp_path / "c").reason == (
        f"a test fails at the commit itself: {SUB}"
    )
    # A test failing at both commits (a module this environment lacks) is left out, not a
    # rejection, and the checks deselect it; one failing only at the commit still rejects.
    lacks = "tests/test_ops.py::test_needs_dbm"
    broken_before = verify.Ran(1, "", {**RUN.outcomes, lacks: "failed"})
    broken_after = verify.Ran(1, "", {**fixed.outcomes, lacks: "failed"})
    kept = verify.verify(
        source, fix, runs(broken_before, broken_before, broken_after, broken_after), tmp_path / "f"
    )
    assert (kept.reason, kept.fail_to_pass, kept.pass_to_pass, kept.broken) == (
        "",
        (SUB,),
        (ADD,),
        (lacks,),
    )
    hidden = write.document(source, kept, tmp_path / "cases")["checks"][1]["run"]
    assert f" --deselect {lacks} tests/test_ops.py" in hidden
    assert (
        write.document(source, found, tmp_path / "cases")["checks"][1]["run"].count("--deselect")
        == 0
    )  # the control: nothing deselected where nothing failed at both
    assert (
        verify.verify(
            source, fix, runs(RUN, RUN, broken_after, broken_after), tmp_path / "g"
        ).reason
        == f"a test fails at the commit itself: {lacks}"
    )
    assert verify.verify(source, fix, runs(fixed, fixed, fixed, fixed), tmp_path / "d").reason == (
        "no test fails before the change (nothing to fix)"
    )
    output = "ERROR tests/test_ops.py\nE   ModuleNotFoundError: No module named 'x'\n"
    broken = verify.Ran(2, output, {"tests/test_ops.py": "failed"})
    said = verify.verify(source, fix, runs(RUN, RUN, broken), tmp_path / "e").reason
    assert said == (
        "tests cannot run (a collection error: ModuleNotFoundError: No module named 'x') "
        "at the commit"
    )
    # pytest stopping before any test (no report): its last line says why
    stopped = verify.Ran(
        1,
        "Traceback (most recent call last):\n  ...\nFailed: [pytest] section in setup.cfg files "
        "is no longer supported, change to [tool:pytest] instead.\n",
        {},
        "pytest wrote no report",
    )
    said = verify.verify(source, fix, runs(RUN, RUN, stopped), tmp_path / "h").reason
    assert said == (
        "tests cannot run (no result: pytest wrote no report: Failed: [pytest] section in "
        "setup.cfg files is no longer supported, change to [tool:pytest] instead.) at the commit"
    )
    assert git(path, "status", "--porcelain") == ""


def test_the_prompt_is_the_message_without_what_gives_the_solution_away(
    repo: tuple[Path, dict[str, str]], source: Source, tmp_path: Path
) -> None:
    _, shas = repo
    fix = history.read(source, shas["fix"])
    assert fix is not None
    verdict = verify.Verdict(
        fix, "", ("tests/test_ops.py::test_sub_gives_the_difference",), (), verify.PYTEST
    )
    text = write.prompt(verdict)
    assert text.startswith("Fix sub returning the sum\n\nsub(5, 3) gave 8. the tests shows it.")
    assert "Signed-off-by" not in text
    assert "test_sub_gives_the_difference" not in text
    folder = write.write(source, verdict, tmp_path / "cases")
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "hidden/tests/test_ops.py",
        "prompt.md",
        "solution/calc/ops.py",
        "test.yaml",
    ]
    case = load_case(folder / "test.yaml", tmp_path / "rubrics")  # the packaged one
    assert case.source.commit == fix.parent
    assert case.rubric.name == "mined-change"
    assert [c.name for c in case.checks] == ["fail-to-pass", "hidden-tests"]
    assert case.category == "bug-fixing"


def test_an_issue_the_message_names_is_added_from_the_issues_folder(
    repo: tuple[Path, dict[str, str]],
    source: Source,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, shas = repo
    fix = history.read(source, shas["fix"])
    assert fix is not None
    named = dataclasses.replace(fix, body=fix.body + "\nFixes: #7")  # one more trailer
    verdict = verify.Verdict(named, "", ("tests/test_ops.py::test_sub",), (), verify.PYTEST)
    issues = tmp_path / "issues"
    issues.mkdir()
    (issues / "7.json").write_text(json.dumps({"title": "sub adds", "body": "sub(5, 3) is 8"}))
    (issues / "8.md").write_text("not named")
    text = write.prompt(verdict, issues)
    assert "The issue it refers to (#7):\n\nsub adds\n\nsub(5, 3) is 8" in text
    assert "Fixes: #7" not in text  # the trailers are gone
    assert "Signed-off-by" not in text
    noted = dataclasses.replace(fix, body="Note: keep the order.\n\nSigned-off-by: D <d@e.f>")
    kept = write.prompt(dataclasses.replace(verdict, commit=noted))
    assert "Note: keep the order." in kept  # a line of the message is no trailer
    assert "Signed-off-by" not in kept
    assert "not named" not in text
    assert write.prompt(verdict) == write.prompt(verdict, tmp_path / "none")  # no folder: none
    said = _said(capsys, str(path), "--issues", str(tmp_path / "nope"), "--out", str(tmp_path))
    assert "--issues" in said
    assert "no such folder" in said


def test_a_model_rewrites_the_prompt_through_the_gateway_priced_logged_and_bounded(
    repo: tuple[Path, dict[str, str]],
    source: Source,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--prompt-from-model under --simulated: the oracle (by rule, said SIMULATED) answers the
    forced write_task call through the gateway; the call is logged with its price in the case,
    no test name leaks, and once the budget is spent no further call starts. The gateway prices
    and logs a call just after its client has the answer: here always late (as on a loaded
    machine, where this test once failed), so the rewriter must wait for it."""
    from pytest_scylla.operations.mining.prompt import Rewriter
    from pytest_scylla.run.gateway.server import Gateway

    account = Gateway.account

    def late(gateway: Gateway, *args: Any) -> float:
        time.sleep(0.3)
        return account(gateway, *args)

    monkeypatch.setattr(Gateway, "account", late)

    path, shas = repo
    fix = history.read(source, shas["fix"])
    assert fix is not None
    verdict = verify.Verdict(
        fix, "", ("tests/test_ops.py::test_sub_gives_the_difference",), (), verify.PYTEST
    )
    folder = write.write(source, verdict, tmp_path / "cases")
    rewriter = Rewriter("claude-haiku-4-5", simulated=True, budget=1e-9)
    try:
        task, said = rewriter(verdict, write.message(verdict), folder / "prompt_calls.jsonl")
        again, refused = rewriter(verdict, write.message(verdict), folder / "again.jsonl")
    finally:
        rewriter.close()
    assert task.startswith("Task: Fix sub returning the sum\n\nDetails:\nsub(5, 3) gave 8.")
    assert said["simulated"] is True
    assert said["calls"] == 1
    assert said["cost_usd"] > 0
    (call,) = [
        json.loads(line) for line in (folder / "prompt_calls.jsonl").read_text().splitlines()
    ]
    assert call["model"] == "claude-haiku-4-5"
    assert call["cost_usd"] == said["cost_usd"]
    assert (again, refused) == ("", {"error": "the --prompt-budget is spent"})
    write.retell(folder, verdict, task, said)
    text = (folder / "prompt.md").read_text()
    assert text.startswith("Task: Fix sub returning the sum")
    assert "test_sub_gives_the_difference" not in text
    described = load_case(folder / "test.yaml", tmp_path / "rubrics").description
    assert "by the oracle, by rule (SIMULATED: no model was asked)" in described
    write.retell(folder, verdict, "", {"model": "m", "error": "APIError: boom"})
    assert "by the oracle" in load_case(folder / "test.yaml", tmp_path).description  # kept
    # without a key and without --simulated: one line saying what to set
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    out = str(tmp_path / "out")
    said_line = _said(capsys, str(path), "--prompt-from-model", "claude-haiku-4-5", "--out", out)
    assert "ANTHROPIC_API_KEY" in said_line
    assert "--simulated" in _said(capsys, str(path), "--simulated", "--out", out)
    budget = _said(
        capsys, str(path), "--prompt-from-model", "m", "--simulated", "--prompt-budget", "0"
    )
    assert "--prompt-budget=0.0: expected dollars > 0" in budget


def test_a_link_out_of_the_tree_rejects_the_commit_before_anything_runs(tmp_path: Path) -> None:
    """A commit whose tree holds a link to an absolute path (or out of the tree) is never laid
    out: every link of the tree is checked before anything is written (`mine_tree`), and the
    candidate is rejected saying why, with no test run."""
    from ...support.mining_repo import commit as make_commit

    path = tmp_path / "linked"
    build(path)
    (path / "calc" / "evil").symlink_to("/etc/passwd")
    sha = make_commit(
        path,
        "Add neg2",
        {
            "calc/neg2.py": "def neg2(a):\n    return -a\n",
            "tests/test_neg2.py": "def test_n():\n    pass\n",
        },
    )
    with history.opened(path) as source:
        found = history.read(source, sha)
        assert found is not None
        assert history.rejection(found, history.Limits()) == ""

        def never(command: str, tree: Path) -> tuple[int | None, str]:
            raise AssertionError("nothing may run")

        said = verify.verify(source, found, never, tmp_path / "private").reason
    assert said == "its tree cannot be laid out safely ('calc/evil' is a link to an absolute path)"
    assert not (tmp_path / "private" / "after" / "calc" / "evil").exists()


def test_a_written_case_that_does_not_validate_is_removed_and_counted(
    repo: tuple[Path, dict[str, str]], source: Source, tmp_path: Path
) -> None:
    """Each written case is loaded as `scylla validate` loads it before its oracle check: one
    that fails (here: a project rubric of the same name that is broken) is removed, with the
    reason counted in the table."""
    from pytest_scylla.cli import mine as mine_cli
    from pytest_scylla.operations.mining import mine

    _, shas = repo
    fix = history.read(source, shas["fix"])
    assert fix is not None
    verdict = verify.Verdict(fix, "", ("tests/test_ops.py::test_sub",), (), verify.PYTEST)
    out = tmp_path / "project" / "cases"
    found = mine.Mined()
    good = write.write(source, verdict, out)
    found.written[good.name] = good
    mine_cli._validate(found, out)
    assert list(found.written) == [good.name]  # the positive control: it validates
    (tmp_path / "project" / "rubrics").mkdir()
    (tmp_path / "project" / "rubrics" / "mined-change.yaml").write_text("name: [broken\n")
    mine_cli._validate(found, out)
    assert found.written == {}
    assert not good.exists()
    (reason,) = found.rejected
    assert reason == "invalid case"


def test_a_case_already_mined_is_kept_as_it_is_and_not_run_again(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Mining again into the same --out: a candidate whose case is there (perhaps edited by
    hand since) is neither verified again nor rewritten; the table counts it."""
    from pytest_scylla.operations.mining import mine
    from pytest_scylla.run.sandbox.base import Sandbox

    path, shas = repo
    out = tmp_path / "cases"
    for kind in ("fix", "feature", "flaky", "missing"):  # every candidate of the history
        (out / write.name_of(path, shas[kind])).mkdir(parents=True)
        (out / write.name_of(path, shas[kind]) / "prompt.md").write_text("edited by hand\n")
    said: list[str] = []

    class Refuses(Sandbox):
        def wrap(self, *args: object, **kwargs: object) -> list[str]:
            raise AssertionError("nothing may run")

    found = mine.mine(path, mine.Options(), out, Refuses(), say=said.append)
    assert (found.candidates, found.existing, found.written) == (4, 4, {})
    assert all(p.read_text() == "edited by hand\n" for p in out.glob("*/prompt.md"))
    assert f"{shas['fix'][:12]} already in {out}: kept as it is" in said
    assert "already in --out (kept as they are, not run again): 4" in mine.table(found)
