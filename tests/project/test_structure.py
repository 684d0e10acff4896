"""The package's shape: its layers (each package imports only those below it), no import cycles
(lazy imports inside functions count too), no module over 400 lines and no function over 60,
ruff's complexity at most 15, and the formatter's layout, so each file reads in one sitting; and
the tests' layout, so each test is found where its subject is."""

from __future__ import annotations

import ast
import graphlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_scylla"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_COMPLEXITY_EXCEPTIONS = 5  # `# noqa: C901` lines, each with its reason


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside `if TYPE_CHECKING:` blocks (never executed)."""
    return {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If)
        and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for stmt in block.body
        for node in ast.walk(stmt)
    }


def import_graph(modules: dict[str, Path], *, annotations: bool = True) -> dict[str, set[str]]:
    """module -> the package modules it imports, at any depth of its code (lazy imports in
    functions too); without `annotations`, leaving out the `if TYPE_CHECKING:` ones."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set() if annotations else _type_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from package import module` depends on the module; else on `base` itself
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            else:
                continue
            # a module's own enclosing packages are imported before it anyway: not an edge
            edges.update(
                t for t in targets if t in modules and t != name and not name.startswith(t + ".")
            )
        graph[name] = edges
    return graph


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The package's import graph, annotations included, parsed once for this module's tests
    (each test that changes it changes its own copy)."""
    return import_graph(_modules())


@pytest.fixture(scope="module")
def run_graph() -> dict[str, set[str]]:
    """The package's import graph without its `if TYPE_CHECKING:` imports, parsed once."""
    return import_graph(_modules(), annotations=False)


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    sorter = graphlib.TopologicalSorter(graph)
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_the_cycle_check_finds_a_cycle(graph: dict[str, set[str]]) -> None:
    """Positive control: the same check on a graph with a lazy back edge."""
    graph = dict(graph)
    graph["pytest_scylla.core.record"] = {
        "pytest_scylla.session.collect"
    }  # collect -> ... -> record
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(graph).prepare()


def test_modules_and_functions_stay_short() -> None:
    long_modules, long_functions = [], []
    for name, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{name}.{node.name}: {length} lines")
    assert long_modules == [], f"split these modules (over {MAX_MODULE_LINES} lines)"
    assert long_functions == [], f"split these functions (over {MAX_FUNCTION_LINES} lines)"


# Each package imports only those below it (`judging` and `results` stand side by side and do
# not import each other); above the engine, `config` (options and settings), then `session` (the
# pytest session), then `cli` (the `scylla` command); on top the face: `api`, `plugin` and
# `hookspecs`. `if TYPE_CHECKING:` imports are exempt: an annotation names a type that a caller
# passes in, it loads nothing.
LAYERS = {
    "core": 0,
    "formats": 1,
    "run": 2,
    "judging": 3,
    "results": 3,
    "operations": 4,
    "config": 5,
    "session": 6,
    "cli": 7,
}
FACE = 8
# the only modules at the top of the package: the plugin authors' surface and pytest's entry
TOP_LEVEL = {"__init__", "api", "plugin", "hookspecs"}


def _layer(module: str) -> tuple[int, str]:
    parts = module.split(".")
    package = parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else ""
    return LAYERS.get(package, FACE), package


def layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    breaches = []
    for module, imported in graph.items():
        level, package = _layer(module)
        for target in imported:
            t_level, t_package = _layer(target)
            if t_level > level or (t_level == level < FACE and t_package != package):
                breaches.append(f"{module} imports {target}")
    return sorted(breaches)


def test_packages_import_only_the_layers_below(run_graph: dict[str, set[str]]) -> None:
    assert layer_breaches(run_graph) == [], (
        "core <- formats <- run <- judging, results <- operations <- config <- session <- cli "
        "<- the face (api, plugin, hookspecs): move the shared thing down (usually into core/) "
        "or pass it in"
    )


def test_the_layer_check_finds_an_upward_import(run_graph: dict[str, set[str]]) -> None:
    """Positive control: a lazy import of the pytest face from core, and one sideways from
    judging into results, are both reported."""
    graph = dict(run_graph)
    graph["pytest_scylla.core.tiers"] = {"pytest_scylla.config.settings"}
    graph["pytest_scylla.config.options"] = {"pytest_scylla.session.collect"}
    graph["pytest_scylla.judging.panel"] = {"pytest_scylla.results.metrics"}
    breaches = layer_breaches(graph)
    assert "pytest_scylla.core.tiers imports pytest_scylla.config.settings" in breaches
    assert "pytest_scylla.config.options imports pytest_scylla.session.collect" in breaches
    assert "pytest_scylla.judging.panel imports pytest_scylla.results.metrics" in breaches


