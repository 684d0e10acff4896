"""Which stored runs `scylla report` counts (results/design.py), on shard folders written here
(the sessions that write real ones: tests/e2e/test_redteam_report.py, slow tier). Red team:
forged runs beyond the design, of another shard's share, in two shards, or moved to another cell
by editing their record are left out of the numbers and named; each with its positive control
(the same folders counted as they are)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core.runspec import RunKey, share
from pytest_scylla.results import design, tables


def _record(key: RunKey, passed: bool) -> dict[str, Any]:
    return {
        "run_key": key.folder,
        "case": key.case,
        "tier": key.tier,
        "subtest": key.subtest,
        "run": key.run,
        "outcome": "pass" if passed else "fail",
        "passed": passed,
        "score": 1.0 if passed else 0.0,
        "cost_usd": 0.1,
    }


def _folder(path: Path, index: int, records: list[dict[str, Any]], runs: int = 1) -> Path:
    path.mkdir()
    manifest = {"options": {"runs": runs}, "shard": {"index": index, "count": 2}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    (path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


CELLS = [RunKey(f"case-{c}", "T0", f"{s:02d}", 1) for c in range(4) for s in range(3)]


def _honest(tmp_path: Path) -> tuple[Path, Path]:
    """Two shards of one session: every run failed."""
    return tuple(  # type: ignore[return-value]
        _folder(
            tmp_path / f"shard-{i}",
            i,
            [_record(k, False) for k in CELLS if share(k.folder, 2) == i],
        )
        for i in (1, 2)
    )


def _append(folder: Path, records: list[dict[str, Any]]) -> None:
    with (folder / "runs.jsonl").open("a") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _passes(folders: list[Path]) -> tuple[int, int]:
    """(runs counted, of them passed)."""
    runs = tables.load(folders).runs
    return len(runs), sum(bool(r["passed"]) for r in runs)


def _counted_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        tables, "vet", lambda folders: design.Vetted([f.records for f in folders], [])
    )


def test_forged_runs_are_not_counted_and_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = _honest(tmp_path)
    assert _passes([one, two]) == (12, 0)
    theirs = [k for k in CELLS if share(k.folder, 2) == 1]
    beyond = [RunKey(k.case, k.tier, k.number, n) for k in CELLS for n in (2, 3)]
    new = next(
        k for i in range(99) if share((k := RunKey(f"new-{i}", "T0", "00", 1)).folder, 2) == 2
    )
    moved = _record(new, True) | {"tier": "T1", "subtest": "T1-00"}  # its key says T0
    forged = [_record(k, True) for k in theirs + beyond] + [moved]
    _append(two, forged)
    assert _passes([one, two]) == (12, 0)  # 0 % stays 0 %
    assert (
        main(["report", str(one), str(two), "--out", str(tmp_path / "out"), "--report", "none"])
        == 0
    )
    out = capsys.readouterr().out
    said = json.loads((tmp_path / "out" / "summary.json").read_text())["excluded"]
    assert len(said) == len(forged)
    assert f"EXCLUDED: {len(forged)} run(s) of these folders are not counted" in out
    assert f"{two}: run {theirs[0].folder}: its key falls to shard 1/2" in out
    over = next(k.folder for k in beyond if share(k.folder, 2) == 2)
    assert f"{two}: run {over}: run r" in "\n".join(said)
    assert "beyond the design's 1 run(s) per cell" in "\n".join(said)
    assert f"run {new.folder}: its tier is 'T1', its run key says 'T0'" in "\n".join(said)
    assert "... and" in out  # the terminal names 20, summary.json every one
    # control: counted as they are, the forged runs turn 0 % into most runs passed
    _counted_as_they_are(monkeypatch)
    assert _passes([one, two]) == (12 + len(forged), len(forged))


def test_a_run_in_two_shards_is_counted_in_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard's folder again under another name, its runs made passes: which copy is genuine
    cannot be told, so neither counts."""
    one, two = _honest(tmp_path)
    ones = [_record(k, True) for k in CELLS if share(k.folder, 2) == 1]
    _folder(tmp_path / "again", 1, ones)
    loaded = tables.load([one, two, tmp_path / "again"])
    assert (len(loaded.runs), sum(bool(r["passed"]) for r in loaded.runs)) == (12 - len(ones), 0)
    assert len(loaded.excluded) == 2 * len(ones)
    assert "in another shard folder too (every copy left out)" in loaded.excluded[0]
    _counted_as_they_are(monkeypatch)  # control: both copies counted (kept as separate runs)
    assert _passes([one, two, tmp_path / "again"]) == (12 + len(ones), len(ones))


def test_a_folder_that_is_not_a_shard_among_shards_is_not_counted(tmp_path: Path) -> None:
    one, two = _honest(tmp_path)
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "runs.jsonl").write_text(json.dumps(_record(RunKey("x", "T0", "00", 1), True)) + "\n")
    loaded = tables.load([one, two, stray])
    assert len(loaded.runs) == 12
    assert loaded.excluded == [
        f"{stray}: run x-T0-00-r1: stray is not a shard, and the other folders are shards of 2"
    ]


def test_the_shards_design_is_the_one_they_all_declare(tmp_path: Path) -> None:
    """A forged shard that declares more runs per cell does not widen the design."""
    ones = [k for k in CELLS if share(k.folder, 2) == 1]
    one = _folder(tmp_path / "one", 1, [_record(k, False) for k in ones], runs=1)
    wide = [RunKey(k.case, k.tier, k.number, n) for k in CELLS for n in (1, 2, 3)]
    twos = [k for k in wide if share(k.folder, 2) == 2]
    two = _folder(tmp_path / "two", 2, [_record(k, True) for k in twos], runs=3)
    loaded = tables.load([one, two])
    assert {r["run_number"] for r in loaded.runs} == {1}
    assert len(loaded.excluded) == sum(k.run > 1 for k in twos) > 0
    assert all("beyond the design's 1 run(s) per cell" in line for line in loaded.excluded)


def test_run_keys_are_parsed_and_paths_refused() -> None:
    assert RunKey.from_folder("test-001-T5-02-r3") == RunKey("test-001", "T5", "02", 3)
    key = RunKey("test-001", "T5", "02", 3, "claude-haiku-4-5")
    assert RunKey.from_folder(key.folder) == key
    assert RunKey.from_folder("../../outside-run") is None
    from pytest_scylla.core.runspec import folder_problem

    assert folder_problem("test-001-T5-02-r3") is None
    for bad in ("../../outside-run", "..", ".", "", "a\\b", "a\nb"):
        assert folder_problem(bad), bad


def test_compare_counts_the_same_runs_and_says_which_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_scylla.results.compare import differences as compare

    one, two = _honest(tmp_path)
    theirs = [_record(k, True) for k in CELLS if share(k.folder, 2) == 1]
    _append(two, theirs)  # runs of the other share, passed
    result = compare.compare([one, two], [one, two])
    assert any(n.startswith(f"EXCLUDED from {one} + {two}: ") for n in result["notes"])
    assert {t["n_candidate"] for t in result["tiers"]} == {12}  # a row per measure
    _counted_as_they_are(monkeypatch)  # control: the forged runs counted, and nothing said
    result = compare.compare([one, two], [one, two])
    assert not any("EXCLUDED" in n for n in result["notes"])
    assert {t["n_candidate"] for t in result["tiers"]} == {12 + len(theirs)}
