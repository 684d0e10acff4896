"""`scylla cases mine`: what a mined case's hidden tests check, and whether its prompt says it.

A commit message is written for reviewers who see the diff, not for someone asked to make the
change: a task whose hidden test needs an exact error message or a particular exception the
message never mentions cannot be solved from the prompt, only guessed. So the fail-to-pass
tests are read (parsed, never run or imported) for the functions they call, the kinds of
assertions they make, the exceptions they expect and the literal values they compare against.

The flag is a simple, honest heuristic: an expected exception or literal value (a string, a
float, or an integer of two digits or more) that the reference solution itself adds to the
source (so the agent must produce exactly it) and that the prompt never states; and the
functions the tests call that the changed source files define, when the prompt names none of
them. Values that are only test data never appear in the solution's added lines, so they are
not flagged. The summary (`describe`) is what `--prompt-from-model` is told of the tests:
names, calls, kinds of check, values; never their source."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field

RAISES = {"assertRaises", "assertRaisesRegex", "raises", "assertWarns", "assertWarnsRegex"}
KINDS = {
    "assertEqual": "equality",
    "assertNotEqual": "inequality",
    "assertListEqual": "equality",
    "assertTupleEqual": "equality",
    "assertDictEqual": "equality",
    "assertSetEqual": "equality",
    "assertCountEqual": "equality ignoring order",
    "assertSequenceEqual": "equality",
    "assertMultiLineEqual": "equality",
    "assertAlmostEqual": "approximate equality",
    "assertTrue": "truth",
    "assertFalse": "truth",
    "assertIs": "identity",
    "assertIsNot": "identity",
    "assertIsNone": "identity",
    "assertIsNotNone": "identity",
    "assertIn": "membership",
    "assertNotIn": "membership",
    "assertIsInstance": "type",
    "assertRegex": "a pattern match",
}
COMPARES = {ast.Eq: "equality", ast.NotEq: "inequality", ast.In: "membership"}
COMPARES |= {ast.NotIn: "membership", ast.Is: "identity", ast.IsNot: "identity"}
NOT_CALLS = {"self", "pytest", "subTest", "list", "tuple", "set", "dict", "len", "range", "str"}
NOT_CALLS |= {"iter", "next", "sorted", "isinstance", "type", "repr", "int", "float", "zip"}
NOT_CALLS |= {"enumerate", "map", "filter", "bool", "approx", "mark", "parametrize"}


@dataclass
class Summary:
    tests: list[str] = field(default_factory=list)  # the fail-to-pass tests' names
    calls: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    raises: list[str] = field(default_factory=list)  # exceptions (and warnings) expected
    values: list[str | int | float] = field(default_factory=list)  # literals in assertions


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _literals(nodes: list[ast.AST], into: list[str | int | float]) -> None:
    for node in nodes:
        for found in ast.walk(node):
            value = getattr(found, "value", None) if isinstance(found, ast.Constant) else None
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                continue
            wanted = len(value.strip()) >= 2 if isinstance(value, str) else _number(value)
            if wanted and value not in into:
                into.append(value)


def _number(value: object) -> bool:
    """A number worth stating: a float, or an integer of two digits or more (small integers
    are mostly indexes and counts of test data)."""
    return isinstance(value, float) or (isinstance(value, int) and abs(value) >= 10)


def _call(call: ast.Call, found: Summary) -> None:
    name = _name(call.func)
    if name in RAISES:
        expected = call.args[0] if call.args else None
        kinds = expected.elts if isinstance(expected, ast.Tuple) else [expected]
        found.raises += [n for n in map(_name, filter(None, kinds)) if n and n not in found.raises]
        found.kinds["an exception raised" if "Warn" not in name else "a warning"] += 1
        _literals([*call.args[1:], *(k.value for k in call.keywords if k.arg == "match")],
                  found.values)  # fmt: skip
    elif name in KINDS:
        found.kinds[KINDS[name]] += 1
        _literals(list(call.args), found.values)
    elif name and not name.startswith(("assert", "_")) and name not in NOT_CALLS:
        found.calls[name] += 1


def _read(function: ast.AST, found: Summary) -> None:
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            _call(node, found)
        elif isinstance(node, ast.Assert):
            ops = [type(o) for o in getattr(node.test, "ops", [])]
            found.kinds[next((COMPARES[o] for o in ops if o in COMPARES), "truth")] += 1
            _literals([node.test], found.values)


def _functions(tree: ast.Module) -> dict[str, ast.AST]:
    """Every test function by `Class::name` and `name`."""
    named: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            named[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    named[f"{node.name}::{item.name}"] = item
    return named


def summarize(files: dict[str, str], fail_to_pass: tuple[str, ...]) -> Summary:
    """What the fail-to-pass tests check, read from the test files' text (`{path: text}`); a
    file that does not parse adds nothing."""
    found, trees = Summary(), {}
    for path, text in files.items():
        try:
            trees[path] = _functions(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
    for node in fail_to_pass:
        path, _, rest = node.partition("::")
        test = re.sub(r"\[.*$", "", rest)
        function = trees.get(path, {}).get(test) or trees.get(path, {}).get(test.split("::")[-1])
        if function is None or test in found.tests:
            continue
        found.tests.append(test)
        _read(function, found)
    return found


def _stated(value: str | int | float, prompt: str) -> bool:
    if isinstance(value, str):
        text = " ".join(value.replace("\\", "").split()).lower()
        return text in " ".join(prompt.split()).lower()
    return bool(re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w])", prompt))


def gaps(summary: Summary, added: str, prompt: str, defined: str = "") -> list[str]:
    """What the hidden tests need that the prompt never states (see the module's text); with
    `defined` (the changed source files' text), also the functions and classes under test when
    the prompt names none of them (`Fix #12`)."""
    said = []
    tested = [
        n for n in summary.calls if re.search(rf"^\s*(async\s+)?(def|class)\s+{n}\b", defined, re.M)
    ]
    if tested and not any(re.search(rf"\b{re.escape(n)}\b", prompt, re.I) for n in tested):
        said.append(f"changes to {', '.join(n + '()' for n in tested[:4])}")
    for name in summary.raises:
        if re.search(rf"\b{re.escape(name)}\b", added) and not re.search(
            rf"\b{re.escape(name)}\b", prompt, re.I
        ):
            said.append(f"{name} raised")
    for value in summary.values:
        if isinstance(value, str):
            needed = _in_code(value.replace("\\", ""), added)
        else:
            needed = bool(re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w.])", added))
        if needed and not _stated(value, prompt):
            said.append(f"the exact value {_shown(value)}")
    return said


def _in_code(text: str, added: str) -> bool:
    """Whether the added code holds `text` as a string: quoted whole, or (a phrase with a
    space: an error message) inside a longer string. A word like `def` in code is no value."""
    if re.search(rf"(['\"]){re.escape(text)}\1", added):
        return True
    return " " in text.strip() and len(text) >= 8 and text in added


def _shown(value: str | int | float) -> str:
    return repr(value if not isinstance(value, str) or len(value) <= 60 else value[:57] + "...")


def describe(summary: Summary) -> str:
    """The tests' summary a prompt writer is given: no test source, only what it checks."""
    if not summary.tests:
        return "(the tests could not be read)"
    lines = [f"tests that must pass: {', '.join(summary.tests[:12])}"]
    if summary.calls:
        lines.append(f"they call: {', '.join(n for n, _ in summary.calls.most_common(12))}")
    if summary.kinds:
        kinds = ", ".join(f"{k} ({n})" for k, n in summary.kinds.most_common())
        lines.append(f"kinds of check: {kinds}")
    if summary.raises:
        lines.append(f"exceptions they expect: {', '.join(summary.raises)}")
    if summary.values:
        lines.append(
            f"literal values in their checks: {', '.join(map(_shown, summary.values[:20]))}"
        )
    return "\n".join(lines)
