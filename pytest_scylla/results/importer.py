"""`scylla import SRC DEST`: a run tree recorded by the paper's original implementation
(`T<k>/<subtest>/run_NN/{run_result.json, agent/, judge/judge_0N/judgment.json}`) turned into
our experiment folder, so its published experiments can be re-analysed with `scylla report`.

The recorded numbers are kept as recorded (its judges' own scores and category totals), so the
exports reproduce its own; `scoring.py` re-scores them from item points where that matters (see
tests/unit/judging/test_scoring.py for where the two differ).
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_scylla.core.outcomes import Outcome
from pytest_scylla.core.record import JudgeEntry, RunRecord
from pytest_scylla.core.runspec import RunKey
from pytest_scylla.results import report
from pytest_scylla.results.inputs import ReportInputError, check, read_object
from pytest_scylla.results.metrics import model_label
from pytest_scylla.results.tables import RUNS_FILE, Tables

ORIGINAL = "as the original implementation writes it"
NOT_IN_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")


class SourceTreeError(ReportInputError):
    """The source is not a run tree of the original implementation."""


def _read(path: Path, name: str | None = None) -> dict[str, Any]:
    """One of the original's JSON files, checked against original.schema.json under its `name`
    (default: the file's name)."""
    name = name or path.name
    data = read_object(path, f"{name} {ORIGINAL}")
    check({name: data}, "original", str(path), f"{name} {ORIGINAL}")
    return data


def _optional(path: Path, name: str | None = None) -> dict[str, Any]:
    """A JSON file the original implementation does not always write; {} when it is absent."""
    return _read(path, name) if path.is_file() else {}


def _number(folder: Path, prefix: str) -> int:
    """NN of a `<prefix>_NN` folder."""
    try:
        return int(folder.name.removeprefix(prefix + "_"))
    except ValueError:
        raise SourceTreeError(
            f"{folder}: not a {prefix}_NN folder name; expected {prefix}_ and "
            "its number, as the original implementation names them"
        ) from None


def _num(value: Any) -> float | None:
    """A recorded number; None for its "N/A" (not applicable), empty or missing values."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _kept(value: Any) -> Any:
    """A recorded number as it is; None for its "N/A", empty or missing values."""
    return value if _num(value) is not None else None


def _unstated(path: Path, cats: dict[str, Any], notes: list[str]) -> None:
    """A note for each criterion whose `achieved` is absent or null: read as N/A (as the paper
    scores a missing value: counted in neither the achieved points nor the maximum)."""
    for name, cat in cats.items():
        if isinstance(cat, dict) and cat.get("achieved") is None:
            how = "has achieved: null" if "achieved" in cat else "has no achieved value"
            notes.append(
                f"{path}: criterion {name!r} {how}; read as N/A (counted in neither "
                "the achieved points nor the maximum); write its achieved points, or "
                '"N/A" to say it does not apply'
            )


def _rate(path: Path, achieved: float, maximum: float, notes: list[str]) -> float | None:
    """achieved / maximum, clamped to 1 with a note when the original recorded more points
    than the maximum (its published data holds an impl_rate of 1.028). Clamped rather than
    kept: impl_rate is by definition the share of the achievable points, so no reading of a
    value above 1 is meaningful, every consumer (the record schema, the means, the figures)
    relies on 0..1, and the recorded value stays in the run's import_notes for audit."""
    if not maximum:
        return None
    rate = achieved / maximum
    if rate > 1:
        notes.append(
            f"{path}: impl_rate {rate:.4g} is above 1 ({achieved:g} points achieved "
            f"of a maximum of {maximum:g}, a defect of the original); stored as 1"
        )
        return 1.0
    return rate


def _judge(folder: Path, models: dict[int, str | None], notes: list[str]) -> JudgeEntry:
    """`judge/judge_0N/`; `models` maps judge numbers to their models; what was read other
    than as written is added to `notes`."""
    number = _number(folder, "judge")
    if not (folder / "judgment.json").is_file():
        raise SourceTreeError(
            f"{folder}: no judgment.json; expected one in every judge/judge_NN/ folder of a run"
        )
    data = _read(folder / "judgment.json")
    cats = data.get("criteria_scores") or {}
    _unstated(folder / "judgment.json", cats, notes)
    # a category not applicable (its achieved or its maximum N/A or null) counts in neither
    points = [(_num(c.get("achieved")), _num(c.get("max"))) for c in cats.values()]
    achieved = sum(a for a, m in points if a is not None and m is not None)
    maximum = sum(m for a, m in points if a is not None and m is not None)
    return {
        "judge_model": models.get(number),
        "judge_number": number,
        "valid": data.get("is_valid") is not False,  # null or absent: not said invalid
        "score": _num(data.get("score")),
        "passed": data.get("passed"),
        "grade": data.get("grade"),
        "impl_rate": _rate(folder / "judgment.json", achieved, maximum, notes),
        "seconds": _kept(_optional(folder / "timing.json").get("judge_duration_seconds")),
        "verdict": {
            "reasoning": data.get("reasoning", ""),
            "items": {i: v for c in cats.values() for i, v in (c.get("items") or {}).items()},
        },
        "categories": [
            {
                "name": name,
                "score": _num(c.get("score")),
                "achieved": _num(c.get("achieved")),
                "max": _num(c.get("max")),
                "weight": None,
            }
            for name, c in cats.items()
        ],
    }


def _run(run_dir: Path, tier: str, subtest: str, model: str | None, case: str) -> RunRecord:
    data = _read(run_dir / "run_result.json")
    models = {j.get("judge_number"): j.get("model") for j in data.get("judges") or []}
    notes: list[str] = []
    judges = [
        _judge(folder, models, notes)
        for folder in sorted((run_dir / "judge").glob("judge_*"))
        if folder.is_dir()
    ]
    tokens = data.get("token_stats") or {}
    names = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cache_creation_input_tokens": "cache_creation_tokens",
        "cache_read_input_tokens": "cache_read_tokens",
    }
    # counts the run did not record stay unknown (left out of the means), never zeros
    usage = {
        ours: tokens[theirs]
        for ours, theirs in names.items()
        if isinstance(tokens.get(theirs), int)
    }
    rates = [j["impl_rate"] for j in judges if j["impl_rate"] is not None]
    agent = _optional(run_dir / "agent" / "result.json", "agent/result.json")
    api_calls = agent.get("api_calls")
    number = data.get("run_number") or _number(run_dir, "run")
    passed = bool(data.get("judge_passed"))
    return {
        "schema": 1,
        "imported_from": str(run_dir),
        "run_key": RunKey(case, tier, subtest, number).folder,
        "case": case,
        "tier": tier,
        "subtest": f"{tier}-{subtest}",
        "run": number,
        "model": model,
        "agent_model_label": model_label(model),
        "outcome": Outcome.PASS if passed else Outcome.FAIL,
        "passed": passed,
        "score": _num(data.get("judge_score")),
        "grade": data.get("judge_grade"),
        "impl_rate": statistics.median(rates) if rates else None,
        "cost_usd": data.get("cost_usd"),
        "cost_source": "cli",
        "exit_code": data.get("exit_code"),
        "api_calls": api_calls,
        "timings": {
            "total_s": _kept(data.get("duration_seconds")),
            "agent_s": _kept(data.get("agent_duration_seconds")),
        },
        "judge_duration_seconds": _kept(data.get("judge_duration_seconds")),
        "usage": {model or "unknown": usage} if usage else {},
        "tokens": {**usage, "total_tokens": sum(usage.values())} if usage else {},
        "judges": judges,
        "simulated": False,
        "import_notes": notes,
    }


