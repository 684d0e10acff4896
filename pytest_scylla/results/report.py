"""Outputs from stored runs: the exports, `summary.json`, `statistical_results.json` and the
terminal tier table. Used at the end of a session (controller) and by `scylla report`, which
rebuilds them from one or several experiment folders (e.g. shards from several machines) or from
a folder of paper-format CSVs."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.core.record import write_json
from pytest_scylla.results import metrics, stats

RUNS_FILE = "runs.jsonl"
SUBTEST_KEYS = ("experiment", "agent_model", "case_id", "tier", "subtest")
SUBTEST_COLUMNS = [  # the paper's subtests.csv, then ours
    "experiment", "agent_model", "tier", "subtest", "pass_rate", "mean_score", "median_score",
    "std_score", "mean_impl_rate", "median_impl_rate", "std_impl_rate", "consistency",
    "mean_cost", "total_cost", "mean_duration", "cop", *(f"grade_{g}" for g in metrics.GRADES),
    "modal_grade", "case_id", "n", "passes", "excluded", "ci_low", "ci_high", "ci_method",
    "warning"]


@dataclass
class Tables:
    runs: list[dict[str, Any]] = field(default_factory=list)
    judges: list[dict[str, Any]] = field(default_factory=list)
    criteria: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # for the HTML drill-down
    sources: dict[str, Path] = field(default_factory=dict)  # run key -> its stored run folder
    partial: str | None = None  # why the report does not cover every run of the session

    def add_records(self, records: list[dict[str, Any]], experiment: str,
                    folder: Path | None = None) -> None:
        for rec in records:
            self.records.append(rec)
            if folder is not None and (folder / "runs" / rec["run_key"]).is_dir():
                self.sources[rec["run_key"]] = folder / "runs" / rec["run_key"]
            self.runs.append(metrics.run_row(rec, experiment))
            self.judges.extend(metrics.judge_rows(rec, experiment))
            self.criteria.extend(metrics.criteria_rows(rec, experiment))


class ReportInputError(ValueError):
    """A folder that holds no runs this module can read."""


def read_records(folder: Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The run records of an experiment folder: `runs.jsonl`, else every `runs/*/run.json`.
    A last line cut short by a kill is left out, saying so in `notes`."""
    if (folder / RUNS_FILE).is_file():
        records = {}
        lines = (folder / RUNS_FILE).read_text("utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if number == len(lines):  # the line being written when the session was killed
                    if notes is not None:
                        notes.append(f"{folder / RUNS_FILE}:{number}: a record cut short (the "
                                     "session was killed while writing it) is left out; the "
                                     "next session in this folder runs that run again")
                    continue
                raise ReportInputError(f"{folder / RUNS_FILE}:{number}: not a JSON record "
                                       "(a line cut by a crash? remove it and re-run "
                                       "`scylla report`)") from None
            records[rec["run_key"]] = rec
        return list(records.values())
    return [json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("runs/*/run.json"))]


