"""What several `scylla` commands share: the names a registry offers, as an option's choices."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator


class Registered:
    """An option's choices: the names the registry offers (`config.extensions`), asked when
    argparse first needs them (a value to check, a `--help` to show), so that the commands that
    never ask load no plugin. Set on the action after `add_argument` (which would ask)."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self.names = names
        self.known: tuple[str, ...] | None = None

    def _known(self) -> tuple[str, ...]:
        if self.known is None:
            self.known = tuple(self.names())
        return self.known

    def __contains__(self, value: object) -> bool:
        return value in self._known()

    def __iter__(self) -> Iterator[str]:
        return iter(self._known())
