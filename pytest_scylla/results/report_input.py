"""What a plugin's report writer is given (`pytest_scylla_report_writers`), as one frozen object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.results.tables import Tables


@dataclass(frozen=True)
class ReportInput:
    """The experiment `folder` a writer puts its own files into, the `tables` every report
    reads (runs, judges, criteria), and `summary` and `statistics` as `summary.json` and
    `statistical_results.json` hold them."""

    folder: Path
    tables: Tables
    summary: Mapping[str, Any]
    statistics: Mapping[str, Any]


Writer = Callable[[ReportInput], None]  # writes its files into `report.folder`
