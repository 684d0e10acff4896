"""`scylla cases mine`, third step: a case folder from a verified commit.

`test.yaml` pins the repository at the parent commit (`source.repo`: `self` when the cases
live in it, else its origin remote's URL, else its path); the hidden files are the commit's
test files, the reference solution its other changes; the checks run the fail-to-pass tests
and every test of those files. The prompt is what the commit says (`mine_message`: a merge's
commits' messages) with what would give the solution away taken out (trailers, diff lines, the
names of the tests that must pass), and the case says that it is the commit message, not a
task statement a person or a model wrote; one whose prompt misses what its tests need is
flagged (`flag`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from pytest_scylla.formats.spec import REMOTE
from pytest_scylla.operations.mining import tree as mine_tree
from pytest_scylla.operations.mining.git import Source, on_origin
from pytest_scylla.operations.mining.history import Change, show
from pytest_scylla.operations.mining.message import issues_named, subject, told
from pytest_scylla.operations.mining.verify import Verdict, own_files

DIFF_LINE = re.compile(r"^(diff --git|index [0-9a-f]|@@ |--- |\+\+\+ |[+-]\s)")
TEST_NAME = re.compile(r"\btest_\w{3,}\b")
FIX_WORDS = re.compile(r"\b(fix|fixes|fixed|bug|regression|crash|error|wrong|broken)\b", re.I)
RUBRIC = "mined-change"


def name_of(repo: Path, sha: str) -> str:
    """A mined case's id and folder name: `<repository>-<sha, 10 digits>`."""
    name = re.sub(r"[^a-z0-9]+", "-", repo.name.lower()).strip("-") or "repo"
    return f"{name}-{sha[:10]}"


def case_id(repo: Path, verdict: Verdict) -> str:
    return name_of(repo, verdict.commit.sha)


CLOSING = (
    "Make this change in the repository checked out in the current folder. Tests that check "
    "it will be run after you finish.\n"
)


def scrub(text: str, verdict: Verdict) -> str:
    """`text` without diff lines or the names of tests (those that must pass, and any other
    `test_…` name: a merged commit's message often names the test it adds)."""
    names = {re.split(r"[\[:]", n.rsplit("::", 1)[-1])[0] for n in verdict.fail_to_pass}
    names |= {PurePosixPath(c.path).stem for c in verdict.commit.tests}
    lines = []
    for line in text.splitlines():
        if DIFF_LINE.match(line):
            continue
        for name in sorted(names, key=len, reverse=True):
            if len(name) > 4:
                line = re.sub(rf"\b{re.escape(name)}\b", "the tests", line)
        lines.append(TEST_NAME.sub("a test", line).rstrip())
    return "\n".join(lines).strip()


def message(verdict: Verdict, issues: Path | None = None) -> str:
    """What the commit says (`mine_message.told`: a merge's commits' messages), scrubbed, with
    the text of each issue it names that `issues` holds after it."""
    given = told(verdict.commit).splitlines()
    for number, text in issues_named(verdict.commit, issues):
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


UNDERSPECIFIED = "underspecified"  # the tag (a pytest marker) of a flagged case


