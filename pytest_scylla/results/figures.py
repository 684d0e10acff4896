"""Figures (seaborn on the Agg backend), each written as PNG and SVG into `<out>/figures/`.

Every function takes the report's tables and tier summary and returns the figure's file stem,
or None when the data cannot show anything (e.g. no judges). Nothing here touches the network
or a display.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_scylla.results.tables import Tables

Summary = list[dict[str, Any]]  # metrics.group_summary of the runs


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    return plt


def _save(fig: Any, folder: Path, stem: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(folder / f"{stem}.png", dpi=110)
    fig.savefig(folder / f"{stem}.svg")
    _plt().close(fig)
    return stem


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows)


def pass_rate(tables: Tables, summary: Summary, folder: Path) -> str | None:
    if not summary:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    tiers = [s["tier"] for s in summary]
    rates = [s["pass_rate"] for s in summary]
    errors = [[r - s["ci_low"] for r, s in zip(rates, summary, strict=True)],
              [s["ci_high"] - r for r, s in zip(rates, summary, strict=True)]]
    ax.bar(tiers, rates, yerr=errors, capsize=4, color="#4c72b0")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pass rate (95% CI)")
    ax.set_title("Pass rate by tier")
    return _save(fig, folder, "pass_rate")


def cop(tables: Tables, summary: Summary, folder: Path) -> str | None:
    finite = [s for s in summary if math.isfinite(s["cop"]) and s["cop"] > 0]
    if not finite:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar([s["tier"] for s in finite], [s["cop"] for s in finite], color="#55a868")
    for s in summary:
        if not math.isfinite(s["cop"]):
            ax.annotate("∞", (s["tier"], min(x["cop"] for x in finite)), ha="center")
    ax.set_yscale("log")
    ax.set_ylabel("Cost-of-Pass (USD, log)")
    ax.set_title("Cost-of-Pass by tier")
    return _save(fig, folder, "cop")


def pareto(tables: Tables, summary: Summary, folder: Path) -> str | None:
    scored = [s for s in summary if s["mean_score"] is not None]
    if not scored:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.6))
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
    ax.set_xlabel("mean cost per run (USD)")
    ax.set_ylabel("mean score")
    ax.set_title("Cost vs score (Pareto frontier dashed)")
    return _save(fig, folder, "pareto")


def tokens(tables: Tables, summary: Summary, folder: Path) -> str | None:
    frame = _frame(tables.runs)
    cols = ["input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens"]
    if frame.empty or frame[cols].fillna(0).astype(float).to_numpy().sum() == 0:
        return None
    means = frame.groupby("tier")[cols].apply(lambda g: g.fillna(0).astype(float).mean())
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    means.plot(kind="bar", stacked=True, ax=ax)
    ax.set_ylabel("tokens per run (mean)")
    ax.set_title("Token distribution by tier")
    return _save(fig, folder, "tokens")


def latency(tables: Tables, summary: Summary, folder: Path) -> str | None:
    frame = _frame(tables.runs)
    if frame.empty:
        return None
    frame = frame.assign(
        agent=frame["agent_duration_seconds"].fillna(0).astype(float),
        judges=frame["judge_duration_seconds"].fillna(0).astype(float))
    frame["other"] = (frame["duration_seconds"].fillna(0).astype(float) - frame["agent"]
                      - frame["judges"]).clip(lower=0)
    means = frame.groupby("tier")[["agent", "other", "judges"]].mean()
    if means.empty:  # no run with a tier (e.g. only crash rows)
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    means.plot(kind="bar", stacked=True, ax=ax)
    ax.set_ylabel("seconds per run (mean)")
    ax.set_title("Latency: agent, checks and setup, judges")
    return _save(fig, folder, "latency")


def scores(tables: Tables, summary: Summary, folder: Path) -> str | None:
    import seaborn as sns

    frame = _frame([r for r in tables.runs if r["score"] is not None])
    if frame.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.2))
    frame["score"] = frame["score"].astype(float)
    with warnings.catch_warnings():  # seaborn's own use of a deprecated matplotlib argument
        warnings.simplefilter("ignore", DeprecationWarning)
        sns.boxplot(data=frame, x="tier", y="score", ax=ax, color="#dddddd")
    sns.stripplot(data=frame, x="tier", y="score", ax=ax, size=3, color="#4c72b0")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Score distribution by tier")
    return _save(fig, folder, "scores")


def criteria(tables: Tables, summary: Summary, folder: Path) -> str | None:

    frame = _frame([c for c in tables.criteria if c.get("criterion_score") not in (None, "")])
    if frame.empty:
        return None
    return _heatmap(frame, "criterion", "criterion_score", "viridis",
                    "Mean criterion score by tier", folder, "criteria")


def _judge_frame(tables: Tables) -> Any:
    """The judges' valid scores with a run id (tier-subtest-run-case); None under two judges."""
    rows = [j for j in tables.judges if j.get("judge_score") not in (None, "")]
    if len({j["judge_model"] for j in rows}) < 2:
        return None
    frame = _frame(rows)
    frame["judge_score"] = frame["judge_score"].astype(float)
    case = frame["case_id"].astype(str) if "case_id" in frame else ""
    frame["run"] = frame["tier"].astype(str) + "-" + frame["subtest"].astype(str) + "-" + \
        frame["run_number"].astype(str) + "-" + case
    return frame


