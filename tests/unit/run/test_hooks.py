"""run.json's `hooks`: the hook events of Claude Code's stream (as 2.1.197 writes them with
--include-hook-events, copied from a measured run) matched to the hooks the workspace declared;
a failed hook (command not found, a non-zero exit) recorded with its error's last line and a
warning; exit code 2 (a hook blocking on purpose) not a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_scylla.run import hooks
from pytest_scylla.run.agents import claude_code

SETTINGS = {
    "permissions": {"deny": ["Bash(git push:*)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "prettier --write ."}],
            },
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "ruff check ."}]},
        ],
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo session started"}]}],
    },
}


def started(hook_id: str, name: str) -> dict[str, Any]:
    event = name.partition(":")[0]
    return {
        "type": "system",
        "subtype": "hook_started",
        "hook_id": hook_id,
        "hook_name": name,
        "hook_event": event,
        "uuid": "u",
        "session_id": "s",
    }


def response(hook_id: str, name: str, code: int, stderr: str = "", out: str = "") -> dict[str, Any]:
    return {
        **started(hook_id, name),
        "subtype": "hook_response",
        "output": stderr + out,
        "stdout": out,
        "stderr": stderr,
        "exit_code": code,
        "outcome": "success" if code == 0 else "error",
    }


# a measured run's stream (ids shortened): SessionStart before init, two hooks after a Write
REAL = [
    started("a1", "SessionStart:startup"),
    response("a1", "SessionStart:startup", 0, out="session started\n"),
    {"type": "system", "subtype": "init", "model": "claude-real", "claude_code_version": "2.1.197"},
    started("b1", "PostToolUse:Write"),
    response("b1", "PostToolUse:Write", 127, stderr="/bin/sh: 1: prettier: not found\n"),
    {"type": "result", "subtype": "success", "result": "done", "num_turns": 2},
]


def workspace(tmp_path: Path, settings: dict[str, Any] = SETTINGS) -> Path:
    (tmp_path / ".claude").mkdir(exist_ok=True)
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    return tmp_path


def transcript(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_the_cli_is_asked_for_hook_events() -> None:
    argv = claude_code.command("claude", "m", 3, ())
    assert "--include-hook-events" in argv
    assert argv.index("--include-hook-events") > argv.index("stream-json")


def test_declared_hooks_are_read_from_the_settings(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.local.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make"}]}]}})
    )
    assert hooks.declared(workspace(tmp_path)) == [
        {"event": "PostToolUse", "matcher": "Edit|Write", "command": "prettier --write ."},
        {"event": "PostToolUse", "matcher": "Bash", "command": "ruff check ."},
        {"event": "SessionStart", "matcher": "", "command": "echo session started"},
        {"event": "Stop", "matcher": "", "command": "make"},
    ]


def test_unreadable_settings_declare_nothing(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    (tmp_path / ".claude" / "settings.local.json").write_text('["hooks"]')
    assert hooks.declared(tmp_path) == []
    assert hooks.declared(tmp_path / "missing") == []


def test_the_parser_keeps_hook_events_and_the_rest_as_before(tmp_path: Path) -> None:
    result = claude_code.parse(transcript(tmp_path, REAL))
    assert (result.final_message, result.init["model"]) == ("done", "claude-real")
    assert [e["subtype"] for e in result.hook_events] == ["hook_started", "hook_response"] * 2
    assert result.hook_events[-1]["error"] == "/bin/sh: 1: prettier: not found"
    assert "hook_events" not in result.to_json()  # cli_result stays as it was


def test_the_record_says_which_hook_ran_and_which_failed(tmp_path: Path) -> None:
    result = claude_code.parse(transcript(tmp_path, REAL))
    rec = hooks.record(hooks.declared(workspace(tmp_path)), result.hook_events)
    assert rec["source"] == "stream"
    session, post = rec["ran"]
    assert session["name"] == "SessionStart:startup"
    assert session["commands"] == ["echo session started"]
    assert (session["started"], session["finished"], session["failed"]) == (1, 1, 0)
    assert post["commands"] == ["prettier --write ."]  # the matcher Bash does not select Write
    assert post["matchers"] == ["Edit|Write"]
    assert (post["finished"], post["failed"], post["exit_codes"]) == (1, 1, [127])
    assert post["last_error"] == "/bin/sh: 1: prettier: not found"
    assert rec["warnings"] == [
        "hook PostToolUse:Write failed 1 of 1 times (`prettier --write .`): "
        "/bin/sh: 1: prettier: not found"
    ]
    json.dumps(rec)  # JSON-native


def test_control_a_hook_that_succeeds_warns_of_nothing(tmp_path: Path) -> None:
    events = [started("b1", "PostToolUse:Edit"), response("b1", "PostToolUse:Edit", 0)]
    result = claude_code.parse(transcript(tmp_path, events))
    rec = hooks.record(hooks.declared(workspace(tmp_path)), result.hook_events)
    assert rec["ran"][0]["failed"] == 0
    assert rec["warnings"] == []


def test_exit_code_two_blocks_on_purpose_and_is_not_a_failure(tmp_path: Path) -> None:
    events = [
        started("c1", "PostToolUse:Bash"),
        response("c1", "PostToolUse:Bash", 2, stderr="E501 line too long\n"),
    ]
    result = claude_code.parse(transcript(tmp_path, events))
    rec = hooks.record(hooks.declared(workspace(tmp_path)), result.hook_events)
    (entry,) = rec["ran"]
    assert (entry["blocked"], entry["failed"], entry["commands"]) == (1, 0, ["ruff check ."])
    assert rec["warnings"] == []


def test_a_hook_that_never_answered_is_started_only(tmp_path: Path) -> None:
    result = claude_code.parse(transcript(tmp_path, [started("d1", "SessionStart:startup")]))
    (entry,) = hooks.record(hooks.declared(workspace(tmp_path)), result.hook_events)["ran"]
    assert (entry["started"], entry["finished"], entry["failed"]) == (1, 0, 0)


def test_matchers_as_the_cli_reads_them() -> None:
    assert hooks.matches("", "Write")
    assert hooks.matches("*", "anything")
    assert hooks.matches("Edit|Write", "Write")
    assert not hooks.matches("Edit|Write", "WriteMany")  # a word list is matched word by word
    assert hooks.matches("mcp__.*", "mcp__notes__add")  # else a regular expression
    assert not hooks.matches("(", "Write")  # a broken expression selects nothing
