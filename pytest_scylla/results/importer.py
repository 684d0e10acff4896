"""`scylla import SRC DEST`: a run tree recorded by the paper's original implementation
(`T<k>/<subtest>/run_NN/{run_result.json, agent/, judge/judge_0N/judgment.json}`) turned into
our experiment folder, so its published experiments can be re-analysed with `scylla report`.

The recorded numbers are kept as recorded (its judges' own scores and category totals), so the
exports reproduce its own; `scoring.py` re-scores them from item points where that matters (see
tests/test_scoring.py for where the two differ).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from pytest_scylla.core.runspec import RunKey
from pytest_scylla.results import report
from pytest_scylla.results.inputs import ReportInputError, check, read_object
from pytest_scylla.results.metrics import model_label
from pytest_scylla.results.tables import RUNS_FILE, Tables

ORIGINAL = "as the original implementation writes it"


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
        raise SourceTreeError(f"{folder}: not a {prefix}_NN folder name; expected {prefix}_ and "
                              "its number, as the original implementation names them") from None


def _num(value: Any) -> float | None:
    """A recorded number; None for its "N/A" (not applicable), empty or missing values."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _kept(value: Any) -> Any:
    """A recorded number as it is; None for its "N/A", empty or missing values."""
    return value if _num(value) is not None else None


def _judge(folder: Path, models: dict[int, str | None]) -> dict[str, Any]:
    """`judge/judge_0N/`; `models` maps judge numbers to their models."""
    number = _number(folder, "judge")
    if not (folder / "judgment.json").is_file():
        raise SourceTreeError(f"{folder}: no judgment.json; expected one in every "
                              "judge/judge_NN/ folder of a run")
    data = _read(folder / "judgment.json")
    cats = data.get("criteria_scores") or {}
    # a category not applicable (its achieved or its maximum N/A or null) counts in neither
    points = [(_num(c.get("achieved")), _num(c.get("max"))) for c in cats.values()]
    achieved = sum(a for a, m in points if a is not None and m is not None)
    maximum = sum(m for a, m in points if a is not None and m is not None)
    return {
        "judge_model": models.get(number), "judge_number": number,
        "valid": data.get("is_valid") is not False,  # null or absent: not said invalid
        "score": _num(data.get("score")),
        "passed": data.get("passed"), "grade": data.get("grade"),
        "impl_rate": achieved / maximum if maximum else None,
        "seconds": _kept(_optional(folder / "timing.json").get("judge_duration_seconds")),
        "verdict": {"reasoning": data.get("reasoning", ""),
                    "items": {i: v for c in cats.values() for i, v in
                              (c.get("items") or {}).items()}},
        "categories": [{"name": name, "score": _num(c.get("score")),
                        "achieved": _num(c.get("achieved")), "max": _num(c.get("max")),
                        "weight": None} for name, c in cats.items()]}


def _run(run_dir: Path, tier: str, subtest: str, model: str | None,
         case: str) -> dict[str, Any]:
    data = _read(run_dir / "run_result.json")
    models = {j.get("judge_number"): j.get("model") for j in data.get("judges") or []}
    judges = [_judge(folder, models) for folder in sorted((run_dir / "judge").glob("judge_*"))
              if folder.is_dir()]
    tokens = data.get("token_stats") or {}
    names = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
             "cache_creation_input_tokens": "cache_creation_tokens",
             "cache_read_input_tokens": "cache_read_tokens"}
    # counts the run did not record stay unknown (left out of the means), never zeros
    usage = {ours: tokens[theirs] for ours, theirs in names.items()
             if isinstance(tokens.get(theirs), int)}
    rates = [j["impl_rate"] for j in judges if j["impl_rate"] is not None]
    agent = _optional(run_dir / "agent" / "result.json", "agent/result.json")
    api_calls = agent.get("api_calls")
    number = data.get("run_number") or _number(run_dir, "run")
    passed = bool(data.get("judge_passed"))
    return {
        "schema": 1, "imported_from": str(run_dir),
        "run_key": RunKey(case, tier, subtest, number).folder,
        "case": case, "tier": tier, "subtest": f"{tier}-{subtest}", "run": number,
        "model": model, "agent_model_label": model_label(model),
        "outcome": "pass" if passed else "fail", "passed": passed,
        "score": _num(data.get("judge_score")), "grade": data.get("judge_grade"),
        "impl_rate": statistics.median(rates) if rates else None,
        "cost_usd": data.get("cost_usd"), "cost_source": "cli",
        "exit_code": data.get("exit_code"), "api_calls": api_calls,
        "timings": {"total_s": _kept(data.get("duration_seconds")),
                    "agent_s": _kept(data.get("agent_duration_seconds"))},
        "judge_duration_seconds": _kept(data.get("judge_duration_seconds")),
        "usage": {model or "unknown": usage} if usage else {},
        "tokens": {**usage, "total_tokens": sum(usage.values())} if usage else {},
        "judges": judges, "simulated": False}


def convert(src: Path, dest: Path) -> int:
    """Write `dest/runs.jsonl` (+ the exports) from the tree in `src`; returns the run count."""
    config = _optional(src / "result.json").get("config") or {}
    models = config.get("models") or [None]
    case = str(config.get("experiment_id") or src.name)
    run_dirs = sorted(src.glob("T*/*/run_*/run_result.json"))
    if not run_dirs:
        raise SourceTreeError(f"{src}: no T<k>/<subtest>/run_NN/run_result.json here; point at "
                           "the experiment folder of the original implementation")
    records = [_run(p.parent, p.parts[-4], p.parts[-3], models[0], case) for p in run_dirs]
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / RUNS_FILE, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec, separators=(",", ":")) + "\n")
    tables = Tables()
    tables.add_records(records, dest.name)
    report.write(dest, tables, {"imported_from": str(src), "config": config})
    return len(records)
