"""`scylla init`: a new evaluation project that runs as scaffolded, with CI workflows that
validate against the GitHub Actions and GitLab CI schemas."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.cli import main


def test_init_makes_a_project_whose_example_passes_under_the_oracle(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], oracle: list[str]) -> None:
    project = tmp_path / "evals"
    assert main(["init", str(project)]) == 0
    printed = capsys.readouterr().out
    assert "made    cases/greet/test.yaml" in printed
    assert "next: cd" in printed
    assert not (project / "tiers").exists()  # the packaged T0-T6 serve
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-k",
         "T0-01 or T5-01", *oracle, "--scylla-out=reports/smoke"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout  # all of it, -n 2: the slow tier (tests/test_wheel.py)
    assert (project / "reports" / "smoke" / "runs.jsonl").is_file()
    # the example's checks really test something: the untouched source fails them
    noop = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-k",
         "T0-01", "--scylla-oracle=noop", *oracle[1:], "--scylla-out=reports/noop"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert noop.returncode == 1, noop.stdout[-3000:]
    assert "FAIL check hidden-tests" in noop.stdout


def test_init_keeps_what_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = mine\n")
    assert main(["init", str(tmp_path)]) == 0
    assert "kept    pytest.ini (exists; not overwritten)" in capsys.readouterr().out
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\nmarkers = mine\n"
    assert (tmp_path / ".gitignore").read_text().startswith("reports/")


@pytest.mark.parametrize(("rel", "schema"), [
    (".github/workflows/scylla.yml", "vendor.github-workflows"),
    (".gitlab-ci.yml", "vendor.gitlab-ci"),
])
def test_the_ci_workflows_validate(tmp_path: Path, rel: str, schema: str) -> None:
    assert main(["init", str(tmp_path)]) == 0
    checker = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert checker is not None, "check-jsonschema is a dev dependency"
    done = subprocess.run([checker, "--builtin-schema", schema, str(tmp_path / rel)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # positive control: the same schema refuses a broken workflow
    broken = tmp_path / "broken.yml"
    broken.write_text((tmp_path / rel).read_text().replace("script:", "scripts:", 1)
                      .replace("runs-on:", "runs_on:", 1))
    refused = subprocess.run([checker, "--builtin-schema", schema, str(broken)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
