"""Each option is declared once (`options.OPTIONS`): `pytest --help`, the ini keys, the defaults
of `Settings` and the docs' table of options (docs/options.md, written by docs/hooks.py) are made
from the declarations and agree."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_scylla.config.options import GROUPS, OPTIONS, TITLES, markdown_table
from pytest_scylla.config.settings import SETTINGS_KEY, Settings
from pytest_scylla.judging.judges import parse

OPTIONS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "options.md"
# options whose setting is worked out when the session starts (from its rootdir, the
# environment, or another option), or that are no setting at all
RESOLVED = {"tiers-dir", "rubrics-dir", "cache-dir", "packaged-tiers", "only", "skip"}


def test_the_readme_table_is_the_declared_one() -> None:
    """The options page's table (moved from the README; the test keeps its id)."""
    text = OPTIONS_PAGE.read_text(encoding="utf-8")
    found = re.search(r"<!-- options:start -->\n(.*?)<!-- options:end -->", text, re.DOTALL)
    assert found, "docs/options.md lost its <!-- options:start --> ... <!-- options:end --> markers"
    assert found[1] == markdown_table(), (
        "docs/options.md's table of options differs from the declarations: run "
        "`python docs/hooks.py`, which writes pytest_scylla.config.options.markdown_table() "
        "between its markers"
    )


def test_each_row_of_the_table_has_its_three_cells() -> None:
    """A help text's own parentheses or bars never shift a cell (the oracle's modes once
    did: its first mode's "(default: ...)" was taken for the option's default)."""
    rows = [line for line in markdown_table().splitlines() if line.startswith("| `--scylla")]
    assert len(rows) == len(OPTIONS)
    assert [r for r in rows if len(re.findall(r"(?<!\\)\|", r)) != 4] == []
    assert "| `--scylla-oracle[=MODE]` | offline SIMULATED model" in markdown_table()
    assert any(r.startswith("| `--scylla-oracle") and r.endswith("| off |") for r in rows)


def test_each_option_is_declared_once_in_a_group_with_help() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    assert 4 <= len(TITLES) <= 6
    assert sorted(n for _, group in GROUPS.values() for n in group) == sorted(names)
    for o in OPTIONS:
        assert o.group in TITLES, o.name
        assert o.help, o.name
        assert "{" not in o.text, o.name
        assert o.kind in ("str", "int", "float", "list", "flag", "switch", "optional"), o.name
        assert bool(o.metavar) == (o.kind not in ("flag", "switch")), o.name
        items = o.default if o.kind == "list" else (o.default,)
        assert not o.choices or o.default is None or set(items) <= set(o.choices), o.name


def test_help_lists_every_declared_option_in_its_group_and_its_ini_key(
    pytester: pytest.Pytester,
) -> None:
    text = pytester.runpytest("--help").stdout.str()
    starts = [text.index(f"\n{title}:\n") for title in TITLES.values()]
    assert starts == sorted(starts)  # in the declared order
    ends = [text.index("\n\n", at + 1) for at in starts]
    blocks = {key: text[a:b] for key, a, b in zip(TITLES, starts, ends, strict=True)}
    ini = text[re.search(r"^\[pytest\] ", text, re.M).start() :]  # type: ignore[union-attr]
    for o in OPTIONS:
        block = blocks[o.group]
        assert re.search(rf"^  --scylla-{o.name}\b", block, re.M), o.name
        first_words = " ".join(o.text.split()[:3])
        assert first_words in " ".join(block.split()), o.name
        listed = re.search(rf"^  {o.dest}\b", ini, re.M)
        assert bool(listed) == (o.kind != "switch"), o.dest


def test_settings_defaults_are_the_declared_ones() -> None:
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    for o in OPTIONS:
        if o.name in RESOLVED:
            assert o.default in (None, False) or o.choices, o.name
            continue
        want = tuple(parse(j) for j in o.default) if o.name == "judges" else o.default
        assert fields[o.field] == want, o.name


def test_a_session_without_options_resolves_the_declared_defaults(
    pytester: pytest.Pytester,
) -> None:
    """No option on the command line or in the ini file: each setting is its default."""
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    (pytester.path / "cases").mkdir()
    config = pytester.parseconfigure("cases")
    resolved, defaults = config.stash[SETTINGS_KEY], Settings()
    for o in OPTIONS:
        if o.name not in RESOLVED:
            assert getattr(resolved, o.field) == getattr(defaults, o.field), o.name
    assert resolved.tiers_dir.name == "tiers"  # the packaged ones: the project has none
    assert resolved.cache_dir.name == "pytest-scylla"
