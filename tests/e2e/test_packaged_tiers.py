"""The paper's tier set ships with the package: a project without `tiers/` runs T0-T6 from it,
a project's own tier files can be laid over it (same name replaces, new names add), and the
manifest says which set was used.

Here the sessions; the in-process tests are in `tests/unit/formats/test_packaged_tiers.py`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.tiers import TierSet

from ..conftest import FIXTURES


def _items(result: pytest.RunResult) -> set[str]:
    return {line.split("::")[-1] for line in result.stdout.lines if "::" in line}


@pytest.fixture
def bare(pytester: pytest.Pytester) -> Path:
    """A project with one case (alpha, with its shared rubric) and no tiers folder."""
    shutil.copytree(FIXTURES / "mini" / "cases" / "alpha", pytester.path / "cases" / "alpha")
    shutil.copytree(FIXTURES / "mini" / "rubrics", pytester.path / "rubrics")
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider -p no:hypothesispytest\n")
    return pytester.path


def test_a_project_without_tiers_runs_the_packaged_set(
    bare: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    listed = pytester.runpytest("cases", "--co", "-q", "--scylla-oracle")
    expected = {f"alpha[{s.ref}-r1]" for t in TierSet(PACKAGED).tiers.values() for s in t.subtests}
    assert _items(listed) == expected
    assert len(expected) > 50  # all of T0-T6
    out = bare / "out"
    ran = pytester.runpytest(
        "cases", "-k", "T0-01", "-p", "no:xdist", *oracle, f"--scylla-out={out}"
    )
    ran.assert_outcomes(passed=1)
    ran.stdout.fnmatch_lines([f"scylla: runs=1 * tiers-dir={PACKAGED}"])
    sources = json.loads((out / "manifest.json").read_text())["tier_sources"]
    assert set(sources) == {f"T{i}" for i in range(7)}
    assert all(v.startswith("packaged (pytest-scylla ") for v in sources.values())


def test_project_tiers_laid_over_the_packaged_set(bare: Path, pytester: pytest.Pytester) -> None:
    """--scylla-packaged-tiers=under: the project's T6 replaces the packaged T6, its T9 adds a
    tier, and its subtests may use packaged blocks; the rest are the package's."""
    (bare / "tiers").mkdir()
    (bare / "tiers" / "T6.yaml").write_text(
        "tier: T6\nname: Own everything\nsubtests:\n  01-mine:\n    description: ours\n"
    )
    packaged_block = sorted((PACKAGED / "blocks").glob("*.md"))[0].stem
    (bare / "tiers" / "T9.yaml").write_text(
        f"tier: T9\nname: Extra\nsubtests:\n  01-block:\n    description: a packaged block\n"
        f"    claude_md: [{packaged_block}]\n"
    )
    # auto: the project's folder alone, which has no such block
    alone = pytester.runpytest("cases", "--co", "-q")
    alone.stdout.fnmatch_lines([f"tiers/T9.yaml:6: unknown CLAUDE.md block '{packaged_block}'*"])
    layered = pytester.runpytest("cases", "--co", "-q", "--scylla-packaged-tiers=under")
    items = _items(layered)
    assert "alpha[T6-01-r1]" in items
    assert "alpha[T9-01-r1]" in items
    packaged_t6 = {f"alpha[{s.ref}-r1]" for s in TierSet(PACKAGED).tiers["T6"].subtests}
    assert not (packaged_t6 - {"alpha[T6-01-r1]"}) & items  # T6 replaced, not merged
    assert {"alpha[T0-00-r1]", "alpha[T5-01-r1]"} <= items  # the package's other tiers
    wrong = pytester.runpytest("cases", "--co", "--scylla-packaged-tiers=beside")
    wrong.stderr.fnmatch_lines(["*--scylla-packaged-tiers='beside': expected auto, under or off*"])
