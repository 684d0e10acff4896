"""Every file under cases/, tiers/ and rubrics/ is valid, used, and consistent: each case's
reference solution passes its checks and its untouched source does not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.formats.resources import check_resource
from pytest_scylla.formats.rubric import load_rubric
from pytest_scylla.formats.spec import CATEGORIES, Case, load_case
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.run.checks import run_checks

ROOT = Path(__file__).resolve().parents[2]
TIERS = TierSet(ROOT / "tiers")
CASE_DIRS = sorted(p.parent for p in (ROOT / "cases").glob("*/test.yaml"))
# running a case's checks takes seconds (test-003's suite ~15 s): the first case's run in the
# default suite, every case's in the slow tier
CHECKED = [
    pytest.param(d, id=d.name, marks=() if i == 0 else pytest.mark.slow)
    for i, d in enumerate(CASE_DIRS)
]
RUBRICS = sorted((ROOT / "rubrics").glob("*.yaml"))
SUBTESTS = [s.ref for t in TIERS.tiers.values() for s in t.subtests]


def load(case_dir: Path) -> Case:
    return load_case(case_dir / "test.yaml", ROOT / "rubrics", known_tiers=TIERS.names)


def test_tiers_t0_to_t6_each_with_two_subtests() -> None:
    assert not TIERS.errors, "\n".join(str(e) for e in TIERS.errors.values())
    assert list(TIERS.tiers) == [f"T{k}" for k in range(7)]
    for tier in TIERS.tiers.values():
        assert len(tier.subtests) >= 2, tier.name
    t0 = {s.name: s for s in TIERS.tiers["T0"].subtests}
    assert TIERS.resolve("T0-00").system_prompt.mode == "none"
    assert "00-empty" in t0
    assert "01-vanilla" in t0


@pytest.mark.parametrize("ref", SUBTESTS)
def test_every_subtest_resolves(ref: str) -> None:
    sub = TIERS.resolve(ref)
    assert sub.system_prompt is not None
    if sub.tier == "T5":  # hybrids are explicit compositions
        assert sub.extends
    for kind in ("claude_md", "skills", "agents", "mcp_servers"):
        for name in getattr(sub, kind):
            assert TIERS.resource_path(kind, name).is_file()


def test_resource_counts_and_every_resource_is_used() -> None:
    used: dict[str, set[str]] = {k: set() for k in ("claude_md", "skills", "agents", "mcp_servers")}
    for ref in SUBTESTS:
        sub = TIERS.resolve(ref)
        for kind, names in used.items():
            names.update(getattr(sub, kind))
    present = {
        "claude_md": {p.stem for p in (ROOT / "tiers/blocks").glob("*.md")},
        "skills": {p.parent.name for p in (ROOT / "tiers/skills").glob("*/SKILL.md")},
        "agents": {p.stem for p in (ROOT / "tiers/agents").glob("*.md")},
        "mcp_servers": {p.stem for p in (ROOT / "tiers/mcp").glob("*.json")},
    }
    assert present == used, "a resource is declared nowhere (or named but missing)"
    assert len(present["claude_md"]) >= 8
    assert len(present["skills"]) >= 4
    assert len(present["agents"]) >= 6
    assert {"memory", "sequential-thinking", "filesystem"} <= present["mcp_servers"]
    orchestrators = [
        n
        for n in present["agents"]
        if "Agent" in (ROOT / f"tiers/agents/{n}.md").read_text().split("---")[1]
    ]
    assert len(orchestrators) >= 2, "T4 needs at least two orchestrators"
    t4_agents = {a for s in TIERS.tiers["T4"].subtests for a in TIERS.resolve(s.ref).agents}
    assert set(orchestrators) <= t4_agents


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in (ROOT / "tiers").rglob("*")
        if (p.is_file() and p.parent.name in ("blocks", "agents", "mcp")) or p.name == "SKILL.md"
    ),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_resource_file_is_valid(path: Path) -> None:
    kind = {"blocks": "claude_md", "agents": "agents", "mcp": "mcp_servers"}.get(
        path.parent.name, "skills"
    )
    name = path.parent.name if kind == "skills" else path.stem
    assert check_resource(kind, name, path) == []  # type: ignore[arg-type]


def test_no_stray_files_under_tiers() -> None:
    """Every file under tiers/ is a tier, a resource, a prompt a subtest names, a file an MCP
    server declares, or part of a skill folder."""
    expected = {t.file for t in TIERS.tiers.values()}
    for ref in SUBTESTS:
        sub = TIERS.resolve(ref)
        if sub.system_prompt and sub.system_prompt.file:
            expected.add(sub.system_prompt.file)
    for pattern in ("blocks/*.md", "agents/*.md", "mcp/*.json"):  # each checked above
        expected.update(p.resolve() for p in (ROOT / "tiers").glob(pattern))
    for server in (ROOT / "tiers/mcp").glob("*.json"):
        for rel in json.loads(server.read_text()).get("files", []):
            expected.add((server.parent / rel).resolve())
    files = {
        p.resolve()
        for p in (ROOT / "tiers").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and "skills" not in p.parts
    }
    assert files - expected == set()


def test_local_mcp_server_speaks_json_rpc(tmp_path: Path) -> None:
    server = json.loads((ROOT / "tiers/mcp/project-facts.json").read_text())
    script = ROOT / "tiers/mcp" / server["files"][0]
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
    ]
    proc = subprocess.run(
        [sys.executable, str(script), "--root", str(tmp_path)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["result"]["tools"]
    assert replies[2]["error"]["code"] == -32601
    tool = replies[1]["result"]["tools"][0]["name"]
    call = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }
    proc = subprocess.run(
        [sys.executable, str(script), "--root", str(tmp_path)],
        input=json.dumps(requests[0]) + "\n" + json.dumps(call) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    result = json.loads(proc.stdout.splitlines()[1])["result"]
    assert result["content"][0]["type"] == "text"
    assert not list(tmp_path.rglob("__pycache__"))


@pytest.mark.parametrize("path", RUBRICS, ids=lambda p: p.name)
def test_shared_rubric_is_valid(path: Path) -> None:
    rubric = load_rubric(path)
    assert abs(sum(c.weight for c in rubric.categories) - 1) < 1e-6


def test_at_least_five_cases_in_distinct_categories() -> None:
    cases = [load(d) for d in CASE_DIRS]
    assert len(cases) >= 5
    assert len({c.category for c in cases}) >= 5
    assert all(c.category in CATEGORIES for c in cases)


def test_hello_world_follows_the_paper() -> None:
    case = load(ROOT / "cases/test-001")
    weights = {c.name: c.weight for c in case.rubric.categories}
    assert weights == {
        "functional": 0.35,
        "code_quality": 0.20,
        "proportionality": 0.15,
        "build_pipeline": 0.10,
        "overall_quality": 0.20,
    }
    assert case.rubric.pass_threshold == 0.60
    assert any(c.expect_stdout == ("exact", "Hello, World!\n") for c in case.checks)


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_case_files_are_all_accounted_for(case_dir: Path) -> None:
    case = load(case_dir)
    owned = [case.file, case.prompt]
    if case.rubric.path.is_relative_to(case_dir.resolve()):
        owned.append(case.rubric.path)
    folders = [p for p in (case.source.path, case.hidden, case.solution) if p]
    for path in case_dir.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            resolved = path.resolve()
            assert resolved in owned or any(resolved.is_relative_to(f) for f in folders), (
                f"{path} is not part of the case"
            )


def _workspace(case: Case, tmp_path: Path, solved: bool) -> Path:
    ws = tmp_path / ("solved" if solved else "unsolved")
    assert case.source.path is not None
    shutil.copytree(case.source.path, ws)
    if solved:
        assert case.solution is not None
        assert case.solution.is_dir()
        shutil.copytree(case.solution, ws, dirs_exist_ok=True)
    if case.hidden is not None:
        shutil.copytree(case.hidden, ws, dirs_exist_ok=True)
    return ws


@pytest.mark.parametrize("case_dir", CHECKED)
def test_reference_solution_passes_every_check(case_dir: Path, tmp_path: Path) -> None:
    case = load(case_dir)
    results = run_checks(
        case, _workspace(case, tmp_path, solved=True), os.environ, tmp_path / "fresh"
    )
    failed = {r.name: (r.reason, r.stdout[-500:], r.stderr[-500:]) for r in results if not r.passed}
    assert failed == {}


@pytest.mark.parametrize("case_dir", CHECKED)
def test_untouched_source_fails_a_required_check(case_dir: Path, tmp_path: Path) -> None:
    case = load(case_dir)
    results = {
        r.name: r
        for r in run_checks(
            case, _workspace(case, tmp_path, solved=False), os.environ, tmp_path / "fresh"
        )
    }
    required = {i.check for i in case.rubric.items if i.kind == "check" and i.required}
    assert required, "a case needs at least one required check item"
    assert any(not results[name].passed for name in required)


def test_shared_rubric_serves_a_case_with_the_checks_it_names(tmp_path: Path) -> None:
    case_dir = tmp_path / "cases/demo"
    (case_dir / "src").mkdir(parents=True)
    (case_dir / "prompt.md").write_text("Fix it.\n")
    (case_dir / "test.yaml").write_text(
        "id: demo\nname: Demo\ncategory: bug-fixing\nsource: {path: src}\nprompt: prompt.md\n"
        "rubric: python-change\nchecks:\n  - {name: hidden-tests, run: 'true'}\n"
        "  - {name: lint, run: 'true'}\n"
    )
    case = load_case(case_dir / "test.yaml", ROOT / "rubrics", known_tiers=TIERS.names)
    assert case.rubric.name == "python-change"
    assert {i.check for i in case.rubric.items if i.kind == "check"} == {"hidden-tests", "lint"}
