"""The other measures' differences between a factor's sides (`component_effects`): score,
cost, tokens and duration. Leave-one-out: the difference of the two arms' means with Welch's
interval (none when both arms are constant: it would have zero width). A two-level design: each
factor's main effect by a linear model with robust (HC3) intervals, over the runs that have the
measure."""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy

MEASURES = ("score", "cost_usd", "total_tokens", "duration_seconds")
Row = Mapping[str, Any]


class Effects(Protocol):
    """The part of `component_effects.Effect` the measures fill."""

    @property
    def deltas(self) -> dict[str, float]: ...


def number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def welch(
    effect: Effects, with_: Sequence[Mapping[str, Any]], without: Sequence[Mapping[str, Any]]
) -> None:
    """Each measure's difference of means, with Welch's interval where both groups vary."""
    from scipy.stats import ttest_ind

    for measure in MEASURES:
        x = [v for r in with_ if (v := number(r.get(measure))) is not None]
        y = [v for r in without if (v := number(r.get(measure))) is not None]
        if len(x) > 1 and len(y) > 1:
            effect.deltas[measure] = statistics.fmean(x) - statistics.fmean(y)
            if len(set(x)) > 1 or len(set(y)) > 1:  # both constant: no interval, not a zero one
                with warnings.catch_warnings():  # an arm of equal values: scipy warns, yet the
                    warnings.simplefilter("ignore", RuntimeWarning)  # interval is the other's
                    ci = ttest_ind(x, y, equal_var=False).confidence_interval()
                if math.isfinite(ci.low) and math.isfinite(ci.high):
                    effect.deltas[f"{measure}_low"] = float(ci.low)
                    effect.deltas[f"{measure}_high"] = float(ci.high)


def fits(found: Sequence[Effects], rows: Sequence[Row], kept: Sequence[Sequence[bool]]) -> None:
    """The measures' main effects, with robust (HC3) intervals, over the runs that have the
    measure (when they are enough for the model and it varies)."""
    import statsmodels.api as sm

    x = numpy.array(kept, float)
    for measure in MEASURES:
        values = [number(r.get(measure)) for r in rows]
        keep = [v is not None for v in values]
        y = numpy.array([v for v in values if v is not None])
        if len(y) < 2 * x.shape[1] + 2 or len(set(y)) < 2:
            continue
        exog = sm.add_constant(x[numpy.array(keep)], has_constant="add")
        if numpy.linalg.matrix_rank(exog) < exog.shape[1]:
            continue
        fit = sm.OLS(y, exog).fit(cov_type="HC3")
        for i, effect in enumerate(found):
            low, high = fit.conf_int()[i + 1]
            if math.isfinite(low) and math.isfinite(high):
                effect.deltas[measure] = float(fit.params[i + 1])
                effect.deltas[f"{measure}_low"], effect.deltas[f"{measure}_high"] = low, high
