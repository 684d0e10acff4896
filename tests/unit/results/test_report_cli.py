"""`scylla report`: rebuild the outputs from stored folders, merge shards, read paper CSVs.

Here the in-process tests; the sessions are in `tests/e2e/test_report_cli.py`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.results import metrics, report, text_tables
from pytest_scylla.results.paper_tables import paper_tables
from pytest_scylla.results.tables import Tables, load

DRYRUN = Path(__file__).parents[2] / "fixtures" / "dryrun"


def test_paper_format_csvs_reproduce_alpha_and_the_frontier(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(DRYRUN), "--out", str(tmp_path / "out")]) == 0
    # T5's row, each number from outside the package: 1 run that passed (runs.csv); the exact
    # Clopper-Pearson interval for 1 of 1 is [(0.05/2)^(1/1), 1] = [2.5%, 100%], printed "2%";
    # mean score 0.983 (the paper's Table 16) to two places; grade A (Table 16); CoP = cost
    # when every run passes: $0.06531415 (runs.csv), the paper's Frontier CoP ("$0.065", 7.2)
    # the frontier keeps its small-sample warning: one run says little
    assert (
        "T5        1         100% [2%, 100%]   0.98     A   $0.0653   $0.0653 <- frontier,"
        "  n=1 < 10: interval is wide"
    ) in capsys.readouterr().out
    results = json.loads((tmp_path / "out" / "statistical_results.json").read_text())
    # the paper, section 7.5: "Krippendorff's α (interval): -0.117" (test_stats derives it by
    # hand from the judges' scores too)
    assert round(results["krippendorff_alpha"]["alpha"], 3) == -0.117
    assert results["omnibus"][0]["note"] == "one run per group: too few to compare"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["frontier"]["tier"] == "T5"


def test_report_input_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "missing: no such folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path), str(tmp_path)]) == 2
    assert "pass --out DIR" in capsys.readouterr().err
    assert main(["report", str(tmp_path)]) == 2
    assert "no runs.jsonl, runs/*/run.json or runs.csv here" in capsys.readouterr().err
    a, b = (json.dumps({"run_key": key, "tier": "T0", "outcome": "pass"}) for key in "ab")
    (tmp_path / "runs.jsonl").write_text(f'{a}\n{{"run_ke\n{b}\n')
    assert main(["report", str(tmp_path)]) == 2
    assert "runs.jsonl:2: not a JSON record" in capsys.readouterr().err
    # the last line cut short by a kill: left out, saying so, and the rest is reported
    (tmp_path / "runs.jsonl").write_text(f'{a}\n{{"run_ke')
    assert main(["report", str(tmp_path), "--report", "none"]) == 0
    assert (
        "runs.jsonl:2: a record cut short (the session was killed while writing it) is "
        "left out" in capsys.readouterr().out
    )


def test_import_of_the_papers_dryrun_reproduces_its_exports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "2026-01-20T06-13-07-test-001"  # the paper's experiment name
    assert main(["import", str(DRYRUN), str(dest)]) == 0
    assert "imported 7 runs" in capsys.readouterr().out
    assert main(["report", str(dest), "--report", "none"]) == 0  # subtests.csv is a summary
    keys = {
        "runs.csv": ("tier", "subtest", "run_number"),
        "judges.csv": ("tier", "subtest", "run_number", "judge_number"),
        "criteria.csv": ("tier", "subtest", "run_number", "judge_number", "criterion"),
        "subtests.csv": ("tier", "subtest"),
    }
    for name, key in keys.items():
        with (DRYRUN / name).open() as handle:
            paper = {tuple(r[k] for k in key): r for r in csv.DictReader(handle)}
        with (dest / name).open() as handle:
            ours = {tuple(r[k] for k in key): r for r in csv.DictReader(handle)}
        assert set(ours) == set(paper), name
        for row_key, row in paper.items():  # every paper column, cell for cell
            assert {c: ours[row_key][c] for c in row} == row, (name, row_key)
    assert main(["report", str(dest)]) == 0  # and it re-analyses like any experiment
    assert "$0.0653 <- frontier" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "nothing"), str(tmp_path / "x")]) == 2
    assert "no T<k>/<subtest>/run_NN/run_result.json here" in capsys.readouterr().err


def test_a_rebuilt_folder_keeps_its_sessions_decisions(tmp_path: Path) -> None:
    """--scylla-stop=decided: `scylla report` of the session's folder shows the decisions it
    took again (subtests.csv's column, tables.md's section); the decisions are the session's."""
    dest = tmp_path / "exp"
    assert main(["import", str(DRYRUN), str(dest)]) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    decided = {"cell": "test-001-T1-01", "reference": "test-001-T0-00", "decision": "futile"}
    decided |= {"decided_at": 1, "low": -1.0, "high": 1.0, "runs": 1, "runs_saved": 9}
    manifest["stop"] = {"alpha": 0.05, "decisions": [{**decided, "cost_saved_usd": 1.2}]}
    (dest / "manifest.json").write_text(json.dumps(manifest))
    assert main(["report", str(dest), "--report", "md"]) == 0
    with (dest / "subtests.csv").open() as handle:
        said = {(r["tier"], r["subtest"]): r["decision"] for r in csv.DictReader(handle)}
    assert said[("T0", "00")] == "reference"
    assert said[("T1", "01")] == "futile at run 1"
    assert "| test-001-T1-01 | test-001-T0-00 | futile | 1 |" in (dest / "tables.md").read_text()
    assert json.loads((dest / "manifest.json").read_text())["stop"]["decisions"][0] == {
        **decided,
        "cost_saved_usd": 1.2,
    }


