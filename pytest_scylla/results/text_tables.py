"""The report's tables as text: Markdown (`tables.md`) and LaTeX booktabs (`tables.tex`), from
one list of sections so the two always agree."""

from __future__ import annotations

import math
from typing import Any

from pytest_scylla.results import models

Section = tuple[str, list[dict[str, Any]], list[str]]  # (title, rows, columns)


def sections(
    summary: dict[str, Any], results: dict[str, Any], paper: dict[str, list[dict[str, Any]]]
) -> list[Section]:
    """The report's tables, in order."""
    return [*_model_sections(summary, results), *_sections(summary, results, paper)]


AXIS_TABLES = (
    ("models", "model_tiers", "agent_model", "Model", "models"),
    ("agents", "agent_tiers", "agent", "Agent CLI", "agents"),
)
AXIS_COLUMNS = [
    "n",
    "pass_rate",
    "ci_low",
    "ci_high",
    "mean_score",
    "modal_grade",
    "mean_cost",
    "cop",
    "frontier_tier",
    "frontier_cop",
    "mean_tokens",
    "mean_agent_seconds",
    "warning",
]
AXIS_TIER_COLUMNS = [
    "tier",
    "n",
    "pass_rate",
    "ci_low",
    "ci_high",
    "mean_score",
    "mean_cost",
    "cop",
    "modal_grade",
    "warning",
]
TIER_COLUMNS = [
    "tier",
    "n",
    "pass_rate",
    "ci_low",
    "ci_high",
    "mean_score",
    "median_score",
    "consistency",
    "mean_cost",
    "cop",
    "cop_low",
    "cop_high",
    "cop_per_case_mean",
    "pass_at_1",
    "pass_hat_3",
    "modal_grade",
    "reward_hacking_rate",
    "cfp",
    "r_prog",
    "warning",
]
OMNIBUS_COLUMNS = ["metric", "groups", "n", "h", "p", "significant", "note"]
PAIRWISE_COLUMNS = [
    "metric",
    "group1",
    "group2",
    "n1",
    "n2",
    "p_raw",
    "p_holm",
    "cliffs_delta",
    "note",
]


def _model_sections(summary: dict[str, Any], results: dict[str, Any]) -> list[Section]:
    """Each axis the experiment varies (models; agent CLIs): side by side, each one's tiers,
    their tests."""
    out: list[Section] = []
    for name, tiers, key, title, tested in AXIS_TABLES:
        if not summary.get(name):
            continue
        tests = results.get(tested) or {"omnibus": [], "pairwise": []}
        out += [
            (
                f"{title} comparison: pass rate with 95% CI, score, cost, Cost-of-Pass and each "
                "one's frontier tier",
                summary[name],
                [key, *AXIS_COLUMNS],
            ),
            (f"Tiers per {title.lower()}", summary[tiers], [key, *AXIS_TIER_COLUMNS]),
            (f"{title} comparisons: Kruskal-Wallis", _omnibus(tests["omnibus"]), OMNIBUS_COLUMNS),
            (
                f"{title} comparisons: Mann-Whitney U with Holm correction",
                tests["pairwise"],
                PAIRWISE_COLUMNS,
            ),
        ]
    return out


