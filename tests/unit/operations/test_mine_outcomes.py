"""`scylla cases mine`: each test's outcome read from a structured report, never from printed
text (issue 46). Real pytest runs (unisolated, `Sandbox()`: a second or two each) on a small
repository whose commits each break the old text parsing: a target test in the middle of 201,
a failing `subTest` pytest 9 prints as `PASSED`, a test skipped before the change, and a change
to `recipes.py` whose other test files must give its pass-to-pass tests. Each has its positive
control: the old parser, on the same runs' output, gets it wrong."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from pytest_scylla.cli.check_case import _verdict
from pytest_scylla.operations.mining import history, verify
from pytest_scylla.operations.mining import outcomes as mine_outcomes
from pytest_scylla.operations.mining import related as mine_related
from pytest_scylla.operations.mining import untouched as mine_untouched
from pytest_scylla.operations.mining import write as mine_write
from pytest_scylla.operations.mining.git import Source
from pytest_scylla.run.sandbox.base import Sandbox

from ...support.mining_repo import commit, git

CORE = "def keep(i):\n    return i if i != 100 else -1  # wrong for 100\n"


def many(numbers: range | list[int]) -> str:
    return "from lib.core import keep\n\n" + "".join(
        f"\n\ndef test_the_value_is_kept_for_number_{i:04}():\n    assert keep({i}) == {i}\n"
        for i in numbers
    )


MANY = many(range(201))  # the commit adds the test of 100, in the middle
TARGET = "tests/test_core.py::test_the_value_is_kept_for_number_0100"

UNIT = """import unittest

from lib import core


class TestHalve(unittest.TestCase):
    def test_halves(self):
        for i in range(0, 8, 2):
            with self.subTest(i=i):
                self.assertEqual(core.halve(i) * 2, i)

    @unittest.skipUnless(hasattr(core, "third"), "no third yet")
    def test_third(self):
        self.assertEqual(core.third(3), 1)
"""
RECIPES = "def first(xs):\n    return xs[0]\n"
TEST_RECIPES = "from lib.recipes import first\n\n\ndef test_first():\n    assert first([1]) == 1\n"
USES = "from lib import recipes\n\n\ndef test_uses():\n    assert recipes.first('ab') == 'a'\n"
LEGACY = "import lib.recipes\n\n\ndef test_legacy():\n    assert lib.recipes.gone()\n"
LAST = "from lib.recipes import last\n\n\ndef test_last():\n    assert last([1, 2]) == 2\n"
OLD = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (.+?)(?: - .*)?$")


def old_results(output: str) -> dict[str, bool]:
    """The parser this replaces: {node id: passed} from pytest's -rA summary."""
    found = {}
    for line in output.splitlines():
        if match := OLD.match(line.strip()):
            found[match.group(2).strip()] = match.group(1) in ("PASSED", "XFAIL")
    return found


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Source, dict[str, str]]]:
    repo = tmp_path_factory.mktemp("outcomes") / "lib"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    start = {"lib/__init__.py": "", "lib/core.py": CORE, "lib/recipes.py": RECIPES}
    start.update({"tests/test_recipes.py": TEST_RECIPES, "tests/test_uses.py": USES})
    without = many([i for i in range(201) if i != 100])
    commit(repo, "Start", {**start, "tests/test_legacy.py": LEGACY, "tests/test_core.py": without})
    fixed = CORE.replace(" if i != 100 else -1  # wrong for 100", "")
    shas = {"many": commit(repo, "Keep 100", {"lib/core.py": fixed, "tests/test_core.py": MANY})}
    halve = "\n\ndef halve(i):\n    return i // 2 if i != 4 else 0\n"
    commit(repo, "Add halve", {"lib/core.py": "def keep(i):\n    return i\n" + halve})
    shas["subtest"] = commit(
        repo,
        "Fix halve for 4; add third",
        {
            "lib/core.py": "def keep(i):\n    return i\n\n\ndef halve(i):\n    return i // 2\n"
            "\n\ndef third(i):\n    return i // 3\n",
            "tests/test_halve.py": UNIT,
        },
    )
    shas["recipes"] = commit(
        repo,
        "Add last",
        {
            "lib/recipes.py": RECIPES + "\n\ndef last(xs):\n    return xs[-1]\n",
            "tests/test_last.py": LAST,
        },
    )
    with history.opened(repo) as source:
        yield source, shas


