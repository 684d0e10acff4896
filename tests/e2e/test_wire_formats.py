"""The oracle speaks each vendor's wire format, checked with each vendor's own client: OpenAI
Chat Completions (an `openai:` judge is answered offline under `--scylla-oracle`), OpenAI's
Responses API (Codex) and Google's generateContent (Gemini CLI) — whole and streamed, each
vendor's usage shape, every call through its gateway route: logged, priced from the dated
table, budgeted.

Here the sessions; the in-process tests are in `tests/unit/run/gateway/test_wire_formats.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import workers


def test_an_openai_judge_on_the_panel_under_the_oracle(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """The endpoint named is never reached: the oracle answers the judge in its format."""
    out = mini / "out"
    done = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        *workers(0),
        *oracle,
        "--scylla-judges=claude-haiku-4-5,openai:gpt-5@http://judge.invalid/v1",
        f"--scylla-out={out}",
    )
    done.assert_outcomes(passed=1)
    rec = json.loads((out / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    judges = {j["judge_model"]: j for j in rec["judges"]}
    assert judges["gpt-5"]["valid"]
    assert judges["gpt-5"]["score"] == judges["claude-haiku-4-5"]["score"] == 1.0
    calls = [
        json.loads(line)
        for line in (out / "runs" / "alpha-T0-01-r1" / "judge_calls.jsonl").read_text().splitlines()
    ]
    gpt = [c for c in calls if c["endpoint"] == "/chat/completions"]
    assert len(gpt) == 1
    assert gpt[0]["model"] == "gpt-5"
    assert gpt[0]["cost_usd"] > 0
    # the judge's own cost counts in the run's judging cost, as the gateway priced it
    assert judges["gpt-5"]["cost_usd"] == pytest.approx(gpt[0]["cost_usd"], abs=1e-6)
    assert rec["judge_cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in calls), abs=1e-5)
