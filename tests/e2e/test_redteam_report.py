"""Red team: forged folders handed to `scylla report` (issue 44, class 6). Two real shards of one
session (the stand-in runner), then one of them forged: runs beyond `--scylla-runs`, runs of the
other shard's share, a run key naming a path out of `runs/`, a run file replaced by a link to a
file of the host's. The report keeps the honest numbers and names what it left out; each attack
has its positive control (the same forged folder with that defence turned off). The same
attacks on folders written by hand, in the default tier: tests/unit/results/test_design.py and
test_run_files.py."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core.runspec import RunKey, share
from pytest_scylla.results import design, inputs, run_files, tables

from ..conftest import workers
from ..support.forged_reads import SECRET, read_by_path


def _shards(standin: Path, pytester: pytest.Pytester) -> list[Path]:
    """Shards 1/2 and 2/2 of one session of the mini project, one run per cell."""
    folders = []
    for index in (1, 2):
        out = standin / f"shard-{index}"
        pytester.runpytest(
            "cases",
            *workers(0),
            "--scylla-runs=1",
            f"--scylla-shard={index}/2",
            f"--scylla-out={out}",
        )
        assert (out / "runs.jsonl").is_file()
        folders.append(out)
    return folders


def _records(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "runs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _append(folder: Path, records: list[dict[str, Any]]) -> None:
    with (folder / "runs.jsonl").open("a") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def _passed(rec: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**rec, "outcome": "pass", "passed": True, "score": 1.0, **changes}


def _as_run(key: str, number: int) -> str:
    """The key of run `number` of the cell of run `key`."""
    run = RunKey.from_folder(key)
    assert run is not None
    return dataclasses.replace(run, run=number).folder


def _report(folders: list[Path], out: Path, formats: str = "none") -> int:
    return main(["report", *map(str, folders), "--out", str(out), "--report", formats])


def _rates(out: Path) -> dict[str, tuple[int, float | None]]:
    summary = json.loads((out / "summary.json").read_text())
    return {t["tier"]: (t["n"], t["pass_rate"]) for t in summary["tiers"]}


def _no_vetting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defence off: every run of every folder counted as it is."""
    monkeypatch.setattr(
        tables, "vet", lambda folders: design.Vetted([f.records for f in folders], [])
    )


@pytest.mark.slow  # two sessions and their reports (by hand, fast: tests/unit/results)
def test_runs_beyond_the_design_or_of_the_other_share_are_not_counted(
    standin: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = _shards(standin, pytester)
    assert _report([one, two], standin / "honest") == 0
    honest = _rates(standin / "honest")
    # shard 2 forged: each of shard 1's runs again, passed; each of its own, passed, as r2, r3
    theirs = [_passed(r) for r in _records(one)]
    extra = [
        _passed(r, run=n, run_key=_as_run(r["run_key"], n)) for r in _records(two) for n in (2, 3)
    ]
    _append(two, theirs + extra)
    capsys.readouterr()
    assert _report([one, two], standin / "merged", "html") == 0
    out = capsys.readouterr().out
    assert _rates(standin / "merged") == honest  # the numbers of the honest shards
    summary = json.loads((standin / "merged" / "summary.json").read_text())
    assert len(summary["excluded"]) == len(theirs) + len(extra)
    assert f"EXCLUDED: {len(theirs) + len(extra)} run(s)" in out
    some = theirs[0]["run_key"]
    assert f"{two}: run {some}: its key falls to shard 1/2, not to this folder's 2/2" in out
    beyond = next(r["run_key"] for r in extra if share(r["run_key"], 2) == 2)
    assert f"{two}: run {beyond}: run r" in " ".join(summary["excluded"])
    assert "beyond the design's 1 run(s) per cell" in " ".join(summary["excluded"])
    html = (standin / "merged" / "report.html").read_text()
    assert "EXCLUDED:" in html
    assert some in html
    # control: counted as they are, the forged runs change the numbers, and nothing is said
    _no_vetting(monkeypatch)
    assert _report([one, two], standin / "forged") == 0
    forged = _rates(standin / "forged")
    assert sum(n for n, _ in forged.values()) == sum(n for n, _ in honest.values()) + len(
        theirs
    ) + len(extra)
    assert any((forged[t][1] or 0) > (honest[t][1] or 0) for t in honest)
    assert "EXCLUDED" not in capsys.readouterr().out


def test_the_same_run_in_two_shards_is_not_counted(
    standin: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shard folder given twice under two names (or a copy of a shard edited): the runs of
    both copies are left out, for which of them is genuine cannot be told."""
    one, two = _shards(standin, pytester)
    copy = standin / "shard-1-again"
    copy.mkdir()
    (copy / "manifest.json").write_text((one / "manifest.json").read_text())
    _append(copy, [_passed(r) for r in _records(one)])
    capsys.readouterr()
    assert _report([one, two, copy], standin / "merged") == 0
    summary = json.loads((standin / "merged" / "summary.json").read_text())
    assert len(summary["excluded"]) == 2 * len(_records(one))
    assert "in another shard folder too (every copy left out)" in summary["excluded"][0]
    assert summary["runs"] == len(_records(two))


@pytest.mark.slow  # two sessions and their reports (by hand, fast: tests/unit/results)
def test_a_run_key_naming_a_path_out_of_runs_is_refused(
    standin: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = _shards(standin, pytester)
    outside = standin / "outside-run"  # a folder beside the shards, none of theirs
    outside.mkdir()
    (outside / "diff.patch").write_text(f"{SECRET}\n")
    _append(two, [_passed(_records(two)[0], run_key="../../outside-run")])
    capsys.readouterr()
    assert _report([one, two], standin / "merged", "html") == 2
    err = capsys.readouterr().err
    assert f"{two}/runs.jsonl:" in err
    assert "run_key '../../outside-run' holds '/': a path, not a run folder's name; refused" in err
    assert "Traceback" not in err
    # control: run keys taken as they are and a run's files read by their paths, the file
    # outside the folders is in the report
    monkeypatch.setattr(inputs, "folder_problem", lambda key: None)
    _no_vetting(monkeypatch)
    read_by_path(monkeypatch)
    assert _report([one, two], standin / "forged", "html") == 0
    assert SECRET in (standin / "forged" / "report.html").read_text()


@pytest.mark.slow  # two sessions and their reports (by hand, fast: tests/unit/results)
def test_a_run_file_linked_to_a_host_file_is_not_read(
    standin: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = _shards(standin, pytester)
    host = standin / "host-file.txt"
    host.write_text(f"{SECRET}\n")
    key = _records(one)[0]["run_key"]
    (one / "runs" / key / "diff.patch").unlink(missing_ok=True)
    os.symlink(host, one / "runs" / key / "diff.patch")
    assert _report([one, two], standin / "merged", "html") == 0
    html = (standin / "merged" / "report.html").read_text()
    assert SECRET not in html
    assert "never through a link" in html
    # control: a file opened following links carries the host's file into the report
    monkeypatch.setattr(run_files, "FILE", run_files.FILE & ~os.O_NOFOLLOW)
    assert _report([one, two], standin / "forged", "html") == 0
    html = (standin / "forged" / "report.html").read_text()
    assert SECRET in html
