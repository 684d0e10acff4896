"""Judging one run: ask the panel through the gateway, score every valid verdict in code, and
say why a judged run failed. The oracle's judges answer from the checks."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_scylla.core import pricing
from pytest_scylla.core.record import JudgeEntry, RunRecord
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.formats.spec import Case
from pytest_scylla.judging import prompt as judge_prompt
from pytest_scylla.judging import scoring
from pytest_scylla.judging.judges import JudgeResult, JudgeSpec
from pytest_scylla.judging.panel import run_panel
from pytest_scylla.run import checks
from pytest_scylla.run.gateway import Route, gemini_wire
from pytest_scylla.run.gateway.oracle.model import Script
from pytest_scylla.run.gateway.replay import recorded

if TYPE_CHECKING:
    from pytest_scylla.operations.runtime import Runtime


@dataclass(frozen=True)
class Evidence:
    """What the judges see of a run (besides the task and rubric): all of it written by the
    agent or measured on its work, so untrusted, and fenced in the prompt."""

    final_message: str
    diff: str
    files: list[str]
    checks: list[checks.CheckResult]

    def check_rows(self, case: Case) -> list[dict[str, Any]]:
        return scoring.check_items(case.rubric, {r.name: r.passed for r in self.checks})

    def check_score(self, case: Case) -> float | None:
        return scoring.check_score(self.check_rows(case))


def oracle_verdict(items: list[RubricItem], results: list[checks.CheckResult]) -> dict[str, Any]:
    """What the oracle judge answers: each judge item in proportion to the checks that passed
    (in quarter points), so a run that passes its checks scores high and one that fails low."""
    share = sum(r.passed for r in results) / len(results) if results else 1.0
    reason = f"oracle judge: {sum(r.passed for r in results)} of {len(results)} checks passed"
    return {
        "items": {
            i.id: {"achieved": round(i.points * share * 4) / 4, "reason": reason} for i in items
        },
        "reasoning": f"SIMULATED verdict derived from the checks ({reason}).",
    }


def upstream_of(spec: JudgeSpec, oracle: bool) -> tuple[str, str | None]:
    """A judge's gateway upstream and where it goes: `openai` judges reach their own endpoint,
    `gemini` judges Google's API (or GOOGLE_GEMINI_BASE_URL), the others Anthropic's — through
    the gateway all the same: logged, priced and budgeted like every call. Under the oracle it
    answers them all (it speaks each one's wire format)."""
    if oracle:
        return "oracle", None
    url = spec.base_url.rstrip("/") if spec.base_url else None
    upstream = spec.upstream[0]  # a plugin's kind names its own
    if upstream == "gemini":
        return "gemini", url or gemini_wire.base_url()
    return upstream, url


def judge(case: Case, key: str, run_dir: Path, rt: Runtime, evidence: Evidence) -> RunRecord:
    """Ask the panel (concurrently, through the gateway) and score every valid verdict in code.
    Check items come from the checks; a rubric without judge items needs no panel."""
    began = time.monotonic()
    items = [i for i in case.rubric.items if i.kind == "judge"]
    from_checks = {r["id"]: r["achieved"] for r in evidence.check_rows(case)}
    panel: list[JudgeResult] = []
    adaptive: dict[str, Any] | None = None
    if items:
        panel, adaptive = _ask_panel(case, key, run_dir, rt, evidence, items, from_checks)
    verdicts, valid = _verdicts(case, from_checks, panel)
    if not items:
        valid = [scoring.score(case.rubric, from_checks)]
    need = _judges_needed(rt) if items else 1
    out: RunRecord = {
        "judges": verdicts,
        "valid_judges": len(valid),
        "min_judges": need,
        "judge_cost_usd": round(sum(r.cost_usd for r in panel), 6),
        "judge_duration_seconds": round(time.monotonic() - began, 3),
        "judge_tokens": pricing.token_totals({r.model: r.usage for r in panel}),
        "consensus": None,
    }
    if adaptive is not None:
        out["panel"] = adaptive
    if len(valid) >= need:
        panel_verdict = scoring.consensus(case.rubric, valid)
        out["consensus"] = asdict(panel_verdict)
        out.update(
            {
                "score": panel_verdict.score,
                "impl_rate": panel_verdict.impl_rate,
                "grade": panel_verdict.grade,
            }
        )
    return out


def _judges_needed(rt: Runtime) -> int:
    """How many valid verdicts a judged run needs: the minimum asked, at most the panel's size."""
    return max(1, min(rt.settings.min_judges, len(rt.settings.judges)))


def _ask_panel(
    case: Case,
    key: str,
    run_dir: Path,
    rt: Runtime,
    evidence: Evidence,
    items: list[RubricItem],
    from_checks: dict[str, Any],
) -> tuple[list[JudgeResult], dict[str, Any] | None]:
    """The panel's answers (see `_ask`), each judge through a gateway route of its own."""
    results = evidence.checks
    prompt = judge_prompt.build(
        case,
        items,
        evidence.final_message,
        evidence.diff,
        evidence.files,
        [r.to_json() for r in results],
    )
    script = (
        Script(mode="judge", workspace=run_dir, files=(), verdict=oracle_verdict(items, results))
        if rt.settings.oracle
        else None
    )
    routes: list[Route] = []
    base_url = _route_opener(key, run_dir, rt, script, routes)
    try:
        return _ask(
            rt.settings.judges,
            rt.settings.panel,
            _judges_needed(rt),
            case,
            lambda specs, numbers: run_panel(specs, prompt, items, base_url, numbers),
            lambda result: _scored(case, from_checks, result),
        )
    finally:
        for route in routes:
            rt.gateway.close(route.key)


def _route_opener(
    key: str, run_dir: Path, rt: Runtime, script: Script | None, routes: list[Route]
) -> Callable[[int, JudgeSpec], str]:
    """The URL a judge calls: a gateway route opened for it (and kept in `routes` to close)."""

    def base_url(number: int, spec: JudgeSpec) -> str:
        upstream, upstream_url = upstream_of(spec, bool(rt.settings.oracle))
        route = rt.gateway.open(
            Route(
                key=f"{key}-judge{number}-{secrets.token_hex(8)}",
                log_path=run_dir / "judge_calls.jsonl",
                script=script,
                upstream=upstream,
                upstream_url=upstream_url,
                pass_auth=spec.upstream[1],
                bodies_dir=run_dir / "bodies" / f"judge{number}"
                if rt.settings.record_bodies
                else None,
                replay=recorded(rt.settings.replay, run_dir.name, "bodies", f"judge{number}"),
            )
        )
        routes.append(route)
        return rt.gateway.base_url(route.key)

    return base_url


def _verdicts(
    case: Case, from_checks: dict[str, Any], panel: list[JudgeResult]
) -> tuple[list[JudgeEntry], list[Any]]:
    """Each judge's entry for the record (scored when its verdict is valid), and the scores of
    the valid verdicts."""
    verdicts: list[Any] = []  # JudgeEntry, and its Scored until popped
    for result in panel:
        entry = result.to_json()
        entry["judge_model"], entry["judge_number"] = result.model, result.number
        scored = _scored(case, from_checks, result)
        if scored is not None:
            entry.update(
                score=scored.score,
                impl_rate=scored.impl_rate,
                grade=case.rubric.grade(scored.score),
                passed=scored.score >= case.rubric.pass_threshold and scored.required_met,
                categories=[asdict(c) for c in scored.categories],
                unmet_required=list(scored.unmet_required),
            )
            entry["_scored"] = scored
        verdicts.append(entry)
    valid = [v.pop("_scored") for v in verdicts if "_scored" in v]
    return verdicts, valid


ADAPTIVE_SPREAD = 0.15  # the cheaper judges' scores may differ by this much and still stand


def _scored(case: Case, from_checks: dict[str, Any], result: JudgeResult) -> Any:
    """A valid verdict scored in code (check items from the checks), else None."""
    if not result.valid or result.verdict is None:
        return None
    achieved = {**from_checks, **{i: v["achieved"] for i, v in result.verdict["items"].items()}}
    return scoring.score(case.rubric, achieved)


def _ask(
    judges: tuple[JudgeSpec, ...],
    mode: str,
    need: int,
    case: Case,
    ask: Callable[[list[JudgeSpec], list[int]], list[JudgeResult]],
    scored: Callable[[JudgeResult], Any],
) -> tuple[list[JudgeResult], dict[str, Any] | None]:
    """The panel's answers. `adaptive`: the cheaper judges first; the most expensive one (by
    the price table's output price) only when they leave the verdict open — fewer valid
    verdicts than needed, scores more than ADAPTIVE_SPREAD apart, or some passing and some
    not. Returns the answers and, when adaptive, what was decided and why."""
    numbered = list(enumerate(judges, start=1))
    if mode != "adaptive" or len(numbered) < 2:
        return ask([j for _, j in numbered], [n for n, _ in numbered]), None
    strongest = max(numbered, key=lambda nj: pricing.price(nj[1].model).output)
    first = [nj for nj in numbered if nj is not strongest]
    panel = ask([j for _, j in first], [n for n, _ in first])
    scores = [s for s in (scored(r) for r in panel) if s is not None]
    passes = {s.score >= case.rubric.pass_threshold and s.required_met for s in scores}
    spread = max(s.score for s in scores) - min(s.score for s in scores) if scores else 0.0
    reason = (
        f"{len(scores)} valid verdicts of {need} needed"
        if len(scores) < need
        else "the verdicts straddle the pass line"
        if len(passes) > 1
        else f"scores {spread:.2f} apart (> {ADAPTIVE_SPREAD})"
        if spread > ADAPTIVE_SPREAD
        else ""
    )
    if reason:
        panel = sorted(panel + ask([strongest[1]], [strongest[0]]), key=lambda r: r.number)
    return panel, {
        "mode": "adaptive",
        "escalated": bool(reason),
        "reason": reason,
        "strongest": strongest[1].label,
        "skipped": [] if reason else [strongest[1].label],
    }
