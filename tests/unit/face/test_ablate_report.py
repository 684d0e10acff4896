"""`scylla ablate report` on hand-made experiment folders whose runs cannot support every
number: the arms without a counted run named with their runs' outcomes and reasons (the full
arm's absence said), a Plackett-Burman regression too small to fit said in words while the
report still shows what the runs support, and degenerate runs (every counted run passed) given
words instead of `-0% [-0%, +0%]` and an absurd number of runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.formats.ablation_plan import HEADER
from tests.conftest import export_rows

FACTORS = [f"skill:s{i}" for i in range(1, 7)]  # k = 6 in 8 arms (as the 14 in 16)
WEBFETCH = "declared tool 'WebFetch' is missing from the request"
Outcome = Callable[[str, int], tuple[str, str]]  # (arm, run) -> (outcome, reason)


def _plackett_burman() -> dict[str, list[str]]:
    """Arm name -> the factors it keeps: Sylvester's Hadamard matrix of order 8, its columns
    2 to 7; row 1 keeps everything (the full arm)."""
    rows = [[1]]
    while len(rows) < 8:
        rows = [r + r for r in rows] + [r + [-v for v in r] for r in rows]
    return {
        f"{i:02d}-design-{i:02d}": [f for f, v in zip(FACTORS, row[1:7], strict=True) if v > 0]
        for i, row in enumerate(rows, 1)
    }


LOO = {"01-full": FACTORS[:3], **{f"{i:02d}-no-s{i - 1}": [] for i in range(2, 5)}}
for _i, _f in enumerate(FACTORS[:3], 2):
    LOO[f"{_i:02d}-no-s{_i - 1}"] = [f for f in FACTORS[:3] if f != _f]


def _experiment(tmp_path: Path, kind: str, arms: dict[str, list[str]], n: int, outcome: Outcome):
    """An experiment folder that ran a plan's T0 tier (`arms`), `n` runs per arm, each run's
    outcome and reason from `outcome`, and the design beside the tier file."""
    tiers = tmp_path / "ablation"
    tiers.mkdir()
    (tiers / "T0.yaml").write_text(f"{HEADER} from cfg\ntier: T0\n", encoding="utf-8")
    factors = sorted({f for kept in arms.values() for f in kept})
    design = {"design": kind, "configuration": "cfg", "factors": factors, "arms": arms}
    (tiers / "design.json").write_text(json.dumps(design), encoding="utf-8")
    out = tmp_path / "exp"
    out.mkdir()
    manifest = {"tier_sources": {"T0": str(tiers / "T0.yaml")}}
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    lines = []
    for arm in arms:
        for run in range(1, n + 1):
            result, reason = outcome(arm, run)
            record = {
                "run_key": f"alpha-T0-{arm}-r{run}",
                "case": "alpha",
                "tier": "T0",
                "subtest": f"T0-{arm}",
                "run": run,
                "model": "claude-sonnet-4-5",
                "outcome": result,
                "reason": reason,
                "score": 1.0 if result == "pass" else 0.0,
                "cost_usd": None if result == "infra_error" else 0.1,
            }
            lines.append(json.dumps(record))
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _full_broken(then: Outcome) -> Outcome:
    """The full arm's runs end in infra_error (the ablation check's reason); the others as
    `then` says."""
    return lambda arm, run: ("infra_error", WEBFETCH) if arm.startswith("01") else then(arm, run)


def _components(out: Path) -> dict[str, dict[str, str]]:
    return {row["factor"]: row for row in export_rows(out / "components.csv")}


def test_one_run_per_arm_names_the_full_arm_and_why_and_still_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's first report: one run per arm, the full arm's run an infra_error. It said
    "no arm ... has counted runs to compare"; the seven others had them."""
    alternate = _full_broken(lambda arm, run: ("pass" if int(arm[:2]) % 2 else "fail", ""))
    out = _experiment(tmp_path, "plackett-burman", _plackett_burman(), 1, alternate)
    assert main(["ablate", "report", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"arm 01-design-01 (full: every component): 1 run, all infra_error: {WEBFETCH}" in said
    assert "the full arm has no counted run" in said
    assert "needs at least 14 counted runs (twice its parameters), this experiment has 7" in said
    assert "run each arm at least 2 times" in said
    assert "no arm" not in said
    rows = _components(out)
    assert set(rows) == set(FACTORS)
    for row in rows.values():
        assert row["verdict"] == "not estimable at this n: 7 counted runs for 6 factors"
        assert row["delta_pass"] == row["low"] == row["p_adjusted"] == row["needed_n"] == ""
        assert row["pass_with"]  # what the runs support: each side's runs and their rate
    assert "- arm 01-design-01 (full: every component)" in (out / "components.md").read_text()


def test_leave_one_out_without_the_full_arm_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _experiment(tmp_path, "leave-one-out", LOO, 3, _full_broken(lambda a, r: ("pass", "")))
    assert main(["ablate", "report", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"arm 01-full (full: every component): 3 runs, all infra_error: {WEBFETCH}" in said
    assert "no effect relative to it (the configuration as it is run) is estimable" in said
    verdicts = {f: r["verdict"] for f, r in _components(out).items()}
    assert set(verdicts.values()) == {
        "not estimable: the full arm (every component) has no counted run"
    }


def test_no_counted_run_anywhere_names_each_arm_and_its_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(arm: str, run: int) -> tuple[str, str]:
        if arm.startswith("01"):
            return "infra_error", WEBFETCH
        return ("judge_error", "every judge failed") if run == 1 else ("infra_error", "no bwrap")

    out = _experiment(tmp_path, "leave-one-out", LOO, 2, broken)
    assert main(["ablate", "report", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"no arm of {out.parent / 'ablation' / 'design.json'} has a counted run" in err
    assert f"  arm 01-full (full: every component): 2 runs, all infra_error: {WEBFETCH}" in err
    assert (
        "  arm 02-no-s1: 2 runs, none counted (1 judge_error, 1 infra_error): "
        "every judge failed; no bwrap"
    ) in err
    assert "Traceback" not in err


def test_runs_left_out_of_the_experiment_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record whose key names another subtest is not counted (`design.vet`): the report says
    so, and its arm is one without a run."""
    out = _experiment(tmp_path, "leave-one-out", LOO, 3, lambda arm, run: ("pass", ""))
    runs = out / "runs.jsonl"
    runs.write_text(runs.read_text().replace('"alpha-T0-02-no-s1-r1"', '"alpha-T0-03-r1"'))
    assert main(["ablate", "report", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("EXCLUDED: 1 run(s) of these folders are not counted")
    assert "run alpha-T0-03-r1: its subtest is 'T0-02-no-s1'" in said


def test_every_run_passed_prints_words_not_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's second report: two runs per arm printed `-0% [-0%, +0%]` and "about
    31756311395253112 runs per arm would"."""
    everything = _full_broken(lambda arm, run: ("pass", ""))
    out = _experiment(tmp_path, "plackett-burman", _plackett_burman(), 3, everything)
    assert main(["ablate", "report", str(out)]) == 0
    said = capsys.readouterr().out
    assert said.count("cannot estimate: every counted run passed in every arm") == len(FACTORS)
    assert "-0%" not in said
    assert "runs per arm would" not in said
    table = said[said.index("\ncomponent ") :].splitlines()[2:]
    assert len(table) == len(FACTORS) + 1  # a line per factor, then the files written
    assert not any("[" in line for line in table)  # no interval
    assert "-0%" not in (out / "components.md").read_text()
    assert "<circle" not in (out / "components.html").read_text()  # no effect drawn
