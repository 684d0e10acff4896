"""A small repository whose history holds one commit of each kind `scylla cases mine` must tell
apart: a bug fixed with a test, a feature added with tests, docs only, tests only, a flaky test,
a test that needs a module nobody installed, and a source file deleted."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}

OPS = """def add(a, b):
    return a + b


def sub(a, b):
    return a + b  # wrong
"""
TEST_OPS = """from calc.ops import add


def test_add():
    assert add(2, 3) == 5
"""
FLIP = """import pathlib

from calc.ops import add


def test_sometimes():
    flag = pathlib.Path("flag.txt")
    seen = flag.exists()
    if seen:
        flag.unlink()
    else:
        flag.write_text("1")
    assert add(1, 1) == 2 and seen
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    """Write (None: delete) the files and commit them; the new commit's sha."""
    for path, text in files.items():
        target = repo / path
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def build(repo: Path) -> dict[str, str]:
    """The repository, and each kind's commit sha."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = {
        "root": commit(
            repo,
            "Start calc",
            {"calc/__init__.py": "", "calc/ops.py": OPS, "tests/test_ops.py": TEST_OPS},
        )
    }
    fixed = OPS.replace("return a + b  # wrong", "return a - b")
    shas["fix"] = commit(
        repo,
        "Fix sub returning the sum\n\nsub(5, 3) gave 8. test_sub_gives_the_difference shows it."
        "\n\nSigned-off-by: Dev <dev@example.com>",
        {"calc/ops.py": fixed, "tests/test_ops.py": TEST_OPS + SUB_TEST},
    )
    shas["feature"] = commit(
        repo,
        "Add mul",
        {
            "calc/ops.py": fixed + "\n\ndef mul(a, b):\n    return a * b\n",
            "tests/test_mul.py": MUL_TEST,
        },
    )
    shas["docs"] = commit(repo, "Document calc", {"README.md": "# calc\n\nAdds and subtracts.\n"})
    shas["tests"] = commit(
        repo, "Test add more", {"tests/test_more.py": TEST_OPS.replace("test_add", "test_add2")}
    )
    shas["flaky"] = commit(
        repo,
        "Add neg",
        {"calc/neg.py": "def neg(a):\n    return -a\n", "tests/test_flip.py": FLIP},
    )
    shas["missing"] = commit(
        repo,
        "Add pow with numpy-free fallback",
        {
            "calc/power.py": "def power(a, b):\n    return a**b\n",
            "tests/test_power.py": "import nonexistent_dep_for_scylla\n\n\ndef test_p():\n"
            "    assert True\n",
        },
    )
    shas["delete"] = commit(
        repo,
        "Drop neg",
        {"calc/neg.py": None, "tests/test_flip.py": None, "tests/test_ops.py": TEST_OPS + SUB_TEST},
    )
    return shas


SUB_TEST = """

def test_sub_gives_the_difference():
    from calc.ops import sub

    assert sub(5, 3) == 2
"""
MUL_TEST = """from calc.ops import mul


def test_mul():
    assert mul(3, 4) == 12


def test_mul_zero():
    assert mul(3, 0) == 0
"""


def digest(repo: Path) -> str:
    """A hash of every file under the repository, `.git` included (names, modes, contents)."""
    found = hashlib.sha256()
    for path in sorted(repo.rglob("*")):
        found.update(str(path.relative_to(repo)).encode())
        if path.is_file() and not path.is_symlink():
            found.update(oct(path.stat().st_mode).encode())
            found.update(path.read_bytes())
    return found.hexdigest()
