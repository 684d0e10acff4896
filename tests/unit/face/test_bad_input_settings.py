"""Issue #29's bad input: files saved with Windows (CRLF) line endings are read like any other,
an ini boolean that is no boolean names its file, key and the values allowed, and a list-valued
ini key may be written as a list (as pytest's own list-valued keys may).

Here the in-process tests; the sessions are in `tests/e2e/test_bad_input_settings.py`."""

from __future__ import annotations

from pytest_scylla.config.options import LIST_KEYS

# every list-valued key with a value that changes its setting from the default
LISTS = {
    "scylla_tiers": ["T0", "T5"],
    "scylla_subtests": ["01", "T5-02"],
    "scylla_report": ["terminal", "csv"],
    "scylla_judges": ["claude-haiku-4-5", "claude-sonnet-5"],
    "scylla_limits": ["memory=2g", "cpus=1", "pids=256"],
    "scylla_models": ["claude-sonnet-5", "claude-haiku-4-5"],
}


def test_every_list_valued_key_is_named() -> None:
    assert set(LISTS) == LIST_KEYS