def _experiments(src: Path) -> dict[Path, list[Path]]:
    """The experiment folders under `src` (itself, or folders below it, as the original's
    results folder holds them), each with its runs' run_result.json files. The walk stops at
    an experiment folder: what its runs hold (the agent's workspace) is never read as runs."""
    found: dict[Path, list[Path]] = {}
    for folder, subfolders, _ in os.walk(src):
        runs = sorted(Path(folder).glob("T*/*/run_*/run_result.json"))
        if runs:
            found[Path(folder)] = runs
            subfolders.clear()
        else:
            subfolders.sort()
    return found


def _case(root: Path, src: Path, config: dict[str, Any], taken: set[str]) -> str:
    """The case an experiment's runs are filed under: its experiment_id (or folder name), made
    unique with its folder when another experiment already uses it; a character a folder's name
    cannot hold (`/`) is `+`."""
    case = str(config.get("experiment_id") or root.name)
    if case in taken:
        case = f"{case}@{root.relative_to(src).as_posix()}"
    case = NOT_IN_NAME.sub("+", case)  # a run key names a folder: `a/b` is `a+b`
    taken.add(case)
    return case


def convert(src: Path, dest: Path, note: Callable[[str], None] = lambda _: None) -> int:
    """Write `dest/runs.jsonl` (+ the exports) from the experiment folder `src`, or from every
    experiment folder under it merged into one experiment (each a case of its own); returns the
    run count. `note` is told what was read other than as written and where each run came
    from."""
    found = _experiments(src)
    if not found:
        raise SourceTreeError(
            f"{src}: no T<k>/<subtest>/run_NN/run_result.json here or below; "
            "point at an experiment folder of the original implementation "
            "or at a folder holding several"
        )
    records: list[RunRecord] = []
    sources: list[dict[str, Any]] = []
    taken: set[str] = set()
    for root, run_files in found.items():
        config = _optional(root / "result.json").get("config") or {}
        models = config.get("models") or [None]
        case = _case(root, src, config, taken)
        runs = [_run(p.parent, p.parts[-4], p.parts[-3], models[0], case) for p in run_files]
        records += runs
        sources.append({"folder": str(root), "case": case, "runs": len(runs), "config": config})
        if len(found) > 1:
            note(f"{root}: {len(runs)} runs imported as case {case!r}")
    for rec in records:
        for text in rec["import_notes"]:
            note(text)
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / RUNS_FILE, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec, separators=(",", ":")) + "\n")
    tables = Tables()
    tables.add_records(records, dest.name)
    report.write(
        dest,
        tables,
        {
            "imported_from": str(src),
            "sources": sources,
            "config": sources[0]["config"] if len(sources) == 1 else None,
            "notes": [t for r in records for t in r["import_notes"]],
        },
    )
    return len(records)