def _verify(
    lib: tuple[Source, dict[str, str]], kind: str, private: Path
) -> tuple[verify.Verdict, list[verify.Ran]]:
    """The verdict on one commit of `lib`, from real runs; with every run it made."""
    source, shas = lib
    found = history.read(source, shas[kind])
    assert found is not None
    private.mkdir()
    real, seen = verify.sandboxed(Sandbox(), private, 60), []

    def run(files: list[str], tree: Path) -> verify.Ran:
        seen.append(real(files, tree))
        return seen[-1]

    return verify.verify(source, found, run, private), seen


def test_the_one_test_that_changed_among_201_is_exactly_the_fail_to_pass(
    lib: tuple[Source, dict[str, str]], tmp_path: Path
) -> None:
    verdict, runs = _verify(lib, "many", tmp_path / "p")
    assert verdict.kept, verdict.reason
    assert verdict.fail_to_pass == (TARGET,)
    assert len(verdict.pass_to_pass) == 200
    # the positive control: the cut -rA summary of the same runs misses the target
    before, after = old_results(runs[0].output), old_results(runs[2].output)
    assert TARGET not in after
    assert [n for n in after if after[n] and not before.get(n)] != [TARGET]


def test_a_failing_subtest_fails_its_test_and_a_test_skipped_before_is_no_fail_to_pass(
    lib: tuple[Source, dict[str, str]], tmp_path: Path
) -> None:
    verdict, runs = _verify(lib, "subtest", tmp_path / "p")
    assert verdict.kept, verdict.reason
    assert verdict.fail_to_pass == ("tests/test_halve.py::TestHalve::test_halves",)
    assert "tests/test_halve.py::TestHalve::test_third" not in verdict.pass_to_pass
    assert runs[0].outcomes["tests/test_halve.py::TestHalve::test_third"] == "skipped"
    # the positive control: pytest 9 prints PASSED for the test whose subTest failed
    assert old_results(runs[0].output)["tests/test_halve.py::TestHalve::test_halves"] is True
    assert "SUBFAILED" in runs[0].output


def test_a_change_to_recipes_runs_the_tests_of_recipes_too(
    lib: tuple[Source, dict[str, str]], tmp_path: Path
) -> None:
    """test_recipes.py by name, test_uses.py by `from lib import recipes`; test_legacy.py
    imports it too but fails at both commits: it adds nothing and rejects nothing."""
    verdict, runs = _verify(lib, "recipes", tmp_path / "p")
    assert runs[0].outcomes["tests/test_legacy.py::test_legacy"] == "failed"
    assert verdict.kept, verdict.reason
    assert verdict.fail_to_pass == ("tests/test_last.py::test_last",)
    assert verdict.related == ("tests/test_recipes.py", "tests/test_uses.py")
    assert verdict.pass_to_pass == (
        "tests/test_recipes.py::test_first",
        "tests/test_uses.py::test_uses",
    )
    # the positive control: the commit's own test file alone gives no pass-to-pass test
    source, shas = lib
    found = history.read(source, shas["recipes"])
    assert found is not None
    assert verify.own_files(found) == ["tests/test_last.py"]
    # the case runs them, from its hidden files, and counts them truthfully
    folder = mine_write.write(source, verdict, tmp_path / "cases")
    data = yaml.safe_load((folder / "test.yaml").read_text())
    assert "Fail-to-pass tests: 1; pass-to-pass: 2;" in data["description"]
    assert data["checks"][1]["run"].endswith(
        " tests/test_last.py tests/test_recipes.py tests/test_uses.py"
    )
    hidden = sorted(str(p.relative_to(folder / "hidden")) for p in folder.rglob("hidden/**/*.py"))
    assert hidden == ["tests/test_last.py", "tests/test_recipes.py", "tests/test_uses.py"]


