"""Codex's own files in a plan (`formats.codex_config`) and in a run (the Codex overlay): the
settings of .codex/config.toml kept in every arm or dropped with the reason, profiles listed, a
broken file one line naming file and line, subfolders' AGENTS.md listed and left in place, and
the skills put where the team keeps them (.agents/skills), nothing else listed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.formats import ablation_plan
from pytest_scylla.formats.codex_config import carried
from pytest_scylla.formats.other_configs import read_codex
from pytest_scylla.formats.tiers import Subtest, TierSet
from pytest_scylla.run.agents import SetupError, codex

CODEX_TEAM = Path(__file__).parents[2] / "fixtures" / "team-codex"
SECRET = "sk-team-secret-0123456789"
CONFIG = f"""model = "o3"
model_provider = "team-proxy"
model_reasoning_effort = "medium"
openai_base_url = "http://127.0.0.1:9/v1"
sandbox_mode = "workspace-write"
approval_policy = "on-request"
profile = "deep"
notify = ["notify-send", "done"]

[features]
codex_hooks = true

[tools]
web_search = true
view_image = false

[model_providers.team-proxy]
base_url = "http://127.0.0.1:9/v1"
experimental_bearer_token = "{SECRET}"

[profiles.deep]
model = "o3-pro"
model_reasoning_effort = "high"

[profiles.fast]
model_reasoning_effort = "low"

[mcp_servers.facts]
command = "python3"
args = ["facts.py"]
"""


def _project(root: Path, config: str = CONFIG, files: dict[str, str] | None = None) -> Path:
    shutil.copytree(CODEX_TEAM, root)
    (root / ".codex" / "config.toml").write_text(config)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _reasons(root: Path) -> dict[str, str]:
    return {c.id: c.reason for c in read_codex(root).components if not c.ablated}


def test_codex_settings_are_kept_and_those_that_redirect_the_cli_dropped(tmp_path: Path) -> None:
    listed = _reasons(_project(tmp_path / "team"))
    assert "carried in every arm" in listed["setting:model-reasoning-effort"]
    assert "carried in every arm" in listed["setting:features"]
    for key in ("model", "model-provider", "model-providers", "openai-base-url"):
        assert "gateway decides where the model is" in listed[f"setting:{key}"], key
    for key in ("sandbox-mode", "approval-policy", "notify"):
        assert "the run decides it" in listed[f"setting:{key}"], key
    assert "chooses the profile 'deep'" in listed["setting:profile"]
    assert "carried in every arm over the file's own" in listed["setting:profile-deep"]
    assert "codex --profile fast" in listed["setting:profile-fast"]
    assert "mcp:facts" in {c.id for c in read_codex(tmp_path / "team").ablated}


def test_what_a_codex_run_carries_is_the_kept_settings_the_chosen_profile_over_them(
    tmp_path: Path,
) -> None:
    """The chosen profile's effort wins; its model, the provider, the sandbox, web search and
    the notifier are not passed; a table's keys are passed one by one (`-c` merges them)."""
    root = _project(tmp_path / "team")
    assert carried(root) == [
        ("model_reasoning_effort", "high"),
        ("features.codex_hooks", True),
        ("tools.view_image", False),
    ]
    # control: without a profile chosen, the file's own effort
    (root / ".codex" / "config.toml").write_text(CONFIG.replace('profile = "deep"\n', ""))
    assert ("model_reasoning_effort", "medium") in carried(root)


