"""Agent CLI adapters behind one interface: an adapter a plugin registers through the
`pytest_scylla_agents` hook is selected with `--scylla-agent` and used for everything about the
CLI (its command, its environment, the reading of its transcript) with no change to the runner;
it is part of the run's conditions and a key of a cross-CLI report; an unknown name is one
clear usage error."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

from ..conftest import needs_bwrap, workers
from ..support.docs import example

CONFTEST = '''
import json
import os
from pathlib import Path

from pytest_scylla.run.agents.claude_code import ClaudeCode

LOG = Path(os.environ["TOY_ADAPTER_LOG"])


class ThroughEnv(ClaudeCode):
    """Claude Code started through env(1) with a variable of its own, its final message
    marked: an outside adapter, as a third-party package would register one."""

    name = "claude-code-env"

    def command(self, cli, model, max_turns, overlay_args):
        argv = ["/usr/bin/env", "TOY_ADAPTER=1",
                *super().command(cli, model, max_turns, overlay_args)]
        with LOG.open("a") as log:
            log.write(json.dumps(argv) + "\\n")
        return argv

    def parse(self, transcript):
        result = super().parse(transcript)
        result.final_message = "[through env] " + result.final_message
        return result


def pytest_scylla_agents(config):
    return [ThroughEnv()]
'''


def test_an_adapter_from_a_plugin_runs_end_to_end(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = mini / "argv.jsonl"
    monkeypatch.setenv("TOY_ADAPTER_LOG", str(log))
    (mini / "conftest.py").write_text(CONFTEST)
    for agent, out in (("claude-code-env", "env"), ("claude-code", "plain")):
        done = pytester.runpytest(
            "cases",
            "-k",
            "alpha and T0-01",
            *workers(0),
            *oracle,
            f"--scylla-agent={agent}",
            f"--scylla-out={mini / out}",
        )
        done.assert_outcomes(passed=1)
    env, plain = (
        json.loads((mini / out / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
        for out in ("env", "plain")
    )
    assert (env["agent"], plain["agent"]) == ("claude-code-env", "claude-code")
    assert env["final_message"].startswith("[through env] Done.")  # the adapter's parse
    assert not plain["final_message"].startswith("[through env]")
    argvs = [json.loads(line) for line in log.read_text().splitlines()]
    assert argvs, "the adapter's command was never asked for"
    assert all(a[:2] == ["/usr/bin/env", "TOY_ADAPTER=1"] and "-p" in a for a in argvs)
    assert env["config_hash"] != plain["config_hash"]  # another adapter: other conditions
    assert env["cli_version"] == plain["cli_version"]
    # the two experiments merged: a cross-CLI report, one row and one tier table per CLI
    merged = mini / "merged"
    assert (
        main(
            [
                "report",
                str(mini / "plain"),
                str(mini / "env"),
                "--out",
                str(merged),
                "--report",
                "md",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "agent claude-code-env: 1 runs, pass rate 100%" in printed
    assert "agent tier" in printed
    summary = json.loads((merged / "summary.json").read_text())
    assert [a["agent"] for a in summary["agents"]] == ["claude-code", "claude-code-env"]
    assert [(t["agent"], t["tier"]) for t in summary["agent_tiers"]] == [
        ("claude-code", "T0"),
        ("claude-code-env", "T0"),
    ]
    assert "## Agent CLI comparison" in (merged / "tables.md").read_text()
    with (merged / "runs.csv").open(encoding="utf-8") as handle:
        assert sorted(r["agent"] for r in csv.DictReader(handle)) == [
            "claude-code",
            "claude-code-env",
        ]
    # and compared: the CLI is a condition that changed
    assert (
        main(["compare", str(mini / "plain"), str(mini / "env"), "--out", str(mini / "cmp")]) == 0
    )
    result = json.loads((mini / "cmp" / "compare.json").read_text())
    assert {"what": "agents", "base": ["claude-code"], "candidate": ["claude-code-env"]} in result[
        "conditions"
    ]


def test_an_unknown_agent_is_one_usage_error(mini: Path, pytester: pytest.Pytester) -> None:
    done = pytester.runpytest("cases", "--collect-only", "--scylla-agent=codex-nope")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    err = done.stderr.str()
    assert "--scylla-agent='codex-nope': not an agent adapter here; known: claude-code" in err
    assert "Traceback" not in err


@pytest.mark.slow  # builds and installs a wheel; the default suite runs the same adapter from
# a conftest.py, and tests/e2e/test_report_cli.py loads an entry-point package
def test_an_adapter_from_an_installed_package(
    mini: Path, tmp_path: Path, oracle: list[str]
) -> None:
    """The same adapter shipped as an outside package: installed (here into a folder on the
    path, offline), its `pytest11` entry point registers it, and a user's plain `pytest` run
    selects it."""
    package = tmp_path / "toy"
    (package / "scylla_toy_adapter").mkdir(parents=True)
    (package / "scylla_toy_adapter" / "__init__.py").write_text(CONFTEST)
    (package / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "scylla-toy-adapter"\nversion = "0.1"\n\n'
        '[project.entry-points.pytest11]\nscylla_toy_adapter = "scylla_toy_adapter"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["scylla_toy_adapter"]\n'
    )
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(package),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target), "TOY_ADAPTER_LOG": str(tmp_path / "a.jsonl")}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-k",
            "alpha and T0-01",
            "-p",
            "no:cacheprovider",
            *oracle,
            "--scylla-agent=claude-code-env",
            f"--scylla-out={tmp_path / 'out'}",
        ],
        cwd=mini,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    rec = json.loads((tmp_path / "out" / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    assert rec["agent"] == "claude-code-env"
    assert rec["final_message"].startswith("[through env] ")


TOY_SANDBOX = '''
import json
import os
from pathlib import Path

from pytest_scylla.run.sandbox import Bwrap

LOG = Path(os.environ["TOY_SANDBOX_LOG"])


class Logged(Bwrap):
    """bubblewrap that notes every command it runs: an outside sandbox."""

    name = "logged-bwrap"

    def run(self, argv, *args, **kwargs):
        with LOG.open("a") as log:
            log.write(json.dumps(list(argv)) + "\\n")
        return super().run(argv, *args, **kwargs)


def pytest_scylla_sandboxes(config):
    return {"logged-bwrap": Logged}
'''


def test_a_sandbox_from_a_plugin_runs_the_agent(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's `pytest_scylla_sandboxes` adds a sandbox `--scylla-sandbox` selects by name:
    the agent runs through it and the record names it. Without the plugin the name is one
    usage error (the control)."""
    needs_bwrap()
    refused = pytester.runpytest("cases", "--co", "-p", "no:xdist", "--scylla-sandbox=logged-bwrap")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "ERROR: --scylla-sandbox: unknown sandbox 'logged-bwrap'; "
            "choose from auto, local, bwrap, docker"
        ]
    )
    log = mini / "sandbox.jsonl"
    monkeypatch.setenv("TOY_SANDBOX_LOG", str(log))
    (mini / "conftest.py").write_text(TOY_SANDBOX)
    done = pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        *workers(0),
        *oracle,
        "--scylla-sandbox=logged-bwrap",
        f"--scylla-out={mini / 'out'}",
    )
    done.assert_outcomes(passed=1)
    rec = json.loads((mini / "out" / "runs" / "alpha-T0-01-r1" / "run.json").read_text())
    assert (rec["sandbox"], rec["outcome"]) == ("logged-bwrap", "pass")
    argvs = [json.loads(line) for line in log.read_text().splitlines()]
    assert any("claude" in Path(a[0]).name for a in argvs), argvs  # the agent went through it


