"""The paper's tier set ships with the package: a project without `tiers/` runs T0-T6 from it,
a project's own tier files can be laid over it (same name replaces, new names add), and the
manifest says which set was used.

Here the in-process tests; the sessions are in `tests/e2e/test_packaged_tiers.py`."""

from __future__ import annotations

from pathlib import Path

from pytest_scylla.formats import PACKAGED, PACKAGED_RUBRICS
from pytest_scylla.formats.tiers import tier_files

ROOT = Path(__file__).resolve().parents[3]


def test_the_packaged_set_is_the_papers_t0_to_t6() -> None:
    assert PACKAGED == ROOT / "tiers"  # a checkout: the repository's; a wheel: its copy
    assert list(tier_files(PACKAGED)) == [f"T{i}" for i in range(7)]
    assert (PACKAGED_RUBRICS / "python-change.yaml").is_file()
