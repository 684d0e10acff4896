"""Documentation check for the textstats task (run from the workspace root).

Passes when:

1. README.md names every long command line option of `textstats` (taken from the real parser);
2. every module of the package (except __main__) and every public function, class and method
   has a non-empty docstring;
3. README.md has at least one ```python block, and every ```python block runs successfully
   from the repository root without leaving files behind;
4. README.md has at least one ```console block with a `$ textstats ...` (or
   `$ python -m textstats ...`) line, and every such command, run from the repository root,
   prints exactly the lines shown under it (trailing spaces and trailing blank lines aside).

Usage: python check_textstats_docs.py [options|docstrings|python|console ...]
(default: all four parts).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

sys.dont_write_bytecode = True

ROOT = Path.cwd()
PACKAGE = ROOT / "textstats"
README = ROOT / "README.md"
FENCE_RE = re.compile(r"^```[ \t]*([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")


def snapshot() -> set[Path]:
    return {path for path in ROOT.rglob("*") if ".git" not in path.relative_to(ROOT).parts}


def remove_new(before: set[Path]) -> list[str]:
    created = sorted(snapshot() - before, key=lambda path: len(path.parts), reverse=True)
    for path in created:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    return [str(path.relative_to(ROOT)) for path in created]


def long_options() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from textstats.cli import build_parser

    options = []
    for action in build_parser()._actions:
        options += [s for s in action.option_strings if s.startswith("--") and s != "--help"]
    return options


def check_options(readme: str) -> list[str]:
    return [
        f"README.md does not mention the option {option}"
        for option in long_options()
        if not re.search(re.escape(option) + r"(?![\w-])", readme)
    ]


def check_docstrings() -> list[str]:
    problems = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(ROOT)
        if not (ast.get_docstring(tree) or "").strip():
            problems.append(f"{where}: the module has no docstring")
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node.name.startswith("_"):
                continue
            if not (ast.get_docstring(node) or "").strip():
                problems.append(f"{where}:{node.lineno}: {node.name} has no docstring")
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (
                        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and not item.name.startswith("_")
                        and not (ast.get_docstring(item) or "").strip()
                    ):
                        problems.append(
                            f"{where}:{item.lineno}: {node.name}.{item.name} has no docstring"
                        )
    return problems


def check_python_examples(blocks: list[tuple[str, str]]) -> list[str]:
    examples = [body for language, body in blocks if language.lower() in ("python", "py")]
    if not examples:
        return ["README.md has no ```python example"]
    problems = []
    for number, code in enumerate(examples, start=1):
        before = snapshot()
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=ENV,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        created = remove_new(before)
        if result.returncode != 0:
            last = (result.stderr.strip().splitlines() or ["no error output"])[-1]
            problems.append(f"python example {number} fails: {last}")
        if created:
            problems.append(f"python example {number} wrote files: {', '.join(created)}")
    return problems


def command_argv(command: str) -> list[str] | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:1] == ["textstats"]:
        return [sys.executable, "-m", "textstats", *words[1:]]
    if words[:3] in (["python", "-m", "textstats"], ["python3", "-m", "textstats"]):
        return [sys.executable, "-m", "textstats", *words[3:]]
    return None


def normalise(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def check_console_examples(blocks: list[tuple[str, str]]) -> list[str]:
    problems = []
    verified = 0
    for language, body in blocks:
        if language.lower() not in ("console", "shell-session"):
            continue
        lines = body.splitlines()
        for index, line in enumerate(lines):
            if not line.startswith("$ "):
                continue
            command = line[2:].strip()
            is_textstats = command.startswith(("textstats", "python -m textstats"))
            argv = command_argv(command)
            if argv is None:
                if is_textstats:
                    problems.append(f"cannot run the example command: {command}")
                continue
            expected = []
            for following in lines[index + 1 :]:
                if following.startswith("$ "):
                    break
                expected.append(following)
            before = snapshot()
            result = subprocess.run(
                argv,
                cwd=ROOT,
                env=ENV,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            created = remove_new(before)
            verified += 1
            if normalise(result.stdout.splitlines()) != normalise(expected):
                problems.append(
                    f"the output shown for `{command}` is not what it prints:\n"
                    + "".join(f"      | {out}\n" for out in result.stdout.splitlines()[:30])
                )
            if created:
                problems.append(f"`{command}` wrote files: {', '.join(created)}")
    if not verified:
        problems.append("README.md has no ```console example of a `$ textstats ...` command")
    return problems


PARTS = ("options", "docstrings", "python", "console")


def main(argv: list[str]) -> int:
    parts = argv or list(PARTS)
    unknown = [part for part in parts if part not in PARTS]
    if unknown:
        print(f"unknown part(s): {', '.join(unknown)}; expected some of {', '.join(PARTS)}")
        return 2
    if not README.is_file():
        print("docs check FAILED\n- README.md is missing")
        return 1
    readme = README.read_text(encoding="utf-8")
    blocks = FENCE_RE.findall(readme)
    problems = []
    if "options" in parts:
        problems += check_options(readme)
    if "docstrings" in parts:
        problems += check_docstrings()
    if "python" in parts:
        problems += check_python_examples(blocks)
    if "console" in parts:
        problems += check_console_examples(blocks)
    if problems:
        print("docs check FAILED")
        print("\n".join(f"- {problem}" for problem in problems))
        return 1
    print("docs OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