@pytest.mark.slow  # the report loads in chromium in the default suite
def test_html_and_markdown_reports_are_self_contained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dryrun"
    assert main(["report", str(DRYRUN), "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    figures = sorted(p.stem for p in (out / "figures").glob("*.png"))
    assert {
        "pass_rate",
        "cop",
        "pareto",
        "tokens",
        "latency",
        "scores",
        "criteria",
        "judges",
        "judge_scores",
        "grades",
    } == set(figures)
    assert html.count("data:image/png;base64,") == len(figures)
    assert sorted(p.stem for p in (out / "figures").glob("*.svg")) == figures
    assert "http://" not in html
    assert "https://" not in html  # nothing is fetched
    assert "SIMULATED" not in html  # the paper's runs were real
    assert "Krippendorff's α (interval, judges × runs): -0.117" in html  # the paper, 7.5
    md = (out / "tables.md").read_text()
    assert "| T5 | 1 | 1.000 |" in md  # 1 run (runs.csv), pass rate 1.000 (Table 16)
    assert main(["report", str(DRYRUN), "--out", str(out), "--report", "pdf"]) == 2
    assert "unknown report format(s) pdf" in capsys.readouterr().err
    # the same runs give the same figures, byte for byte (no dates, ids or unseeded resampling)
    again = tmp_path / "again"
    assert main(["report", str(DRYRUN), "--out", str(again), "--report", "html"]) == 0
    for path in sorted((out / "figures").iterdir()):
        assert path.read_bytes() == (again / "figures" / path.name).read_bytes(), path.name


# The paper's printed Tables 16-18 (section 7) and Table 19, at their printed precision.
TABLE_16 = {
    "T0": (1.000, 0.973, 0.973, "A", 0.14),
    "T1": (1.000, 0.970, 0.970, "A", 0.13),
    "T2": (1.000, 0.983, 0.983, "A", 0.14),
    "T3": (1.000, 0.983, 0.983, "A", 0.13),
    "T4": (1.000, 0.9595, 0.9595, "A", 0.17),
    "T5": (1.000, 0.983, 0.983, "A", 0.07),
    "T6": (1.000, 0.943, 0.943, "A", 0.25),
}
TABLE_17 = {
    "T0": (29, 656, 23106, 112686, 136477),
    "T1": (25, 558, 23266, 91477, 115326),
    "T2": (29, 711, 23350, 113858, 137948),
    "T3": (25, 668, 23352, 91771, 115816),
    "T4": (23, 725, 23556, 91828, 116132),
    "T5": (26, 625, 4629, 109368, 114648),
    "T6": (29, 722, 44337, 218778, 263866),
}
TABLE_18 = {
    "T0": (35.3, 167.8, 203.1, 82.6),
    "T1": (29.3, 178.0, 207.3, 85.9),
    "T2": (36.8, 161.7, 198.5, 81.5),
    "T3": (29.9, 149.1, 179.0, 83.3),
    "T4": (41.2, 137.0, 178.2, 76.9),
    "T5": (24.8, 128.4, 153.1, 83.8),
    "T6": (28.4, 141.1, 169.5, 83.2),
}
TABLE_19 = {
    "functional": (1.000, 0.000),
    "code_quality": (1.000, 0.000),
    "proportionality": (0.940, 0.083),
    "build_pipeline": (1.000, 0.000),
    "overall_quality": (0.975, 0.039),
}


def _printed(value: float, printed: float) -> bool:
    """`value` shown with as many decimals as the paper printed equals the printed number."""
    text = repr(printed)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(value, decimals) == printed


def test_the_papers_tables_16_to_19_come_out_of_its_imported_dryrun(tmp_path: Path) -> None:

    dest = tmp_path / "2026-01-20T06-13-07-test-001"
    assert main(["import", str(DRYRUN), str(dest)]) == 0
    paper = paper_tables(load([dest]))
    for row in paper["tiers"]:
        rate, mean, median, grade, cop = TABLE_16[row["tier"]]
        assert _printed(row["pass_rate"], rate)
        assert _printed(row["mean_score"], mean)
        assert _printed(row["median_score"], median)
        assert row["grade"] == grade
        assert _printed(row["cop"], cop)
    for row in paper["tokens"]:
        assert (
            row["input_tokens"],
            row["output_tokens"],
            row["cache_creation_tokens"],
            row["cache_read_tokens"],
            row["total_tokens"],
        ) == TABLE_17[row["tier"]]
    for row in paper["latency"]:
        agent, judge, total, share = TABLE_18[row["tier"]]
        assert _printed(row["agent_seconds"], agent)
        assert _printed(row["judge_seconds"], judge)
        assert _printed(row["total_seconds"], total)
        # the paper divided its rounded times (T1: 178.0 / 207.3 = 85.9 %; exactly 85.85 %)
        assert abs(100 * row["judge_share"] - share) <= 0.1
    assert {
        r["criterion"]: (round(r["mean"], 3), round(r["sd"], 3)) for r in paper["criteria"]
    } == TABLE_19
    assert main(["report", str(dest), "--report", "md"]) == 0
    md = (dest / "tables.md").read_text()
    assert "## Tier summary (the paper's Table 16)" in md
    assert "| T5 | 1 | 1.000 | 0.983 | 0.983 | A | 0.0653 |" in md  # dollars to four places
    tex = (dest / "tables.tex").read_text()
    tables = tex.count("\\begin{table}")
    assert tables == md.count("\n## ") >= 9  # every Markdown table has its LaTeX twin
    assert tex.count("\\toprule") == tex.count("\\midrule") == tex.count("\\bottomrule") == tables
    assert "T5 & 1 & 1.000 & 0.983 & 0.983 & A & 0.0653 \\\\" in tex
    assert "code\\_quality & 1.000 & 0.000 & 21" in tex  # underscores escaped
    assert "alpha (interval) = -0.117" in tex  # the paper, section 7.5


def test_latex_tables_render_infinity_and_escape_text() -> None:
    rows = [
        {
            "tier": "T0",
            "outcome": "fail",
            "passed": False,
            "score": 0.1,
            "cost_usd": 0.5,
            "grade": "F",
            "case_id": "c_1",
            "experiment": "e",
        }
    ] * 2 + [
        {
            "tier": "T1",
            "outcome": "pass",
            "passed": True,
            "score": 0.9,
            "cost_usd": 0.25,
            "grade": "A",
            "case_id": "c_1",
            "experiment": "e",
        }
    ] * 2
    tables = Tables(runs=rows)
    summary = {"experiment": "50%_run #1", "simulated": True, "tiers": metrics.group_summary(rows)}
    tex = text_tables.latex(
        summary, report.statistical_results(tables), paper_tables(tables, summary["tiers"])
    )
    assert "% 50\\%\\_run \\#1:" in tex
    assert "% SIMULATED MODEL" in tex
    assert "(SIMULATED)}" in tex
    t0 = next(line for line in tex.splitlines() if line.startswith("T0 & 2 &"))
    assert "$\\infty$" in t0
    assert "∞" not in tex
    assert "n=2 \\textless{} 10" in t0
