"""`scylla cases mine` on a corpus of four real projects nobody here wrote, pinned in
`fixtures/mining`, each with another layout: cachetools (a `src/` layout), toolz (plain pytest
inside the package), more-itertools (unittest with `subTest`, merge commits, a 5,564-line module
over the 25,000 tokens Claude Code reads of a file at once) and six (a root-level `test_six.py`,
where one test fails at every commit here for want of `_dbm`).

Each entry is one commit that the miner keeps. Mined as a user mines it (bwrap, its oracle
check through the real CLI, its noop check), the kept case is then held to what is found apart
from the miner: its hidden files run at the parent and at the fix in the sandbox with pytest's
own JUnit XML (`support/mining_truth.py`), and its fail-to-pass list must be exactly the tests
whose outcome changed, its pass-to-pass count the tests passing at both; and a `noop` session
over it must fail with its fail-to-pass check failing. One entry runs per commit, in turn
(`SCYLLA_TEST_ROTATION=<n>` picks another): a run of `test_more.py` takes about 40 s here, and
a more-itertools entry runs its tests some ten times."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pytest_scylla.cli.main import main

from ..conftest import rotation
from ..support.mining_truth import changed, fail_to_pass_failed, noop_runs

MINING = Path(__file__).parents[1] / "fixtures" / "mining"


@dataclass(frozen=True)
class Entry:
    bundle: str
    sha: str  # the commit mined (alone: `sha^..sha`)
    why: str  # what it shows
    f2p: tuple[str, ...] = ()  # its fail-to-pass tests, when the entry pins them by name


CORPUS = [
    Entry(
        "more-itertools",
        "49c991e4e5f142c326de6b92478f58851544f7dd",
        "iter_index's negative bounds: a recipes.py fix whose test is a subTest loop (pytest 9 "
        "prints PASSED for it; the text-reading miner rejected it as nothing to fix)",
        ("tests/test_recipes.py::IterIndexTests::test_negative_start_and_stop",),
    ),
    Entry(
        "six",
        "10a2b75b8be7b68eacfa168834d9938b77d2d7e3",
        "assertNotRegex, tested in the root-level test_six.py; test_move_items[dbm_ndbm] fails "
        "at both commits here (no _dbm) and is left out and deselected",
        ("test_six.py::test_assertNotRegex",),
    ),
    Entry(
        "more-itertools",
        "9ddc55c57390707d97d96302eea1992919c8d930",
        "a merge: chunked()'s guard against a negative n, in the 5,564-line (172 kB) more.py, "
        "which the oracle must edit through the real CLI past its 25,000-token Read cap",
        ("tests/test_more.py::ChunkedTests::test_negative",),
    ),
    Entry(
        "cachetools",
        "57d2e4813d9801f97034559e22428bac6f7c6c9b",
        "a src/ layout: the descriptor's inspection with obj=None (#387)",
        ("tests/test_cachedmethod.py::AutospecTest::test_autospec_no_warnings",),
    ),
    Entry(
        "toolz",
        "5a7e078c941c990dcaca53ac6920e5d5c0b1475f",
        "plain pytest inside the package: partition_all raises on an invalid length (#603)",
        ("toolz/tests/test_itertoolz.py::test_partition_all",),
    ),
]


def _picked() -> list[Entry]:
    """This commit's entry: each in turn (the whole corpus every five commits), one a run to
    keep the slow tier within CI's time (a more-itertools entry costs about 5 minutes)."""
    return [CORPUS[rotation() % len(CORPUS)]]


def _mine(entry: Entry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    repo = tmp_path / entry.bundle
    subprocess.run(
        ["git", "clone", "-q", str(MINING / f"{entry.bundle}.bundle"), str(repo)], check=True
    )
    out = tmp_path / "cases"
    assert main(["cases", "mine", str(repo), f"{entry.sha}^..{entry.sha}", "--out", str(out)]) == 0
    return repo, capsys.readouterr().out


@pytest.mark.slow  # per entry: four runs of its tests, an oracle session, two truth runs, a noop
@pytest.mark.parametrize("entry", _picked(), ids=lambda e: f"{e.bundle}-{e.sha[:10]}")
def test_a_kept_cases_fail_to_pass_tests_are_exactly_those_whose_outcome_changed(
    entry: Entry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_scylla.cli.mine import _sandbox

    repo, said = _mine(entry, tmp_path, capsys)
    out = tmp_path / "cases"
    name = f"{entry.bundle}-{entry.sha[:10]}"
    assert sorted(p.name for p in out.iterdir()) == [name], said
    assert re.search(rf"^ok   {name}: the reference solution passes all 2 checks", said, re.M)
    assert f"noop {name}: its untouched source fails each fail-to-pass test" in said
    case = out / name
    data = yaml.safe_load((case / "test.yaml").read_text())
    truth = changed(repo, case, _sandbox("bwrap"))
    assert truth.flipped, entry.why  # the independent run found the change
    assert truth.fail_to_pass == truth.flipped, entry.why
    if entry.f2p:
        assert tuple(truth.fail_to_pass) == entry.f2p
    assert f"pass-to-pass: {len(truth.both)};" in data["description"], entry.why
    records = noop_runs(out)
    assert [r["case"] for r in records] == [name]
    assert fail_to_pass_failed(records[0]), records[0].get("checks")
