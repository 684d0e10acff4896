"""The session's own reports (the built-in `md` and `html` writers) of an experiment that ran
the arms of `scylla ablate plan`: tables.md ends with the components' table and report.html
holds their section, before the runs; an experiment that ran no plan gets neither, and a broken
design leaves the reports whole. In process: the writers are given the tables a session would
give them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.core.record import RunRecord
from pytest_scylla.formats.ablation_plan import HEADER
from pytest_scylla.results import report
from pytest_scylla.results.tables import Tables

FACTORS = {"skill:helpful": 0.45, "skill:<i>noise</i>": 0.0}
ARMS = {
    "01-full": sorted(FACTORS),
    "02-no-skill-helpful": ["skill:<i>noise</i>"],
    "03-no-skill-noise": ["skill:helpful"],
}
DESIGN = {
    "design": "leave-one-out",
    "configuration": "cfg1",
    "factors": list(FACTORS),
    "components": {f: [f] for f in FACTORS},
    "arms": ARMS,
}


def _records(n: int = 40) -> list[RunRecord]:
    """n runs per arm, the arm's pass rate exactly 30 % plus its factors' effects."""
    records: list[RunRecord] = []
    for arm, kept in ARMS.items():
        passes = round(n * (0.3 + sum(FACTORS[f] for f in kept)))
        for i in range(1, n + 1):
            outcome = "pass" if i <= passes else "fail"
            records.append(
                {
                    "run_key": f"case-T0-{arm[:2]}-r{i}",
                    "case": "case",
                    "tier": "T0",
                    "subtest": f"T0-{arm[:2]}",
                    "run": i,
                    "model": "claude-sonnet-4-5",
                    "outcome": outcome,
                    "score": 1.0 if outcome == "pass" else 0.2,
                    "cost_usd": 0.1 + i / 1000,
                    "judges": [],
                }
            )
    return records


def _write(
    tmp_path: Path,
    design: str | None,
    formats: tuple[str, ...] = ("md", "html"),
    records: list[RunRecord] | None = None,
) -> Path:
    """The reports of an experiment whose T0 tier came from a plan (with `design` as its
    design.json; None: none)."""
    tiers = tmp_path / "ablation"
    tiers.mkdir()
    (tiers / "T0.yaml").write_text(f"{HEADER} from cfg1\ntier: T0\n", encoding="utf-8")
    if design is not None:
        (tiers / "design.json").write_text(design, encoding="utf-8")
    tables = Tables()
    tables.add_records(_records() if records is None else records, "exp")
    out = tmp_path / "exp"
    manifest = {"tier_sources": {"T0": str(tiers / "T0.yaml")}}
    report.write(out, tables, manifest, formats=formats)
    return out


def test_the_reports_of_a_planned_experiment_show_the_components(tmp_path: Path) -> None:
    out = _write(tmp_path, json.dumps(DESIGN))
    md = (out / "tables.md").read_text(encoding="utf-8")
    assert "### Which components earn their cost (leave-one-out, configuration cfg1)" in md
    assert "| `skill:helpful` | helps |" in md
    assert "Which components" not in (out / "tables.tex").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    section = html.index('<section id="components">')
    assert section < html.index("<table class=tool id=runs")  # before the runs
    assert html.count('<rect class="ci"') == 2  # one bar per component
    assert '<tr data-component="skill:helpful">' in html
    assert "skill:&lt;i&gt;noise&lt;/i&gt;" in html
    assert "<i>noise" not in html


@pytest.mark.parametrize("design", [None, "{broken"])
def test_without_a_readable_design_the_reports_have_no_section(
    tmp_path: Path, design: str | None
) -> None:
    out = _write(tmp_path, design)
    assert "Which components" not in (out / "tables.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="components"' not in html
    assert "<table class=tool id=runs" in html  # the rest of the report is whole


def test_the_reports_name_the_arms_without_a_counted_run_and_why(tmp_path: Path) -> None:
    """The full arm's runs all ended in infra_error: the section says so with the reason, and
    no effect relative to the full arm is claimed."""
    reason = "declared tool 'WebFetch' is missing from the request"
    records = [
        {**r, "outcome": "infra_error", "reason": reason} if r["subtest"] == "T0-01" else r
        for r in _records(4)
    ]
    out = _write(tmp_path, json.dumps(DESIGN), records=records)
    said = f"arm 01-full (full: every component): 4 runs, all infra_error: {reason}"
    md = (out / "tables.md").read_text(encoding="utf-8")
    assert f"- {said}" in md
    assert "| `skill:helpful` | not estimable: the full arm (every component) has no" in md
    html = (out / "report.html").read_text(encoding="utf-8")
    assert said.replace("'", "&#x27;") in html
    assert '<rect class="ci"' not in html  # no interval drawn
