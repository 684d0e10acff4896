"""Which hooks Claude Code ran in a run and which of them failed: run.json's `hooks`.

With `--include-hook-events` the CLI (2.1.197, measured) writes a `system` event
`hook_started` when it starts a hook and `hook_response` when the hook ends, each with the
hook's id, `hook_event` ("PostToolUse"), `hook_name` (the event and what it matched,
"PostToolUse:Write", "SessionStart:startup"), and in the response its `exit_code`, `outcome`
(success | error | cancelled), stdout and stderr. SessionStart's come before `init`, even
without the flag. The events name no command: the commands in the record are the declared ones
(`declared`, the workspace's .claude/settings.json and settings.local.json as the harness wrote
them, read before the agent starts), matched to the events by event and matcher.

The record is informational only. The stream is untrusted (under docker the agent's processes
can write into the CLI's pipe; a hook's own output is whatever its command printed), so the
record is bounded (`MAX_*`), its strings cut, its `source` says it comes from the stream, and
nothing in it is executed or decides an outcome: a failed hook is a warning beside the score,
never a changed verdict. An event naming no declared hook (a forged one, or a hook of a skill's
or a sub-agent's front matter) is only counted, by name, in `undeclared`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
MAX_SETTINGS = 1 << 20  # bytes of a settings file read
MAX_EVENTS = 2000  # hook events kept from a stream (the rest counted as `cut`)
MAX_DECLARED = 50  # declared hooks kept
MAX_ENTRIES = 50  # hook names recorded per run (the rest counted as undeclared)
MAX_UNDECLARED = 20  # names of undeclared hooks counted
MAX_CODES = 8  # distinct exit codes kept per hook
MAX_TEXT = 200  # characters of a name, a command or an error line
BLOCKED = 2  # the exit code by which a hook blocks the agent on purpose: not a failure
SUBTYPES = ("hook_started", "hook_response")


class Declared(TypedDict):
    """One hook command of the settings: its event, its matcher ("" for every one), command."""

    event: str
    matcher: str
    command: str


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    """A string of the stream, printable and cut to `limit` characters."""
    text = "".join(c if c.isprintable() else " " for c in str(value if value is not None else ""))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _last_line(*texts: Any) -> str:
    """The last non-empty line of the first text that has one (a hook's stderr, else stdout)."""
    for text in texts:
        lines = [line.strip() for line in str(text or "")[-4096:].splitlines() if line.strip()]
        if lines:
            return _text(lines[-1])
    return ""


def keep(event: dict[str, Any], kept: list[dict[str, Any]]) -> bool:
    """Keep a hook event of the stream in `kept`, reduced to bounded fields (the first
    `MAX_EVENTS`; then one `cut` entry counts the rest); True if it was one."""
    if event.get("type") != "system" or event.get("subtype") not in SUBTYPES:
        return False
    if len(kept) < MAX_EVENTS:
        kept.append(_reduced(event))
    elif len(kept) == MAX_EVENTS:
        kept.append({"subtype": "cut", "count": 1})
    else:
        kept[-1]["count"] += 1
    return True


def _reduced(event: dict[str, Any]) -> dict[str, Any]:
    code = event.get("exit_code")
    return {
        "subtype": event["subtype"],
        "id": _text(event.get("hook_id"), 80),
        "event": _text(event.get("hook_event"), 60),
        "name": _text(event.get("hook_name")),
        "exit_code": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "outcome": _text(event["outcome"], 20) if event.get("outcome") is not None else None,
        "error": _last_line(event.get("stderr"), event.get("stdout")),
    }


def declared(workspace: Path) -> list[Declared]:
    """The hook commands the workspace's settings declare (before the agent runs)."""
    found: list[Declared] = []
    for rel in SETTINGS:
        path = workspace / rel
        if path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                data = json.loads(handle.read(MAX_SETTINGS))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        found += _commands(hooks if isinstance(hooks, dict) else {})
    return found[:MAX_DECLARED]


def _commands(hooks: dict[str, Any]) -> list[Declared]:
    found: list[Declared] = []
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher = _text(group.get("matcher") or "")
            for hook in group.get("hooks") or []:
                if isinstance(hook, dict):
                    what = hook.get("command") or hook.get("url") or hook.get("prompt") or "?"
                    found.append(
                        Declared(event=_text(event, 60), matcher=matcher, command=_text(what))
                    )
    return found


def matches(matcher: str, query: str) -> bool:
    """Whether a declared matcher selects `query` (what the event matched: a tool's name, a
    session's source): empty or `*` every one, a word list (`Edit|Write`) by equality, else a
    regular expression searched, as the CLI does."""
    if matcher in ("", "*"):
        return True
    if re.fullmatch(r"[\w|]+", matcher):
        return query in matcher.split("|")
    try:
        return re.search(matcher, query) is not None
    except re.error:
        return False


def record(decl: list[Declared], events: list[dict[str, Any]]) -> dict[str, Any]:
    """run.json's `hooks`: the declared hooks, and per hook name the stream reported for one of
    them its starts, ends, failures and last error; the undeclared names counted; a warning
    per hook that failed."""
    entries: dict[str, dict[str, Any]] = {}
    undeclared: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()  # (subtype, id): an event repeated counts once
    cut = 0
    for event in events:
        if event["subtype"] == "cut":
            cut = int(event["count"])
            continue
        if event["id"] and (event["subtype"], event["id"]) in seen:
            continue
        seen.add((event["subtype"], event["id"]))
        entry = _entry(entries, decl, event)
        if entry is None:
            name = event["name"] or event["event"]
            if name in undeclared or len(undeclared) < MAX_UNDECLARED:
                undeclared[name] = undeclared.get(name, 0) + 1
        else:
            _count(entry, event)
    ran = list(entries.values())
    return {
        "source": "stream",  # the CLI's stream-json: informational, never a verdict
        "declared": decl,
        "ran": ran,
        "undeclared": undeclared,
        "events": sum(e["subtype"] != "cut" for e in events),
        "cut": cut,
        "warnings": [_warning(e) for e in ran if e["failed"]],
    }


def _entry(
    entries: dict[str, dict[str, Any]], decl: list[Declared], event: dict[str, Any]
) -> dict[str, Any] | None:
    """The record of the declared hooks `event` names (None: it names none, or too many names
    are recorded already)."""
    name = event["name"] or event["event"]
    if name in entries:
        return entries[name]
    query = name.partition(":")[2] if name.startswith(f"{event['event']}:") else ""
    mine = [d for d in decl if d["event"] == event["event"] and matches(d["matcher"], query)]
    if not mine or len(entries) >= MAX_ENTRIES:
        return None
    entries[name] = {
        "event": event["event"],
        "name": name,
        "matchers": sorted({d["matcher"] for d in mine}),
        "commands": list(dict.fromkeys(d["command"] for d in mine)),
        "started": 0,
        "finished": 0,
        "failed": 0,
        "blocked": 0,  # exit code 2: the hook stopped the agent on purpose
        "exit_codes": [],
        "last_error": "",
    }
    return entries[name]


def _count(entry: dict[str, Any], event: dict[str, Any]) -> None:
    if event["subtype"] == "hook_started":
        entry["started"] += 1
        return
    entry["finished"] += 1
    code, outcome = event["exit_code"], event["outcome"]
    if (
        code is not None
        and code not in entry["exit_codes"]
        and len(entry["exit_codes"]) < MAX_CODES
    ):
        entry["exit_codes"].append(code)
    if code == BLOCKED:
        entry["blocked"] += 1
    elif outcome in ("error", "cancelled") or (outcome is None and code not in (None, 0)):
        entry["failed"] += 1
        entry["last_error"] = event["error"] or f"{outcome or 'exit'} {code}"


def _warning(entry: dict[str, Any]) -> str:
    """`hook PostToolUse:Write failed 2 of 2 times (`prettier --write .`): sh: prettier: not
    found`; several commands the name selects are named as "one of" them."""
    commands = ", ".join(f"`{c}`" for c in entry["commands"])
    which = f"one of {commands}" if len(entry["commands"]) > 1 else commands
    return (
        f"hook {entry['name']} failed {entry['failed']} of {entry['finished']} times "
        f"({which}): {entry['last_error']}"
    )
