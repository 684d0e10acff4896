"""The oracle on large files: the Read views that show a file over Claude Code's cap whole, the
shell writes cut to what one argument holds, and the oracle's own failure (a refused call)
answered as an API error naming the call, read back from a run's record."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from pytest_scylla.run.gateway.oracle import edit as oracle_edit
from pytest_scylla.run.gateway.oracle import failure as oracle_failure
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.oracle import read as oracle_read
from pytest_scylla.run.gateway.oracle import shell as oracle_shell


def _request(tools: list[str]) -> dict[str, Any]:
    return {"tools": [{"name": t} for t in tools], "messages": [{"role": "user", "content": "go"}]}


def _answered(request: dict[str, Any], reply: oracle.Reply, error: str | None = None) -> None:
    """The CLI's turn: every call of `reply` answered (refused with `error`, if given)."""
    results = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": error or "ok"}
        | ({"is_error": True} if error else {})
        for b in reply.blocks
    ]
    request["messages"] += [
        {"role": "assistant", "content": reply.blocks},
        {"role": "user", "content": results},
    ]


def test_a_small_file_is_one_plain_read_a_large_one_pages_that_cover_it() -> None:
    assert oracle_read.pages("x = 1\n" * 100) == ()
    text = "".join(f"line {i} " + "y" * 80 + "\n" for i in range(5000))
    views = oracle_read.pages(text)
    assert views is not None
    assert len(views) > 1
    assert views[0][0] == 1
    assert all(o + n == views[k + 1][0] for k, (o, n) in enumerate(views[:-1]))  # no gap
    assert views[-1][0] + views[-1][1] - 1 == 5000
    lines = text.splitlines(keepends=True)
    for offset, limit in views:
        page = "".join(lines[offset - 1 : offset - 1 + limit])
        assert len(json.dumps(page).encode()) <= oracle_read.PAGE_BYTES
        assert limit <= oracle_read.PAGE_LINES
    assert oracle_read.pages("short\n" + "z" * 200_000 + "\n") is None  # no view shows it


def _workspace(tmp_path: Path, files: dict[str, tuple[str, str]]) -> oracle.Script:
    """A script for files {name: (in the workspace, in the solution)}."""
    solution, ws = tmp_path / "solution", tmp_path / "ws"
    solution.mkdir()
    ws.mkdir()
    for name, (old, new) in files.items():
        (ws / name).write_text(old)
        (solution / name).write_text(new)
    return oracle.Script.for_case("solution", solution, ws)


def _run(script: oracle.Script, tools: list[str]) -> list[list[tuple[str, dict[str, Any]]]]:
    """The oracle's turns, every call accepted, until its summary."""
    request, turns = _request(tools), []
    while True:
        reply = oracle.answer(script, request)
        if reply.stop_reason != "tool_use":
            assert reply.blocks[0]["text"].startswith(oracle_failure.DONE)
            return turns
        turns.append([(b["name"], b["input"]) for b in reply.blocks])
        _answered(request, reply)


def test_edits_turn_a_file_into_the_solution_each_old_string_unique_in_turn() -> None:
    old = "".join(f"def f{i}():\n    return 0\n\n" for i in range(3000))
    lines = old.splitlines(keepends=True)
    lines[4] = "    return 7\n"  # near the top: `return 0` alone occurs 3000 times
    lines.insert(6000, "# added\n")
    del lines[8000:8003]
    new = "".join(lines) + "TAIL = 1\n"
    edits = oracle_edit.plan(old, new)
    assert edits is not None
    assert len(edits.edits) == 4
    text = old
    for before, after in edits.edits:
        assert text.count(before) == 1
        assert len(before) < 1000
        text = text.replace(before, after)
    assert text == new
    assert all(offset >= 1 for offset, _ in edits.views)
    assert oracle_edit.plan(old, old.replace("\n", "\r\n")) is None
    same = "x = 1\n" * 30_000  # a change in one of many identical blocks: no small edit
    assert oracle_edit.plan(same, "x = 1\n" * 15_000 + "y = 2\n" + "x = 1\n" * 15_000) is None


def test_claude_code_edits_a_large_file_around_its_changes(tmp_path: Path) -> None:
    big = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(6000))
    script = _workspace(
        tmp_path,
        {"big.py": (big, big.replace("return 7\n", "return 8\n")), "small.py": ("A\n", "B\n")},
    )
    reads, writes = _run(script, ["Read", "Write", "Edit", "Bash"])
    ws = str(tmp_path / "ws")
    assert reads == [
        ("Read", {"file_path": f"{ws}/small.py"}),
        ("Read", {"file_path": f"{ws}/big.py", "offset": 20, "limit": 2000}),
    ]
    assert [name for name, _ in writes] == ["Edit", "Write"]
    assert writes[0][1]["old_string"] == (
        "    return 6\n\ndef f7():\n    return 7\n\ndef f8():\n    return 8\n"
    )


def test_without_edits_a_large_file_is_read_in_pages_and_written(tmp_path: Path) -> None:
    same = "x = 1\n" * 30_000
    script = _workspace(tmp_path, {"a.py": (same, same.replace("x", "y", 1))})
    reads, writes = _run(script, ["Read", "Write", "Edit"])
    assert len(reads) > 2
    assert all("offset" in args for _, args in reads)
    assert [name for name, _ in writes] == ["Write"]


