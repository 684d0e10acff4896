"""A judge through the Claude Code CLI itself (`claude -p`), for users with a CLI login but no
API key: no tools, no settings or CLAUDE.md, a neutral empty working directory, the verdict forced
into shape with `--json-schema`. Its calls go through the gateway like every other judge's; with
no API key in the environment the gateway passes the CLI's own login through."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging import verdict
from pytest_scylla.judging.judges import MAX_ATTEMPTS, JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt
from pytest_scylla.run.agents import claude_code

TIMEOUT_SECONDS = 600


def ask(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> None:
    cli = claude_code.find_cli(os.environ.get("SCYLLA_JUDGE_CLI"))
    neutral = claim_private()  # removed by the next session if this one is killed
    try:
        env = _environment(base_url, neutral)
        argv = _command(cli, spec, prompt, items)
        question = prompt.prefix + "\n\n" + prompt.material
        for _ in range(MAX_ATTEMPTS):
            result.attempts += 1
            done = subprocess.run(
                argv,
                input=question,
                cwd=neutral,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
            )
            answer = _answer(done, result)
            if answer is None:
                continue
            given = answer.get("structured_output")
            found = (
                ["no structured output in the result: " + str(answer.get("result"))[:200]]
                if given is None
                else verdict.problems(given, items)
            )
            if not found:
                result.valid, result.verdict = True, given
                return
            result.errors.append("; ".join(found))
            question += (
                "\n\nYour previous verdict was not accepted: "
                + "; ".join(found)
                + ". Give a complete, valid verdict."
            )
    finally:
        release_private(neutral)


def _environment(base_url: str, neutral: Path) -> dict[str, str]:
    """The CLI's environment: a neutral home, the gateway, and the API key or the CLI login."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(neutral),
        **claude_code.FIXED_ENV,
        "ANTHROPIC_BASE_URL": base_url,
    }
    login = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    has_key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    if has_key or not (login / ".credentials.json").exists():
        env["ANTHROPIC_API_KEY"] = claude_code.DUMMY_KEY  # the gateway holds the real key
    else:
        env["CLAUDE_CONFIG_DIR"] = str(login)  # the user's CLI login, passed through
    return env


def _command(cli: Path, spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem]) -> list[str]:
    """`claude -p` with no tools or settings, the verdict forced into the schema's shape."""
    return [
        str(cli),
        "-p",
        "--output-format",
        "json",
        "--tools",
        "",
        "--json-schema",
        json.dumps(verdict.schema(items)),
        "--model",
        spec.model,
        "--max-turns",
        "3",
        "--no-session-persistence",
        "--setting-sources",
        "",
        "--system-prompt",
        prompt.system,
    ]


def _answer(done: subprocess.CompletedProcess[str], result: JudgeResult) -> dict[str, Any] | None:
    """The CLI's JSON result with its usage and cost counted, or None (an error noted)."""
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        result.errors.append(
            f"claude exited {done.returncode} without a JSON result: "
            f"{(done.stderr or done.stdout).strip()[-300:]}"
        )
        return None
    for key, value in (answer.get("usage") or {}).items():
        if isinstance(value, int):
            result.usage[key] = result.usage.get(key, 0) + value
    result.cost_usd += float(answer.get("total_cost_usd") or 0.0)
    return answer
