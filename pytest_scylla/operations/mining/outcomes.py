"""Each test's outcome of a verification run, from the report `mine_plugin` wrote in the
sandbox: the structured record, never pytest's printed (and cut) text.

The report was written next to the repository's own test code, which could have replaced it:
it is read as untrusted input, as `run.hostile` reads a workspace: no link followed on the way
or at the end, a regular file only, at most `LIMIT` bytes, every line checked (one that is not
a well-formed record makes the whole report unreadable, never half-read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pytest_scylla.operations.mining import plugin as mine_plugin
from pytest_scylla.run import hostile

Outcome = Literal["passed", "failed", "skipped"]
MODULE = "scylla_mine_outcomes"  # the plugin's module name in the sandbox (`-p` names it)
REPORT = "outcomes.jsonl"
LIMIT = 8_000_000  # bytes: about 50,000 tests
KINDS = {"passed", "failed", "skipped", "xfailed", "xpassed"}


class ReportError(ValueError):
    """The report cannot be read as one (missing, a link, too large, malformed)."""


def install(folder: Path) -> Path:
    """The plugin written into `folder/plugin/` (made here): the folder to put on the path."""
    where = folder / "plugin"
    where.mkdir()
    source = Path(mine_plugin.__file__).read_text(encoding="utf-8")
    (where / f"{MODULE}.py").write_text(source, encoding="utf-8")
    return where


def read(root: Path, where: str) -> dict[str, Outcome]:
    """{node id: outcome} from the report in the folder `where` under `root`, the folder the
    sandbox may write in (reached from it following no link: a test that put a link in the
    way is refused); a collection error's node id is its file's, or "" for the session's. A
    test fails when any of its reports failed (setup, call, teardown, or one of its subtests:
    pytest 9 prints `PASSED` for a unittest test whose `subTest` failed); an expected failure
    passes, an unexpected pass fails."""
    try:
        data = hostile.read(root, f"{where}/{REPORT}", LIMIT)
    except FileNotFoundError:
        raise ReportError("pytest wrote no report") from None
    except (hostile.HostileDataError, OSError) as exc:
        raise ReportError(f"the report was refused: {exc}") from None
    found: dict[str, Outcome] = {}
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        record = _record(line, number)
        if record is None:
            continue
        node, kind = record
        if kind == "failed" or kind == "xpassed":
            found[node] = "failed"
        elif kind in ("passed", "xfailed") and found.get(node) != "failed":
            found[node] = "passed"  # a subtest skipped before the test passed
        else:
            found.setdefault(node, "skipped")
    return found


def _record(line: str, number: int) -> tuple[str, str] | None:
    """(node id, kind) of one line; None for the session's closing line."""
    try:
        record = json.loads(line)
    except ValueError:
        raise ReportError(f"the report's line {number} is not JSON") from None
    if isinstance(record, dict) and set(record) == {"exit"}:
        return None
    if not (
        isinstance(record, dict)
        and isinstance(record.get("node"), str)
        and record.get("outcome") in KINDS
    ):
        raise ReportError(f"the report's line {number} is not a test's outcome")
    return record["node"], record["outcome"]
