"""The `scylla` command's layout (issue 48.1): one module of `cli/` per command, each registered
once — its `register(subparsers)` adds its parser and sets its handler, which lives in the same
module — and `cli/main.py` lists the modules and runs the handler; no second table of
handlers."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

import pytest_scylla.cli
from pytest_scylla.cli.main import COMMANDS, build_parser


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(found) == 1
    return dict(found[0].choices)


def test_each_command_is_registered_once_by_its_own_module() -> None:
    owners: dict[str, str] = {}
    for module in COMMANDS:
        alone = argparse.ArgumentParser()
        added = _commands_added(alone, module)
        assert len(added) == 1, f"{module.__name__} registers {sorted(added)}: one command each"
        name, parser = next(iter(added.items()))
        handler = parser.get_default("handler")
        assert callable(handler), f"`scylla {name}` sets no handler"
        assert handler.__module__ == module.__name__, (name, handler.__module__)
        assert name not in owners, f"`scylla {name}`: {owners[name]} and {module.__name__}"
        owners[name] = module.__name__
    assert list(_commands(build_parser())) == list(owners)  # main registers these, nothing else


def _commands_added(parser: argparse.ArgumentParser, module: object) -> dict[str, object]:
    sub = parser.add_subparsers(dest="command")
    module.register(sub)  # type: ignore[attr-defined]
    return dict(sub.choices)


def test_every_command_module_is_listed() -> None:
    """A module of `cli/` with a `register` is in `COMMANDS` (else its command is missing);
    the others are helpers (common, scaffold, main)."""
    listed = {m.__name__ for m in COMMANDS}
    for info in pkgutil.iter_modules(pytest_scylla.cli.__path__):
        if info.name == "__main__":  # `python -m pytest_scylla.cli`: runs the command
            continue
        module = importlib.import_module(f"pytest_scylla.cli.{info.name}")
        if hasattr(module, "register"):
            assert module.__name__ in listed, module.__name__
        assert not hasattr(module, "add_parsers"), f"{module.__name__}: a second registration"
    assert {"common", "scaffold", "main"} <= {
        i.name for i in pkgutil.iter_modules(pytest_scylla.cli.__path__)
    }
