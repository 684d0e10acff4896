"""The one registry of what plugins offer by name: agent adapters, sandboxes, judge kinds and
report writers. The built-in ones are offered through the same hooks as a plugin's, and one
rule holds for all four: a name is offered once. A second offer of a taken name (a built-in's
included) is an error naming both offerers, never a silent winner; the words that select
rather than name (`auto`, `all`, `none`) are no one's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")
RESERVED = frozenset({"auto", "all", "none"})


class RegistryError(ValueError):
    """A name offered twice, or a reserved word offered as a name."""


def gather(kind: str, offers: Iterable[tuple[str, Iterable[tuple[str, T]]]]) -> dict[str, T]:
    """`{name: thing}` from `(offerer, [(name, thing), ...])` pairs, in the order offered."""
    found: dict[str, T] = {}
    owners: dict[str, str] = {}
    kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    for offerer, items in offers:
        for name, thing in items:
            if name in RESERVED:
                raise RegistryError(
                    f"{offerer} offers {kind} named '{name}', a word that "
                    "selects rather than names; give it another name"
                )
            if name in owners:
                raise RegistryError(
                    f"two plugins offer {kind} named '{name}': "
                    f"{owners[name]} and {offerer}; give one another name"
                )
            found[name], owners[name] = thing, offerer
    return found
