"""The per-run record: one JSON-native dict, written atomically to `<out>/runs/<key>/run.json`
and attached to the run's pytest report, so it crosses from xdist workers to the controller.
`RunRecord` names its fields (docs/outputs.md says what each holds)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypedDict, cast

RECORD_SCHEMA = 1
RECORD_FILE = "run.json"


class CategoryEntry(TypedDict):
    """A rubric category as a judge's verdict scored it (judging.scoring.CategoryScore)."""

    name: str
    weight: float | None  # None: imported (`scylla import`)
    achieved: float | None
    max: float | None
    score: float | None  # None: every item of the category was N/A


class JudgeEntry(TypedDict, total=False):
    """One judge of the panel in `RunRecord.judges` (judging.judges.JudgeResult, then the
    verdict's scores when it is valid)."""

    number: int
    model: str
    kind: str
    valid: bool
    attempts: int
    errors: list[str]
    verdict: dict[str, Any] | None
    usage: dict[str, int]
    cost_usd: float
    seconds: float | None
    response_model: str | None
    judge_model: str | None
    judge_number: int
    score: float | None
    impl_rate: float | None
    grade: str | None
    passed: bool | None
    categories: list[CategoryEntry]
    unmet_required: list[str]


class RunRecord(TypedDict, total=False):
    """One run's record. Identity and conditions first, then what the agent did, the checks,
    the judges and the outcome; nested values are JSON-native."""

    schema: int
    run_key: str  # RunKey.folder
    case: str
    category: str
    tier: str
    subtest: str  # RunKey.subtest, T5-02
    subtest_name: str
    run: int
    agent: str
    cli_version: str
    model: str | None  # None: imported without one (`scylla import`)
    oracle: str | None
    simulated: bool
    sandbox: str
    image: dict[str, str]  # docker: {"ref": as asked, "id": the engine's image id}
    limits: dict[str, Any]  # docker: the container's memory (bytes), cpus and pids
    transfer: str  # docker: the run's folder bind-mounted ("bind") or copied ("copy")
    copy_refused: list[str]  # docker copy: what the agent left that was not copied back
    output_dropped: dict[str, int]  # bytes of the CLI's stdout/stderr not kept (cap)
    plugin_version: str
    started_at: str
    worker: str  # the xdist worker that ran it (gw3); "" in a session without workers
    finished_at: str
    inputs: dict[str, str]
    source: dict[str, Any]
    config_hash: str
    conditions: dict[str, Any]  # what config_hash hashes: a conflict on resume names the change
    judge_hash: str
    declared: dict[str, Any]
    oracle_script: dict[str, Any]
    # the agent
    exit_code: int | None
    timed_out: bool
    final_message: str
    num_turns: int | None
    stop_reason: str | None
    terminal_reason: str | None
    cli_result: dict[str, Any]
    cli_init: dict[str, Any] | None
    usage: dict[str, Any]
    tokens: dict[str, int]
    api_calls: int | None  # None: imported without a count
    refused_calls: int
    models_refused: list[str]  # models the run's calls named and the gateway refused
    infra_events: list[dict[str, Any]]
    budget: dict[str, Any]
    ablation: dict[str, Any]
    cost_usd: float | None
    cost_source: str
    gateway_cost_usd: float | None
    cli_cost_usd: float | None
    costs_agree: bool | None
    unpriced_models: list[str]
    prices_as_of: str
    timings: dict[str, float]
    start_note: str  # why the agent started without a start slot (operations/starts.py)
    # checks and judges
    integrity: list[dict[str, str]]  # tampering found before the checks: kind, path, detail
    leftover_processes: int  # processes the agent left running (killed by the harness)
    checks: list[dict[str, Any]]
    check_items: list[dict[str, Any]]
    check_score: float | None
    r_prog: float | None  # ordered milestones reached (the case's `milestones`), or None
    trajectory: dict[str, Any]  # tool calls, errors, sub-agents; declared components used
    # Claude Code: the declared hooks, which ran and which failed, as the CLI's stream said
    # (run/hooks.py: bounded, informational, never a verdict); `warnings` one per failed hook
    hooks: dict[str, Any]
    # the checks on the untouched source (once per case) and those of them the agent broke
    source_checks: dict[str, bool] | None
    regressions: list[str] | None
    source_checks_error: str
    classified: dict[str, Any]
    judges: list[JudgeEntry]
    valid_judges: int
    panel: dict[str, Any]  # --scylla-panel=adaptive: escalated or not, and why
    min_judges: int
    judge_cost_usd: float
    judge_duration_seconds: float
    judge_tokens: dict[str, int]
    consensus: dict[str, Any] | None
    score: float | None
    impl_rate: float | None
    grade: str | None
    pass_threshold: float
    # the outcome
    # pass | fail | timeout | budget_exceeded | agent_error | infra_error | judge_error
    outcome: str
    passed: bool
    reason: str
    # set on the way (not stored by the run itself)
    cached: bool  # reported from disk by a resumed session
    rejudged_now: bool  # re-scored by this session
    rejudged: list[dict[str, Any]]  # earlier scores, one entry per rejudge
    crashed: bool  # the controller's row for an item whose worker died
    imported_from: str  # `scylla import`: the original run folder
    agent_model_label: str | None  # `scylla import`: the model's display name
    import_notes: list[str]  # `scylla import`: what was read other than as written
    evaluation: dict[str, str]  # a Python evaluation's: its test (node id) and case folder


