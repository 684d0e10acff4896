"""The built-in report writers, `md` (tables.md and tables.tex) and `html` (report.html with its
figures): offered through `pytest_scylla_report_writers` as a plugin's are, and given the same
`ReportInput`. Their modules load when a report is written, not when the session starts.
When the experiment ran the arms of `scylla ablate plan`, tables.md and report.html also show
what each component of the configuration is worth (`component_effects`)."""

from __future__ import annotations

from pytest_scylla.results.report_input import ReportInput, Writer


def markdown(report: ReportInput) -> None:
    from pytest_scylla.results import decision_tables, text_tables
    from pytest_scylla.results.paper_tables import paper_tables

    paper = paper_tables(report.tables, list(report.tiers))
    for name, render in (("tables.md", text_tables.markdown), ("tables.tex", text_tables.latex)):
        text = render(dict(report.summary), dict(report.statistics), paper)
        if name == "tables.md":
            text += _components_markdown(report)
            text += decision_tables.markdown(report.summary.get("decisions") or [])
        (report.folder / name).write_text(text, encoding="utf-8")


def html(report: ReportInput) -> None:
    from pytest_scylla.results import figures
    from pytest_scylla.results.html import report as html_report

    drawn = figures.draw_all(report.tables, list(report.tiers), report.folder)
    html_report.write(
        report.folder,
        report.tables,
        dict(report.summary),
        dict(report.statistics),
        drawn,
        report.tables.sources,
        _components_html(report) + _decisions_html(report),
    )


def _components_markdown(report: ReportInput) -> str:
    """The components' table, after a blank line; "" when the experiment ran no plan."""
    from pytest_scylla.results import component_tables as ct

    planned = ct.for_session(report.folder, report.tables.runs, report.tables.records)
    return "\n" + ct.markdown(*planned) if planned else ""


def _components_html(report: ReportInput) -> str:
    """The components' section; "" when the experiment ran no plan."""
    from pytest_scylla.results import component_tables as ct
    from pytest_scylla.results.component_html import section

    planned = ct.for_session(report.folder, report.tables.runs, report.tables.records)
    if not planned:
        return ""
    found, design, notes = planned
    return section(ct.rows_of(found), ct.title(design), notes)


def _decisions_html(report: ReportInput) -> str:
    from pytest_scylla.results import decision_tables

    return decision_tables.html(report.summary.get("decisions") or [])


WRITERS: dict[str, Writer] = {"md": markdown, "html": html}
