"""`scylla cases mine`, third step: a case folder from a verified commit.

`test.yaml` pins the repository at the parent commit; the hidden files are the commit's test
files, the reference solution its other changes; the checks run the fail-to-pass tests and
every test of those files. The prompt is the commit message with what would give the solution
away taken out (trailers, diff lines, the names of the tests that must pass), and the case
says that it is the commit message, not a task statement a person or a model wrote."""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from pytest_scylla.operations import mine_tree
from pytest_scylla.operations.mine_git import Source
from pytest_scylla.operations.mine_history import show
from pytest_scylla.operations.mine_verify import Verdict

TRAILER = re.compile(r"^[A-Z][A-Za-z-]+: .+$")  # Signed-off-by:, Co-authored-by:, Fixes: …
DIFF_LINE = re.compile(r"^(diff --git|index [0-9a-f]|@@ |--- |\+\+\+ |[+-]\s)")
FIX_WORDS = re.compile(r"\b(fix|fixes|fixed|bug|regression|crash|error|wrong|broken)\b", re.I)
RUBRIC = "mined-change"


def name_of(repo: Path, sha: str) -> str:
    """A mined case's id and folder name: `<repository>-<sha, 10 digits>`."""
    name = re.sub(r"[^a-z0-9]+", "-", repo.name.lower()).strip("-") or "repo"
    return f"{name}-{sha[:10]}"


def case_id(repo: Path, verdict: Verdict) -> str:
    return name_of(repo, verdict.commit.sha)


ISSUE = re.compile(r"(?:^|[\s(])(?:#|GH-)(\d+)\b")


def issues_named(verdict: Verdict, folder: Path | None) -> list[tuple[str, str]]:
    """(number, text) of each issue the commit message names (`#123`, `GH-123`, `Fixes: #123`)
    whose text is in `folder` (`123.md`, `123.txt`, or `123.json` with title and body)."""
    if folder is None:
        return []
    found = []
    message = f"{verdict.commit.subject}\n{verdict.commit.body}"
    for number in dict.fromkeys(ISSUE.findall(message)):
        for suffix in (".md", ".txt", ".json"):
            path = folder / f"{number}{suffix}"
            if path.is_file():
                found.append((number, _issue_text(path)))
                break
    return found


def _issue_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".json":
        return text.strip()
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()
    if not isinstance(data, dict):
        return text.strip()
    return f"{data.get('title') or ''}\n\n{data.get('body') or ''}".strip()


CLOSING = (
    "Make this change in the repository checked out in the current folder. Tests that check "
    "it will be run after you finish.\n"
)


def _without_trailers(text: str) -> str:
    """The message without its trailers: a last paragraph whose every line is `Key: value`
    (git's `Signed-off-by:`, `Co-authored-by:`, `Fixes:` …)."""
    paragraphs = text.strip().split("\n\n")
    if all(TRAILER.match(line.strip()) for line in paragraphs[-1].splitlines() if line.strip()):
        paragraphs.pop()
    return "\n\n".join(paragraphs)


def scrub(text: str, verdict: Verdict) -> str:
    """`text` without diff lines or the names of the tests that must pass."""
    names = {re.split(r"[\[:]", n.rsplit("::", 1)[-1])[0] for n in verdict.fail_to_pass}
    names |= {PurePosixPath(c.path).stem for c in verdict.commit.tests}
    lines = []
    for line in text.splitlines():
        if DIFF_LINE.match(line):
            continue
        for name in sorted(names, key=len, reverse=True):
            if len(name) > 4:
                line = re.sub(rf"\b{re.escape(name)}\b", "the tests", line)
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def message(verdict: Verdict, issues: Path | None = None) -> str:
    """The commit message, scrubbed, with the text of each issue it names that `issues`
    holds after it."""
    body = _without_trailers(verdict.commit.body)
    given = [verdict.commit.subject, "", *body.splitlines()]
    for number, text in issues_named(verdict, issues):
        given += ["", f"The issue it refers to (#{number}):", "", *text.splitlines()]
    return scrub("\n".join(given), verdict)


def prompt(verdict: Verdict, issues: Path | None = None) -> str:
    """The commit message as a task (see `message`)."""
    return f"{message(verdict, issues)}\n\n{CLOSING}"


