"""Recording and replay of model calls: `--scylla-record-bodies` keeps each call's request, the
bytes its client received and what the gateway counted of it; `--scylla-replay=DIR` answers each
call of a run from the recording of the same run in DIR, so a paid experiment re-runs offline and
deterministically.

A request is matched to a recorded one of its route (the run's agent, or one judge) by its
content, ignoring what differs between two runs of the same thing: the run's private folder name
(`scylla-run-<random>`, in paths the CLI puts into prompts), the judge prompt's random data
fence, dates, client metadata (device and session ids) and the ids and timings a CLI's tool output
carries. The recording's next unused request is tried first, then any unused one (a CLI
may send side calls concurrently). A request matching none ends the run as `infra_error`:
"replay diverged at call k", with the first difference. A replayed answer has the recorded run's
folder name replaced by this run's, so the tool calls in it land in this run's workspace.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRIVATE = re.compile(r"scylla-run-[A-Za-z0-9_-]{8}")  # a path, or its slug (`_` as `-`)
FENCE = re.compile(r"run-data-[0-9a-f]{16}")  # the judge prompt's random data fence
# what a CLI's tool output holds that differs run to run (Codex: a random chunk id, the wall time)
TOOL_OUTPUT = re.compile(r"(?<=Chunk ID: )[0-9a-f]+|(?<=Wall time: )[\d.]+(?= seconds)")
DATES = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\w* ?,? "
    r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w* \d{1,2},? \d{4}\b"
)
# per-session identifiers: Claude Code's metadata, Codex's client metadata and cache key and
# the ids it gives each input item
VOLATILE_KEYS = frozenset({"metadata", "client_metadata", "prompt_cache_key"})
VOLATILE_ITEM_ID = re.compile(r"^(?:msg|fco|rs|fc)_[0-9a-f-]{20,}$")


def normalized(value: Any) -> Any:
    """The request as two runs of the same thing both send it."""
    if isinstance(value, dict):
        return {
            k: normalized(v)
            for k, v in value.items()
            if k not in VOLATILE_KEYS
            and not (k == "id" and isinstance(v, str) and VOLATILE_ITEM_ID.match(v))
        }
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, str):
        value = FENCE.sub("run-data-<fence>", PRIVATE.sub("scylla-run-<run>", value))
        return TOOL_OUTPUT.sub("<varies>", DATES.sub("<date>", value))
    return value


def difference(a: Any, b: Any, path: str = "$") -> str | None:
    """Where two JSON values first differ, with a snippet of each; None when they are equal."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} recorded, {type(b).__name__} now"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: {'missing now' if key in a else 'not recorded'}"
            found = difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path}: {len(a)} items recorded, {len(b)} now"
    if a == b:
        return None
    sa, sb = str(a), str(b)
    at = next(
        (i for i, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y), min(len(sa), len(sb))
    )
    return f"{path} at character {at}: recorded {sa[at : at + 60]!r}, now {sb[at : at + 60]!r}"


def record(
    folder: Path, seq: int, status: int, content_type: str, data: bytes, counted: dict[str, Any]
) -> None:
    """Keep what the client received for call `seq`, and what the gateway counted of it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{seq:04d}.response").write_bytes(data)
    (folder / f"{seq:04d}.meta.json").write_text(
        json.dumps({"status": status, "content_type": content_type, **counted}), encoding="utf-8"
    )


@dataclass
class Recording:
    """One route's recorded calls, matched to the live ones as they come."""

    folder: Path
    calls: list[tuple[int, Any]] = field(default_factory=list)  # (seq, normalized request)
    used: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, folder: Path) -> Recording:
        found = cls(folder)
        for path in sorted(folder.glob("*.request.json")):
            seq = int(path.name.split(".")[0])
            if (folder / f"{seq:04d}.meta.json").is_file():
                try:
                    found.calls.append((seq, normalized(json.loads(path.read_bytes()))))
                except ValueError:
                    continue
        return found

    def match(self, request: Any) -> tuple[int | None, str]:
        """The recorded call this request replays (marked used), or None and why not."""
        wanted = normalized(request)
        with self.lock:
            unused = [(seq, body) for seq, body in self.calls if seq not in self.used]
            for seq, body in unused:
                if body == wanted:
                    self.used.add(seq)
                    return seq, ""
        if not unused:
            return None, f"the recording has no more calls ({len(self.calls)} recorded)"
        return None, f"recorded call {unused[0][0]} differs: {difference(unused[0][1], wanted)}"

    def answer(self, seq: int, private: str) -> tuple[int, str, dict[str, Any], bytes]:
        """(status, content type, what was counted, the bytes) of a recorded call, the recorded
        run's private folder name made this run's (`private`). A recording may come from
        anyone: its status and content type are taken only as what they can be (never a header
        line of their own), its counts only as numbers."""
        try:
            meta = json.loads((self.folder / f"{seq:04d}.meta.json").read_text("utf-8"))
        except ValueError:
            meta = {}
        meta = meta if isinstance(meta, dict) else {}
        data = (self.folder / f"{seq:04d}.response").read_bytes()
        old = meta.get("private")
        if isinstance(old, str) and PRIVATE.fullmatch(old) and private:
            data = data.replace(old.encode(), private.encode())
        status = meta.get("status")
        status = status if isinstance(status, int) and 200 <= status <= 599 else 502
        kind = (
            "text/event-stream"
            if "event-stream" in str(meta.get("content_type"))
            else "application/json"
        )
        raw = meta.get("usage")
        usage: dict[Any, Any] = raw if isinstance(raw, dict) else {}
        counted = {
            "model": str(meta.get("model") or "") or None,
            "usage": {
                k: v
                for k, v in usage.items()
                if isinstance(k, str) and isinstance(v, int) and v >= 0
            },
            "stop_reason": str(meta.get("stop_reason") or "") or None,
        }
        return status, kind, counted, data


def recorded(root: Path | None, run: str, *where: str) -> Recording | None:
    """The recording of run `run` in the replayed experiment `root` (None: not replaying). A
    run the experiment lacks gets an empty recording: its first call diverges."""
    return None if root is None else Recording.load(root.joinpath("runs", run, *where))
