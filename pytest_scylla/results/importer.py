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
from pytest_scylla.results.metrics import model_label
from pytest_scylla.results.tables import RUNS_FILE, Tables


class SourceTreeError(ValueError):
    """The source is not a run tree of the original implementation."""


def _optional(path: Path) -> dict[str, Any]:
    """A JSON file the original implementation does not always write; {} when it is absent."""
    return json.loads(path.read_text("utf-8")) if path.is_file() else {}


def _num(value: Any) -> float | None:
    """A recorded number; None for its "N/A" (not applicable), empty or missing values."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _judge(folder: Path, models: dict[int, str | None]) -> dict[str, Any]:
    """`judge/judge_0N/`; `models` maps judge numbers to their models."""
    number = int(folder.name.split("_")[1])
    data = json.loads((folder / "judgment.json").read_text("utf-8"))
    cats = data.get("criteria_scores") or {}
    achieved = sum(_num(c.get("achieved")) or 0.0 for c in cats.values())
    maximum = sum(_num(c.get("max")) or 0.0 for c in cats.values())
    return {
        "judge_model": models.get(number), "judge_number": number,
        "valid": bool(data.get("is_valid", True)), "score": _num(data.get("score")),
        "passed": data.get("passed"), "grade": data.get("grade"),
        "impl_rate": achieved / maximum if maximum else None,
        "seconds": _optional(folder / "timing.json").get("judge_duration_seconds"),
        "verdict": {"reasoning": data.get("reasoning", ""),
                    "items": {i: v for c in cats.values() for i, v in
                              (c.get("items") or {}).items()}},
        "categories": [{"name": name, "score": _num(c.get("score")),
                        "achieved": _num(c.get("achieved")), "max": _num(c.get("max")),
                        "weight": None} for name, c in cats.items()]}


def _run(run_dir: Path, tier: str, subtest: str, model: str | None,
         case: str) -> dict[str, Any]:
    data = json.loads((run_dir / "run_result.json").read_text("utf-8"))
    models = {j.get("judge_number"): j.get("model") for j in data.get("judges") or []}
    judges = [_judge(folder, models) for folder in sorted((run_dir / "judge").glob("judge_*"))]
    tokens = data.get("token_stats") or {}
    usage = {"input_tokens": tokens.get("input_tokens", 0),
             "output_tokens": tokens.get("output_tokens", 0),
             "cache_creation_input_tokens": tokens.get("cache_creation_tokens", 0),
             "cache_read_input_tokens": tokens.get("cache_read_tokens", 0)}
    rates = [j["impl_rate"] for j in judges if j["impl_rate"] is not None]
    api_calls = _optional(run_dir / "agent" / "result.json").get("api_calls")
    number = int(data.get("run_number") or run_dir.name.split("_")[1])
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
        "timings": {"total_s": data.get("duration_seconds"),
                    "agent_s": data.get("agent_duration_seconds")},
        "judge_duration_seconds": data.get("judge_duration_seconds"),
        "usage": {model or "unknown": usage},
        "tokens": {**usage, "total_tokens": sum(usage.values())},
        "judges": judges, "simulated": False}


def convert(src: Path, dest: Path) -> int:
    """Write `dest/runs.jsonl` (+ the exports) from the tree in `src`; returns the run count."""
    config = _optional(src / "result.json").get("config", {})
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
