"""`scylla sandbox KIND` and `scylla matrix` take sandboxes and agents from the registry
(`config.extensions`, read without a pytest session), as `ablate plan` and `cases mine` do: a
plugin's sandbox is a KIND to check, a plugin's adapter says in the matrix what its CLI cannot
run. The plugins are faked through the entry-point group as in `test_ablate_registry.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.cli.main import build_parser, main
from pytest_scylla.formats.tiers import Subtest
from pytest_scylla.run.sandbox import SandboxError

from .test_ablate_registry import Toy, ToyBox, _offering


class Refusing(ToyBox):
    """A plugin's sandbox that cannot work here, and says so as it is built."""

    name = "refusing"

    def __init__(self, *args: object) -> None:
        raise SandboxError("--scylla-sandbox=refusing: the toy kernel module is not loaded")


class NoSkills(Toy):
    """A plugin's adapter whose CLI has no skills."""

    def unsupported(self, sub: Subtest) -> str | None:
        return "the toy CLI has no skills" if sub.skills else None


def _kind_error(capsys: pytest.CaptureFixture[str], kind: str) -> str:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["sandbox", kind])
    assert exited.value.code == 2
    return capsys.readouterr().err


def test_scylla_sandbox_checks_a_plugins_sandbox(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the plugin its name is argparse's one error naming the built-in kinds (the
    control; `local` isolates nothing and is no kind to check); with it the name is a choice,
    the sandbox is built to see it works (exit 0) or says why not (exit 1)."""
    _offering(monkeypatch)
    assert "(choose from 'auto', 'bwrap', 'docker')" in _kind_error(capsys, "toybox")
    assert "invalid choice: 'local'" in _kind_error(capsys, "local")
    _offering(monkeypatch, pytest_scylla_sandboxes=lambda: {"toybox": ToyBox, "refusing": Refusing})
    assert "(choose from 'auto', 'bwrap', 'docker', 'toybox', 'refusing')" in _kind_error(
        capsys, "nope"
    )
    assert main(["sandbox", "toybox"]) == 0
    assert capsys.readouterr().out == "sandbox toybox works here\n"
    assert main(["sandbox", "refusing"]) == 1
    assert capsys.readouterr().err == (
        "scylla sandbox: --scylla-sandbox=refusing: the toy kernel module is not loaded\n"
    )


def test_scylla_sandbox_with_a_broken_plugin_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _offering(monkeypatch, pytest_scylla_sandboxes=lambda: {"bwrap": ToyBox})
    assert main(["sandbox"]) == 2  # the default kind is checked against the registry too
    err = capsys.readouterr().err
    assert err.startswith("scylla: two plugins offer a sandbox named 'bwrap'"), err
    assert err.count("\n") == 1, err


def _records(folder: Path) -> Path:
    """An experiment of one toy-cli run, declaring no skills."""
    folder.mkdir()
    run = {
        "run_key": "alpha-T0-01-r1",
        "tier": "T0",
        "subtest": "T0-01",
        "outcome": "pass",
        "agent": "toy-cli",
        "declared": {"system_prompt": "default"},
        "ablation": {"checked": True, "problems": []},
    }
    (folder / "runs.jsonl").write_text(json.dumps(run) + "\n")
    return folder


def test_scylla_matrix_asks_a_plugins_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The skills row of a plugin's CLI is its adapter's reason; without the plugin no adapter
    answers and the row says `not run` (the control)."""
    folder = _records(tmp_path / "out")
    _offering(monkeypatch)
    assert main(["matrix", str(folder)]) == 0
    assert "| skills | not run |" in capsys.readouterr().out
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [NoSkills()])
    assert main(["matrix", str(folder)]) == 0
    assert "| skills | n/a: the toy CLI has no skills |" in capsys.readouterr().out
    _offering(monkeypatch, pytest_scylla_agents=lambda config: [NoSkills(), NoSkills()])
    assert main(["matrix", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scylla matrix: two plugins offer an agent named 'toy-cli'"), err