def _paper_csv(folder: Path) -> Tables:
    """A folder of paper-format exports: runs.csv (+ judges.csv, criteria.csv)."""
    def rows(name: str) -> list[dict[str, Any]]:
        path = folder / name
        if not path.is_file():
            return []
        with path.open(encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def num(value: Any) -> float | None:
        return None if value in (None, "") else float(value)

    tables = Tables()
    for r in rows("runs.csv"):
        row = {c: r.get(c) for c in metrics.RUN_COLUMNS}
        passed = str(r.get("passed")).lower() == "true"
        row.update(passed=passed, outcome=r.get("outcome") or ("pass" if passed else "fail"),
                   score=num(r.get("score")), impl_rate=num(r.get("impl_rate")),
                   cost_usd=num(r.get("cost_usd")), case_id=r.get("case_id") or r["experiment"],
                   judge_cost_usd=num(r.get("judge_cost_usd")),
                   simulated=str(r.get("simulated")).lower() == "true",
                   run_key=r.get("run_key") or f"{r['experiment']}/{r['tier']}-{r['subtest']}"
                                              f"-r{r['run_number']}")
        tables.runs.append(row)
    tables.judges = rows("judges.csv")
    tables.criteria = rows("criteria.csv")
    return tables


def load(folders: list[Path]) -> Tables:
    """Everything in the given folders, merged; the same run key in two folders is kept twice
    (two independent runs), renamed `<folder>/<key>`, with a warning."""
    tables = Tables()
    seen: dict[str, Path] = {}
    for folder in dict.fromkeys(f.resolve() for f in folders):  # each folder once
        if not folder.is_dir():
            raise ReportInputError(f"{folder}: no such folder")
        records = read_records(folder, tables.warnings)
        if records:
            for rec in records:
                key = rec["run_key"]
                if key in seen:
                    tables.warnings.append(f"run {key} is in {seen[key]} and {folder}: both "
                                           "kept as separate runs")
                    rec = {**rec, "run_key": f"{folder.name}/{key}"}
                seen[rec["run_key"]] = folder
                tables.add_records([rec], folder.name, folder)
                if rec["run_key"] != key and (folder / "runs" / key).is_dir():
                    tables.sources[rec["run_key"]] = folder / "runs" / key
        elif (folder / "runs.csv").is_file():
            more = _paper_csv(folder)
            tables.runs += more.runs
            tables.judges += more.judges
            tables.criteria += more.criteria
        else:
            raise ReportInputError(f"{folder}: no runs.jsonl, runs/*/run.json or runs.csv "
                                   "here; point at an experiment folder such as "
                                   "reports/<timestamp>/")
    return tables


def statistical_results(tables: Tables) -> dict[str, Any]:
    counted = [r for r in tables.runs if r["outcome"] in metrics.COUNTED]
    order = sorted({str(r["tier"]) for r in counted}, key=metrics.tier_order)
    out: dict[str, Any] = {"omnibus": [], "pairwise": [], "n_runs": len(counted)}
    for metric in ("score", "passed", "cost_usd"):
        groups = {t: sorted(float(r[metric]) for r in counted if r["tier"] == t
                            and r[metric] is not None) for t in order}  # order-free results
        out["omnibus"].append({"metric": metric, **stats.kruskal(groups)})
        out["pairwise"] += [{"metric": metric, **row} for row in stats.pairwise(groups, order)]
    scores = [(str(j["judge_model"]), str(j["run_key"] if j.get("run_key") else
                                          f"{j['tier']}-{j['subtest']}-{j['run_number']}"),
               float(j["judge_score"])) for j in tables.judges
              if j.get("judge_score") not in (None, "") and str(j.get("judge_is_valid",
                                                                      "True")) == "True"]
    out["krippendorff_alpha"] = stats.krippendorff_alpha(scores)
    out["judge_pairs"] = stats.judge_pairs(scores)
    bias: dict[str, list[float]] = {}
    for judge, _, score in scores:
        bias.setdefault(judge, []).append(score)
    out["judge_bias"] = [{"judge": j, "n": len(v), "mean_score": math.fsum(v) / len(v)}
                         for j, v in sorted(bias.items())]
    return out


FORMATS = ("terminal", "html", "md", "json", "csv")


def write(out: Path, tables: Tables, manifest: dict[str, Any] | None = None,
          formats: tuple[str, ...] = ("csv", "json")) -> dict[str, Any]:
    """Write the exports (CSV and JSON always: they are the store others rebuild from) and the
    requested reports (`md`, `html` with figures) into `out`; return the summary."""
    out.mkdir(parents=True, exist_ok=True)
    _csv(out / "runs.csv", sorted(tables.runs, key=_row_order), metrics.RUN_COLUMNS)
    _csv(out / "judges.csv", sorted(tables.judges, key=_row_order))
    _csv(out / "criteria.csv", sorted(tables.criteria, key=_row_order))  # stable: rubric order
    _csv(out / "subtests.csv", metrics.group_summary(tables.runs, SUBTEST_KEYS),
         SUBTEST_COLUMNS)
    tiers = metrics.group_summary(tables.runs)
    best = metrics.frontier(tiers)
    summary = {
        "experiment": out.name, "runs": len(tables.runs),
        "outcomes": dict(Counter(r["outcome"] for r in tables.runs)),
        "simulated": any(bool(r.get("simulated")) for r in tables.runs),
        "agent_cost_usd": math.fsum(float(r["cost_usd"] or 0) for r in tables.runs),
        "judge_cost_usd": math.fsum(float(r.get("judge_cost_usd") or 0) for r in tables.runs),
        "tiers": tiers, "frontier": {"tier": best[0], "cop": best[1]} if best else None,
        "partial": tables.partial, "warnings": tables.warnings}
    results = statistical_results(tables)
    write_json(out / "summary.json", _jsonable(summary))
    write_json(out / "statistical_results.json", _jsonable(results))
    if manifest is not None:
        write_json(out / "manifest.json", manifest)
    if "md" in formats:
        paper = paper_tables(tables, tiers)
        (out / "tables.md").write_text(markdown(summary, results, paper), encoding="utf-8")
        (out / "tables.tex").write_text(latex(summary, results, paper), encoding="utf-8")
    if "html" in formats:
        from pytest_scylla.results import figures, html_report

        drawn = figures.draw_all(tables, tiers, out)
        html_report.write(out, tables, summary, results, drawn, tables.sources)
    return summary


Section = tuple[str, list[dict[str, Any]], list[str]]  # (title, rows, columns)


def sections(summary: dict[str, Any], results: dict[str, Any],
             paper: dict[str, list[dict[str, Any]]]) -> list[Section]:
    """The report's tables, in order: rendered as Markdown (`tables.md`) and LaTeX
    (`tables.tex`) from this one list."""
    alpha = results["krippendorff_alpha"]
    return [
        ("Tiers: pass rate with 95% CI, scores, cost and Cost-of-Pass", summary["tiers"], [
            "tier", "n", "pass_rate", "ci_low", "ci_high", "mean_score", "median_score",
            "consistency", "mean_cost", "cop", "cop_per_case_mean", "pass_at_1", "pass_hat_3",
            "modal_grade", "warning"]),
        ("Tier summary (the paper's Table 16)", paper["tiers"],
         ["tier", "pass_rate", "mean_score", "median_score", "grade", "cop"]),
        ("Token breakdown, mean per run (Table 17)", paper["tokens"],
         ["tier", "input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens",
          "total_tokens"]),
        ("Latency breakdown, mean seconds per run (Table 18)", paper["latency"],
         ["tier", "agent_seconds", "checks_seconds", "judge_seconds", "total_seconds",
          "judge_share"]),
        ("Per-criterion score, mean and sd over judges and runs (Table 19)", paper["criteria"],
         ["criterion", "mean", "sd", "n"]),
        ("Tier comparisons: Kruskal-Wallis", results["omnibus"],
         ["metric", "groups", "h", "p", "significant", "note"]),
        ("Tier comparisons: adjacent tiers, Mann-Whitney U with Holm correction",
         results["pairwise"], ["metric", "group1", "group2", "n1", "n2", "p_raw", "p_holm",
                               "cliffs_delta", "note"]),
        (f"Judge agreement: Krippendorff's alpha (interval) = "
         f"{'-' if alpha['alpha'] is None else format(alpha['alpha'], '.3f')}"
         f"{' (' + alpha['note'] + ')' if alpha.get('note') else ''}; pairs",
         results["judge_pairs"], ["judge1", "judge2", "n", "spearman", "pearson",
                                  "mean_abs_diff", "note"]),
        ("Judge bias: mean score per judge", results["judge_bias"],
         ["judge", "n", "mean_score"]),
    ]


def number(column: str, value: float) -> str:
    """A table cell's number at the precision its column deserves: dollars to four places,
    token counts whole, p-values to four significant digits, everything else to three."""
    if math.isinf(value):
        return "∞"
    if "cost" in column or column.startswith("cop"):
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

    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
            *("| " + " | ".join(cell(c, r.get(c)) for c in columns) + " |" for r in rows), ""]


