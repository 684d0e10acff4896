"""The pytest plugin (entry point `scylla`): options, configuration and collection hooks."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import collect, settings
from .spec import CATEGORIES
from .tiers import tier_files


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.addoptions(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.stash[settings.SETTINGS_KEY] = settings.resolve(config)
    config.addinivalue_line("markers", "scylla: a pytest-scylla evaluation run")
    for tier in tier_files(config.stash[settings.SETTINGS_KEY].tiers_dir):
        config.addinivalue_line("markers", f"{tier}: runs of tier {tier}")
    for category in CATEGORIES:
        config.addinivalue_line("markers", f"{category}: cases of category {category}")


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect.collect_directory(path, parent)  # type: ignore[no-any-return]


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[settings.SETTINGS_KEY]
    lines = [f"scylla: runs={s.runs} tiers={','.join(s.tiers) if s.tiers else 'all'} "
             f"subtests={','.join(s.subtests) if s.subtests else 'all'} "
             f"tiers-dir={s.tiers_dir}"]
    if s.oracle:
        lines.append(f"scylla: SIMULATED MODEL (oracle={s.oracle}): no real model is called")
    return lines
