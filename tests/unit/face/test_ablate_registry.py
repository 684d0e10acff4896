"""`scylla ablate plan` and `scylla cases mine` take agents and sandboxes from the registry
(`config.extensions`), read without a pytest session: the built-in ones and the modules of the
`pytest_scylla` entry-point group, a name offered once. A plugin's adapter that ships a
configuration reader is planned for with its own reader; one without a reader, or an unknown
name, is one clear error (never Claude Code's reader in its place)."""

from __future__ import annotations

import shutil
import types
from pathlib import Path

import pytest

from pytest_scylla.cli import mine as mine_cli
from pytest_scylla.cli.main import build_parser, main
from pytest_scylla.config import extensions
from pytest_scylla.formats.agent_config import sections_in
from pytest_scylla.formats.components import Configuration
from pytest_scylla.run.agents import configuration_reader
from pytest_scylla.run.agents.claude_code import ClaudeCode
from pytest_scylla.run.sandbox import Sandbox

TEAM = Path(__file__).parents[2] / "fixtures" / "team"


class Toy(ClaudeCode):
    """An outside adapter whose CLI keeps its instructions in TOY.md."""

    name = "toy-cli"
    configuration_files = ("TOY.md",)

    def read_configuration(self, root: Path) -> Configuration:
        return Configuration("toy-cli", root, tuple(sections_in(root, [root / "TOY.md"], False)))


class Bare(ClaudeCode):
    """An outside adapter with no configuration reader (ClaudeCode's taken away)."""

    name = "bare-cli"
    read_configuration = None


class Taken(Toy):
    """An outside adapter under a built-in one's name."""

    name = "codex"


class ToyBox(Sandbox):
    name = "toybox"


def _offering(monkeypatch: pytest.MonkeyPatch, **hooks: object) -> None:
    """The entry-point group holds one module implementing `hooks`."""
    module = types.SimpleNamespace(__name__="toy_plugin", **hooks)
    monkeypatch.setattr(extensions, "modules", lambda: [module])


def test_without_a_session_the_built_in_agents_and_sandboxes_are_there() -> None:
    found = extensions.agents(None)
    assert list(found) == ["claude-code", "codex", "gemini-cli", "opencode"]
    assert all(configuration_reader(adapter) for adapter in found.values())
    assert list(extensions.sandboxes(None)) == ["local", "bwrap", "docker"]


def test_an_entry_point_modules_offers_join_by_the_registry_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _offering(
        monkeypatch,
        pytest_scylla_agents=lambda config: [Toy()],
        pytest_scylla_sandboxes=lambda: {"toybox": ToyBox},  # a hook may take no argument
    )
    assert list(extensions.agents(None))[-1] == "toy-cli"
    assert extensions.sandboxes(None)["toybox"] is ToyBox
    _offering(
        monkeypatch,
        pytest_scylla_agents=lambda config: [Toy(), Taken()],
    )
    with pytest.raises(extensions.ExtensionError, match="two plugins offer an agent named 'codex'"):
        extensions.agents(None)


def test_a_plugins_agent_is_planned_with_its_own_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(shutil.copytree(TEAM, tmp_path / "team"))  # Claude Code's files are there too
    (root / "TOY.md").write_text("## Style\nshort lines\n## Tests\nrun them\n")
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [Toy(), Bare()])
    assert main(["ablate", "plan", str(root), "--agent", "toy-cli", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("toy-cli configuration ")
    assert "section:style" in out
    assert "section:tests" in out
    assert "skill:" not in out  # nothing of Claude Code's reader
    assert main(["ablate", "plan", str(root), "--agent", "bare-cli", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "--agent bare-cli: its adapter ships no configuration reader" in err
    assert "read_configuration(root)" in err


def test_an_unknown_agent_names_the_known_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [Toy()])
    with pytest.raises(SystemExit) as exited:
        main(["ablate", "plan", str(tmp_path), "--agent", "nope"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --agent: invalid choice: 'nope'" in err
    assert "'claude-code', 'codex', 'gemini-cli', 'opencode', 'toy-cli'" in err


def test_a_hint_names_a_plugins_agent_whose_files_are_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "TOY.md").write_text("## A\n")
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [Toy()])
    assert main(["ablate", "plan", str(tmp_path)]) == 2
    assert "found toy-cli files: try --agent toy-cli" in capsys.readouterr().err


def test_a_broken_plugin_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [Toy(), Toy()])
    assert main(["ablate", "plan", str(tmp_path), "--agent", "toy-cli"]) == 2
    assert main(["ablate", "plan", str(tmp_path)]) == 2  # the default, unchecked by argparse
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("scylla: two plugins offer an agent named 'toy-cli'"), err
    assert err[1].startswith("scylla ablate plan: two plugins offer"), err


def test_mine_takes_any_registered_sandbox(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _offering(monkeypatch, pytest_scylla_sandboxes=lambda config: {"toybox": ToyBox})
    args = build_parser().parse_args(["cases", "mine", ".", "--sandbox", "toybox"])
    assert isinstance(mine_cli._sandbox(args.sandbox), ToyBox)
    assert type(mine_cli._sandbox("local")) is Sandbox
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cases", "mine", ".", "--sandbox", "nope"])
    assert "(choose from 'auto', 'local', 'bwrap', 'docker', 'toybox')" in capsys.readouterr().err
