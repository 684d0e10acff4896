"""Structural check for the tablekit refactoring task (run from the workspace root).

It passes when the logic the four exporters used to repeat exists only once:

1. each shared error message occurs once in the package's source, not once per exporter;
2. no sizeable block of statements (40 or more AST nodes, ignoring load/store markers) occurs
   in two different top-level functions or methods of the package;
3. the four exporters are still module-level functions in tablekit/export.py, and all of them
   call at least one common helper defined in the package.

Only the source is parsed; nothing is imported or executed, so no bytecode is written.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path("tablekit")
EXPORTERS = ("to_csv", "to_markdown", "to_html", "to_text")
MESSAGES = (
    "rows must be a list or tuple of mappings",
    " is not a mapping but ",
    "column names must be unique",
    "float_digits must not be negative",
)
MIN_NODES = 40
WINDOW = 3


def size(nodes: list[ast.AST]) -> int:
    return sum(
        1
        for node in nodes
        for child in ast.walk(node)
        if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop))
    )


def fingerprint(nodes: list[ast.AST]) -> str:
    return "\n".join(ast.dump(node, annotate_fields=False) for node in nodes)


def statement_lists(node: ast.AST):
    for child in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(child, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value
        for handler in getattr(child, "handlers", ()):
            yield handler.body
        for case in getattr(child, "cases", ()):
            yield case.body


def owners(tree: ast.Module, module: str):
    """Yield (name, node) for every top-level function and every method of a top-level class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{module}.{node.name}", node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{module}.{node.name}.{item.name}", item


def called_names(function: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                names.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
    return names


def main() -> int:
    problems: list[str] = []
    trees = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        try:
            trees[path] = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except SyntaxError as error:
            problems.append(f"{path}: does not parse: {error}")
    if problems:
        print("\n".join(problems))
        return 1

    # 1. Each shared message is written once.
    for message in MESSAGES:
        places = [
            f"{path}:{node.lineno}"
            for path, tree in trees.items()
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and message in node.value
        ]
        if len(places) != 1:
            problems.append(
                f"the message {message.strip()!r} should occur exactly once, found "
                f"{len(places)}: {', '.join(places) or 'nowhere'}"
            )

    # 2. No sizeable block repeated across functions.
    seen: dict[str, set[str]] = defaultdict(set)
    first_line: dict[str, str] = {}
    for path, tree in trees.items():
        for owner, function in owners(tree, path.stem):
            for statements in statement_lists(function):
                for start in range(len(statements)):
                    for width in range(1, WINDOW + 1):
                        block = statements[start : start + width]
                        if len(block) < width or size(block) < MIN_NODES:
                            continue
                        key = fingerprint(block)
                        seen[key].add(owner)
                        first_line.setdefault(key, f"{path}:{block[0].lineno}")
    repeated: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for key, names in seen.items():
        if len(names) > 1:
            repeated[tuple(sorted(names))].append(first_line[key])
    for names, locations in sorted(repeated.items()):
        problems.append(
            f"{len(locations)} block(s) of code are repeated in {', '.join(names)}, "
            f"e.g. at {min(locations)}"
        )

    # 3. The exporters exist and share a helper.
    export = trees.get(PACKAGE / "export.py")
    functions = {}
    if export is None:
        problems.append("tablekit/export.py is missing")
    else:
        functions = {
            node.name: node
            for node in export.body
            if isinstance(node, ast.FunctionDef) and node.name in EXPORTERS
        }
        for name in EXPORTERS:
            if name not in functions:
                problems.append(f"{name} is no longer a module-level function in export.py")
    if len(functions) == len(EXPORTERS):
        defined = {
            node.name
            for tree in trees.values()
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        } - set(EXPORTERS)
        common = set.intersection(*(called_names(node) for node in functions.values()))
        if not common & defined:
            problems.append("the four exporters do not call a common helper of the package")

    if problems:
        print("structure check FAILED")
        print("\n".join(f"- {problem}" for problem in problems))
        return 1
    print("structure OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