def markdown(summary: dict[str, Any], results: dict[str, Any],
             paper: dict[str, list[dict[str, Any]]]) -> str:
    """The report's tables as Markdown."""
    lines = [f"# {summary['experiment']}", ""]
    if summary["simulated"]:
        lines += ["**SIMULATED MODEL: oracle agent and judges, not a real evaluation.**", ""]
    if summary.get("partial"):
        lines += [f"**PARTIAL: {summary['partial']}.**", ""]
    for title, rows, columns in sections(summary, results, paper):
        lines += [f"## {title}", "", *_md_table(rows, columns)]
    return "\n".join(lines)


LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                 "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                 "^": r"\textasciicircum{}", "∞": r"$\infty$", "α": r"$\alpha$",
                 "δ": r"$\delta$", "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIAL.get(ch, ch) for ch in text)


def latex(summary: dict[str, Any], results: dict[str, Any],
          paper: dict[str, list[dict[str, Any]]]) -> str:
    """The report's tables as LaTeX for papers: one booktabs `table` each (pandas' Styler;
    needs \\usepackage{booktabs}), numbers to three places, CoP infinity as $\\infty$."""
    import pandas as pd

    def cell(column: str, value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, (int, float)):
            return latex_escape(number(column, float(value)) if isinstance(value, float)
                                else str(value))
        return "--" if value in (None, "") else latex_escape(str(value))

    def align(rows: list[dict[str, Any]], column: str) -> str:
        present = [r.get(column) for r in rows if r.get(column) not in (None, "")]
        numeric = present and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                  for v in present)
        return "r" if numeric else "l"

    parts = [f"% {latex_escape(summary['experiment'])}: tables written by pytest-scylla; "
             "needs \\usepackage{booktabs}"]
    if summary["simulated"]:
        parts.append("% SIMULATED MODEL: oracle agent and judges, not a real evaluation.")
    for index, (title, rows, columns) in enumerate(sections(summary, results, paper), 1):
        frame = pd.DataFrame([[cell(c, r.get(c)) for c in columns] for r in rows],
                             columns=[latex_escape(c.replace("_", " ")) for c in columns])
        caption = latex_escape(title) + (" (SIMULATED)" if summary["simulated"] else "")
        parts.append(frame.style.hide(axis="index").to_latex(
            hrules=True, caption=caption, label=f"tab:scylla-{index}", position="htbp",
            column_format="".join(align(rows, c) for c in columns)))
    return "\n".join(parts)


