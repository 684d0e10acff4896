"""Issue #29: `scylla import` of the original implementation's data round-trips through
`scylla report` (an impl_rate above 1 clamped with a note, a results folder of several
experiments merged with a note per source), and the bad inputs it names get one clear line."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

# the original's published dryrun (its run tree and its CSV exports, as the authors published
# them; the logs the import does not read left out), as
# tests/unit/results/test_report_cli.py reads it
REFERENCE = Path(__file__).parents[2] / "fixtures" / "dryrun"
RAW = DATA = REFERENCE
JUDGMENT = Path("T0/00/run_01/judge/judge_01/judgment.json")


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _over(data: dict[str, Any]) -> None:
    """More points achieved than the maximum, as the original recorded an impl_rate of 1.028."""
    cat = data["criteria_scores"]["functional"]
    cat["achieved"] = float(cat["max"]) + 0.4


def _runs(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]


def test_real_published_folder_round_trips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(RAW), str(tmp_path / "imp")]) == 0
    assert main(["report", "--report", "none", str(tmp_path / "imp")]) == 0
    assert len(_runs(tmp_path / "imp")) == 7
    assert "greater than the maximum" not in capsys.readouterr().err


def test_impl_rate_above_one_is_clamped_with_a_note_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = shutil.copytree(RAW, tmp_path / "src")
    _edit(src / JUDGMENT, _over)
    assert main(["import", str(src), str(tmp_path / "imp")]) == 0
    err = capsys.readouterr().err
    assert f"{src / JUDGMENT}: impl_rate 1.0" in err
    assert "above 1" in err
    assert "stored as 1" in err
    manifest = json.loads((tmp_path / "imp" / "manifest.json").read_text())
    assert main(["report", "--report", "none", str(tmp_path / "imp")]) == 0
    runs = _runs(tmp_path / "imp")
    assert len(runs) == 7  # the rest reported too
    planted = next(r for r in runs if r["imported_from"] == str(src / "T0/00/run_01"))
    assert planted["judges"][0]["impl_rate"] == 1.0
    assert "above 1" in planted["import_notes"][0]
    assert manifest["notes"] == planted["import_notes"]
    # positive control: the unclamped value is what the report refuses (it did before)
    planted["judges"][0]["impl_rate"] = 1.0461538461538462
    (tmp_path / "imp" / "runs.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["report", "--report", "none", str(tmp_path / "imp")]) == 2
    assert "greater than the maximum of 1" in capsys.readouterr().err


def test_results_folder_of_several_experiments_merged_with_a_note_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    for name in ("2026-01-20-exp1", "2026-01-21-exp2"):  # the same experiment_id in both
        shutil.copytree(RAW, results / name)
    (results / "nested").mkdir()
    shutil.copytree(RAW / "T0", results / "nested" / "exp3" / "T0")  # no result.json: its name
    assert main(["import", str(results), str(tmp_path / "imp")]) == 0
    err = capsys.readouterr().err
    for name, count in (("2026-01-20-exp1", 7), ("2026-01-21-exp2", 7), ("nested/exp3", 1)):
        assert f"{results / name}: {count} runs imported as case" in err
    runs = _runs(tmp_path / "imp")
    assert len(runs) == 15  # none dropped, none merged into another's run key
    assert len({r["run_key"] for r in runs}) == 15
    assert {r["case"] for r in runs} == {"test-001", "test-001@2026-01-21-exp2", "exp3"}
    sources = json.loads((tmp_path / "imp" / "manifest.json").read_text())["sources"]
    assert [(s["case"], s["runs"]) for s in sources] == [
        ("test-001", 7),
        ("test-001@2026-01-21-exp2", 7),
        ("exp3", 1),
    ]
    assert main(["report", "--report", "none", str(tmp_path / "imp")]) == 0
    assert "15 pass" in capsys.readouterr().out


def test_folder_without_experiments_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["import", str(tmp_path / "empty"), str(tmp_path / "imp")]) == 2
    assert "point at an experiment folder" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["missing", "null"])
def test_criterion_without_achieved_is_said_and_read_as_na(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = shutil.copytree(RAW, tmp_path / "src")

    def drop(data: dict[str, Any]) -> None:
        cat = data["criteria_scores"]["code_quality"]
        if how == "missing":
            del cat["achieved"]
        else:
            cat["achieved"] = None

    _edit(src / JUDGMENT, drop)
    assert main(["import", str(src), str(tmp_path / "imp")]) == 0
    err = capsys.readouterr().err
    said = "has no achieved value" if how == "missing" else "has achieved: null"
    assert f"{src / JUDGMENT}: criterion 'code_quality' {said}; read as N/A" in err
    judge = next(
        r for r in _runs(tmp_path / "imp") if r["imported_from"] == str(src / "T0/00/run_01")
    )["judges"][0]
    cats = json.loads((src / JUDGMENT).read_text())["criteria_scores"]
    rest = [c for n, c in cats.items() if n != "code_quality"]
    # N/A: in neither the achieved points nor the maximum
    assert judge["impl_rate"] == pytest.approx(
        sum(c["achieved"] for c in rest) / sum(c["max"] for c in rest)
    )
    assert main(["report", "--report", "none", str(tmp_path / "imp")]) == 0


def _csv_copy(tmp_path: Path, change: Any = None, delimiter: str = ",") -> Path:
    folder = shutil.copytree(DATA, tmp_path / f"data{len(list(tmp_path.iterdir()))}")
    path = folder / "runs.csv"
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    if change:
        change(rows)
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, delimiter=delimiter).writerows(rows)
    return folder


def test_word_in_score_column_names_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def word(rows: list[list[str]]) -> None:
        rows[2][rows[0].index("score")] = "excellent"

    folder = _csv_copy(tmp_path, word)
    assert main(["report", "--report", "none", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"{folder / 'runs.csv'}:3: column 'score' is 'excellent'; expected a number, "
        "N/A or an empty cell"
    )


def test_semicolon_csv_is_read_as_the_comma_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spreadsheet in a comma-decimal locale saves with `;`: read as meant (the same numbers),
    and a file whose rows are split by another separator than its header is refused."""
    comma, semi = _csv_copy(tmp_path), _csv_copy(tmp_path, delimiter=";")
    said = []
    for folder in (comma, semi):
        assert main(["report", "--report", "none", str(folder)]) == 0
        said.append(capsys.readouterr().out)
    note = "runs.csv: not comma-separated: read with ';' as the separator"
    assert note not in said[0]  # the comma file is read without a word
    assert f"{semi / 'runs.csv'}: not comma-separated: read with ';'" in said[1]  # says so
    summary = [json.loads((f / "summary.json").read_text()) for f in (comma, semi)]
    assert summary[0]["tiers"] == summary[1]["tiers"]
    assert summary[0]["runs"] == 7

    def mixed(rows: list[list[str]]) -> None:
        rows[1:] = [[";".join(row)] for row in rows[1:]]

    folder = _csv_copy(tmp_path, mixed)
    capsys.readouterr()
    assert main(["report", "--report", "none", str(folder)]) == 2
    assert f"{folder / 'runs.csv'}:2: 1 cells, the header has" in capsys.readouterr().err


def test_runs_planted_inside_a_run_are_not_imported(tmp_path: Path) -> None:
    """Red team: the agent's workspace is inside its run folder; an experiment tree it wrote
    there is not imported as runs (the walk stops at an experiment folder)."""
    src = shutil.copytree(RAW, tmp_path / "src")
    planted = src / "T0/00/run_01/workspace/fake"
    shutil.copytree(RAW / "T0", planted / "T0")
    assert main(["import", str(src), str(tmp_path / "imp")]) == 0
    assert len(_runs(tmp_path / "imp")) == 7
    assert not any("workspace" in r["imported_from"] for r in _runs(tmp_path / "imp"))
    # positive control: the planted tree is a run tree the importer reads when pointed at
    assert main(["import", str(planted), str(tmp_path / "control")]) == 0
    assert len(_runs(tmp_path / "control")) == 1