# the extension guide's adapter with a configuration reader (docs/extending.md), importing only
# `pytest_scylla.api`: it reads TOY.md by section
READER_PLUGIN = example("extending", "agent-reader")


def test_a_plugins_agent_with_a_reader_is_planned_by_ablate(tmp_path: Path) -> None:
    """An adapter with a configuration reader (the extension guide's, on the api alone),
    delivered by a package of the `pytest_scylla` entry-point group (a module and its dist-info
    on the path, as pip installs them), is one `scylla ablate plan --agent` plans with: its
    reader reads the project, its name is in the written design. Without the entry point the
    same command names the agent unknown."""
    assert "from pytest_scylla.api import" in READER_PLUGIN
    site = tmp_path / "site"
    (site / "toy_reader-0.1.dist-info").mkdir(parents=True)
    (site / "toy_reader.py").write_text(READER_PLUGIN)
    (site / "toy_reader-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-reader\nVersion: 0.1\n"
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "TOY.md").write_text("## Style\nshort lines\n## Tests\nrun them first\n")
    skill = project / ".toy" / "skills" / "lint"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: lint\ndescription: lint it\n---\nrun ruff\n")
    (project / "CLAUDE.md").write_text("## Claude only\nnever read for toy-cli\n")

    command = [sys.executable, "-m", "pytest_scylla.cli", "ablate", "plan", str(project)]

    def plan() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--agent", "toy-cli"],
            env={**os.environ, "PYTHONPATH": str(site)},
            capture_output=True,
            text=True,
            timeout=120,
        )

    unplugged = plan()  # the positive control: no entry point, no such agent
    assert unplugged.returncode == 2
    assert "argument --agent: invalid choice: 'toy-cli'" in unplugged.stderr
    assert "'claude-code', 'codex', 'gemini-cli', 'opencode')" in unplugged.stderr
    (site / "toy_reader-0.1.dist-info" / "entry_points.txt").write_text(
        "[pytest_scylla]\ntoy = toy_reader\n"
    )
    done = plan()
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("toy-cli configuration ")
    assert "section:style" in done.stdout
    assert "skill:lint" in done.stdout
    assert "section:claude-only" not in done.stdout  # Claude Code's reader never stands in
    assert "--scylla-agent=toy-cli" in done.stdout
    design = json.loads((project / "ablation" / "design.json").read_text())
    assert design["agent"] == "toy-cli"
