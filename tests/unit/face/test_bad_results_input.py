"""Every bad input to `scylla report` and `scylla import` ends in one `path[:line]: ...` line on
stderr and exit code 2: never a traceback, never a number read wrong. Each entry of the
catalogue breaks one thing in a small good input that the positive controls report with 0.

Here the in-process tests; the sessions are in `tests/e2e/test_bad_results_input.py`."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main

from ...support.original_tree import RUN_DIR, run_tree

RUNS_HEADER = [
    "experiment",
    "agent_model",
    "tier",
    "subtest",
    "run_number",
    "score",
    "impl_rate",
    "passed",
    "grade",
    "cost_usd",
    "duration_seconds",
    "agent_duration_seconds",
    "judge_duration_seconds",
    "input_tokens",
    "output_tokens",
    "cache_creation_tokens",
    "cache_read_tokens",
    "total_tokens",
    "exit_code",
]  # the original implementation's runs.csv
RUNS = [
    [
        "tiny",
        "Sonnet 4.5",
        "T0",
        "00",
        "1",
        "0.9",
        "0.95",
        "True",
        "A",
        "0.25",
        "100.5",
        "40.5",
        "60",
        "10",
        "20",
        "30",
        "40",
        "100",
        "0",
    ],
    [
        "tiny",
        "Sonnet 4.5",
        "T1",
        "01",
        "1",
        "0.75",
        "N/A",
        "False",
        "C",
        "0.5",
        "",
        "50",
        "70",
        "11",
        "21",
        "31",
        "41",
        "104",
        "1",
    ],
]
JUDGES_HEADER = [
    "experiment",
    "agent_model",
    "tier",
    "subtest",
    "run_number",
    "judge_model",
    "judge_number",
    "judge_score",
    "judge_impl_rate",
    "judge_passed",
    "judge_grade",
    "judge_is_valid",
    "judge_reasoning",
]
JUDGES = [
    [
        "tiny",
        "Sonnet 4.5",
        tier,
        sub,
        "1",
        model,
        number,
        score,
        "0.5",
        passed,
        "B",
        "True",
        "fine, mostly; a 0,5 in the text stays text",
    ]
    for tier, sub, scores, passed in (
        ("T0", "00", ("0.9", "0.8"), "True"),
        ("T1", "01", ("0.75", "0.5"), "False"),
    )
    for (model, number), score in zip((("opus", "1"), ("haiku", "2")), scores, strict=True)
]
CRITERIA_HEADER = [
    "experiment",
    "agent_model",
    "tier",
    "subtest",
    "run_number",
    "judge_model",
    "judge_number",
    "criterion",
    "criterion_score",
    "criterion_achieved",
    "criterion_max",
]
CRITERIA = [
    ["tiny", "Sonnet 4.5", "T0", "00", "1", "opus", "1", "functional", "1.0", "3.5", "3.5"],
    ["tiny", "Sonnet 4.5", "T1", "01", "1", "opus", "1", "functional", "0.5", "N/A", ""],
]


def _write_csv(
    path: Path, header: list[str], rows: list[list[str]], *, excel: bool = False
) -> None:
    """A CSV as the original writes it, or (`excel`) as a spreadsheet in a decimal-comma
    locale saves it again: a byte-order mark, `;` separators, 0,75 and TRUE/FALSE."""

    def cell(value: str) -> str:
        if not excel:
            return value
        if value in ("True", "False"):
            return value.upper()
        try:
            float(value)
        except ValueError:
            return value
        return value.replace(".", ",")

    with path.open("w", newline="", encoding="utf-8-sig" if excel else "utf-8") as handle:
        writer = csv.writer(handle, delimiter=";" if excel else ",")
        writer.writerow(header)
        writer.writerows([cell(v) for v in row] for row in rows)


def csv_folder(folder: Path, *, excel: bool = False) -> Path:
    folder.mkdir()
    _write_csv(folder / "runs.csv", RUNS_HEADER, RUNS, excel=excel)
    _write_csv(folder / "judges.csv", JUDGES_HEADER, JUDGES, excel=excel)
    _write_csv(folder / "criteria.csv", CRITERIA_HEADER, CRITERIA, excel=excel)
    return folder


def record(tier: str, outcome: str, score: float) -> dict[str, Any]:
    """A run record with the fields the reports read."""
    key = f"tiny-{tier}-01-r1"
    return {
        "schema": 1,
        "run_key": key,
        "case": "tiny",
        "tier": tier,
        "subtest": f"{tier}-01",
        "run": 1,
        "outcome": outcome,
        "passed": outcome == "pass",
        "score": score,
        "impl_rate": score,
        "cost_usd": 0.25,
        "timings": {"total_s": 10.0},
        "tokens": {"input_tokens": 5, "total_tokens": 5},
        "judges": [
            {
                "judge_model": "opus",
                "judge_number": 1,
                "score": score,
                "valid": True,
                "categories": [
                    {
                        "name": "functional",
                        "score": score,
                        "achieved": 1.0,
                        "max": 1.0,
                        "weight": 1.0,
                    }
                ],
            }
        ],
    }


RECORDS = [record("T0", "pass", 0.9), record("T1", "fail", 0.4)]


def jsonl_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return folder


def run_json_folder(folder: Path) -> Path:
    for rec in RECORDS:
        run_dir = folder / "runs" / rec["run_key"]
        run_dir.mkdir(parents=True)
        (run_dir / "run.json").write_text(json.dumps(rec, indent=2))
    return folder


# -- ways to break a good input --------------------------------------------------------------


def _lines(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n")


def _jsonl(edit: Callable[[list[dict[str, Any]]], list[Any]]) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        (folder / "runs.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in edit([dict(r) for r in RECORDS]))
        )

    return change


def _without(key: str) -> Callable[[list[dict[str, Any]]], list[Any]]:
    return lambda recs: [{k: v for k, v in recs[0].items() if k != key}, recs[1]]


def _csv_cell(name: str, row: int, column: str, value: str) -> Callable[[Path], None]:
    """Set one cell (`row` 0 is the first under the header) of a comma-separated export."""

    def change(folder: Path) -> None:
        with (folder / name).open(newline="") as handle:
            table = list(csv.reader(handle))
        table[row + 1][table[0].index(column)] = value
        with (folder / name).open("w", newline="") as handle:
            csv.writer(handle).writerows(table)

    return change


def _csv_drop(name: str, column: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        with (folder / name).open(newline="") as handle:
            table = list(csv.reader(handle))
        at = table[0].index(column)
        with (folder / name).open("w", newline="") as handle:
            csv.writer(handle).writerows(r[:at] + r[at + 1 :] for r in table)

    return change


def _json_file(
    relative: Path | str, edit: Callable[[dict[str, Any]], Any]
) -> Callable[[Path], None]:
    def change(src: Path) -> None:
        path = src / relative
        path.write_text(json.dumps(edit(json.loads(path.read_text())), indent=2))

    return change


def _text(relative: Path | str, text: str) -> Callable[[Path], None]:
    def change(src: Path) -> None:
        (src / relative).write_text(text)

    return change


def _drop(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def _achieved(value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(data: dict[str, Any]) -> Any:
        data["criteria_scores"]["functional"]["achieved"] = value
        return data

    return edit


JUDGE_1 = RUN_DIR / "judge" / "judge_01" / "judgment.json"
ORIGINAL = "as the original implementation writes it"
RECORD = "expected a run record as pytest-scylla writes it"
NUMBER = "expected a number, N/A or an empty cell"
OUTCOMES = "pass, fail, timeout, budget_exceeded, agent_error, infra_error, judge_error"

# (the good input, how it is broken, the one line expected; {d} is the folder or source tree,
# and * stands only for a library's own wording)
CATALOGUE = [
    # runs.jsonl
    pytest.param(
        jsonl_folder,
        lambda d: _lines(d / "runs.jsonl", lambda ls: [ls[0], "[1, 2]"]),
        "{d}/runs.jsonl:2: a list, not a JSON object; expected a run record as "
        "pytest-scylla writes it (an object with run_key, tier and outcome)",
        id="jsonl-line-is-a-list",
    ),
    pytest.param(
        jsonl_folder,
        lambda d: _lines(d / "runs.jsonl", lambda ls: ["42", ls[1]]),
        "{d}/runs.jsonl:1: the value 42, not a JSON object; expected a run record as "
        "pytest-scylla writes it (an object with run_key, tier and outcome)",
        id="jsonl-line-is-a-number",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(_without("tier")),
        f"{{d}}/runs.jsonl:1: missing required key 'tier' in the top level; {RECORD}",
        id="jsonl-record-without-tier",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(_without("run_key")),
        f"{{d}}/runs.jsonl:1: missing required key 'run_key' in the top level; {RECORD}",
        id="jsonl-record-without-run-key",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(_without("outcome")),
        f"{{d}}/runs.jsonl:1: missing required key 'outcome' in the top level; {RECORD}",
        id="jsonl-record-without-outcome",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(lambda rs: [rs[0], {**rs[1], "outcome": "passed"}]),
        f"{{d}}/runs.jsonl:2: outcome is 'passed'; expected one of: {OUTCOMES}",
        id="jsonl-unknown-outcome",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(lambda rs: [rs[0], {**rs[1], "cost_usd": "0.25"}]),
        f"{{d}}/runs.jsonl:2: cost_usd must be a number or null, not a string ('0.25'); {RECORD}",
        id="jsonl-cost-as-text",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(lambda rs: [rs[0], {**rs[1], "score": 85}]),
        f"{{d}}/runs.jsonl:2: score: 85 is greater than the maximum of 1; {RECORD}",
        id="jsonl-score-as-percent",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(lambda rs: [rs[0], {**rs[1], "model": ["m"]}]),
        f"{{d}}/runs.jsonl:2: model must be a string or null, not a list (['m']); {RECORD}",
        id="jsonl-model-as-list",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(lambda rs: [rs[0], {**rs[1], "simulated": "false"}]),
        "{d}/runs.jsonl:2: simulated must be true or false or null, not a string "
        f"('false'); {RECORD}",
        id="jsonl-simulated-as-text",
    ),
    pytest.param(
        jsonl_folder,
        _jsonl(
            lambda rs: [
                {
                    **rs[0],
                    "judges": [
                        {"score": 0.9, "categories": [{"score": 1.0, "achieved": 1, "max": 1}]}
                    ],
                },
                rs[1],
            ]
        ),
        f"{{d}}/runs.jsonl:1: missing required key 'name' in judges[0].categories[0]; {RECORD}",
        id="jsonl-category-without-name",
    ),
    pytest.param(
        jsonl_folder,
        lambda d: _lines(d / "runs.jsonl", lambda ls: [ls[0], '{"run_ke', ls[1]]),
        "{d}/runs.jsonl:2: not a JSON record (a line cut by a crash? remove it and "
        "re-run `scylla report`)",
        id="jsonl-bad-line-in-the-middle",
    ),
    # runs/<key>/run.json
    pytest.param(
        run_json_folder,
        _text(
            "runs/tiny-T0-01-r1/run.json",
            '{\n  "run_key": "tiny-T0-01-r1",\n  "tier": "T0",\n  "outc',
        ),
        "{d}/runs/tiny-T0-01-r1/run.json:4: not valid JSON (* at column *); expected "
        "a run record as pytest-scylla writes it",
        id="run-json-truncated",
    ),
    pytest.param(
        run_json_folder,
        _json_file("runs/tiny-T1-01-r1/run.json", lambda r: _drop(r, "tier")),
        "{d}/runs/tiny-T1-01-r1/run.json: missing required key 'tier' in the top "
        f"level; {RECORD}",
        id="run-json-without-tier",
    ),
    # the original's CSV exports
    pytest.param(
        csv_folder,
        _csv_drop("runs.csv", "passed"),
        "{d}/runs.csv:1: no column 'passed'; runs.csv needs experiment, tier, "
        "subtest, run_number, passed, score, cost_usd",
        id="runs-csv-without-passed",
    ),
    pytest.param(
        csv_folder,
        _csv_drop("runs.csv", "cost_usd"),
        "{d}/runs.csv:1: no column 'cost_usd'; runs.csv needs experiment, tier, "
        "subtest, run_number, passed, score, cost_usd",
        id="runs-csv-without-cost",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 1, "score", "abc"),
        f"{{d}}/runs.csv:3: column 'score' is 'abc'; {NUMBER}",
        id="runs-csv-score-abc",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 0, "cost_usd", "nan"),
        f"{{d}}/runs.csv:2: column 'cost_usd' is 'nan'; {NUMBER}",
        id="runs-csv-cost-nan",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 0, "input_tokens", "1.2.3"),
        f"{{d}}/runs.csv:2: column 'input_tokens' is '1.2.3'; {NUMBER}",
        id="runs-csv-tokens-not-a-number",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 1, "score", "0,75"),
        "{d}/runs.csv:3: column 'score' is '0,75', a decimal comma in a "
        "comma-separated file; expected a decimal point (or the file saved with ; "
        "separators)",
        id="runs-csv-quoted-decimal-comma",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 0, "passed", "yes"),
        "{d}/runs.csv:2: column 'passed' is 'yes'; expected True or False",
        id="runs-csv-passed-yes",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 1, "passed", ""),
        "{d}/runs.csv:3: column 'passed' is empty; expected True or False",
        id="runs-csv-passed-empty",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("runs.csv", 1, "tier", "N/A"),
        "{d}/runs.csv:3: column 'tier' is empty; expected a value",
        id="runs-csv-tier-not-applicable",
    ),
    pytest.param(
        csv_folder,
        lambda d: _lines(d / "runs.csv", lambda ls: [*ls, ls[1] + ",extra"]),
        "{d}/runs.csv:4: 20 cells, the header has 19; expected one cell per column "
        "(a cell holding ',' is quoted)",
        id="runs-csv-extra-cell",
    ),
    pytest.param(
        csv_folder,
        lambda d: (d / "runs.csv").write_bytes(
            (d / "runs.csv").read_bytes().replace(b"Sonnet 4.5", b"Sonnet \xe9", 1)
        ),
        '{d}/runs.csv:2: not UTF-8 text (byte 0xe9); expected UTF-8 (a spreadsheet\'s "CSV UTF-8")',
        id="runs-csv-not-utf8",
    ),
    pytest.param(
        csv_folder,
        lambda d: _lines(d / "runs.csv", lambda ls: [ls[0].replace(",grade,", ",score,"), *ls[1:]]),
        "{d}/runs.csv:1: column 'score' is in the header twice; keep one",
        id="runs-csv-column-twice",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("judges.csv", 2, "judge_score", "abc"),
        f"{{d}}/judges.csv:4: column 'judge_score' is 'abc'; {NUMBER}",
        id="judges-csv-score-abc",
    ),
    pytest.param(
        csv_folder,
        _csv_drop("judges.csv", "judge_model"),
        "{d}/judges.csv:1: no column 'judge_model'; judges.csv needs experiment, "
        "tier, subtest, run_number, judge_model, judge_number, judge_score",
        id="judges-csv-without-judge-model",
    ),
    pytest.param(
        csv_folder,
        _csv_cell("judges.csv", 0, "judge_is_valid", "yes"),
        "{d}/judges.csv:2: column 'judge_is_valid' is 'yes'; expected True or False",
        id="judges-csv-valid-yes",
    ),
    pytest.param(
        csv_folder,
        _csv_drop("criteria.csv", "criterion_score"),
        "{d}/criteria.csv:1: no column 'criterion_score'; criteria.csv needs "
        "experiment, tier, subtest, run_number, judge_number, criterion, "
        "criterion_score",
        id="criteria-csv-without-score",
    ),
    pytest.param(
        lambda d: csv_folder(d, excel=True),
        lambda d: (d / "runs.csv").write_bytes(
            (d / "runs.csv").read_bytes().replace(b";0,9;", b";1.234,5;", 1)
        ),
        f"{{d}}/runs.csv:2: column 'score' is '1.234,5'; {NUMBER}",
        id="excel-csv-thousands-separator",
    ),
    # the original's run trees (scylla import)
    pytest.param(
        run_tree,
        _text("result.json", '{\n  "config": {\n    "models": [,]\n  }\n}'),
        f"{{d}}/result.json:3: not valid JSON (* at column *); expected result.json {ORIGINAL}",
        id="import-result-json-corrupt",
    ),
    pytest.param(
        run_tree,
        _text(RUN_DIR / "run_result.json", '{\n  "run_number": 1,\n  "judge_passed": tru\n}'),
        f"{{d}}/{RUN_DIR}/run_result.json:3: not valid JSON (* at column *); expected "
        f"run_result.json {ORIGINAL}",
        id="import-run-result-corrupt",
    ),
    pytest.param(
        run_tree,
        _text(JUDGE_1, '{\n  "score": 0.9,\n  "criteria_scores": {\n'),
        f"{{d}}/{JUDGE_1}:4: not valid JSON (* at column *); expected judgment.json {ORIGINAL}",
        id="import-judgment-truncated",
    ),
    pytest.param(
        run_tree,
        _json_file(RUN_DIR / "run_result.json", lambda r: _drop(r, "judge_passed")),
        f"{{d}}/{RUN_DIR}/run_result.json: missing required key 'judge_passed' in "
        f"run_result.json; expected run_result.json {ORIGINAL}",
        id="import-run-result-without-judge-passed",
    ),
    pytest.param(
        run_tree,
        _json_file(RUN_DIR / "run_result.json", lambda r: _drop(r, "cost_usd")),
        f"{{d}}/{RUN_DIR}/run_result.json: missing required key 'cost_usd' in "
        f"run_result.json; expected run_result.json {ORIGINAL}",
        id="import-run-result-without-cost",
    ),
    pytest.param(
        run_tree,
        _json_file(RUN_DIR / "run_result.json", lambda r: [r]),
        f"{{d}}/{RUN_DIR}/run_result.json: a list, not a JSON object; expected "
        f"run_result.json {ORIGINAL}",
        id="import-run-result-is-a-list",
    ),
    pytest.param(
        run_tree,
        _json_file(JUDGE_1, lambda j: _drop(j, "score")),
        f"{{d}}/{JUDGE_1}: missing required key 'score' in judgment.json; expected "
        f"judgment.json {ORIGINAL}",
        id="import-judgment-without-score",
    ),
    pytest.param(
        run_tree,
        _json_file(JUDGE_1, _achieved("3 of 4")),
        f"{{d}}/{JUDGE_1}: judgment.json.criteria_scores.functional.achieved is not "
        "valid; expected a number, N/A or null",
        id="import-judgment-achieved-text",
    ),
    pytest.param(
        run_tree,
        lambda src: (src / JUDGE_1).unlink(),
        f"{{d}}/{JUDGE_1.parent}: no judgment.json; expected one in every "
        "judge/judge_NN/ folder of a run",
        id="import-judge-folder-without-judgment",
    ),
    pytest.param(
        run_tree,
        lambda src: (src / JUDGE_1.parent).rename(src / RUN_DIR / "judge" / "judge_x"),
        f"{{d}}/{RUN_DIR}/judge/judge_x: not a judge_NN folder name; expected judge_ "
        "and its number, as the original implementation names them",
        id="import-judge-folder-misnamed",
    ),
]


def _one_line(err: str, expected: str) -> bool:
    """`err` is exactly the line `expected` (whose * match anything, its [ literally)."""
    lines = err.splitlines()
    return len(lines) == 1 and fnmatchcase(lines[0], expected.replace("[", "[[]"))


@pytest.mark.parametrize(("good", "break_it", "expected"), CATALOGUE)
def test_bad_input_is_one_line_and_exit_code_2(
    good: Callable[[Path], Path],
    break_it: Callable[[Path], None],
    expected: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = good(tmp_path / "in")
    break_it(folder)
    importing = good is run_tree
    dest = tmp_path / "dest"
    argv = (
        ["import", str(folder), str(dest)]
        if importing
        else ["report", str(folder), "--out", str(dest), "--report", "none"]
    )
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert _one_line(err, expected.format(d=folder.resolve())), err
    assert code == 2
    assert not dest.exists()  # nothing written from a refused input


# -- the positive controls: the good inputs, and the awkward ones that are good -------------


def _report(folder: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["report", str(folder), "--report", "none"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    assert "Traceback" not in out
    summary: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return summary


@pytest.mark.parametrize("good", [csv_folder, jsonl_folder, run_json_folder])
def test_the_good_inputs_report(
    good: Callable[[Path], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = _report(good(tmp_path / "in"), capsys)
    assert summary["runs"] == 2
    assert [(t["tier"], t["passes"]) for t in summary["tiers"]] == [("T0", 1), ("T1", 0)]
    assert summary["agent_cost_usd"] == pytest.approx(0.75 if good is csv_folder else 0.5)


def test_a_spreadsheets_copy_of_the_exports_reads_as_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Byte-order mark, `;` separators, decimal commas (0,75 read as 0.75), TRUE/FALSE, N/A and
    empty cells: the same exports as from the comma-separated original."""
    plain, excel = csv_folder(tmp_path / "plain"), csv_folder(tmp_path / "excel", excel=True)
    assert (excel / "runs.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert b";0,75;" in (excel / "runs.csv").read_bytes()
    from_excel = _report(excel, capsys)
    # the copy is read as meant, and the summary says how: it is not comma-separated
    assert [w.split(": ", 1)[1][:40] for w in from_excel.pop("warnings")] == [
        "not comma-separated: read with ';' as th"
    ] * 3
    assert _report(plain, capsys) == {**from_excel, "warnings": [], "experiment": "plain"}
    for name in ("runs.csv", "judges.csv", "criteria.csv", "statistical_results.json"):
        assert (plain / name).read_text() == (excel / name).read_text(), name


def test_a_last_line_cut_by_a_kill_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = jsonl_folder(tmp_path / "in")
    with (folder / "runs.jsonl").open("a") as handle:
        handle.write(json.dumps(record("T2", "pass", 1.0))[:40])
    assert main(["report", str(folder), "--report", "none"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "runs.jsonl:3: a record cut short" in out
    assert json.loads((folder / "summary.json").read_text())["runs"] == 2