def flag(folder: Path, gaps: list[str], answer: str = "") -> None:
    """The case marked underspecified: its description says what the hidden tests need that
    the prompt never states (`mine_gaps`) and what the prompt writer said is left open, and
    it is tagged `underspecified` (`pytest -m "mined and not underspecified"` leaves it out)."""
    data = yaml.safe_load((folder / "test.yaml").read_text(encoding="utf-8"))
    said = []
    if gaps:
        said.append(f"the hidden tests need {', '.join(gaps)}, which the prompt never states")
    if answer:
        said.append(f"the prompt writer said: {' '.join(answer.split())[:300]}")
    data["description"] += f" Underspecified: {'; and '.join(said)}."
    data["tags"] = [*[t for t in data.get("tags", []) if t != UNDERSPECIFIED], UNDERSPECIFIED]
    (folder / "test.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=100), "utf-8")


def texts(source: Source, verdict: Verdict, changes: list[Change]) -> dict[str, str]:
    """The Python files of `changes` as text at the commit, by path (for `mine_gaps`)."""
    return {
        c.path: show(source, verdict.commit.sha, c.path).decode("utf-8", errors="replace")
        for c in changes
        if c.status != "D" and c.path.endswith(".py")
    }


def _size(lines: int) -> str:
    return "small" if lines <= 40 else "medium" if lines <= 150 else "large"


def _tags(verdict: Verdict) -> list[str]:
    tops = set()
    for change in verdict.commit.others:
        parts = PurePosixPath(change.path).parts
        tops.add(parts[1] if parts[0] == "src" and len(parts) > 2 else parts[0].removesuffix(".py"))
    safe = {re.sub(r"[^a-z0-9_-]+", "-", t.lower()).strip("-") for t in tops}
    return ["mined", "python", *sorted(t for t in safe if t)]


def source_repo(source: Source, out: Path, commit: str = "") -> tuple[str, str]:
    """(how the cases name the repository, why): `self` when they live inside it, else its
    origin remote's URL (credentials taken out) when that holds `commit`, else its absolute
    path (a case that then runs on this machine only)."""
    repo = source.top.resolve()
    if out.resolve().is_relative_to(repo):
        return "self", "the cases live in the mined repository"
    if source.origin and (REMOTE.match(source.origin) or Path(source.origin).is_absolute()):
        if commit and not on_origin(source, commit):
            return str(repo), f"its path: {commit[:12]} is on no branch of its origin remote"
        local = "" if REMOTE.match(source.origin) else ", a path on this machine"
        return source.origin, f"the URL of its origin remote{local}"
    return str(repo), "its path: it has no origin remote, so the cases run on this machine only"


def document(source: Source, verdict: Verdict, out: Path) -> dict[str, Any]:
    repo = source.top
    commit, ident = verdict.commit, case_id(repo, verdict)
    files = [*own_files(commit), *verdict.related]  # and those testing the modules it changes
    lines = sum(c.lines for c in commit.others)
    f2p = " ".join(shlex.quote(n) for n in verdict.fail_to_pass)
    deselect = "".join(f" --deselect {shlex.quote(n)}" for n in verdict.broken)
    broken = (
        f" {len(verdict.broken)} test(s) failing at both the parent and the commit where it was "
        f"mined (e.g. {verdict.broken[0]}) are deselected."
        if verdict.broken
        else ""
    )
    return {
        "id": ident,
        "name": subject(commit)[:80] or ident,
        "description": (
            f"Mined from commit {commit.sha} of {repo.name} by `scylla cases mine`. The prompt is "
            "the commit message (no model rewrote it). Fail-to-pass tests: "
            f"{len(verdict.fail_to_pass)}; pass-to-pass: {len(verdict.pass_to_pass)}; "
            f"{lines} lines of source changed.{broken}"
        ),
        "category": "bug-fixing" if FIX_WORDS.search(subject(commit)) else "new-feature",
        "tags": _tags(verdict),
        "size": _size(lines),
        "source": {"repo": source_repo(source, out, commit.parent)[0], "commit": commit.parent},
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
                "description": "Every test of the commit's test files, and of those testing "
                "the modules it changes, passes (pass-to-pass too).",
                "run": f"{verdict.command}{deselect} {' '.join(shlex.quote(f) for f in files)}",
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
    for path in verdict.related:  # hidden too: checked as they were, whatever the agent did
        mine_tree.write(folder / "hidden", path, show(source, verdict.commit.sha, path))
    (folder / "prompt.md").write_text(prompt(verdict, issues), encoding="utf-8")
    data = document(source, verdict, out)
    if named := [n for n, _ in issues_named(verdict.commit, issues)]:
        data["description"] += f" The prompt adds the text of issue(s) {', '.join(named)}."
    text = yaml.safe_dump(data, sort_keys=False, width=100)
    (folder / "test.yaml").write_text(text, encoding="utf-8")
    return folder