def test_a_redirecting_value_is_copied_nowhere_in_the_plan(tmp_path: Path) -> None:
    """A key or token of the team's (in a profile too) is in no component and no tier file;
    the kept effort is in its component, so the search finds a value that was copied."""
    config = CONFIG.replace('"medium"', '"medium-and-findable"')
    config += f'[profiles.proxy]\nexperimental_bearer_token = "{SECRET}"\n'
    root = _project(tmp_path / "team", config)
    out = tmp_path / "ablation"
    assert main(["ablate", "plan", str(root), "--agent", "codex", "--out", str(out)]) == 0
    written = [p.read_text() for p in out.rglob("*") if p.is_file()]
    written += [f"{c.text} {c.data}" for c in read_codex(root).components]
    assert not [w for w in written if SECRET in w or "127.0.0.1:9" in w]
    assert [w for w in written if "medium-and-findable" in w]  # the control: it is found


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("a = 1\n[mcp_servers\n", ".codex/config.toml:2: "),
        ('effort = "x"\nprofile = "missing"\n', ".codex/config.toml:2: profile = 'missing'"),
        ('profiles = "deep"\n', ".codex/config.toml:1: expected [profiles.<name>] tables"),
    ],
)
def test_a_broken_config_toml_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: Any, config: str, expected: str
) -> None:
    root = _project(tmp_path / "team", config)
    assert main(["ablate", "plan", str(root), "--agent", "codex", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err, err
    assert "\n" not in err
    assert "Traceback" not in err


def test_a_good_config_toml_plans(tmp_path: Path) -> None:
    """The control of the test above: the same project with a well-formed file plans."""
    root = _project(tmp_path / "team")
    assert main(["ablate", "plan", str(root), "--agent", "codex", "--dry-run"]) == 0


def test_a_run_on_a_broken_config_toml_is_a_setup_error_naming_the_line(tmp_path: Path) -> None:
    """A tier written by hand on a project whose file broke since: the run ends infra_error
    with one line (a SetupError), not a traceback; the same arm on a good file applies."""
    tiers = _arms(_project(tmp_path / "team"), tmp_path / "ablation")
    broken = _project(tmp_path / "broken", "a = 1\n[mcp_servers\n")
    with pytest.raises(SetupError, match=r"config\.toml:2: ") as caught:
        _apply(broken, tiers, "full", tmp_path / "b")
    assert "\n" not in str(caught.value)
    _apply(tmp_path / "team", tiers, "full", tmp_path / "good")  # the control


NESTED = {
    "pkg/AGENTS.md": "# Package\nKeep the package's imports sorted.\n",
    "pkg/deep/AGENTS.override.md": "# Deep\nThis folder is generated.\n",
    ".agents/skills/cents-arithmetic/AGENTS.md": "# part of the skill\n",
}


def _arms(root: Path, out: Path) -> TierSet:
    config = read_codex(root)
    units = ablation_plan.factors(config, ["section", "skill"])
    ablation_plan.write_tiers(config, units, ablation_plan.design(units), out)
    return TierSet(out)


def _arm(tiers: TierSet, name: str) -> Subtest:
    sub = next(s for s in tiers.tiers["T0"].subtests if s.name.endswith(name))
    return tiers.resolve(sub.ref)


def _apply(root: Path, tiers: TierSet, arm: str, where: Path) -> tuple[Path, Any]:
    """The arm's overlay on a fresh copy of the team's repository."""
    ws = Path(shutil.copytree(root, where / "ws"))
    ov = codex.apply(_arm(tiers, arm), tiers, ws, where / "run", mcp={"mcpServers": {}})
    return ws, ov


def test_subfolders_agents_md_are_listed_and_stay_in_every_arm(tmp_path: Path) -> None:
    root = _project(tmp_path / "team", files=NESTED)
    listed = _reasons(root)
    assert "a run works at the root" in listed["file:pkg-agents-md"]
    assert "left in the workspace of every arm" in listed["file:pkg-deep-agents-override-md"]
    assert not any("skills" in i for i in listed if i.startswith("file:"))  # the skill's own
    tiers = _arms(root, tmp_path / "ablation")
    ws, _ = _apply(root, tiers, "none", tmp_path / "none")
    assert (ws / "pkg" / "AGENTS.md").read_text() == NESTED["pkg/AGENTS.md"]
    assert (ws / "pkg" / "deep" / "AGENTS.override.md").is_file()
    assert not (ws / "AGENTS.md").exists()  # the control: the root's goes with the sections


def test_a_codex_arm_has_its_skills_where_the_team_keeps_them_and_no_others(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path / "team")
    (tmp_path / "team" / ".agents" / "skills" / "user-only").mkdir()  # not a skill of the plan
    tiers = _arms(root, tmp_path / "ablation")
    assert (root / ".agents" / "skills" / "cents-arithmetic").is_dir()  # the team's, before
    ws, ov = _apply(root, tiers, "full", tmp_path / "full")
    skills = ws / ".agents" / "skills"
    assert sorted(p.name for p in skills.iterdir()) == [
        "cents-arithmetic",
        "release-notes",
        "sqlite-fixtures",
    ]
    assert ".agents/skills/release-notes" in ov.written  # kept out of the agent's diff
    assert not (Path(ov.env["CODEX_HOME"]) / "skills").exists()  # none in the run's home
    assert ov.args[:2] == ("-c", 'model_reasoning_effort="high"')  # the settings ride along
    ws, ov = _apply(root, tiers, "no-group-skill", tmp_path / "no-skill")
    assert not (ws / ".agents" / "skills").exists()
    assert ov.args[:2] == ("-c", 'model_reasoning_effort="high"')  # in every arm


def test_an_appended_system_prompt_follows_the_teams_developer_instructions(
    tmp_path: Path,
) -> None:
    """The team's `developer_instructions` and a tier's `system_prompt: {append: ...}` are one
    setting in Codex: the arm passes both, the team's first (the later `-c` wins)."""
    root = _project(tmp_path / "team", 'developer_instructions = "Team: cite the ticket."\n')
    tier = tmp_path / "tiers"
    tier.mkdir()
    (tier / "extra.md").write_text("Tier: be brief.\n")
    (tier / "T0.yaml").write_text(
        "tier: T0\nname: A\ndescription: d\nsubtests:\n  01-a:\n    description: d\n"
        "    system_prompt:\n      append: extra.md\n"
    )
    tiers = TierSet(tier)
    ws = Path(shutil.copytree(root, tmp_path / "ws"))
    ov = codex.apply(_arm(tiers, "a"), tiers, ws, tmp_path / "run", mcp={"mcpServers": {}})
    said = [a for a in ov.args if a.startswith("developer_instructions=")]
    assert said[-1] == 'developer_instructions="Team: cite the ticket.\\n\\nTier: be brief.\\n"'
    # control: without the team's, the tier's text alone
    (ws / ".codex" / "config.toml").write_text("")
    ov = codex.apply(_arm(tiers, "a"), tiers, ws, tmp_path / "run2", mcp={"mcpServers": {}})
    said = [a for a in ov.args if a.startswith("developer_instructions=")]
    assert said == ['developer_instructions="Tier: be brief.\\n"']