def test_which_test_files_are_related_by_name_or_import(tmp_path: Path) -> None:
    assert mine_related.imports("from a.b import c, recipes  # x", ("a", "b", "recipes"))
    assert mine_related.imports("import more_itertools.recipes as r", ("more_itertools", "recipes"))
    assert mine_related.imports("  from six import moves", ("six",))
    assert not mine_related.imports("import more_itertools as mi", ("more_itertools", "recipes"))
    assert not mine_related.imports("# from a import recipes", ("a", "recipes"))
    found = history.Commit("s", "p", "x", "", (history.Change("src/pkg/more.py", "M", 1),))
    assert mine_related.modules(found) == [("pkg", "more")]
    for name in ("tests/test_more.py", "tests/more_test.py", "tests/test_other.py", "t/x.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("import os\n")
    os.symlink("test_more.py", tmp_path / "tests" / "test_link.py")
    (tmp_path / "tests" / "test_link_more.py").symlink_to("/etc/passwd")
    assert mine_related.related(tmp_path, found, []) == ["tests/more_test.py", "tests/test_more.py"]
    assert mine_related.related(tmp_path, found, ["tests/test_more.py"]) == ["tests/more_test.py"]


def _report(where: Path, text: str) -> Path:
    where.mkdir()
    (where / mine_outcomes.REPORT).write_text(text)
    return where


LINES = (
    '{"node": "t.py::a", "when": "call", "outcome": "passed", "sub": true}\n'
    '{"node": "t.py::a", "when": "call", "outcome": "failed", "sub": true}\n'
    '{"node": "t.py::a", "when": "call", "outcome": "passed", "sub": false}\n'
    '{"node": "t.py::b", "when": "call", "outcome": "xfailed", "sub": false}\n'
    '{"exit": 1}\n'
)


def test_the_report_is_read_as_untrusted_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link (to a good report even, or for its folder) is not followed, a report over the
    limit or with a line
    that is not a test's outcome is refused whole; the positive control reads the same lines
    from a regular file."""
    good = _report(tmp_path / "good", LINES)
    assert mine_outcomes.read(tmp_path, "good") == {"t.py::a": "failed", "t.py::b": "passed"}
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / mine_outcomes.REPORT).symlink_to(good / mine_outcomes.REPORT)
    with pytest.raises(mine_outcomes.ReportError, match="not followed"):
        mine_outcomes.read(tmp_path, "linked")
    monkeypatch.setattr(mine_outcomes, "LIMIT", len(LINES) - 1)
    with pytest.raises(mine_outcomes.ReportError, match="larger than"):
        mine_outcomes.read(tmp_path, "good")
    monkeypatch.undo()
    _report(tmp_path / "forged", LINES.replace('"failed"', '"won"'))
    with pytest.raises(mine_outcomes.ReportError, match="line 2 is not a test's outcome"):
        mine_outcomes.read(tmp_path, "forged")
    with pytest.raises(mine_outcomes.ReportError, match="no report"):
        mine_outcomes.read(tmp_path, ".")
    # the folder itself replaced with a link (to the good report's): refused too
    (tmp_path / "swapped").symlink_to(good)
    with pytest.raises(mine_outcomes.ReportError, match="not followed"):
        mine_outcomes.read(tmp_path, "swapped")


def test_a_mined_case_whose_untouched_source_passes_its_fail_to_pass_check_is_refused() -> None:
    checks = [{"name": "fail-to-pass", "passed": True}, {"name": "hidden-tests", "passed": True}]
    rec = {"outcome": "pass", "checks": checks}
    said = _verdict(
        "c", {**rec, "source_checks": {"fail-to-pass": True, "hidden-tests": False}}, "T0-01"
    )
    assert said.startswith("FAIL c: the untouched source passes the fail-to-pass check")
    # the positive control: failing the fail-to-pass check itself is what a case must do
    said = _verdict(
        "c", {**rec, "source_checks": {"fail-to-pass": False, "hidden-tests": False}}, "T0-01"
    )
    assert said.startswith("ok   c:")


def test_a_case_whose_untouched_source_passes_one_of_its_fail_to_pass_tests_is_refused(
    lib: tuple[Source, dict[str, str]], tmp_path: Path
) -> None:
    """The written case, its untouched source laid out as a session would and its fail-to-pass
    tests run alone, each read from the report: the subTest fix's test fails there (kept);
    a case that also names the test skipped before the change is refused, naming it."""
    source, shas = lib
    found = history.read(source, shas["subtest"])
    assert found is not None
    halves, third = (f"tests/test_halve.py::TestHalve::{n}" for n in ("test_halves", "test_third"))
    for name, f2p in (("good", (halves,)), ("bad", (halves, third))):
        verdict = verify.Verdict(found, "", f2p, (), verify.PYTEST)
        folder = mine_write.write(source, verdict, tmp_path / name)
        private = tmp_path / f"{name}-private"
        private.mkdir()
        run = verify.sandboxed(Sandbox(), private, 60)
        said = mine_untouched.problem(folder, source, run, private)
        if name == "good":
            assert said == ""
        else:
            assert said == (
                "the untouched source does not fail 1 of its 2 fail-to-pass test(s) "
                f"({third}: skipped): a noop agent would pass them"
            )


def test_related_files_that_time_out_or_waver_are_left_out_and_the_commit_is_judged_on_its_own(
    lib: tuple[Source, dict[str, str]], tmp_path: Path
) -> None:
    """On given outcomes: the related files making the run at the commit time out are left
    out (the commit's own files run again alone, and kept); a related file whose tries
    disagree adds nothing; the commit's own file wavering makes it flaky."""
    source, shas = lib
    found = history.read(source, shas["recipes"])
    assert found is not None
    last, first = "tests/test_last.py::test_last", "tests/test_recipes.py::test_first"
    uses = "tests/test_uses.py::test_uses"
    calls: list[list[str]] = []

    def runs(mode: str) -> verify.Runner:
        def run(files: list[str], tree: Path) -> verify.Ran:
            calls.append(files)
            before, tries = tree.name == "before", len(calls)
            outcomes: dict[str, mine_outcomes.Outcome] = {last: "failed" if before else "passed"}
            if len(files) > 1:
                if mode == "timeout" and not before:
                    return verify.Ran(None, "", {})
                wavers = mode == "related" or (mode == "own" and not before)
                outcomes[first] = "passed"
                outcomes["tests/test_legacy.py::test_legacy"] = "failed"
                outcomes[uses] = "failed" if wavers and tries % 2 else "passed"
                if mode == "own" and not before and tries % 2:
                    outcomes[last] = "failed"
            return verify.Ran(int(before), "", outcomes)

        return run

    said = verify.verify(source, found, runs("timeout"), tmp_path / "a")
    assert (said.reason, said.fail_to_pass, said.related) == ("", (last,), ())
    assert [len(files) for files in calls] == [4, 4, 4, 1, 1, 1, 1]
    said = verify.verify(source, found, runs("related"), tmp_path / "b")
    assert (said.reason, said.related, said.pass_to_pass) == (
        "",
        ("tests/test_recipes.py",),
        (first,),
    )
    said = verify.verify(source, found, runs("own"), tmp_path / "c")
    assert said.reason == (
        f"flaky: a second try gave other results ({last}: passed then failed)"
    ), said.reason  # names the test that differed
