"""Several cases in one experiment of the original implementation: its CSV export (all cases in
one `runs.csv`, `judges.csv`, `criteria.csv`, not-applicable numbers written `N/A` or left
empty) and its run trees of the same runs give the same statistics, keyed by case as well as
tier, subtest and run; the judge agreement is checked against `krippendorff` called directly."""

from __future__ import annotations

import csv
import json
import random
import shutil
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from pytest_scylla.cli.main import main

CASES = ["test-001", "test-002", "test-003"]
TIERS = ["T0", "T1"]
RUNS = [1, 2, 3]
JUDGES = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5"]
CATEGORIES = ["functional", "code_quality", "build_pipeline"]
FIELDS = {"agent_model": "Sonnet 4.5", "subtest": "01"}


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _experiment(root: Path) -> dict[tuple[str, str, int], list[float]]:
    """`root/export/` (the CSVs) and `root/trees/<case>/` (the run trees) of one experiment:
    3 cases × 2 tiers × 3 runs × 3 judges, where the cases share tier, subtest and run numbers.
    `build_pipeline` does not apply in T0 (N/A, once an empty cell). Returns each run's judge
    scores, keyed by (case, tier, run)."""
    rng = random.Random(15)
    scores: dict[tuple[str, str, int], list[float]] = {}
    runs, judges, criteria = [], [], []
    (root / "export").mkdir(parents=True)
    for case in CASES:
        tree = root / "trees" / case
        tree.mkdir(parents=True)
        (tree / "result.json").write_text(
            json.dumps(
                {
                    "config": {
                        "experiment_id": case,
                        "models": ["claude-sonnet-4-5-20250929"],
                        "judge_models": JUDGES,
                    }
                }
            )
        )
        for tier in TIERS:
            for run in RUNS:
                quality = rng.uniform(0.2, 1.0)  # the judges agree around it, not exactly
                marks = [round(min(1.0, max(0.0, quality + rng.gauss(0, 0.08))), 2) for _ in JUDGES]
                scores[case, tier, run] = marks
                score = sum(marks) / len(marks)
                passed = score >= 0.6
                tokens = rng.randint(100, 900)
                ident = {"experiment": case, **FIELDS, "tier": tier, "run_number": run}
                runs.append(
                    {
                        **ident,
                        "score": score,
                        "impl_rate": sorted(marks)[1],
                        "passed": passed,
                        "grade": "A" if passed else "F",
                        "cost_usd": 0.1,
                        "duration_seconds": 200.0,
                        "agent_duration_seconds": 30.0,
                        "judge_duration_seconds": 170.0,
                        "input_tokens": tokens,
                        "output_tokens": tokens,
                        "cache_creation_tokens": tokens,
                        "cache_read_tokens": tokens,
                        "total_tokens": 4 * tokens,
                        "exit_code": 0,
                    }
                )
                folder = tree / tier / "01" / f"run_{run:02d}"
                (folder / "agent").mkdir(parents=True)
                (folder / "run_result.json").write_text(
                    json.dumps(
                        {
                            "run_number": run,
                            "exit_code": 0,
                            "cost_usd": 0.1,
                            "duration_seconds": 200.0,
                            "agent_duration_seconds": 30.0,
                            "judge_duration_seconds": 170.0,
                            "judge_score": score,
                            "judge_passed": passed,
                            "judge_grade": "A" if passed else "F",
                            "token_stats": {
                                k: tokens
                                for k in (
                                    "input_tokens",
                                    "output_tokens",
                                    "cache_creation_tokens",
                                    "cache_read_tokens",
                                )
                            },
                            "judges": [
                                {"model": m, "judge_number": n + 1} for n, m in enumerate(JUDGES)
                            ],
                        }
                    )
                )
                for number, (model, mark) in enumerate(zip(JUDGES, marks, strict=True), 1):
                    judge = {**ident, "judge_model": model, "judge_number": number}
                    judges.append(
                        {
                            **judge,
                            "judge_score": mark,
                            "judge_impl_rate": mark,
                            "judge_passed": mark >= 0.6,
                            "judge_grade": "A",
                            "judge_is_valid": True,
                            "judge_reasoning": "ok",
                        }
                    )
                    categories: dict[str, dict[str, Any]] = {}
                    for name in CATEGORIES:
                        if name == "build_pipeline" and tier == "T0":  # not applicable
                            cell = "" if run == 1 and number == 1 else "N/A"
                            categories[name] = {
                                "score": "N/A",
                                "achieved": "N/A",
                                "max": "N/A",
                                "items": {},
                            }
                            value: dict[str, Any] = dict.fromkeys(
                                ("criterion_score", "criterion_achieved", "criterion_max"), cell
                            )
                        else:
                            categories[name] = {
                                "score": mark,
                                "achieved": 2 * mark,
                                "max": 2.0,
                                "items": {},
                            }
                            value = {
                                "criterion_score": mark,
                                "criterion_achieved": 2 * mark,
                                "criterion_max": 2.0,
                            }
                        criteria.append({**judge, "criterion": name, **value})
                    (folder / "judge" / f"judge_{number:02d}").mkdir(parents=True)
                    (folder / "judge" / f"judge_{number:02d}" / "judgment.json").write_text(
                        json.dumps(
                            {
                                "score": mark,
                                "passed": mark >= 0.6,
                                "grade": "A",
                                "is_valid": True,
                                "reasoning": "ok",
                                "criteria_scores": categories,
                            }
                        )
                    )
    for name, rows in (("runs", runs), ("judges", judges), ("criteria", criteria)):
        _write_csv(root / "export" / f"{name}.csv", rows)
    return scores


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both paths reported once (shared by the tests that read them)."""
    root = tmp_path_factory.mktemp("multicase")
    scores = _experiment(root)
    assert main(["report", str(root / "export"), "--out", str(root / "csv"), "--report", "md"]) == 0
    for case in CASES:
        assert main(["import", str(root / "trees" / case), str(root / case)]) == 0
    assert (
        main(
            [
                "report",
                *(str(root / case) for case in CASES),
                "--out",
                str(root / "trees-out"),
                "--report",
                "md",
            ]
        )
        == 0
    )
    return {"root": root, "scores": scores, "csv": root / "csv", "trees": root / "trees-out"}


def _read(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


def test_the_export_and_the_run_trees_give_identical_statistics(reports: dict[str, Any]) -> None:
    from_csv, from_trees = reports["csv"], reports["trees"]
    assert _read(from_csv, "statistical_results.json") == _read(
        from_trees, "statistical_results.json"
    )
    assert _read(from_csv, "summary.json")["tiers"] == _read(from_trees, "summary.json")["tiers"]
    # every table alike, the title (the folder's name) apart
    assert (from_csv / "tables.md").read_text().splitlines()[1:] == (
        from_trees / "tables.md"
    ).read_text().splitlines()[1:]
    md = (from_csv / "tables.md").read_text()
    assert "| score | 2 | 18 |" in md  # every table states its n: the test's too


def test_judge_agreement_counts_every_run_of_every_case(reports: dict[str, Any]) -> None:
    scores: dict[tuple[str, str, int], list[float]] = reports["scores"]
    matrix = np.array([[marks[j] for marks in scores.values()] for j in range(len(JUDGES))])
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    merged: dict[tuple[str, int], list[float]] = {}  # what keying without the case gave
    for (_, tier, run), marks in scores.items():
        merged[tier, run] = marks
    wrong = krippendorff.alpha(
        reliability_data=np.array([[m[j] for m in merged.values()] for j in range(len(JUDGES))]),
        level_of_measurement="interval",
    )
    assert abs(expected - wrong) > 0.01  # the data tells the two apart
    for folder in (reports["csv"], reports["trees"]):
        stats = _read(folder, "statistical_results.json")
        assert stats["krippendorff_alpha"]["runs"] == len(scores) == 18
        assert stats["krippendorff_alpha"]["alpha"] == pytest.approx(expected, abs=1e-9)
        assert {pair["n"] for pair in stats["judge_pairs"]} == {18}


def test_not_applicable_criteria_are_left_out_not_read_as_numbers(reports: dict[str, Any]) -> None:
    scores: dict[tuple[str, str, int], list[float]] = reports["scores"]
    t1 = [mark for (_, tier, _), marks in scores.items() if tier == "T1" for mark in marks]
    row = next(
        line
        for line in (reports["csv"] / "tables.md").read_text().splitlines()
        if line.startswith("| build_pipeline |")
    )
    mean, _, n = (cell.strip() for cell in row.strip("|").split("|")[1:])
    assert int(n) == len(t1) == 27  # T1's judgments only: T0's N/A and empty cells left out
    assert float(mean) == pytest.approx(sum(t1) / len(t1), abs=5e-4)
    passes = {
        tier: sum(sum(m) / 3 >= 0.6 for (_, t, _), m in scores.items() if t == tier)
        for tier in TIERS
    }
    tiers = {t["tier"]: t for t in _read(reports["csv"], "summary.json")["tiers"]}
    assert {tier: tiers[tier]["passes"] for tier in TIERS} == passes
    assert {t["n"] for t in tiers.values()} == {9}


def test_two_exports_merged_keep_each_judge_with_its_run(
    reports: dict[str, Any], tmp_path: Path
) -> None:
    """A copy of the export merged with it: the copy's runs are renamed, and its judges
    follow them (they kept the old keys and merged again into 18 runs)."""
    out = tmp_path / "merged"
    export = reports["root"] / "export"
    shutil.copytree(export, tmp_path / "copy")
    assert (
        main(["report", str(export), str(tmp_path / "copy"), "--out", str(out), "--report", "md"])
        == 0
    )
    stats = _read(out, "statistical_results.json")
    assert stats["krippendorff_alpha"]["runs"] == 36
    assert {pair["n"] for pair in stats["judge_pairs"]} == {36}


def _row(md: str, title: str, tier: str) -> list[str]:
    """The cells of a tier's row in the table under `title` in tables.md."""
    section = md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in section.splitlines() if ln.startswith(f"| {tier} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_missing_numbers_are_left_out_of_means_and_counted_in_n(
    reports: dict[str, Any], tmp_path: Path
) -> None:
    """Runs without tokens (empty cells) are not zeros: the token table's mean is over the
    runs that have them, its n says how many; with no duration at all the latency is "-"."""
    export = tmp_path / "export"
    shutil.copytree(reports["root"] / "export", export)
    with (export / "runs.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row["run_number"] == "3":
            for column in (
                "input_tokens",
                "output_tokens",
                "cache_creation_tokens",
                "cache_read_tokens",
                "total_tokens",
            ):
                row[column] = ""
        if row["tier"] == "T1":
            row["duration_seconds"] = row["judge_duration_seconds"] = "N/A"
    _write_csv(export / "runs.csv", rows)
    assert (
        main(["report", str(export), "--out", str(tmp_path / "out"), "--report", "md,html"]) == 0
    )  # the figures read the same cells
    assert {p.stem for p in (tmp_path / "out" / "figures").iterdir()} >= {"tokens", "latency"}
    md = (tmp_path / "out" / "tables.md").read_text()
    t0 = [int(r["input_tokens"]) for r in rows if r["tier"] == "T0" and r["input_tokens"]]
    cells = _row(md, "Token breakdown", "T0")
    assert int(cells[1]) == len(t0)
    assert float(cells[2]) == pytest.approx(sum(t0) / len(t0), abs=0.05)
    assert len(t0) == 6
    latency = _row(md, "Latency breakdown", "T1")
    assert latency[1] == "0"  # n: no T1 run has a duration
    assert latency[4:] == ["-"] * 4  # judge, total seconds, the share, TTFT: unknown, not 0
    assert _row(md, "Tier summary", "T1")[1] == "9"


def _rewrite(path: Path, change: Any) -> list[dict[str, Any]]:
    """Rewrite a CSV row by row (`change(row)` returns the rows to write for it)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [out for row in csv.DictReader(handle) for out in change(row)]
    _write_csv(path, rows)
    return rows


def test_an_export_of_two_agent_models_keeps_each_models_runs_and_judges(
    reports: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same tier, subtest and run number under two agent models are two runs (the model
    enters the key), each with its own judges; a row given twice is refused, with its line."""
    export = tmp_path / "export"
    shutil.copytree(reports["root"] / "export", export)
    for name in ("runs", "judges", "criteria"):
        _rewrite(export / f"{name}.csv", lambda r: [r, {**r, "agent_model": "Haiku 4.5"}])
    out = tmp_path / "out"
    assert main(["report", str(export), "--out", str(out), "--report", "none"]) == 0
    stats = _read(out, "statistical_results.json")
    assert (stats["n_runs"], stats["krippendorff_alpha"]["runs"]) == (36, 36)
    assert {pair["n"] for pair in stats["judge_pairs"]} == {36}
    _rewrite(export / "runs.csv", lambda r: [r, r] if r["run_number"] == "2" else [r])
    capsys.readouterr()
    assert main(["report", str(export), "--out", str(out), "--report", "none"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{export / 'runs.csv'}:5: run test-001/Sonnet 4.5/T0-01-r2 is also at line 4; expected "
        "one row per run (experiment, tier, subtest, run_number)"
    ]


def test_empty_exports_empty_validity_cells_and_spreadsheet_exponents_read_as_meant(
    reports: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "export"
    shutil.copytree(reports["root"] / "export", export)
    # a judge whose validity nobody wrote down is not an invalid judge
    _rewrite(export / "judges.csv", lambda r: [{**r, "judge_is_valid": ""}])
    (export / "criteria.csv").write_text("\r\n")  # as the plugin exports no rows
    _rewrite(export / "runs.csv", lambda r: [{**r, "cost_usd": "1,5E-05"}])
    with (export / "runs.csv").open(encoding="utf-8") as handle:
        text = handle.read().replace(",", ";").replace('"1;5E-05"', "1,5E-05")
    (export / "runs.csv").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["report", str(export), "--out", str(out), "--report", "none"]) == 0, (
        capsys.readouterr().err
    )
    stats = _read(out, "statistical_results.json")
    assert stats["krippendorff_alpha"]["runs"] == 18
    tiers = _read(out, "summary.json")["tiers"]
    assert [t["mean_cost"] for t in tiers] == [pytest.approx(1.5e-05)] * 2


def test_an_imported_run_without_token_counts_is_left_out_of_the_token_means(
    reports: dict[str, Any], tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(reports["root"] / "trees" / "test-001", tree)
    for path in tree.glob("T0/01/run_0[12]/run_result.json"):
        data = json.loads(path.read_text())
        del data["token_stats"]
        path.write_text(json.dumps(data))
    assert main(["import", str(tree), str(tmp_path / "imported")]) == 0
    assert main(["report", str(tmp_path / "imported"), "--report", "md"]) == 0
    md = (tmp_path / "imported" / "tables.md").read_text()
    run3 = json.loads((tree / "T0/01/run_03/run_result.json").read_text())["token_stats"]
    cells = _row(md, "Token breakdown", "T0")
    assert (cells[1], float(cells[2])) == ("1", run3["input_tokens"])
