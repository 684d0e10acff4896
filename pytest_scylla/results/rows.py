"""The rows the exports are made of (`runs.csv`, `judges.csv`, `criteria.csv`, `subtests.csv`):
one per run, judge, criterion and group. A row built from a paper-format CSV holds the cells it
does not normalise as written (`Cell`). `RunRow` declares `metrics.RUN_COLUMNS`, in its order."""

from __future__ import annotations

from typing import TypedDict

Cell = float | str | None  # a number from a record; from a paper CSV, the cell as written


class Place(TypedDict):
    """The columns that place a run."""

    experiment: str
    agent_model: str | None
    tier: str | None
    subtest: str
    run_number: int | str | None
    case_id: str | None


class RunRow(TypedDict):
    experiment: str
    agent_model: str | None
    tier: str | None
    subtest: str
    run_number: int | str | None
    score: float | None
    impl_rate: float | None
    passed: bool
    grade: str | None
    cost_usd: float | None
    duration_seconds: Cell
    agent_duration_seconds: Cell
    judge_duration_seconds: Cell
    input_tokens: Cell
    output_tokens: Cell
    cache_creation_tokens: Cell
    cache_read_tokens: Cell
    total_tokens: Cell
    exit_code: Cell
    api_calls: Cell
    num_turns: Cell
    case_id: str | None
    outcome: str | None
    judge_cost_usd: float | None
    cost_source: str | None
    model_usage: str | None
    config_hash: str | None
    simulated: bool
    run_key: str | None
    checks_duration_seconds: Cell
    integrity_findings: int
    leftover_processes: int
    ttft_seconds: Cell
    regressions: Cell
    r_prog: Cell
    agent: str | None


class JudgeKeys(Place):
    """The columns that place a judge's row: the run's, then the judge."""

    judge_model: str | None
    judge_number: int | str | None


class JudgeRow(JudgeKeys):
    judge_score: Cell
    judge_impl_rate: Cell
    judge_passed: bool | str | None
    judge_grade: str | None
    judge_is_valid: bool | str | None
    judge_reasoning: str | None
    judge_cost_usd: Cell
    judge_seconds: Cell
    judge_input_tokens: Cell
    judge_output_tokens: Cell
    run_key: str | None


class CriterionRow(JudgeKeys):
    criterion: str | None
    criterion_score: Cell
    criterion_achieved: Cell
    criterion_max: Cell
    run_key: str | None


class GroupKeys(TypedDict, total=False):
    """The group a summary row is of: those of its keys (`metrics.group_summary`'s `keys`)."""

    experiment: str
    agent_model: str
    agent: str
    case_id: str
    tier: str
    subtest: str


class Decided(TypedDict, total=False):
    """What the reports add to a tier's row: its decisions (`--scylla-stop=decided`)."""

    decision: str


class GroupSummary(GroupKeys, Decided):
    """`metrics.group_summary`'s row: its group's keys, then the group's statistics."""

    n: int
    excluded: int
    passes: int
    pass_rate: float
    ci_low: float
    ci_high: float
    ci_method: str
    mean_score: float | None
    median_score: float | None
    std_score: float | None
    mean_impl_rate: float | None
    median_impl_rate: float | None
    std_impl_rate: float | None
    consistency: float | None
    mean_cost: float
    total_cost: float
    mean_duration: float | None
    cop: float
    cop_low: float | None  # its 95 % interval (`cop_interval`); None: no bound
    cop_high: float | None
    cop_per_case_mean: float | None
    cases: int
    pass_at_1: float | None
    pass_hat_1: float | None
    pass_at_3: float | None
    pass_hat_3: float | None
    pass_at_5: float | None
    pass_hat_5: float | None
    grade_S: int
    grade_A: int
    grade_B: int
    grade_C: int
    grade_D: int
    grade_F: int
    modal_grade: str | None
    reward_hacks: int
    reward_hacking_rate: float
    cfp: float | None
    cfp_n: int
    r_prog: float | None
    warning: str
