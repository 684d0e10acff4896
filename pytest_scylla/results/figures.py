"""Figures (seaborn on the Agg backend), each written as PNG and SVG into `<out>/figures/`.

Every function takes the report's tables and tier summary and returns the figure's file stem,
or None when the data cannot show anything (e.g. no judges). Nothing here touches the network
or a display.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla.core.tiers import tier_key
from pytest_scylla.results.rows import GroupSummary
from pytest_scylla.results.stats import judge_pairs
from pytest_scylla.results.tables import Tables

Summary = list[GroupSummary]  # metrics.group_summary of the runs


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    matplotlib.rcParams["svg.hashsalt"] = "pytest-scylla"  # element ids: the same every build
    return plt


def _axes(width: float = 6, height: float = 3.2, columns: int = 1) -> Any:
    """A new figure and its axes (one per column)."""
    return _plt().subplots(1, columns, figsize=(width, height))


def _save(fig: Any, folder: Path, stem: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(folder / f"{stem}.png", dpi=110)
    fig.savefig(folder / f"{stem}.svg", metadata={"Date": None})  # the same data, same bytes
    _plt().close(fig)
    return stem


def _frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def pass_rate(tables: Tables, summary: Summary, folder: Path) -> str | None:
    if not summary:
        return None
    fig, ax = _axes()
    rate, low, high = ([float(s[c]) for s in summary] for c in ("pass_rate", "ci_low", "ci_high"))
    # plain lists: matplotlib warns on Series or arrays when there is a single tier
    ax.bar(
        [str(s["tier"]) for s in summary],
        rate,
        capsize=4,
        color="#4c72b0",
        yerr=[
            [r - lo for r, lo in zip(rate, low, strict=True)],
            [hi - r for r, hi in zip(rate, high, strict=True)],
        ],
    )
    ax.set(ylim=(0, 1.05), ylabel="pass rate (95% CI)", title="Pass rate by tier")
    return _save(fig, folder, "pass_rate")


def cop(tables: Tables, summary: Summary, folder: Path) -> str | None:
    finite = [s for s in summary if math.isfinite(s["cop"]) and s["cop"] > 0]
    if not finite:
        return None
    fig, ax = _axes()
    ax.bar([s["tier"] for s in finite], [s["cop"] for s in finite], color="#55a868")
    for s in summary:
        if not math.isfinite(s["cop"]):
            ax.annotate("∞", (s["tier"], min(x["cop"] for x in finite)), ha="center")
    ax.set(yscale="log", ylabel="Cost-of-Pass (USD, log)", title="Cost-of-Pass by tier")
    return _save(fig, folder, "cop")


def pareto(tables: Tables, summary: Summary, folder: Path) -> str | None:
    scored: list[Mapping[str, Any]] = [s for s in summary if s["mean_score"] is not None]
    if not scored:
        return None
    fig, ax = _axes(5, 3.6)
    points = sorted((s["mean_cost"], s["mean_score"], s["tier"]) for s in scored)
    ax.scatter([p[0] for p in points], [p[1] for p in points], color="#c44e52")
    for cost, score, tier in points:
        ax.annotate(tier, (cost, score), textcoords="offset points", xytext=(4, 4))
    front, best = [], -1.0
    for cost, score, _ in points:  # cheapest first: keep each that beats every cheaper one
        if score > best:
            front.append((cost, score))
            best = score
    ax.plot([p[0] for p in front], [p[1] for p in front], "--", color="grey")
    ax.set(
        xlabel="mean cost per run (USD)",
        ylabel="mean score",
        title="Cost vs score (Pareto frontier dashed)",
    )
    return _save(fig, folder, "pareto")


def _numbers(frame: Any, columns: list[str]) -> Any:
    """The columns as numbers; a missing or not-applicable value is NaN, which the means
    leave out (as the tables do), never a zero."""
    import pandas as pd

    return frame.reindex(columns=columns).apply(pd.to_numeric, errors="coerce")


def tokens(tables: Tables, summary: Summary, folder: Path) -> str | None:
    frame = _frame(tables.runs)
    cols = ["input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens"]
    if frame.empty or not _numbers(frame, cols).fillna(0).to_numpy().any():
        return None
    means = _numbers(frame, cols).groupby(frame["tier"]).mean()
    fig, ax = _axes()
    means.plot(kind="bar", stacked=True, ax=ax)
    ax.set(ylabel="tokens per run (mean)", title="Token distribution by tier")
    return _save(fig, folder, "tokens")


def latency(tables: Tables, summary: Summary, folder: Path) -> str | None:
    frame = _frame(tables.runs)
    if frame.empty or "tier" not in frame:
        return None
    times = _numbers(
        frame, ["agent_duration_seconds", "judge_duration_seconds", "duration_seconds"]
    )
    parts = times.assign(
        agent=times["agent_duration_seconds"], judges=times["judge_duration_seconds"]
    )
    parts["other"] = (times["duration_seconds"] - parts["agent"] - parts["judges"]).clip(lower=0)
    means = parts.groupby(frame["tier"])[["agent", "other", "judges"]].mean()
    if means.empty or means.isna().all().all():  # no run with a tier, or no times at all
        return None
    fig, ax = _axes()
    means.plot(kind="bar", stacked=True, ax=ax)
    ax.set(ylabel="seconds per run (mean)", title="Latency: agent, checks and setup, judges")
    return _save(fig, folder, "latency")


def scores(tables: Tables, summary: Summary, folder: Path) -> str | None:
    import seaborn as sns

    frame = _frame([r for r in tables.runs if r["score"] is not None])
    if frame.empty:
        return None
    fig, ax = _axes()
    frame["score"] = frame["score"].astype(float)
    # seaborn's own use of a deprecated matplotlib argument
    with warnings.catch_warnings(action="ignore", category=DeprecationWarning):
        sns.boxplot(data=frame, x="tier", y="score", ax=ax, color="#dddddd")
    sns.stripplot(data=frame, x="tier", y="score", ax=ax, size=3, color="#4c72b0")
    ax.set(ylim=(-0.02, 1.02), title="Score distribution by tier")
    return _save(fig, folder, "scores")


def criteria(tables: Tables, summary: Summary, folder: Path) -> str | None:
    rows = [c for c in tables.criteria if c.get("criterion_score") not in (None, "")]
    return _heatmap(
        rows,
        "criterion",
        "criterion_score",
        "viridis",
        "Mean criterion score by tier",
        folder,
        "criteria",
    )


def _judge_frame(tables: Tables) -> Any:
    """The judges' valid scores with a run id (tier-subtest-run-case); None under two judges."""
    rows = [j for j in tables.judges if j.get("judge_score") not in (None, "")]
    if len({j["judge_model"] for j in rows}) < 2:
        return None
    frame = _frame(rows)
    frame["judge_score"] = frame["judge_score"].astype(float)
    frame["run"] = frame["run_key"].astype(str)  # the case's too: (tier, subtest, run) repeats
    return frame


