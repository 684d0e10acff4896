"""`scylla ablate plan`: the components listed, the arms written as tiers that validate, bad
input as one line naming the file (exit code 2), and nothing written on --dry-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.formats.tiers import TierSet

TEAM = Path(__file__).parents[2] / "fixtures" / "team"


@pytest.fixture
def team(tmp_path: Path) -> Path:
    return Path(shutil.copytree(TEAM, tmp_path / "team"))


def test_plan_lists_every_component_and_writes_tiers_that_validate(
    team: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ablate", "plan", str(team), "--group", "section"]) == 0
    out = capsys.readouterr().out
    for ident in (
        "section:ledger-service",
        "skill:money-math",
        "agent:reviewer",
        "mcp:ledger-facts",
    ):
        assert f"  {ident} " in out
    assert "command:release" in out
    # a model-invocable command is a component now, carried as a skill of its name
    assert "listed to the model as the skill 'release'" in out
    assert "9 factors, 12 arms (Plackett-Burman)" in out
    assert f"--scylla-tiers-dir={team / 'ablation'}" in out
    tiers = TierSet(team / "ablation")
    assert tiers.errors == {}
    assert len(tiers.tiers["T0"].subtests) == 12


def test_dry_run_writes_nothing(team: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ablate", "plan", str(team), "--dry-run"]) == 0
    assert "15 factors, 16 arms (Plackett-Burman)" in capsys.readouterr().out
    assert not (team / "ablation").exists()


def test_a_relative_path_plans_as_the_absolute_one(
    team: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`scylla ablate plan .` from inside the project, as a user types it (a traceback once:
    the readers compare resolved paths with the root)."""
    assert main(["ablate", "plan", str(team), "--dry-run"]) == 0
    absolute = capsys.readouterr().out
    monkeypatch.chdir(team)
    assert main(["ablate", "plan", ".", "--dry-run"]) == 0
    relative = capsys.readouterr().out
    assert "factors" in relative
    assert relative.splitlines()[1:] == absolute.splitlines()[1:]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda t: (t / ".mcp.json").write_text("{nope"), ".mcp.json:1: column 2:"),
        (lambda t: (t / "CLAUDE.md").write_bytes(b"\xff\n"), "CLAUDE.md:1: column 1: byte 0xff"),
        (lambda t: shutil.rmtree(t), "no such folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(
    team: Path, capsys: pytest.CaptureFixture[str], make: object, expected: str
) -> None:
    make(team)  # type: ignore[operator]
    assert main(["ablate", "plan", str(team)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_project_without_configuration_is_told_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ablate", "plan", str(tmp_path)]) == 2
    assert "no claude-code configuration to ablate" in capsys.readouterr().err
    (tmp_path / "AGENTS.md").write_text("## A\n## B\n## C\n")
    assert main(["ablate", "plan", str(tmp_path)]) == 2
    assert "found codex, opencode files: try --agent codex" in capsys.readouterr().err


def test_a_codex_plan_names_the_agent_in_the_run_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(shutil.copytree(TEAM.parent / "team-codex", tmp_path / "team"))
    assert main(["ablate", "plan", str(root), "--agent", "codex", "--group", "section"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("codex configuration ")
    assert "--scylla-agent=codex" in out
    design = json.loads((root / "ablation" / "design.json").read_text())
    assert design["agent"] == "codex"
    assert TierSet(root / "ablation").errors == {}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], "manifest.json"),  # not an experiment folder
        (["--design", "nowhere.json"], "not a design written by `scylla ablate plan`"),
    ],
)
def test_report_bad_input_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: list[str], expected: str
) -> None:
    assert main(["ablate", "report", str(tmp_path), *given]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert len(err.strip().splitlines()) == 1


def test_report_on_unreadable_runs_is_one_line(
    team: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    assert main(["ablate", "plan", str(team), "--group", "section"]) == 0
    out = tmp_path / "exp"
    out.mkdir()
    tier_file = str(team / "ablation" / "T0.yaml")
    (out / "manifest.json").write_text(json.dumps({"tier_sources": {"T0": tier_file}}))
    (out / "runs.csv").write_text("not,the,exports\n1,2\n")
    capsys.readouterr()
    assert main(["ablate", "report", str(out)]) == 2
    err = capsys.readouterr().err
    assert "runs.csv" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_plan_never_deletes_a_folder_it_did_not_write(
    team: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out naming a folder of the user's: refused, its files kept; the plan's own folder is
    rewritten (the control)."""
    (team / "cases").mkdir()
    (team / "cases" / "keep.txt").write_text("mine\n")
    assert main(["ablate", "plan", str(team), "--out", str(team / "cases")]) == 2
    assert "was not written by `scylla ablate plan`" in capsys.readouterr().err
    assert (team / "cases" / "keep.txt").read_text() == "mine\n"
    assert main(["ablate", "plan", str(team)]) == 0
    assert main(["ablate", "plan", str(team), "--group", "skill"]) == 0  # its own: rewritten
    assert "group:skill" in (team / "ablation" / "design.json").read_text()
