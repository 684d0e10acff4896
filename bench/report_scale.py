"""Time `scylla report` on a synthetic store the size of the paper's later experiment.

    python bench/report_scale.py [--runs 1080] [--judges 3] [--keep DIR]

Generates `--runs` run records (7 tiers, 3 cases, 3 judges with 5 categories each, a diff and a
transcript per run), then rebuilds every output (CSV/JSON exports, statistics, Markdown, figures,
HTML) with `scylla report` in a process of its own, and reports its wall time, its peak memory
(maximum resident set), the HTML's size and that of the run details beside it (report-runs/).
Goals on a 2-core machine: 1,080 runs <= 30 s and HTML <= 15 MB; 12,000 runs (the paper's full
study) <= 60 s, <= 2 GiB and HTML <= 25 MB.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CATEGORIES = (
    ("functional", 0.35),
    ("code_quality", 0.2),
    ("proportionality", 0.15),
    ("build_pipeline", 0.1),
    ("overall_quality", 0.2),
)
JUDGES = ("claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5")


def record(rng: random.Random, number: int, tier: int, case: str, run: int, judges: int) -> dict:
    skill = 0.55 + 0.05 * tier + rng.uniform(-0.25, 0.25)
    panel = []
    for j in range(judges):
        cats = []
        for name, weight in CATEGORIES:
            score = max(0.0, min(1.0, skill + rng.uniform(-0.15, 0.15)))
            cats.append(
                {
                    "name": name,
                    "weight": weight,
                    "achieved": round(score * 4, 2),
                    "max": 4.0,
                    "score": score,
                }
            )
        total = sum(c["score"] * c["weight"] for c in cats)
        panel.append(
            {
                "judge_model": JUDGES[j % len(JUDGES)],
                "judge_number": j + 1,
                "kind": "anthropic",
                "valid": True,
                "attempts": 1,
                "errors": [],
                "score": total,
                "impl_rate": total,
                "grade": "B",
                "passed": total >= 0.6,
                "categories": cats,
                "cost_usd": 0.01,
                "seconds": 2.0,
                "usage": {"input_tokens": 3000, "output_tokens": 400},
                "verdict": {
                    "reasoning": "synthetic",
                    "items": {
                        f"I{k}": {"achieved": 1, "reason": "synthetic " * 8} for k in range(12)
                    },
                },
            }
        )
    score = sum(p["score"] for p in panel) / len(panel)
    tokens = {
        "input_tokens": rng.randint(10, 900),
        "output_tokens": rng.randint(200, 4000),
        "cache_creation_input_tokens": rng.randint(2e4, 4e4),
        "cache_read_input_tokens": rng.randint(5e4, 4e5),
    }
    return {
        "schema": 1,
        "run_key": f"{case}-T{tier}-01-r{run}",
        "case": case,
        "tier": f"T{tier}",
        "subtest": f"T{tier}-01",
        "run": run,
        "model": "claude-sonnet-5",
        "outcome": "pass" if score >= 0.6 else "fail",
        "passed": score >= 0.6,
        "score": score,
        "impl_rate": score,
        "grade": "B",
        "cost_usd": rng.uniform(0.05, 0.6),
        "cost_source": "gateway",
        "exit_code": 0,
        "api_calls": rng.randint(3, 40),
        "num_turns": rng.randint(2, 30),
        "judge_cost_usd": 0.03,
        "judge_duration_seconds": 2.1,
        "timings": {"total_s": 60.0, "agent_s": 50.0, "checks_s": 5.0},
        "usage": {"claude-sonnet-5": tokens},
        "tokens": {**tokens, "total_tokens": sum(tokens.values())},
        "judges": panel,
        "consensus": {"score": score},
        "simulated": False,
        "config_hash": f"{number:016x}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1080)
    parser.add_argument("--judges", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    rng = random.Random(7)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-report-"))
    store = folder / "store"
    (store / "runs").mkdir(parents=True, exist_ok=True)
    cases = ("test-001", "test-002", "test-003")
    lines = []
    for number in range(args.runs):  # tiers and cases in turn, then the next run index
        tier, case = number % 7, cases[(number // 7) % len(cases)]
        rec = record(rng, number, tier, case, number // (7 * len(cases)) + 1, args.judges)
        lines.append(json.dumps(rec))
        run_dir = store / "runs" / rec["run_key"]
        run_dir.mkdir(exist_ok=True)
        (run_dir / "diff.patch").write_text(
            "diff --git a/x.py b/x.py\n" + "+line\n" * rng.randint(10, 3000)
        )
        (run_dir / "transcript.jsonl").write_text(
            "\n".join(
                json.dumps(
                    {
                        "type": "assistant",
                        "message": {"content": [{"type": "text", "text": "step " * 40}]},
                    }
                )
                for _ in range(30)
            )
        )
    (store / "runs.jsonl").write_text("\n".join(lines) + "\n")
    del lines
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scylla.cli",
            "report",
            str(store),
            "--out",
            str(folder / "out"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # kB on Linux
    out = folder / "out"
    beside = (
        sum(p.stat().st_size for p in (out / "report-runs").glob("*"))
        if (out / "report-runs").is_dir()
        else 0
    )
    big = args.runs > 2000
    print(f"runs: {args.runs} ({args.judges} judges each); scylla report exit {done.returncode}")
    print(
        f"all outputs (exports, statistics, md, figures, html): {seconds:.1f} s "
        f"(goal <= {60 if big else 30} s); peak memory {peak / 2**30:.2f} GiB"
        + (" (goal <= 2 GiB)" if big else "")
    )
    print(
        f"report.html: {(out / 'report.html').stat().st_size / 1e6:.1f} MB (goal <= "
        f"{25 if big else 15} MB); run details beside it: {beside / 1e6:.1f} MB"
    )
    code = done.returncode
    if args.keep is None:
        shutil.rmtree(folder)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
