"""The tables every report is made from: one row per run, judge and criterion, built from run
records (an experiment folder, or several merged) or from a folder of paper-format CSVs. The
renderers (exports, text tables, figures, HTML) all read a `Tables`."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pytest_scylla.core.outcomes import OUTCOMES, Outcome
from pytest_scylla.core.record import RECORD_FILE, RunRecord, read_dict
from pytest_scylla.results import inputs, metrics, run_files
from pytest_scylla.results.design import Stored, vet
from pytest_scylla.results.inputs import Layout, ReportInputError
from pytest_scylla.results.rows import CriterionRow, JudgeRow, RunRow

RUNS_FILE = "runs.jsonl"
RECORD_LIMIT = 64_000_000  # bytes of one run.json read
PLACE = ("experiment", "tier", "subtest", "run_number")  # a CSV row's run, when no run_key
# the original's exports (and ours, a superset): the columns the reports cannot do without,
# then those read as numbers; a missing `passed` would count every run as failed
RUNS_CSV = Layout(
    required=(*PLACE, "passed", "score", "cost_usd"),
    numbers=(
        "score",
        "impl_rate",
        "cost_usd",
        "duration_seconds",
        "agent_duration_seconds",
        "judge_duration_seconds",
        "checks_duration_seconds",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
        "total_tokens",
        "judge_cost_usd",
        "integrity_findings",
        "leftover_processes",
        "ttft_seconds",
        "regressions",
        "r_prog",
    ),
    flags=("passed", "simulated"),
    filled=("experiment", "tier", "passed"),
    choices={"outcome": OUTCOMES},
)
JUDGES_CSV = Layout(
    required=(*PLACE, "judge_model", "judge_number", "judge_score"),
    numbers=(
        "judge_number",
        "judge_score",
        "judge_impl_rate",
        "judge_cost_usd",
        "judge_seconds",
        "judge_input_tokens",
        "judge_output_tokens",
    ),
    flags=("judge_passed", "judge_is_valid"),
    filled=("experiment", "tier"),
)
CRITERIA_CSV = Layout(
    required=(*PLACE, "judge_number", "criterion", "criterion_score"),
    numbers=("judge_number", "criterion_score", "criterion_achieved", "criterion_max"),
    filled=("experiment", "tier"),
)


@dataclass
class Tables:
    runs: list[RunRow] = field(default_factory=list)
    judges: list[JudgeRow] = field(default_factory=list)
    criteria: list[CriterionRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    records: list[RunRecord] = field(default_factory=list)  # for the HTML drill-down
    sources: dict[str, Path] = field(default_factory=dict)  # run key -> its stored run folder
    partial: str | None = None  # why the report does not cover every run of the session
    excluded: list[str] = field(default_factory=list)  # runs not counted, and why (`design`)

    def add_records(
        self, records: list[RunRecord], experiment: str, folder: Path | None = None
    ) -> None:
        for rec in records:
            self.records.append(rec)
            if folder is not None and run_folder(folder, rec["run_key"]):
                self.sources[rec["run_key"]] = folder / "runs" / rec["run_key"]
            self.runs.append(metrics.run_row(rec, experiment))
            self.judges.extend(metrics.judge_rows(rec, experiment))
            self.criteria.extend(metrics.criteria_rows(rec, experiment))


def run_folder(folder: Path, key: str) -> bool:
    """Whether `runs/<key>` of an experiment folder is a real folder: reached without following
    a link (a run folder replaced by a link to another place is not the run's)."""
    try:
        return stat.S_ISDIR(os.lstat(folder / "runs").st_mode) and stat.S_ISDIR(
            os.lstat(folder / "runs" / key).st_mode
        )
    except (OSError, ValueError):
        return False


def read_records(folder: Path, notes: list[str] | None = None) -> list[RunRecord]:
    """The run records of an experiment folder: `runs.jsonl`, else every `runs/*/run.json`.
    A last line cut short by a kill is left out, saying so in `notes`."""
    if (folder / RUNS_FILE).is_file():
        records = {}
        lines = inputs.read_text(folder / RUNS_FILE).splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                if number == len(lines):  # the line being written when the session was killed
                    if notes is not None:
                        notes.append(
                            f"{folder / RUNS_FILE}:{number}: a record cut short (the "
                            "session was killed while writing it) is left out; the "
                            "next session in this folder runs that run again"
                        )
                    continue
                raise ReportInputError(
                    f"{folder / RUNS_FILE}:{number}: not a JSON record "
                    "(a line cut by a crash? remove it and re-run "
                    "`scylla report`)"
                ) from None
            rec = inputs.run_record(value, f"{folder / RUNS_FILE}:{number}")
            records[rec["run_key"]] = rec
        return list(records.values())
    found = sorted(p.parent.name for p in folder.glob(f"runs/*/{RECORD_FILE}"))
    return [_run_json(folder, key) for key in found]


def _run_json(folder: Path, key: str) -> RunRecord:
    """`runs/<key>/run.json`, reached without following a link (`run_files`)."""
    path = folder / "runs" / key / RECORD_FILE
    try:
        data = run_files.read(folder / "runs" / key, RECORD_FILE, RECORD_LIMIT)
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    text = inputs.decode(data, path)
    return inputs.run_record(inputs.read_json(path, inputs.RECORD, text), str(path))


def _paper_csv(folder: Path, notes: list[str]) -> Tables:
    """A folder of paper-format exports: runs.csv (+ judges.csv, criteria.csv); how a file
    was read when it is not comma-separated goes to `notes`."""

    def rows(name: str, layout: Layout) -> list[tuple[int, dict[str, Any]]]:
        path = folder / name
        return inputs.read_csv(path, layout, notes) if path.is_file() else []

    def num(value: Any) -> float | None:
        return None if value in (None, "") else float(value)

    runs = rows("runs.csv", RUNS_CSV)
    # an export of several agent models has the model in each run's key (else the models'
    # runs of one tier, subtest and number would be one run, their judges mixed)
    models = len({r.get("agent_model") for _, r in runs}) > 1

    def run_key(r: dict[str, Any]) -> str:  # a case's runs, judges and criteria share it
        model = f"{r.get('agent_model')}/" if models else ""
        return (
            r.get("run_key")
            or f"{r['experiment']}/{model}{r['tier']}-{r['subtest']}-r{r['run_number']}"
        )

    first: dict[str, int] = {}
    for line, r in runs:
        at = first.setdefault(run_key(r), line)
        if at != line:
            raise ReportInputError(
                f"{folder / 'runs.csv'}:{line}: run {run_key(r)} is also at line {at}; "
                "expected one row per run (experiment, tier, subtest, run_number)"
            )

    def linked(name: str, layout: Layout) -> list[dict[str, Any]]:  # its run's key on each row
        return [
            {**r, "case_id": r.get("case_id") or r["experiment"], "run_key": run_key(r)}
            for _, r in rows(name, layout)
        ]

    tables = Tables()
    for _, r in runs:
        row = {c: r.get(c) for c in metrics.RUN_COLUMNS}
        passed = r["passed"] == "True"
        row.update(
            passed=passed,
            outcome=r.get("outcome") or (Outcome.PASS if passed else Outcome.FAIL),
            score=num(r.get("score")),
            impl_rate=num(r.get("impl_rate")),
            cost_usd=num(r.get("cost_usd")),
            case_id=r.get("case_id") or r["experiment"],
            judge_cost_usd=num(r.get("judge_cost_usd")),
            integrity_findings=int(num(r.get("integrity_findings")) or 0),
            leftover_processes=int(num(r.get("leftover_processes")) or 0),
            simulated=r.get("simulated") == "True",
            run_key=run_key(r),
        )
        tables.runs.append(cast(RunRow, row))
    tables.judges = cast(list[JudgeRow], linked("judges.csv", JUDGES_CSV))
    tables.criteria = cast(list[CriterionRow], linked("criteria.csv", CRITERIA_CSV))
    return tables


def _once(seen: dict[str, Path], key: str, folder: Path, warnings: list[str]) -> str:
    """The key a run of `folder` is kept under: its own, or `<folder>/<key>` when an earlier
    folder had a run of that key (two independent runs, both kept, with a warning)."""
    if key in seen:
        warnings.append(f"run {key} is in {seen[key]} and {folder}: both kept as separate runs")
        key = f"{folder.name}/{key}"
    seen[key] = folder
    return key


def load(folders: list[Path]) -> Tables:
    """Everything in the given folders, merged; the same run key in two folders that are not
    shards of one split is kept twice (two independent runs), renamed `<folder>/<key>`, with a
    warning. Runs that do not belong (`design.vet`: outside a shard's share or the shards'
    design, in two shards, a record contradicting its key) are left out, each named in
    `excluded`."""
    tables = Tables()
    seen: dict[str, Path] = {}
    given: list[Stored | Path] = []  # in the order given: the first keeps a key (`_once`)
    for folder in dict.fromkeys(f.resolve() for f in folders):  # each folder once
        if not folder.is_dir():
            raise ReportInputError(f"{folder}: no such folder")
        records = read_records(folder, tables.warnings)
        if records:
            given.append(Stored(folder, read_dict(folder / "manifest.json"), records))
        elif (folder / "runs.csv").is_file():
            given.append(folder)
        else:
            raise ReportInputError(
                f"{folder}: no runs.jsonl, runs/*/run.json or runs.csv "
                "here; point at an experiment folder such as "
                "reports/<timestamp>/"
            )
    stored = [one for one in given if isinstance(one, Stored)]
    vetted = vet(stored)
    tables.excluded = vetted.excluded
    counted = dict(zip(map(id, stored), vetted.records, strict=True))
    for one in given:
        if isinstance(one, Stored):
            _add_stored(tables, one, counted[id(one)], seen)
        else:
            _add_csv(tables, one, seen)
    return tables


def _add_stored(
    tables: Tables, folder: Stored, records: list[RunRecord], seen: dict[str, Path]
) -> None:
    """A folder's records counted; the shards of one split are one experiment, under the name
    they share."""
    shard = folder.manifest.get("shard")
    name = (
        str(shard.get("experiment") or folder.path.name)
        if isinstance(shard, dict)
        else folder.path.name
    )
    for rec in records:
        key = rec["run_key"]
        rec = {**rec, "run_key": _once(seen, key, folder.path, tables.warnings)}
        tables.add_records([rec], name, folder.path)
        if rec["run_key"] != key and run_folder(folder.path, key):
            tables.sources[rec["run_key"]] = folder.path / "runs" / key


def _add_csv(tables: Tables, folder: Path, seen: dict[str, Path]) -> None:
    """A folder of paper-format CSVs added; a run key another folder has is renamed."""
    more = _paper_csv(folder, tables.warnings)
    renamed: dict[str | None, str] = {}
    for row in more.runs:  # a paper CSV's run key is never None (`_paper_csv`)
        renamed[row["run_key"]] = _once(seen, str(row["run_key"]), folder, tables.warnings)
        row["run_key"] = renamed[row["run_key"]]
    for other in more.judges + more.criteria:  # follow their run's key
        other["run_key"] = renamed.get(other["run_key"], other["run_key"])
    tables.runs += more.runs
    tables.judges += more.judges
    tables.criteria += more.criteria