def retell(folder: Path, verdict: Verdict, task: str, said: dict[str, Any]) -> None:
    """The case's prompt from a model's task statement (scrubbed like the message), and its
    description saying who wrote it and what it cost; or, when there is none, why the prompt
    stayed the commit message."""
    data = yaml.safe_load((folder / "test.yaml").read_text(encoding="utf-8"))
    old = "The prompt is the commit message (no model rewrote it)."
    if task:
        (folder / "prompt.md").write_text(f"{scrub(task, verdict)}\n\n{CLOSING}", "utf-8")
        who = (
            "the oracle, by rule (SIMULATED: no model was asked)"
            if said.get("simulated")
            else f"{said['model']} (${said['cost_usd']:.4f}, logged in prompt_calls.jsonl)"
        )
        new = f"The prompt was written from the commit message by {who}."
    else:
        new = f"{old[:-1]}: asking {said.get('model')} failed ({said.get('error')})."
    data["description"] = str(data["description"]).replace(old, new)
    (folder / "test.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=100), "utf-8")


def _size(lines: int) -> str:
    return "small" if lines <= 40 else "medium" if lines <= 150 else "large"


def _tags(verdict: Verdict) -> list[str]:
    tops = set()
    for change in verdict.commit.others:
        parts = PurePosixPath(change.path).parts
        tops.add(parts[1] if parts[0] == "src" and len(parts) > 2 else parts[0].removesuffix(".py"))
    safe = {re.sub(r"[^a-z0-9_-]+", "-", t.lower()).strip("-") for t in tops}
    return ["mined", "python", *sorted(t for t in safe if t)]


def source_repo(repo: Path, out: Path) -> str:
    """How the case names the repository: `self` when the case lives inside it, else its
    absolute path."""
    return "self" if out.resolve().is_relative_to(repo.resolve()) else str(repo.resolve())


def document(repo: Path, verdict: Verdict, out: Path) -> dict[str, Any]:
    commit, ident = verdict.commit, case_id(repo, verdict)
    files = [c.path for c in commit.tests if c.status != "D" and c.path.endswith(".py")]
    files = [f for f in files if PurePosixPath(f).name != "conftest.py"] or files
    lines = sum(c.lines for c in commit.others)
    f2p = " ".join(shlex.quote(n) for n in verdict.fail_to_pass)
    return {
        "id": ident,
        "name": commit.subject[:80] or ident,
        "description": (
            f"Mined from commit {commit.sha} of {repo.name} by `scylla cases mine`. The prompt is "
            "the commit message (no model rewrote it). Fail-to-pass tests: "
            f"{len(verdict.fail_to_pass)}; pass-to-pass: {len(verdict.pass_to_pass)}; "
            f"{lines} lines of source changed."
        ),
        "category": "bug-fixing" if FIX_WORDS.search(commit.subject) else "new-feature",
        "tags": _tags(verdict),
        "size": _size(lines),
        "source": {"repo": source_repo(repo, out), "commit": commit.parent},
        "prompt": "prompt.md",
        "rubric": RUBRIC,
        "hidden": "hidden",
        "solution": "solution",
        "timeout_seconds": 900,
        "checks": [
            {
                "name": "fail-to-pass",
                "description": "The commit's tests that failed before it now pass.",
                "run": f"{verdict.command} {f2p}",
                "timeout_seconds": 300,
            },
            {
                "name": "hidden-tests",
                "description": "Every test of the commit's test files passes (pass-to-pass too).",
                "run": f"{verdict.command} {' '.join(shlex.quote(f) for f in files)}",
                "timeout_seconds": 300,
            },
        ],
    }


def write(source: Source, verdict: Verdict, out: Path, issues: Path | None = None) -> Path:
    """The case folder `out/<id>/` (made anew). Each file is written by `mine_tree.write`: its
    path checked, nothing on its way followed."""
    import shutil

    repo = source.top
    folder = out / case_id(repo, verdict)
    if folder.exists():
        shutil.rmtree(folder)
    for kind, changes in (("hidden", verdict.commit.tests), ("solution", verdict.commit.others)):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        for change in changes:
            if change.status != "D":
                content = show(source, verdict.commit.sha, change.path)
                mine_tree.write(folder / kind, change.path, content)
    (folder / "prompt.md").write_text(prompt(verdict, issues), encoding="utf-8")
    data = document(repo, verdict, out)
    if named := [n for n, _ in issues_named(verdict, issues)]:
        data["description"] += f" The prompt adds the text of issue(s) {', '.join(named)}."
    text = yaml.safe_dump(data, sort_keys=False, width=100)
    (folder / "test.yaml").write_text(text, encoding="utf-8")
    return folder