def test_a_file_too_large_to_read_and_write_is_the_oracles_failure(tmp_path: Path) -> None:
    same = "x = 1\n" * 80_000
    script = _workspace(tmp_path, {"a.py": (same, same.replace("x", "y", 1))})
    reply = oracle.answer(script, _request(["Read", "Write", "Edit"]))
    assert reply.error is not None
    assert reply.error["message"].startswith(oracle_failure.MARK)
    assert "a.py would take 960 kB of the conversation" in reply.error["message"]
    assert _run(script, ["Bash"])  # with the shell alone, it writes in pieces


def test_a_file_no_view_can_show_is_written_with_the_shell(tmp_path: Path) -> None:
    solution, ws = tmp_path / "solution", tmp_path / "ws"
    solution.mkdir()
    ws.mkdir()
    (ws / "data.json").write_text('{"k": "' + "v" * 200_000 + '"}\n')
    (solution / "data.json").write_text('{"k": "' + "w" * 200_000 + '"}\n')
    script = oracle.Script.for_case("solution", solution, ws)
    steps = oracle.plan(script, {"Read", "Write", "Bash"})
    assert {name for turn in steps for name, _ in turn} == {"Bash"}


def test_shell_writes_fit_one_argument_and_rebuild_the_file(tmp_path: Path) -> None:
    """Each command under the argument limit; run in order, they write the exact text."""
    text = "".join(f"x{i} = 'it''s \\\\ é {i}'\n" for i in range(20_000)) + "no newline at end"
    target = tmp_path / "deep" / "out.py"
    turns = oracle_shell.write_turns({"Bash"}, [(str(target), text)])
    assert turns is not None
    assert len(turns) > 1
    for turn in turns:
        ((name, args),) = turn
        assert name == "Bash"
        assert len(args["command"].encode()) < 131_072
        done = subprocess.run(["bash", "-c", args["command"]], check=True, capture_output=True)
        assert done.stdout.decode() == f"{oracle_shell.WROTE} {target}\n"
    assert target.read_text(encoding="utf-8") == text
    assert oracle_shell.pieces("") == ("",)
    assert oracle_shell.write_turns(set(), [(str(target), text)]) is None
    assert shlex.split(oracle_shell.command("/a b/c", "hi", True))[0] == "mkdir"


def test_a_refused_call_ends_with_an_error_saying_the_oracle_failed(tmp_path: Path) -> None:
    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "a.py").write_text("A = 1\n")
    script = oracle.Script.for_case("solution", tmp_path / "solution", tmp_path)
    request = _request(["Write"])
    write = oracle.answer(script, request)
    _answered(request, write, "<tool_use_error>File has not been read yet.</tool_use_error>")
    reply = oracle.answer(script, request)
    assert reply.status == oracle_failure.STATUS
    assert reply.error is not None
    said = reply.error["message"]
    assert said.startswith(oracle_failure.MARK)
    assert f"Write {tmp_path / 'a.py'}: <tool_use_error>File has not been read yet." in said
    codex = {"input": [{"type": "function_call_output", "output": "exit 1: E2BIG"}]}
    assert oracle_failure.message(codex).endswith("exit 1: E2BIG")


def test_a_record_says_whether_the_oracle_applied_the_solution() -> None:
    solved = {"oracle_script": {"mode": "solution"}, "final_message": "Done. I wrote a.py."}
    assert oracle_failure.applied(solved) is True
    reason = f"upstream failure: 1 call(s) failed (… {oracle_failure.MARK} (…): Write a.py: …)"
    failed = solved | {"outcome": "infra_error", "reason": reason}
    assert oracle_failure.applied(failed) is False
    assert (oracle_failure.failure(failed) or "").startswith(oracle_failure.MARK)
    assert oracle_failure.failure(solved) is None
    assert oracle_failure.applied(solved | {"final_message": "No file-writing tool"}) is False
    assert oracle_failure.applied({"oracle_script": {"mode": "noop"}}) is None
    assert oracle_failure.applied({"oracle": None}) is None


def test_an_unconfirmed_shell_write_of_opencode_is_the_oracles_failure() -> None:
    """opencode's shell results carry no exit code: the writer's own confirmation decides."""
    write = oracle_shell.command("/w/a.py", "A = 1\n", True)
    call = {"id": "c1", "function": {"name": "bash", "arguments": json.dumps({"command": write})}}
    asked: dict[str, Any] = {"messages": [{"role": "assistant", "tool_calls": [call]}]}
    refused = {"role": "tool", "tool_call_id": "c1", "content": "E2BIG: argument list too long"}
    done = {"role": "tool", "tool_call_id": "c1", "content": f"{oracle_shell.WROTE} /w/a.py\n"}
    assert oracle_failure.unconfirmed({"messages": [*asked["messages"], refused]})
    assert not oracle_failure.unconfirmed({"messages": [*asked["messages"], done]})
    other = {"id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    plain = [{"role": "assistant", "tool_calls": [other]}, refused]
    assert not oracle_failure.unconfirmed({"messages": plain})  # not a write of the oracle's
    assert not oracle_failure.unconfirmed(_request(["Write"]))
