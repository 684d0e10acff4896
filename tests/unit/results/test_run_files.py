"""A forged folder's paths (results/run_files.py, core/runspec.folder_problem): a run key naming
a path out of `runs/` is refused, and a run's files are read inside its run folder without
following a link, on folders written here (the same attacks on real shards:
tests/e2e/test_redteam_report.py, slow tier). Each attack has its positive control: the same
folder read with that defence off puts a file of the host's into the report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core.runspec import share
from pytest_scylla.results import design, inputs, run_files, tables
from pytest_scylla.results.html import runs as html_runs

from ...support.forged_reads import SECRET, read_by_path


def _record(key: str) -> dict[str, Any]:
    return {"run_key": key, "tier": "T0", "outcome": "pass", "passed": True, "score": 1.0}


def _shard(folder: Path, keys: list[str]) -> Path:
    """Shard 1 of 2 with these runs, each with its run folder."""
    folder.mkdir()
    manifest = {"options": {"runs": 1}, "shard": {"index": 1, "count": 2}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "runs.jsonl").write_text("".join(json.dumps(_record(k)) + "\n" for k in keys))
    for key in keys:
        if "/" not in key:
            (folder / "runs" / key).mkdir(parents=True)
    return folder


KEY = next(k for i in range(99) if share(k := f"case-{i}-T0-01-r1", 2) == 1)


def _details(folder: Path) -> str:
    """The drill-downs report.html holds for the folder's runs."""
    loaded = tables.load([folder])
    return "".join(html_runs.run_details(loaded, loaded.sources))


def _host_file(tmp_path: Path) -> Path:
    host = tmp_path / "host-file.txt"
    host.write_text(f"{SECRET}\n")
    return host


def test_a_run_key_naming_a_path_out_of_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside-run"  # beside the shard folder, none of its own
    outside.mkdir()
    (outside / "diff.patch").write_text(f"{SECRET}\n")
    shard = _shard(tmp_path / "shard-1", [KEY, "../../outside-run"])
    assert main(["report", str(shard), "--out", str(tmp_path / "out"), "--report", "none"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{shard}/runs.jsonl:2: run_key '../../outside-run' holds '/'")
    assert "refused: a run key is a name such as test-001-T5-02-r3" in err
    # control: keys taken as they are and a run's files read by their paths
    monkeypatch.setattr(inputs, "folder_problem", lambda key: None)
    monkeypatch.setattr(tables, "vet", lambda f: design.Vetted([s.records for s in f], []))
    read_by_path(monkeypatch)
    assert SECRET in _details(shard)


def test_run_files_refuse_a_key_that_is_a_path() -> None:
    with pytest.raises(inputs.ReportInputError, match="not in the runs/ folder"):
        run_files.read(Path("shard/runs/../../x"), "diff.patch", 10)
    with pytest.raises(inputs.ReportInputError, match="not in the runs/ folder"):
        run_files.read(Path("shard/elsewhere/key"), "diff.patch", 10)
    with pytest.raises(inputs.ReportInputError, match=r"'\.\./x' holds '/'"):
        run_files.read(Path("shard/runs/key"), "../x", 10)


def test_a_run_file_linked_to_a_host_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = _host_file(tmp_path)
    shard = _shard(tmp_path / "shard-1", [KEY])
    (shard / "runs" / KEY / "diff.patch").symlink_to(host)
    (shard / "runs" / KEY / "transcript.jsonl").symlink_to(host)
    shown = _details(shard)
    assert SECRET not in shown
    assert f"{shard / 'runs' / KEY / 'diff.patch'}: not read (a link or not a folder" in shown
    monkeypatch.setattr(run_files, "FILE", run_files.FILE & ~os.O_NOFOLLOW)  # control
    assert SECRET in _details(shard)


def test_a_run_folder_linked_elsewhere_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "diff.patch").write_text(f"{SECRET}\n")
    shard = _shard(tmp_path / "shard-1", [KEY])
    (shard / "runs" / KEY).rmdir()
    (shard / "runs" / KEY).symlink_to(elsewhere)
    assert SECRET not in _details(shard)
    # control: a run folder found and opened following links
    monkeypatch.setattr(tables, "run_folder", lambda folder, key: (folder / "runs" / key).is_dir())
    monkeypatch.setattr(run_files, "FOLDER", run_files.FOLDER & ~os.O_NOFOLLOW)
    assert SECRET in _details(shard)


def test_a_run_json_linked_to_a_host_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of run folders only (no runs.jsonl): a run.json that is a link is not read."""
    host = tmp_path / "host.json"
    host.write_text(json.dumps(_record(KEY)))
    shard = tmp_path / "shard"
    (shard / "runs" / KEY).mkdir(parents=True)
    (shard / "runs" / KEY / "run.json").symlink_to(host)
    out = tmp_path / "out"
    assert main(["report", str(shard), "--out", str(out), "--report", "none"]) == 2
    assert "run.json: not read (a link or not a folder on the way)" in capsys.readouterr().err
    monkeypatch.setattr(run_files, "FILE", run_files.FILE & ~os.O_NOFOLLOW)  # control
    assert main(["report", str(shard), "--out", str(out), "--report", "none"]) == 0
    assert KEY in (out / "runs.csv").read_text()  # the linked file read as the run's record
