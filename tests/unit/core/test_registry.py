"""The registry's one collision rule, directly: every name once, reserved words for no one.

Here the in-process tests; the sessions are in `tests/e2e/test_registry.py`."""

from __future__ import annotations

import pytest

from pytest_scylla.core.registry import RegistryError, gather


def test_names_from_every_offerer_in_the_order_offered() -> None:
    found = gather(
        "sandbox", [("scylla", [("local", 1), ("bwrap", 2)]), ("acme", [("firecracker", 3)])]
    )
    assert found == {"local": 1, "bwrap": 2, "firecracker": 3}
    assert list(found) == ["local", "bwrap", "firecracker"]


def test_a_taken_name_is_an_error_naming_both_offerers() -> None:
    with pytest.raises(
        RegistryError,
        match="two plugins offer a sandbox named 'bwrap': scylla and acme; give one another name",
    ):
        gather("sandbox", [("scylla", [("bwrap", 1)]), ("acme", [("bwrap", 2)])])


@pytest.mark.parametrize("word", ["auto", "all", "none"])
def test_a_reserved_word_is_no_name(word: str) -> None:
    with pytest.raises(RegistryError, match=f"acme offers a report writer named '{word}'"):
        gather("report writer", [("acme", [(word, 1)])])
