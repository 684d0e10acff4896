"""The judge panel end to end: the real Anthropic SDK through the gateway's oracle upstream
(forced tool-call verdicts, retries, invalid judges, judge_error), the prompt, the OpenAI-compatible
and Gemini judges, and the options.

Here the sessions; the in-process tests are in `tests/unit/judging/test_judges.py`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..conftest import workers

ALPHA = "alpha and T0-01"


def record(out: Path, key: str = "alpha-T0-01-r1") -> dict[str, Any]:
    return json.loads((out / "runs" / key / "run.json").read_text())


def test_every_judge_answers_through_the_sdk_and_the_run_is_scored_in_code(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    out = mini / "out"
    result = pytester.runpytest("cases", "-k", ALPHA, *workers(0), *oracle, f"--scylla-out={out}")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "scylla: judges=claude-opus-4-8,claude-sonnet-5,"
            "claude-haiku-4-5 (min 2 valid) answered by the oracle: "
            "SIMULATED"
        ]
    )
    rec = record(out)
    assert [j["judge_model"] for j in rec["judges"]] == [
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-haiku-4-5",
    ]
    for judge in rec["judges"]:
        assert judge["valid"] is True
        assert judge["attempts"] == 1
        assert judge["response_model"] == judge["judge_model"]
        assert judge["usage"]["input_tokens"] > 0
        assert judge["cost_usd"] > 0
        assert judge["score"] == 1.0
        assert judge["grade"] == "S"
    assert rec["consensus"]["score"] == 1.0
    assert rec["consensus"]["passed"] is True
    assert rec["score"] == 1.0
    assert rec["grade"] == "S"
    assert rec["judge_cost_usd"] == pytest.approx(
        sum(j["cost_usd"] for j in rec["judges"]), abs=1e-6
    )
    calls = (out / "runs/alpha-T0-01-r1/judge_calls.jsonl").read_text().splitlines()
    assert len(calls) == 3
    assert {json.loads(c)["model"] for c in calls} == {j["judge_model"] for j in rec["judges"]}


@pytest.mark.parametrize("n", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_a_malformed_verdict_is_retried_and_an_invalid_judge_leaves_two(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    n: int,
) -> None:
    """In the run's process, and under xdist through the controller's judge service."""
    monkeypatch.setenv(
        "SCYLLA_ORACLE_JUDGE_FAULT", "malformed-once:claude-opus-4-8,never-valid:claude-haiku-4-5"
    )
    out = mini / "out"
    result = pytester.runpytest("cases", "-k", ALPHA, *workers(n), *oracle, f"--scylla-out={out}")
    result.assert_outcomes(passed=1)
    opus, sonnet, haiku = record(out)["judges"]
    assert (opus["valid"], opus["attempts"]) == (True, 2)
    assert "items: 'Q1' is a required property" in opus["errors"][0]
    assert (sonnet["valid"], sonnet["attempts"]) == (True, 1)
    assert (haiku["valid"], haiku["attempts"]) == (False, 3)
    assert len(haiku["errors"]) == 3
    assert "score" not in haiku
    assert record(out)["valid_judges"] == 2
    assert len((out / "runs/alpha-T0-01-r1/judge_calls.jsonl").read_text().splitlines()) == 6


@pytest.mark.parametrize(
    ("invalid", "valid"),
    [
        (["claude-opus-4-8", "claude-sonnet-5"], 1),
        (["claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5"], 0),
    ],
)
def test_too_few_valid_judges_is_a_judge_error(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    invalid: list[str],
    valid: int,
) -> None:
    monkeypatch.setenv("SCYLLA_ORACLE_JUDGE_FAULT", ",".join(f"never-valid:{m}" for m in invalid))
    out = mini / "out"
    result = pytester.runpytest(
        "cases", "-k", ALPHA, "-p", "no:xdist", *oracle, f"--scylla-out={out}"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"judge_error: only {valid} valid judge(s), 2 needed: claude-opus-4-8: items: *"]
    )
    rec = record(out)
    assert rec["outcome"] == "judge_error"
    assert rec["consensus"] is None
    assert rec["checks"]  # what was measured is kept
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--scylla-judges=mistral:x", "--scylla-judges: unknown judge kind 'mistral'*"),
        (
            "--scylla-judges=openai:llama3",
            "--scylla-judges: 'openai:llama3': an openai judge needs its endpoint*",
        ),
        ("--scylla-min-judges=0", "--scylla-min-judges='0': expected a whole number of judges*"),
    ],
)
def test_bad_judge_options_are_usage_errors(
    mini: Path, pytester: pytest.Pytester, option: str, message: str
) -> None:
    result = pytester.runpytest("cases", option, "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_claude_cli_judge_answers_through_json_schema(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    out = mini / "out"
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-judges=claude-cli:claude-haiku-4-5,claude-sonnet-5",
        f"--scylla-out={out}",
    )
    result.assert_outcomes(passed=1)
    cli, sdk = record(out)["judges"]
    assert (cli["kind"], cli["valid"], cli["score"]) == ("claude-cli", True, 1.0)
    assert cli["usage"]["output_tokens"] > 0
    assert cli["cost_usd"] > 0
    assert (sdk["kind"], sdk["valid"]) == ("anthropic", True)
    calls = [
        json.loads(c)
        for c in (out / "runs/alpha-T0-01-r1/judge_calls.jsonl").read_text().splitlines()
    ]
    assert {c["model"] for c in calls if c.get("model")} == {"claude-haiku-4-5", "claude-sonnet-5"}


TOY_JUDGE = '''
import json

import httpx

from pytest_scylla.judging import verdict
from pytest_scylla.judging.judges import JudgeKind


def ask(spec, prompt, items, base_url, result):
    """A toy kind: one Chat Completions call with the verdict's schema, through the gateway."""
    result.attempts += 1
    reply = httpx.post(base_url.rstrip("/") + "/chat/completions", timeout=60, json={
        "model": spec.model, "messages": [{"role": "user", "content": prompt.material}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": verdict.TOOL_NAME, "schema": verdict.schema(items)}}})
    reply.raise_for_status()
    answer = json.loads(reply.json()["choices"][0]["message"]["content"])
    found = verdict.problems(answer, items)
    result.valid, result.verdict, result.errors = not found, answer, found


def pytest_scylla_judge_kinds(config):
    return {"toy": JudgeKind(ask=ask, upstream="openai")}
'''


def test_a_judge_kind_from_a_plugin_sits_on_the_panel(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """A plugin's `pytest_scylla_judge_kinds` adds a kind that --scylla-judges names like the
    built-in ones; its calls go through the gateway (logged with the run's judge calls).
    Without the plugin the same option is one usage error (the control)."""
    out = mini / "out"
    refused = pytester.runpytest(
        "cases", "--co", "-p", "no:xdist", *oracle, "--scylla-judges=toy:tiny,claude-haiku-4-5"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --scylla-judges: unknown judge kind 'toy' in *"])
    (mini / "conftest.py").write_text(TOY_JUDGE)
    result = pytester.runpytest(
        "cases",
        "-k",
        ALPHA,
        "-p",
        "no:xdist",
        *oracle,
        "--scylla-judges=toy:tiny,claude-haiku-4-5",
        f"--scylla-out={out}",
    )
    result.assert_outcomes(passed=1)
    toy, sdk = record(out)["judges"]
    assert (toy["kind"], toy["model"], toy["valid"], toy["score"]) == ("toy", "tiny", True, 1.0)
    assert (sdk["kind"], sdk["valid"]) == ("anthropic", True)
    calls = [
        json.loads(c)
        for c in (out / "runs" / "alpha-T0-01-r1" / "judge_calls.jsonl").read_text().splitlines()
    ]
    assert ("/chat/completions", "tiny") in {(c["endpoint"], c["model"]) for c in calls}


@pytest.mark.slow  # (12 s of a worker)
def test_judging_leaves_no_connection_open(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """A session in this process (as the slow tier's in-process sessions are): the judges'
    clients close their connections, so open files do not grow with the runs judged (they
    did, one client per judge call, until select() met a file number past 1023)."""

    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    pytester.runpytest(
        "cases", "-k", "alpha and T0-00", "-p", "no:xdist", *oracle, f"--scylla-out={mini / 'warm'}"
    )  # imports, caches: a first session
    before = open_files()
    result = pytester.runpytest(
        "cases", "-k", "alpha and T0", "-p", "no:xdist", *oracle, f"--scylla-out={mini / 'out'}"
    )
    result.assert_outcomes(passed=3)
    assert open_files() - before < 3  # 9 judge calls: 9 or more when each left one open
