"""`scylla cases mine` on more-itertools (pinned in `fixtures/mining`): a fix of `recipes.py`
whose test is a `subTest` loop (pytest 9 prints `PASSED` for it while a subtest fails: the
text-reading miner rejected it as "nothing to fix"). One candidate only: one run of
`test_recipes.py` (145 tests, 9,858 subtests) takes about 25 s on 2 busy cores, and
`test_more.py` with it 40 s. The kept case's fail-to-pass list is checked here
independently: the test runs its hidden files at the parent and at the commit itself with
pytest's own JUnit XML report and compares the tests whose outcome changed."""

from __future__ import annotations

import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from pytest_scylla.cli import main

MINING = Path(__file__).parents[1] / "fixtures" / "mining"
SUBTEST_FIX = "49c991e4e5f142c326de6b92478f58851544f7dd"  # iter_index's negative bounds
RANGE = f"{SUBTEST_FIX}^..{SUBTEST_FIX}"  # test_recipes.py runs ~25 s here: one candidate


def _tree(repo: Path, sha: str, dest: Path) -> Path:
    dest.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", sha], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def _outcomes(tree: Path, files: list[str]) -> dict[str, str]:
    """{node id: passed/failed/skipped} from pytest's JUnit XML (a failing subtest is a
    <failure> of its test's <testcase>)."""
    report = tree.parent / f"{tree.name}.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:scylla",
         "-p", "no:randomly", f"--junitxml={report}", *files],
        cwd=tree, capture_output=True, check=False,
    )  # fmt: skip
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        file = next(f for f in files if classname.startswith(f[:-3].replace("/", ".")))
        inner = classname[len(file) - 2 :].replace(".", "::")
        node = f"{file}::{inner + '::' if inner else ''}{name}"
        kinds = {child.tag: child.get("type", "") for child in case}
        if "failure" in kinds or "error" in kinds:
            found[node] = "failed"
        elif kinds.get("skipped", "pytest.xfail") != "pytest.xfail":
            found[node] = "skipped"
        else:
            found[node] = "passed"
    return found


@pytest.mark.slow  # one candidate, four runs in bwrap, an oracle session (285 s at load 7)
def test_each_kept_cases_fail_to_pass_tests_are_exactly_those_whose_outcome_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "more-itertools"
    subprocess.run(
        ["git", "clone", "-q", str(MINING / "more-itertools.bundle"), str(repo)], check=True
    )
    out = tmp_path / "cases"
    mine = ["cases", "mine", str(repo), RANGE, "--paths", "more_itertools/recipes.py"]
    assert main([*mine, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    kept = sorted(p.name for p in out.iterdir())
    assert kept == [f"more-itertools-{SUBTEST_FIX[:10]}"], said
    assert f"noop {kept[0]}: its untouched source fails each fail-to-pass test" in said
    for name in kept:
        data = yaml.safe_load((out / name / "test.yaml").read_text())
        full = data["description"].split("Mined from commit ", 1)[1].split()[0]
        assert full.startswith(name[-10:])
        hidden = out / name / "hidden"
        files = sorted(str(p.relative_to(hidden)) for p in hidden.rglob("*.py"))
        before = _tree(repo, data["source"]["commit"], tmp_path / f"{name}-before")
        for file in files:
            (before / file).write_bytes((hidden / file).read_bytes())
        was = _outcomes(before, files)
        now = _outcomes(_tree(repo, full, tmp_path / f"{name}-after"), files)
        changed = sorted(n for n in now if now[n] == "passed" and was.get(n) == "failed")
        both = [n for n in now if now[n] == "passed" and was.get(n) == "passed"]
        f2p = shlex.split(data["checks"][0]["run"].split(" -p no:scylla ", 1)[1])
        assert sorted(f2p) == changed, name
        assert f"pass-to-pass: {len(both)};" in data["description"], name
    subtest = yaml.safe_load((out / f"more-itertools-{SUBTEST_FIX[:10]}" / "test.yaml").read_text())
    assert subtest["checks"][0]["run"].endswith(
        " tests/test_recipes.py::IterIndexTests::test_negative_start_and_stop"
    )
