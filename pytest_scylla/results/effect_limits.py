"""What the runs of an ablation cannot support, said in words instead of numbers (`scylla
ablate report`): which arms have no counted run and why; a difference of pass rates that no
interval can bound (fewer than two counted runs on a side, every counted run passed or every one
failed, a two-level design with fewer than twice as many runs as parameters); factors the arms
cannot tell apart (aliased), named as a group."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pytest_scylla.core.outcomes import COUNTED, Outcome
from pytest_scylla.formats.ablation_plan import LEAVE_ONE_OUT, DesignKind

Row = Mapping[str, Any]
ZERO = 0.005  # a difference of pass rates that shows as 0 %: no difference observed
REASONS = 2  # the distinct reasons shown per arm
REASON_CHARS = 200
NO_DIFFERENCE = "no difference observed"
NO_FULL = "not estimable: the full arm (every component) has no counted run"
NO_CASE = "not estimable: no case has counted runs in both the full arm and the arm without it"


def aliased(others: Sequence[str], in_design: bool) -> str:
    """Why a factor has no verdict when the arms cannot tell it apart from `others` (factors,
    or "the constant"): the design itself confounds them (`in_design`), or the arms with
    counted runs do (arms lost to errors or budget)."""
    group = ", ".join(others) or "the other factors"
    if in_design:
        return (
            f"not estimable: aliased with {group} (the design's arms keep them together; "
            "no number of runs tells them apart: ablate them as one group or plan again)"
        )
    return (
        f"not estimable: aliased with {group} in the arms with counted runs (more runs will "
        "not help; the arms without one will)"
    )


def pass_problem(with_: Sequence[Row], without: Sequence[Row], where: str = "both arms") -> str:
    """Why no interval can bound the difference of pass rates between two groups of counted
    runs, or "" when one can; `where` names the groups in the words."""
    n1, n2 = len(with_), len(without)
    if min(n1, n2) < 2:
        return f"not estimable at this n ({_runs(n1)} with it, {_runs(n2)} without)"
    passed = {r["outcome"] == Outcome.PASS for r in (*with_, *without)}
    if passed == {True}:
        return f"cannot estimate: every counted run passed in {where}"
    if passed == {False}:
        return f"cannot estimate: every counted run failed in {where}"
    return ""


def _runs(n: int) -> str:
    return f"{n} counted run" + ("" if n == 1 else "s")


def regression_problem(rows: int, factors: int) -> str:
    """Why a two-level design's regression is not fitted to `rows` counted runs, or ""; it
    asks for twice as many runs as parameters (the factors and a constant)."""
    if rows >= 2 * (factors + 1):
        return ""
    return f"not estimable at this n: {rows} counted runs for {factors} factors"


def _regression_note(rows: int, factors: int, arms: int) -> list[str]:
    """What a regression too small to fit needs, in a note (or none)."""
    if not regression_problem(rows, factors):
        return []
    need = 2 * (factors + 1)
    return [
        f"a regression on {factors} factors and a constant needs at least {need} counted runs "
        f"(twice its parameters), this experiment has {rows}: run each arm at least "
        f"{max(2, math.ceil(need / max(arms, 1)))} times"
    ]


def reasons_of(records: Sequence[Row]) -> dict[str, str]:
    """Run key -> the reason its run ended as it did (`arm_notes`' `reasons`), from records."""
    return {str(r.get("run_key")): str(r.get("reason") or "") for r in records}


class Arms(Protocol):
    """The parts of a plan's design (`component_effects.Design`) the notes read."""

    @property
    def kind(self) -> DesignKind: ...
    @property
    def factors(self) -> tuple[str, ...]: ...
    @property
    def arms(self) -> Mapping[str, frozenset[str]]: ...
    @property
    def labels(self) -> Mapping[str, str]: ...


def arm_notes(runs: Sequence[Row], design: Arms, reasons: Mapping[str, str]) -> list[str]:
    """One line per arm of the plan with no counted run (its runs' outcomes and their
    reasons, from `reasons`: run key -> reason), what the full arm's absence means, and the
    runs a regression too small to fit needs."""
    notes, empty = [], set()
    for arm in sorted(design.arms):
        mine = [r for r in runs if r.get("tier") == "T0" and str(r["subtest"])[:2] == arm]
        if not any(r["outcome"] in COUNTED for r in mine):
            empty.add(arm)
            full = " (full: every component)" if _full(design, arm) else ""
            notes.append(f"arm {design.labels.get(arm, arm)}{full}: {_uncounted(mine, reasons)}")
    if any(_full(design, arm) for arm in empty):
        notes.append(FULL_GONE[design.kind == LEAVE_ONE_OUT])
    if design.kind != LEAVE_ONE_OUT:
        counted = sum(
            r["outcome"] in COUNTED
            and r.get("tier") == "T0"
            and str(r["subtest"])[:2] in design.arms
            for r in runs
        )
        notes += _regression_note(counted, len(design.factors), len(design.arms))
    return notes


FULL_GONE = (
    "the full arm has no counted run: the main effects come from the other arms only",
    "the full arm has no counted run: no effect relative to it (the configuration as it is "
    "run) is estimable",
)


def _full(design: Arms, arm: str) -> bool:
    return design.arms[arm] == frozenset(design.factors)


def _uncounted(runs: Sequence[Row], reasons: Mapping[str, str]) -> str:
    """`2 runs, all infra_error: <reason>`: why none of an arm's runs counted."""
    if not runs:
        return "no run in this experiment"
    outcomes = Counter(str(r["outcome"]) for r in runs)
    said = (
        f"all {next(iter(outcomes))}"
        if len(outcomes) == 1
        else "none counted (" + ", ".join(f"{n} {o}" for o, n in outcomes.most_common()) + ")"
    )
    why = Counter(
        _short(reasons[key])
        for r in runs
        if (key := str(r.get("run_key"))) in reasons and reasons[key]
    )
    shown = [text for text, _ in why.most_common(REASONS)]
    more = len(why) - len(shown)
    text = "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
    head = f"{len(runs)} run{'' if len(runs) == 1 else 's'}, {said}"
    return f"{head}: {text}" if text else f"{head} (no reason recorded)"


def _short(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."