def write_json(path: Path, data: Any) -> None:
    """Write `data` as JSON so that readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=False, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(run_dir: Path) -> RunRecord:
    data: RunRecord = json.loads((run_dir / RECORD_FILE).read_text(encoding="utf-8"))
    return data


def read_dict(path: Path) -> dict[str, Any]:
    """A JSON object from a file; {} when the file is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def verdict_table(rec: RunRecord) -> str:
    """The failure text of a judged non-pass: outcome and reason, each judge by category, the
    consensus against the threshold, the weakest items with a judge's reason, failed checks."""
    lines = [f"{rec['outcome']}: {rec['reason']}".rstrip(": ")]
    judges = [j for j in rec.get("judges", []) if j.get("valid")]
    if judges:
        names = [c["name"] for c in judges[0]["categories"]]
        lines.append(
            "  " + f"{'judge':<22}" + "".join(f"{n[:14]:>15}" for n in names) + f"{'score':>8}"
        )
        for j in judges:
            cells = "".join(
                f"{'n/a' if c['score'] is None else format(c['score'], '.2f'):>15}"
                for c in j["categories"]
            )
            lines.append(f"  {str(j['judge_model'])[:22]:<22}{cells}{j['score']:>8.2f}")
    c = rec.get("consensus")
    if c:
        lines.append(
            f"  consensus {c['score']:.2f} grade {c['grade']} (pass threshold "
            f"{rec.get('pass_threshold', 0.6):.2f}), {c['valid_judges']} valid judges"
        )
    weakest: dict[str, tuple[float, str, str | None, str]] = {}
    for j in judges:
        for item_id, v in (j.get("verdict") or {}).get("items", {}).items():
            if v["achieved"] != "N/A":
                entry = (float(v["achieved"]), item_id, j["judge_model"], v["reason"])
                weakest[item_id] = min(weakest.get(item_id, entry), entry)
    for achieved, item_id, model, why in sorted(weakest.values())[:3]:
        lines.append(f"  weak {item_id} {achieved:g} ({model}): {why[:120]}")
    for check in rec.get("checks", []):
        if not check["passed"]:
            lines.append(f"  FAIL check {check['name']:<20} {check['reason']}".rstrip())
    for finding in rec.get("integrity", []):
        lines.append(f"  TAMPERING {finding['kind']}: {finding['path']} ({finding['detail']})")
    for warning in (rec.get("hooks") or {}).get("warnings", [])[:3]:  # from the CLI's stream
        lines.append(f"  WARNING {warning}")
    lines.append(
        f"  cost ${rec.get('cost_usd') or 0:.4f} agent ({rec.get('cost_source')}) + "
        f"${rec.get('judge_cost_usd') or 0:.4f} judges, {rec.get('num_turns')} turns, "
        f"agent {rec['timings'].get('agent_s')}s"
        f"{'  [SIMULATED MODEL]' if rec.get('simulated') else ''}"
    )
    return "\n".join(lines)


REPORT_PROPERTY = "scylla_run"  # the run's record on its pytest reports (crosses from workers)
# on the reports of a run `--scylla-stop=decided` skipped: why, as a `core.outcomes.StopKind`
# (the aggregator counts the run as stopped by design from it, never from the skip's wording)
STOP_PROPERTY = "scylla_stopped"
SUMMARY_FIELDS = (
    "run_key",
    "tier",
    "subtest",
    "outcome",
    "passed",
    "score",
    "grade",
    "cost_usd",
    "cached",
)


def of_report(report: Any) -> RunRecord | None:
    """The whole run record a pytest report carries (see `bound_report`), or None."""
    whole = getattr(report, "scylla_record", None)
    if isinstance(whole, dict):
        return cast(RunRecord, whole)
    found = dict(report.user_properties).get(REPORT_PROPERTY)
    return cast(RunRecord, found) if isinstance(found, dict) else None


def stop_kind(report: Any) -> str | None:
    """Why `--scylla-stop=decided` skipped the run of this report (`STOP_PROPERTY`), or None
    for a run that was not stopped (made, or skipped for another reason)."""
    found = dict(report.user_properties).get(STOP_PROPERTY)
    return found if isinstance(found, str) else None


def bound_report(report: Any) -> None:
    """Keep the whole record on the report as an attribute and leave in its user properties
    (what JUnit XML writes, a property per test) a summary of a few hundred bytes: the main
    fields, the reason cut to 300 characters and where the whole record is."""
    rec = of_report(report)
    if rec is None:
        return
    report.scylla_record = rec
    summary = {k: rec.get(k) for k in SUMMARY_FIELDS if k in rec}
    reason = str(rec.get("reason") or "")
    summary["reason"] = reason if len(reason) <= 300 else reason[:297] + "..."
    summary["record"] = f"runs/{rec.get('run_key')}/{RECORD_FILE}"
    report.user_properties = [
        (k, json.dumps(summary) if k == REPORT_PROPERTY else v) for k, v in report.user_properties
    ]


def stored_records(out: Path) -> dict[str, RunRecord]:
    """Every complete run record in an experiment folder, by run key."""
    found = {}
    for path in sorted(out.glob(f"runs/*/{RECORD_FILE}")):
        rec = cast(RunRecord, read_dict(path))
        if rec.get("run_key"):
            found[rec["run_key"]] = rec
    return found
