"""A tiny run tree of the paper's original implementation (one run, two judges), for the
tests of `scylla import` and of bad results input."""

from __future__ import annotations

import json
from pathlib import Path

RUN_DIR = Path("T0", "00", "run_01")
JUDGMENT = {
    "score": 0.9,
    "passed": True,
    "grade": "A",
    "reasoning": "fine",
    "is_valid": True,
    "criteria_scores": {
        "functional": {
            "achieved": 3.0,
            "max": 4.0,
            "score": 0.75,
            "items": {"F1": {"achieved": 3.0, "max": 4.0, "reason": "ok"}},
        },
        "build": {"achieved": "N/A", "max": "N/A", "score": "N/A", "items": {}},
    },
}


def run_tree(src: Path) -> Path:
    """The original implementation's run tree: one run judged by two judges."""
    (src / RUN_DIR / "judge" / "judge_01").mkdir(parents=True)
    (src / RUN_DIR / "judge" / "judge_02").mkdir()
    (src / "result.json").write_text(
        json.dumps(
            {"config": {"experiment_id": "tiny", "models": ["claude-sonnet-4-5-20250929"]}},
            indent=2,
        )
    )
    (src / RUN_DIR / "run_result.json").write_text(
        json.dumps(
            {
                "run_number": 1,
                "exit_code": 0,
                "cost_usd": 0.25,
                "duration_seconds": 100.0,
                "judge_score": 0.9,
                "judge_passed": True,
                "judge_grade": "A",
                "token_stats": {"input_tokens": 5, "output_tokens": 6},
                "judges": [
                    {"model": "opus", "judge_number": 1},
                    {"model": "haiku", "judge_number": 2},
                ],
            },
            indent=2,
        )
    )
    for number in (1, 2):
        (src / RUN_DIR / "judge" / f"judge_0{number}" / "judgment.json").write_text(
            json.dumps(JUDGMENT, indent=2)
        )
    return src
