"""The built-in report writers, `md` (tables.md and tables.tex) and `html` (report.html with its
figures): offered through `pytest_scylla_report_writers` as a plugin's are, and given the same
`ReportInput`. Their modules load when a report is written, not when the session starts."""

from __future__ import annotations

from pytest_scylla.results.report_input import ReportInput, Writer


def markdown(report: ReportInput) -> None:
    from pytest_scylla.results import text_tables
    from pytest_scylla.results.paper_tables import paper_tables

    paper = paper_tables(report.tables, list(report.tiers))
    for name, render in (("tables.md", text_tables.markdown), ("tables.tex", text_tables.latex)):
        text = render(dict(report.summary), dict(report.statistics), paper)
        (report.folder / name).write_text(text, encoding="utf-8")


def html(report: ReportInput) -> None:
    from pytest_scylla.results import figures, html_report

    drawn = figures.draw_all(report.tables, list(report.tiers), report.folder)
    html_report.write(
        report.folder,
        report.tables,
        dict(report.summary),
        dict(report.statistics),
        drawn,
        report.tables.sources,
    )


WRITERS: dict[str, Writer] = {"md": markdown, "html": html}