def tier_table(tables: Tables, where: Path) -> list[str]:
    """The terminal summary: tier table with the frontier marked, outcomes, spend."""
    summary = metrics.group_summary(tables.runs)
    best = metrics.frontier(summary)
    lines = []
    if any(bool(r.get("simulated")) for r in tables.runs):
        lines.append("SIMULATED MODEL: oracle agent and judges, not a real evaluation")
    if tables.partial:
        lines.append(f"PARTIAL: {tables.partial}")
    lines.append(f"{'tier':<6}{'runs':>5}{'pass rate [95% CI]':>24}{'score':>7}{'grade':>6}"
                 f"{'cost/run':>10}{'CoP':>10}  note")
    for s in summary:
        mark = " <- frontier" if best and s["tier"] == best[0] else ""
        score = "-" if s["mean_score"] is None else f"{s['mean_score']:.2f}"
        rate = f"{s['pass_rate']:.0%} [{s['ci_low']:.0%}, {s['ci_high']:.0%}]"
        note = mark or (f"  {s['warning']}" if s["warning"] else "")
        lines.append(f"{s['tier']:<6}{s['n']:>5}{rate:>24}{score:>7}{s['modal_grade'] or '-':>6}"
                     f"{'$' + format(s['mean_cost'], '.4f'):>10}"
                     f"{metrics.fmt_cop(s['cop']):>10}{note}")
    counts = Counter(r["outcome"] for r in tables.runs)
    lines.append("outcomes: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
                 + " (infra_error and judge_error runs are not counted in pass rates)")
    agent = math.fsum(float(r["cost_usd"] or 0) for r in tables.runs)
    judges = math.fsum(float(r.get("judge_cost_usd") or 0) for r in tables.runs)
    lines.append(f"spend: agent ${agent:.4f} + judges ${judges:.4f} = ${agent + judges:.4f}; "
                 f"results: {where}")
    lines += [f"warning: {w}" for w in tables.warnings]
    return lines


