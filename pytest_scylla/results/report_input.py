"""What a report writer is given (`pytest_scylla_report_writers`; the built-in `md` and `html`
are writers too), as one frozen object."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.results.rows import GroupSummary
from pytest_scylla.results.tables import Tables


@dataclass(frozen=True)
class ReportInput:
    """The experiment `folder` a writer puts its own files into, the `tables` every report
    reads (runs, judges, criteria), `summary` and `statistics` with the keys of `summary.json`
    and `statistical_results.json` (numbers as computed: a Cost-of-Pass never reached is
    `math.inf`, which the JSON files write as "inf"), and `tiers`, one summary row per tier.
    Each writer gets its own copy of the three: what one changes, no other sees."""

    folder: Path
    tables: Tables
    summary: Mapping[str, Any]
    statistics: Mapping[str, Any]
    tiers: Sequence[GroupSummary] = ()


Writer = Callable[[ReportInput], None]  # writes its files into `report.folder`