def judges(tables: Tables, summary: Summary, folder: Path) -> str | None:
    """The paper's Figure 5: every judge pair's scores against each other, each pair labelled
    with its Spearman rho and Pearson r (as in statistical_results.json); and each judge's mean."""
    import seaborn as sns

    frame = _judge_frame(tables)
    if frame is None:
        return None
    wide = frame.pivot_table(index="run", columns="judge_model", values="judge_score")
    pairs = {
        (p["judge1"], p["judge2"]): p
        for p in judge_pairs(
            zip(frame["judge_model"], frame["run"], frame["judge_score"], strict=True)
        )
    }
    fig, (left, right) = _axes(9, 3.6, columns=2)
    models = sorted(wide.columns)
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            pair = pairs.get((a, b), {})
            rho, r = pair.get("spearman"), pair.get("pearson")
            stats = "rho n/a, r n/a" if rho is None or r is None else f"rho {rho:.3f}, r {r:.3f}"
            left.scatter(wide[a], wide[b], s=12, label=f"{a} vs {b}: {stats}")
    left.plot([0, 1], [0, 1], ":", color="grey")
    left.set(xlabel="judge score", ylabel="other judge's score", title="Judge agreement")
    left.legend(fontsize=6)
    sns.barplot(
        data=frame,
        x="judge_model",
        y="judge_score",
        ax=right,
        color="#8172b2",
        order=models,
        seed=0,
    )  # its bootstrapped error bars: the same on every rebuild
    right.set(ylim=(0, 1.05), title="Judge bias (mean score)")
    right.tick_params(axis="x", labelrotation=20, labelsize=7)
    return _save(fig, folder, "judges")


def judge_scores(tables: Tables, summary: Summary, folder: Path) -> str | None:
    """The paper's Figure 4: each judge's score distribution per tier (box plots)."""
    import seaborn as sns

    frame = _judge_frame(tables)
    if frame is None:
        return None
    fig, ax = _axes(7, 3.4)
    tiers = sorted(frame["tier"].astype(str).unique(), key=tier_key)
    # seaborn's own use of a deprecated matplotlib argument
    with warnings.catch_warnings(action="ignore", category=DeprecationWarning):
        sns.boxplot(
            data=frame,
            x="tier",
            y="judge_score",
            hue="judge_model",
            ax=ax,
            order=tiers,
            hue_order=sorted(frame["judge_model"].unique()),
        )
    ax.set(ylim=(-0.02, 1.02), ylabel="judge score", title="Judge scores by tier")
    ax.legend(fontsize=6, title=None)
    return _save(fig, folder, "judge_scores")


def grades(tables: Tables, summary: Summary, folder: Path) -> str | None:
    rows = [r for r in tables.runs if r["score"] is not None]
    return _heatmap(rows, "case_id", "score", "RdYlGn", "Mean score, case x tier", folder, "grades")


def _heatmap(
    data: Sequence[Mapping[str, Any]],
    rows: str,
    value: str,
    cmap: str,
    title: str,
    folder: Path,
    stem: str,
) -> str | None:
    """Mean of `value` per `rows` x tier, annotated, on a fixed 0..1 scale; None without data."""
    import seaborn as sns

    frame = _frame(data)
    if frame.empty:
        return None
    frame[value] = frame[value].astype(float)
    pivot = frame.pivot_table(index=rows, columns="tier", values=value, aggfunc="mean")
    fig, ax = _axes(height=0.5 * len(pivot) + 1.5)
    sns.heatmap(pivot, annot=True, fmt=".2f", vmin=0, vmax=1, cmap=cmap, ax=ax)
    ax.set_title(title)
    return _save(fig, folder, stem)


ALL: tuple[Callable[[Tables, Summary, Path], str | None], ...] = (
    pass_rate,
    cop,
    pareto,
    tokens,
    latency,
    scores,
    criteria,
    judges,
    judge_scores,
    grades,
)


def draw_all(tables: Tables, summary: Summary, out: Path) -> list[str]:
    """Every figure the data supports; returns their stems."""
    folder = out / "figures"
    return [stem for draw in ALL if (stem := draw(tables, summary, folder)) is not None]
