"""`scylla init`: a new evaluation project that runs as scaffolded, with CI workflows that
validate against the GitHub Actions and GitLab CI schemas.

Here the sessions; the in-process tests are in `tests/unit/face/test_init.py`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main


@pytest.mark.slow  # ~1 min: two sessions of the scaffolded project, one on two workers
def test_init_makes_a_project_whose_example_passes_under_the_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], oracle: list[str]
) -> None:
    project = tmp_path / "evals"
    assert main(["init", str(project)]) == 0
    printed = capsys.readouterr().out
    assert "made    cases/greet/test.yaml" in printed
    assert "next: cd" in printed
    assert not (project / "tiers").exists()  # the packaged T0-T6 serve
    # the YAML case and the Python evaluation of it, side by side on two workers
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-k",
            "T0-01 or T5-01",
            *oracle,
            "--scylla-out=reports/smoke",
            "--scylla-report=html",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 passed" in done.stdout  # all of it: the slow tier (tests/project/test_wheel.py)
    smoke = project / "reports" / "smoke"
    rows = [json.loads(line) for line in (smoke / "runs.jsonl").read_text().splitlines()]
    assert sorted((r["case"], r["subtest"], r["outcome"]) for r in rows) == [
        ("greet", "T0-01", "pass"),
        ("greet", "T5-01", "pass"),
        ("test_greet_keeps_its_default", "T0-01", "pass"),
        ("test_greet_keeps_its_default", "T5-01", "pass"),
    ]
    evaluated = next(r for r in rows if r["case"] == "test_greet_keeps_its_default")
    assert evaluated["judges"]  # its verdict asked, its asserts recorded
    assert evaluated["checks"][-1]["name"] == "assert:test_greet_keeps_its_default"
    html = (smoke / "report.html").read_text()
    assert "test_greet_keeps_its_default" in html
    assert "greet[T0-01-r1]" in html or "greet-T0-01-r1" in html
    # the example's checks really test something: the untouched source fails them
    noop = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-k",
            "T0-01",
            "--scylla-oracle=noop",
            *oracle[1:],
            "--scylla-out=reports/noop",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert noop.returncode == 1, noop.stdout[-3000:]
    assert "FAIL check hidden-tests" in noop.stdout
    assert "FAILED cases/test_greet_eval.py::test_greet_keeps_its_default[T0-01-r1]" in noop.stdout
    rec = json.loads(
        (project / "reports/noop/runs/test_greet_keeps_its_default-T0-01-r1/run.json").read_text()
    )
    assert (rec["outcome"], rec["checks"][-1]["passed"]) == ("fail", False)
    assert "hidden-tests" in rec["reason"]  # the assert's message: the checks that failed


@pytest.mark.parametrize(
    ("rel", "schema"),
    [
        (".github/workflows/scylla.yml", "vendor.github-workflows"),
        (".gitlab-ci.yml", "vendor.gitlab-ci"),
    ],
)
def test_the_ci_workflows_validate(tmp_path: Path, rel: str, schema: str) -> None:
    assert main(["init", str(tmp_path)]) == 0
    checker = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert checker is not None, "check-jsonschema is a dev dependency"
    done = subprocess.run(
        [checker, "--builtin-schema", schema, str(tmp_path / rel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # positive control: the same schema refuses a broken workflow
    broken = tmp_path / "broken.yml"
    broken.write_text(
        (tmp_path / rel)
        .read_text()
        .replace("script:", "scripts:", 1)
        .replace("runs-on:", "runs_on:", 1)
    )
    refused = subprocess.run(
        [checker, "--builtin-schema", schema, str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0


def test_the_real_jobs_selection_fits_its_budget(tmp_path: Path) -> None:
    """The scheduled job's `scylla plan` step, run on the generated project: its selection's
    runs, bounded by the case's per-run limit, fit the job's budget (it would otherwise end
    PARTIAL every week)."""
    from pytest_scylla.cli.scaffold import PLAN

    assert main(["init", str(tmp_path)]) == 0
    assert PLAN in (tmp_path / ".github/workflows/scylla.yml").read_text()
    assert PLAN in (tmp_path / ".gitlab-ci.yml").read_text()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_scylla.cli",
            *PLAN.split()[1:],
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"total: (\d+) runs", done.stdout)[1] == "45", done.stdout  # type: ignore
    assert "add up to $18.00 of agent spend at most" in done.stdout
    assert "budget $25.00: the estimate fits" in done.stdout
    assert not (tmp_path / "reports").exists()  # a plan runs nothing
