"""`scylla cases mine`: what a commit says it does, the text its case's task is told from.

A plain commit says it in its message (its trailers left out). A merge on the first-parent
line says little itself (`Merge pull request #12 from a/b`, `Merge branch 'x'`): its task is
told from what is left of its message once that boilerplate is gone (a pull request's title)
and the messages of the commits it brought in, each said once. The issues a message names
(`#123`, `GH-123`, `Issue 123`, a merged pull request's number) add their text when the
`--issues` folder holds it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_scylla.operations.mining.history import Commit

TRAILER = re.compile(r"^[A-Z][A-Za-z-]+: .+$")  # Signed-off-by:, Co-authored-by:, Fixes: …
MERGE_LINE = re.compile(
    r"^(Merge (pull request #\d+ from \S+|(remote-tracking )?branch '[^']*'.*|branch \S+.*"
    r"|tag '[^']*'.*|commit '[0-9a-f]+'.*)|\(cherry picked from commit [0-9a-f]+\))$"
)
ISSUE = re.compile(r"(?:^|[\s(])(?:#|GH-|[Ii]ssue\s+#?)(\d+)\b")


def without_trailers(text: str) -> str:
    """The message without its trailers: a last paragraph whose every line is `Key: value`
    (git's `Signed-off-by:`, `Co-authored-by:`, `Fixes:` …)."""
    paragraphs = text.strip().split("\n\n")
    if all(TRAILER.match(line.strip()) for line in paragraphs[-1].splitlines() if line.strip()):
        paragraphs.pop()
    return "\n\n".join(paragraphs)


def _message(subject: str, body: str) -> str:
    """A message's subject and body without trailers, its line ends made `\n` (CRLF too)."""
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    return f"{subject.strip()}\n\n{without_trailers(body)}".strip()


def told(commit: Commit) -> str:
    """The text the task is told from: a commit's message without trailers; for a merge, its
    message without the merge boilerplate, then each commit it brought in (each line said once:
    a pull request's title is often its one commit's subject)."""
    own = _message(commit.subject, commit.body)
    if not commit.merged:
        return own
    seen: set[str] = set()
    parts = []
    merged = (_message(*m.partition("\n")[::2]) for m in commit.merged)
    for text in (own, *merged):
        kept = []
        for line in text.splitlines():
            key = line.strip().lower()
            if MERGE_LINE.match(line.strip()) or (key and key in seen):
                continue
            seen.add(key)
            kept.append(line.rstrip())
        if block := "\n".join(kept).strip():
            parts.append(re.sub(r"\n{3,}", "\n\n", block))
    return "\n\n".join(parts) or commit.subject


def subject(commit: Commit) -> str:
    """The first line of what the commit says (a merge's: of its pull request or commits)."""
    return told(commit).partition("\n")[0].strip() or commit.subject


def issues_named(commit: Commit, folder: Path | None) -> list[tuple[str, str]]:
    """(number, text) of each issue the commit's message (a merge's: its commits' too) names
    (`#123`, `GH-123`, `Issue 123`, `Fixes: #123`) whose text is in `folder` (`123.md`,
    `123.txt`, or `123.json` with title and body)."""
    if folder is None:
        return []
    found = []
    message = "\n".join([commit.subject, commit.body, *commit.merged])
    for number in dict.fromkeys(ISSUE.findall(message)):
        for suffix in (".md", ".txt", ".json"):
            path = folder / f"{number}{suffix}"
            if path.is_file():
                found.append((number, issue_text(path)))
                break
    return found


def issue_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".json":
        return text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()
    if not isinstance(data, dict):
        return text.strip()
    return f"{data.get('title') or ''}\n\n{data.get('body') or ''}".strip()