def test_only_the_face_sits_at_the_top_of_the_package() -> None:
    """Every other module lives in the package of its family (the package map of
    docs/development.md names each one)."""
    top = {path.stem for path in PACKAGE.glob("*.py")}
    assert top - TOP_LEVEL == set(), "move these into the package of their family"


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=False,
    )


def test_ruff_finds_nothing_and_the_formatter_changes_nothing() -> None:
    """ruff's rules (complexity C90 at 15 among them, pyproject.toml) on the package and the
    tests, and `ruff format`'s layout."""
    lint = _ruff("check", "--output-format=concise", "pytest_scylla", "tests")
    assert lint.returncode == 0, lint.stdout[-3000:]
    layout = _ruff("format", "--check", "pytest_scylla", "tests")
    assert layout.returncode == 0, f"run `ruff format pytest_scylla tests`:\n{layout.stdout}"


def test_complexity_exceptions_are_few_and_each_says_why() -> None:
    exceptions = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "noqa: C901" in line
    ]
    assert len(exceptions) <= MAX_COMPLEXITY_EXCEPTIONS, exceptions
    unexplained = [e for e in exceptions if not re.search(r"noqa: C901\W+\w+.{10,}", e)]
    assert unexplained == [], "say beside each `# noqa: C901` why it stays complex for now"


def test_the_complexity_rule_finds_a_complex_function(tmp_path: Path) -> None:
    """Positive control: the project's ruff settings report a function of complexity 16."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(15))
    (tmp_path / "dense.py").write_text(f"def dense(x):\n{branches}    return -1\n")
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--config",
            str(PACKAGE.parent / "pyproject.toml"),
            "--select",
            "C90",
            str(tmp_path / "dense.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "C901 `dense` is too complex (16 > 15)" in found.stdout


# The tests' layout (docs/development.md): in-process tests under unit/, mirroring the package's
# folders (`face` for its top-level modules); sessions under e2e/; the repository's own promises
# under project/. A unit test that starts a session belongs in e2e/.
TESTS = PACKAGE.parent / "tests"
SESSION_STARTERS = {"pytester", "mini", "standin", "runpytest", "runpytest_subprocess"}


def layout_problems(tests: Path) -> list[str]:
    problems = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if rel.parts[0] in ("fixtures", "reference"):  # the projects sessions copy
            continue
        if rel.parts[0] not in ("unit", "e2e", "project"):
            problems.append(f"{rel}: outside unit/, e2e/ and project/")
        elif rel.parts[0] == "unit":
            mirrored = rel.parts[1] == "face" or PACKAGE.joinpath(*rel.parts[1:-1]).is_dir()
            if len(rel.parts) < 3 or not mirrored:
                problems.append(f"{rel}: mirrors no folder of the package")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            used = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
            used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            if used & SESSION_STARTERS:
                problems.append(
                    f"{rel}: starts a session ({', '.join(sorted(used & SESSION_STARTERS))})"
                )
    return problems


def test_tests_are_laid_out_by_what_they_drive() -> None:
    assert layout_problems(TESTS) == []


def test_the_layout_check_finds_misplaced_tests(tmp_path: Path) -> None:
    """The control: a test file at the top, a unit folder of no package, a unit test that starts
    a session; each is reported, and a well-placed file is not."""
    files = {
        "test_loose.py": "def test_x():\n    pass\n",
        "unit/nowhere/test_y.py": "def test_y():\n    pass\n",
        "unit/results/test_z.py": "def test_z(pytester):\n    pytester.runpytest()\n",
        "unit/run/gateway/test_ok.py": "def test_ok(tmp_path):\n    pass\n",
        "e2e/test_session.py": "def test_s(pytester):\n    pytester.runpytest()\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert layout_problems(tmp_path) == [
        "test_loose.py: outside unit/, e2e/ and project/",
        "unit/nowhere/test_y.py: mirrors no folder of the package",
        "unit/results/test_z.py: starts a session (pytester, runpytest)",
    ]