def _row_order(row: dict[str, Any]) -> tuple[Any, ...]:
    """Rows in a fixed order (experiment, case, tier, subtest, run, judge), whatever order the
    runs finished in: the exports of the same runs are the same files at any worker count."""
    def whole(value: Any) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            return 0

    return (str(row.get("experiment") or ""), str(row.get("case_id") or ""),
            metrics.tier_order(str(row.get("tier") or "")), str(row.get("subtest") or ""),
            whole(row.get("run_number")), whole(row.get("judge_number")))


def _csv(path: Path, rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    names = columns or (list(rows[0]) if rows else [])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _jsonable(value: Any) -> Any:
    """JSON has no infinity: the CoP of a tier that never passed is written as "inf"."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def paper_tables(tables: Tables, summary: list[dict[str, Any]] | None = None
                 ) -> dict[str, list[dict[str, Any]]]:
    """The paper's result tables (its Tables 16-19) computed from the runs: tier summary,
    token breakdown (mean per run), latency breakdown (mean per run) and per-criterion mean and
    sample standard deviation over every judge's category score. `summary` is the runs' tier
    summary when the caller has it already (its intervals are bootstrapped: not cheap)."""
    import statistics

    summary = summary if summary is not None else metrics.group_summary(tables.runs)
    by_tier: dict[str, list[dict[str, Any]]] = {}
    for row in tables.runs:
        if row["outcome"] in metrics.COUNTED:
            by_tier.setdefault(str(row["tier"]), []).append(row)

    def mean(rows: list[dict[str, Any]], column: str) -> float:
        values = [float(r[column]) for r in rows if r.get(column) not in (None, "")]
        return statistics.fmean(values) if values else 0.0

    tokens, latency = [], []
    for s in summary:
        rows = by_tier.get(s["tier"], [])
        counts = {c: mean(rows, c) for c in ("input_tokens", "output_tokens",
                                             "cache_creation_tokens", "cache_read_tokens")}
        tokens.append({"tier": s["tier"], **counts, "total_tokens": sum(counts.values())})
        agent, judge = mean(rows, "agent_duration_seconds"), mean(rows, "judge_duration_seconds")
        total = mean(rows, "duration_seconds")
        has_checks = any(r.get("checks_duration_seconds") not in (None, "") for r in rows)
        latency.append({"tier": s["tier"], "agent_seconds": agent,
                        "checks_seconds": mean(rows, "checks_duration_seconds")
                        if has_checks else None, "judge_seconds": judge,
                        "total_seconds": total,
                        "judge_share": judge / total if total else None})
    per_criterion: dict[str, list[float]] = {}
    for c in tables.criteria:
        if c.get("criterion_score") not in (None, ""):
            per_criterion.setdefault(str(c["criterion"]), []).append(float(c["criterion_score"]))
    criteria = [{"criterion": name, "mean": statistics.fmean(v),
                 "sd": statistics.stdev(v) if len(v) > 1 else None, "n": len(v)}
                for name, v in per_criterion.items()]
    tiers = [{"tier": s["tier"], "pass_rate": s["pass_rate"], "mean_score": s["mean_score"],
              "median_score": s["median_score"], "grade": s["modal_grade"], "cop": s["cop"]}
             for s in summary]
    return {"tiers": tiers, "tokens": tokens, "latency": latency, "criteria": criteria}