def judges(tables: Tables, summary: Summary, folder: Path) -> str | None:
    """The paper's Figure 5: every judge pair's scores against each other, each pair labelled
    with its Spearman rho and Pearson r (as in statistical_results.json); and each judge's mean."""
    import seaborn as sns

    from pytest_scylla.results.stats import judge_pairs

    frame = _judge_frame(tables)
    if frame is None:
        return None
    wide = frame.pivot_table(index="run", columns="judge_model", values="judge_score")
    pairs = {(p["judge1"], p["judge2"]): p for p in judge_pairs(
        zip(frame["judge_model"], frame["run"], frame["judge_score"], strict=True))}
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    models = sorted(wide.columns)
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            pair = pairs.get((a, b), {})
            rho, r = pair.get("spearman"), pair.get("pearson")
            stats = ("rho n/a, r n/a" if rho is None or r is None
                     else f"rho {rho:.3f}, r {r:.3f}")
            left.scatter(wide[a], wide[b], s=12, label=f"{a} vs {b}: {stats}")
    left.plot([0, 1], [0, 1], ":", color="grey")
    left.set_xlabel("judge score")
    left.set_ylabel("other judge's score")
    left.legend(fontsize=6)
    left.set_title("Judge agreement")
    sns.barplot(data=frame, x="judge_model", y="judge_score", ax=right, color="#8172b2",
                order=models)
    right.set_ylim(0, 1.05)
    right.tick_params(axis="x", labelrotation=20, labelsize=7)
    right.set_title("Judge bias (mean score)")
    return _save(fig, folder, "judges")


def judge_scores(tables: Tables, summary: Summary, folder: Path) -> str | None:
    """The paper's Figure 4: each judge's score distribution per tier (box plots)."""
    import seaborn as sns

    frame = _judge_frame(tables)
    if frame is None:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.4))
    tiers = sorted(frame["tier"].astype(str).unique(), key=lambda t: (len(t), t))
    with warnings.catch_warnings():  # seaborn's own use of a deprecated matplotlib argument
        warnings.simplefilter("ignore", DeprecationWarning)
        sns.boxplot(data=frame, x="tier", y="judge_score", hue="judge_model", ax=ax,
                    order=tiers, hue_order=sorted(frame["judge_model"].unique()))
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("judge score")
    ax.legend(fontsize=6, title=None)
    ax.set_title("Judge scores by tier")
    return _save(fig, folder, "judge_scores")


def grades(tables: Tables, summary: Summary, folder: Path) -> str | None:

    frame = _frame([r for r in tables.runs if r["score"] is not None])
    if frame.empty:
        return None
    return _heatmap(frame, "case_id", "score", "RdYlGn", "Mean score, case x tier", folder,
                    "grades")


def _heatmap(frame: Any, rows: str, value: str, cmap: str, title: str, folder: Path,
             stem: str) -> str:
    """Mean of `value` per `rows` x tier, annotated, on a fixed 0..1 scale."""
    import seaborn as sns

    frame[value] = frame[value].astype(float)
    pivot = frame.pivot_table(index=rows, columns="tier", values=value, aggfunc="mean")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(pivot) + 1.5))
    sns.heatmap(pivot, annot=True, fmt=".2f", vmin=0, vmax=1, cmap=cmap, ax=ax)
    ax.set_title(title)
    return _save(fig, folder, stem)


ALL: tuple[Callable[[Tables, Summary, Path], str | None], ...] = (
    pass_rate, cop, pareto, tokens, latency, scores, criteria, judges, judge_scores,
    grades)


def draw_all(tables: Tables, summary: Summary, out: Path) -> list[str]:
    """Every figure the data supports; returns their stems."""
    folder = out / "figures"
    return [stem for draw in ALL if (stem := draw(tables, summary, folder)) is not None]
