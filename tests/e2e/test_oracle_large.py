"""The oracle applies a reference solution to a file larger than Claude Code's Read shows in one
view (more-itertools' more.py: 5,564 lines, 172 kB, ~44,600 tokens as the oracle counts them,
over the CLI's 25,000-token cap), through the real CLI; and a failure of the oracle itself (a
call of its own the CLI refused) ends the run saying the oracle failed and why, never that the
case's reference solution fails its checks."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_scylla.cli.check_case import _verdict
from pytest_scylla.run.gateway.oracle import failure as oracle_failure
from pytest_scylla.run.gateway.oracle import read as oracle_read
from pytest_scylla.run.gateway.oracle import shell as oracle_shell

from ..conftest import FIXTURES
from .test_other_clis import _needs

BUNDLE = FIXTURES / "mining" / "more-itertools.bundle"
COMMIT = "2fe1b2eeb9d75f994113fe3ac76d14b6bcd6fb10"
FIXED = "    return max(enumerate(iterable), key=itemgetter(1))[0]\n"  # argmax, near the end
BROKEN = FIXED.replace("max(", "min(")  # argmin's line: the fix's line is not unique there


def _big_case(root: Path, clone: Path) -> None:
    """Case `big`: more_itertools with argmax broken (returns argmin); its solution is the
    pinned more.py, one function changed."""
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", COMMIT], check=True)
    case = root / "cases" / "big"
    shutil.copytree(clone / "more_itertools", case / "source" / "more_itertools")
    (case / "solution" / "more_itertools").mkdir(parents=True)
    shutil.copy(clone / "more_itertools" / "more.py", case / "solution" / "more_itertools")
    module = case / "source" / "more_itertools" / "more.py"
    text = module.read_text(encoding="utf-8")
    assert text.count(FIXED) == 1
    module.write_text(text.replace(FIXED, BROKEN), encoding="utf-8")
    (case / "prompt.md").write_text("Make argmax in more_itertools/more.py return the maximum.\n")
    (case / "test.yaml").write_text(
        "id: big\nname: A fix deep in a large module\ncategory: bug-fixing\n"
        "source:\n  path: source\nprompt: prompt.md\nrubric: basic\nsolution: solution\n"
        "checks:\n  - name: runs\n"
        '    run: python -c "from more_itertools import argmax; print(argmax([0, 3, 1]))"\n'
        '    expect_stdout: {exact: "1\\n"}\n'
    )


def _calls(run: Path) -> list[tuple[str, dict[str, object], object]]:
    """(tool, input, the CLI's result: its text if refused, else None) of each call."""
    uses, refused = {}, {}
    for line in (run / "transcript.jsonl").read_text().splitlines():
        event = json.loads(line)
        content = (event.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                uses[block["id"]] = (block["name"], block["input"])
            elif block.get("type") == "tool_result" and block.get("is_error"):
                refused[block["tool_use_id"]] = str(block.get("content"))
    return [(name, args, refused.get(i)) for i, (name, args) in uses.items()]


def test_the_oracle_edits_a_file_over_the_clis_read_cap(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], tmp_path: Path
) -> None:
    """The large-file case passes under the oracle with Claude Code: the lines around the
    change read (a Read with offset/limit, under the cap), then one Edit whose old_string is
    unique in the file (the fixed line alone is argmin's too); the diff is the one-line fix and
    the record says the oracle applied the solution."""
    _big_case(mini, tmp_path / "more-itertools")
    args = ["cases", "-k", "big and T0-01", "-p", "no:xdist", *oracle]
    pytester.runpytest(*args, f"--scylla-out={mini / 'out'}").assert_outcomes(passed=1)
    run = mini / "out" / "runs" / "big-T0-01-r1"
    rec = json.loads((run / "run.json").read_text())
    assert rec["outcome"] == "pass"
    assert oracle_failure.applied(rec) is True
    (read, view, refused), (edit, change, edit_refused) = _calls(run)
    assert (read, refused, edit, edit_refused) == ("Read", None, "Edit", None)
    assert set(view) == {"file_path", "offset", "limit"}
    assert BROKEN in str(change["old_string"])
    changed = [
        line
        for line in (run / "diff.patch").read_text().splitlines()
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changed == ["-" + BROKEN.rstrip("\n"), "+" + FIXED.rstrip("\n")]


def test_a_call_the_cli_refuses_is_the_oracles_failure(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control, in this process with the old plan (one plain Read of more.py): the CLI
    shows a PARTIAL view and refuses the Write ("File has not been read yet"), and the run ends
    as the oracle's failure (infra_error, its reason naming the refused call and the CLI's
    words), which `scylla check-case` reports as the oracle's, not as the case's."""
    _big_case(mini, tmp_path / "more-itertools")
    monkeypatch.setattr(oracle_read, "pages", lambda text: ())  # the old plan: one plain Read
    args = ["cases", "-k", "big and T0-01", "-p", "no:xdist", *oracle]
    pytester.runpytest(*args, f"--scylla-out={mini / 'out'}")
    run = mini / "out" / "runs" / "big-T0-01-r1"
    rec = json.loads((run / "run.json").read_text())
    read, write = _calls(run)
    assert read[0] == "Read"
    assert "offset" not in read[1]
    assert read[2] is None
    assert write[0] == "Write"
    assert "File has not been read yet" in str(write[2])
    assert rec["outcome"] == "infra_error"
    assert oracle_failure.MARK in rec["reason"]
    assert "File has not been read yet" in rec["reason"]
    assert oracle_failure.applied(rec) is False
    verdict = _verdict("big", rec, "T0-01")
    assert verdict.startswith(f"FAIL big: {oracle_failure.MARK}"), verdict
    assert "the reference solution fails" not in verdict


@pytest.mark.parametrize(
    "agent",
    [
        "codex",
        pytest.param("gemini-cli", marks=pytest.mark.slow),
        pytest.param("opencode", marks=pytest.mark.slow),
    ],
)
def test_the_other_clis_write_the_large_file(
    agent: str, mini: Path, pytester: pytest.Pytester, oracle: list[str], tmp_path: Path
) -> None:
    """Codex and opencode write through their shell, in pieces one argument holds (the whole
    172 kB file in one command failed with E2BIG, "Argument list too long"); Gemini CLI's
    write_file takes it whole without a read. Each passes and the oracle applied the solution
    (Codex ~6 s, Gemini CLI ~17 s, opencode ~30 s)."""
    _needs(agent)
    _big_case(mini, tmp_path / "more-itertools")
    args = ["cases", "-k", "big and T0-01", "-p", "no:xdist", *oracle, f"--scylla-agent={agent}"]
    pytester.runpytest(*args, f"--scylla-out={mini / 'out'}").assert_outcomes(passed=1)
    rec = json.loads((mini / "out" / "runs" / "big-T0-01-r1" / "run.json").read_text())
    assert oracle_failure.applied(rec) is True, rec["final_message"]


@pytest.mark.slow  # opencode starts slowly (~20 s)
def test_a_shell_write_opencode_could_not_run_is_the_oracles_failure(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With pieces too large for one argument (the old whole-file command), opencode's shell
    answers 'E2BIG: argument list too long' with no exit code; the writer's confirmation is
    missing, and the run ends as the oracle's failure naming it (before: the oracle said it
    wrote the file and the case's check failed)."""
    _needs("opencode")
    _big_case(mini, tmp_path / "more-itertools")
    monkeypatch.setattr(oracle_shell, "PIECE_BYTES", 10_000_000)
    oracle_shell.pieces.cache_clear()  # pieces cut before, by another test, are cached
    args = ["cases", "-k", "big and T0-01", "-p", "no:xdist", *oracle, "--scylla-agent=opencode"]
    pytester.runpytest(*args, f"--scylla-out={mini / 'out'}")
    oracle_shell.pieces.cache_clear()
    rec = json.loads((mini / "out" / "runs" / "big-T0-01-r1" / "run.json").read_text())
    assert rec["outcome"] == "infra_error"
    assert oracle_failure.MARK in rec["reason"]
    assert "E2BIG" in rec["reason"]
    assert oracle_failure.applied(rec) is False
