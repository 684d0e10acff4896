"""Long campaigns, the promises of docs/campaigns.md not covered elsewhere: how runs reported
from disk look, a stored judge_error judged again, the manifest's changed inputs, merging folders
that share a run, plan estimates from sibling folders, the session budget and a usage-window
pause across xdist workers, and Ctrl-C recording the runs in flight. Real CLI, oracle upstream.

Most of them read one campaign of five sessions into one experiment folder (module fixture):
judges failing, the same command healed (re-scored), again (from disk, `-v`), again (from disk,
progress letters), then after a rubric and tier-file edit one run again with --scylla-fresh.

Here the in-process tests; the sessions are in `tests/e2e/test_operations.py`."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path


def test_paper_format_folders_sharing_runs_are_kept_twice_with_a_warning(tmp_path: Path) -> None:
    """Two copies of the paper's exported dryrun (7 runs each, runs.csv format): 14 runs, each
    of the second copy renamed and named in a warning, never silently merged into 7."""
    from pytest_scylla.results.tables import load

    dryrun = Path(__file__).parents[2] / "fixtures" / "dryrun"
    a, b = tmp_path / "A", tmp_path / "B"
    for folder in (a, b):
        folder.mkdir()
        for name in ("runs.csv", "judges.csv", "criteria.csv"):
            shutil.copy(dryrun / name, folder / name)
    with (dryrun / "runs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    tables = load([a, b])
    assert len(tables.runs) == 2 * len(rows) == 14
    assert len({r["run_key"] for r in tables.runs}) == 14
    assert len(tables.warnings) == len(rows)
    assert all(f"is in {a.resolve()} and {b.resolve()}" in w for w in tables.warnings)
    assert sum(str(r["run_key"]).startswith("B/") for r in tables.runs) == len(rows)