def _omnibus(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kruskal-Wallis rows with their n summed over the groups."""
    return [{**row, "n": sum(row["n"].values())} for row in rows]


def _sections(
    summary: dict[str, Any], results: dict[str, Any], paper: dict[str, list[dict[str, Any]]]
) -> list[Section]:
    """The tier tables, the paper's tables, then the tests and the judges' tables."""
    agreement = _agreement_title(results)
    return [
        (
            "Tiers: pass rate with 95% CI, scores, cost and Cost-of-Pass" + models.pooled(summary),
            summary["tiers"],
            TIER_COLUMNS + (["decision"] if "decisions" in summary else []),
        ),
        *_paper_sections(paper),
        ("Tier comparisons: Kruskal-Wallis", _omnibus(results["omnibus"]), OMNIBUS_COLUMNS),
        (
            "Tier comparisons: adjacent tiers, Mann-Whitney U with Holm correction",
            results["pairwise"],
            PAIRWISE_COLUMNS,
        ),
        *_judge_sections(results, agreement),
    ]


def _paper_sections(paper: dict[str, list[dict[str, Any]]]) -> list[Section]:
    """The paper's Tables 16-19."""
    return [
        (
            "Tier summary (the paper's Table 16)",
            paper["tiers"],
            ["tier", "n", "pass_rate", "mean_score", "median_score", "grade", "cop"],
        ),
        (
            "Token breakdown, mean per run (Table 17)",
            paper["tokens"],
            [
                "tier",
                "n",
                "input_tokens",
                "output_tokens",
                "cache_creation_tokens",
                "cache_read_tokens",
                "total_tokens",
            ],
        ),
        (
            "Latency breakdown, mean seconds per run (Table 18)",
            paper["latency"],
            [
                "tier",
                "n",
                "agent_seconds",
                "checks_seconds",
                "judge_seconds",
                "total_seconds",
                "judge_share",
                "ttft_seconds",
            ],
        ),
        (
            "Per-criterion score, mean and sd over judges and runs (Table 19)",
            paper["criteria"],
            ["criterion", "mean", "sd", "n"],
        ),
    ]


def _agreement_title(results: dict[str, Any]) -> str:
    """The judge-agreement table's title: Krippendorff's alpha and Gwet's AC2."""
    alpha = results["krippendorff_alpha"]
    ac2 = results.get("gwet_ac2") or {}
    return (
        f"Judge agreement: Krippendorff's alpha (interval) = "
        f"{'-' if alpha['alpha'] is None else format(alpha['alpha'], '.3f')}"
        f"{' (' + alpha['note'] + ')' if alpha.get('note') else ''}; Gwet's AC2 (quadratic) "
        f"= {'-' if ac2.get('ac2') is None else format(ac2['ac2'], '.3f')}; "
        f"over {alpha['runs']} runs; pairs"
    )


def _judge_sections(results: dict[str, Any], agreement: str) -> list[Section]:
    """The judges' agreement and bias, ablation, utilisation, judges against the checks."""
    return [
        (
            agreement,
            results["judge_pairs"],
            ["judge1", "judge2", "n", "spearman", "pearson", "mean_abs_diff", "note"],
        ),
        ("Judge bias: mean score per judge", results["judge_bias"], ["judge", "n", "mean_score"]),
        (
            "Ablation score: subtests that differ by one component, with minus without",
            results.get("ablation") or [],
            [
                "component",
                "with",
                "without",
                "cases",
                "n_with",
                "n_without",
                "score_delta",
                "ci_low",
                "ci_high",
                "pass_rate_delta",
                "used",
            ],
        ),
        (
            "Utilisation: runs that invoked what their subtest declared",
            results.get("utilisation") or [],
            ["tier", "kind", "runs", "used", "share", "note"],
        ),
        (
            "Judge vs checks: the functional verdict (category score >= 0.6) against the checks",
            results.get("judge_vs_checks") or [],
            [
                "judge",
                "n",
                "says_works_checks_fail",
                "says_broken_checks_pass",
                "contradiction_rate",
            ],
        ),
    ]


def number(column: str, value: float) -> str:
    """A table cell's number at the precision its column deserves: dollars to four places,
    token counts whole, p-values to four significant digits, everything else to three."""
    if math.isinf(value):
        return "∞"
    if "cost" in column or column.startswith("cop") or column.endswith("_cop"):
        return f"{value:.4f}"
    if column.endswith("tokens"):
        return f"{value:.0f}" if value == int(value) else f"{value:.1f}"
    if column in ("p", "p_raw", "p_holm"):
        return f"{value:.4g}"
    return f"{value:.3f}"


def _md_table(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    def cell(column: str, value: Any) -> str:
        if isinstance(value, float):
            return number(column, value)
        return "-" if value in (None, "") else str(value).replace("|", "\\|")

    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cell(c, r.get(c)) for c in columns) + " |" for r in rows),
        "",
    ]


def markdown(
    summary: dict[str, Any], results: dict[str, Any], paper: dict[str, list[dict[str, Any]]]
) -> str:
    """The report's tables as Markdown."""
    lines = [f"# {summary['experiment']}", ""]
    if summary["simulated"]:
        lines += ["**SIMULATED MODEL: oracle agent and judges, not a real evaluation.**", ""]
    if summary.get("partial"):
        lines += [f"**PARTIAL: {summary['partial']}.**", ""]
    for title, rows, columns in sections(summary, results, paper):
        lines += [f"## {title}", "", *_md_table(rows, columns)]
    return "\n".join(lines)


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "∞": r"$\infty$",
    "α": r"$\alpha$",
    "δ": r"$\delta$",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in text)


def latex(
    summary: dict[str, Any], results: dict[str, Any], paper: dict[str, list[dict[str, Any]]]
) -> str:
    """The report's tables as LaTeX for papers: one booktabs `table` each (pandas' Styler;
    needs \\usepackage{booktabs}), numbers to three places, CoP infinity as $\\infty$."""
    import pandas as pd

    def cell(column: str, value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, (int, float)):
            return latex_escape(
                number(column, float(value)) if isinstance(value, float) else str(value)
            )
        return "--" if value in (None, "") else latex_escape(str(value))

    def align(rows: list[dict[str, Any]], column: str) -> str:
        present = [r.get(column) for r in rows if r.get(column) not in (None, "")]
        numeric = present and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in present
        )
        return "r" if numeric else "l"

    parts = [
        f"% {latex_escape(summary['experiment'])}: tables written by pytest-scylla; "
        "needs \\usepackage{booktabs}"
    ]
    if summary["simulated"]:
        parts.append("% SIMULATED MODEL: oracle agent and judges, not a real evaluation.")
    for index, (title, rows, columns) in enumerate(sections(summary, results, paper), 1):
        frame = pd.DataFrame(
            [[cell(c, r.get(c)) for c in columns] for r in rows],
            columns=[latex_escape(c.replace("_", " ")) for c in columns],
        )
        caption = latex_escape(title) + (" (SIMULATED)" if summary["simulated"] else "")
        parts.append(
            frame.style.hide(axis="index").to_latex(
                hrules=True,
                caption=caption,
                label=f"tab:scylla-{index}",
                position="htbp",
                column_format="".join(align(rows, c) for c in columns),
            )
        )
    return "\n".join(parts)
