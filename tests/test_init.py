"""`scylla init`: a new evaluation project that runs as scaffolded, with CI workflows that
validate against the GitHub Actions and GitLab CI schemas."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_scylla import __version__
from pytest_scylla.cli import main
from pytest_scylla.scaffold import FILES


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
    assert "4 passed" in done.stdout  # all of it: the slow tier (tests/test_wheel.py)
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


def test_the_readme_documents_the_scaffolded_evaluation_word_for_word() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert "```python\n" + FILES["cases/test_greet_eval.py"] + "```" in readme


def test_init_keeps_what_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = mine\n")
    assert main(["init", str(tmp_path)]) == 0
    assert "kept    pytest.ini (exists; not overwritten)" in capsys.readouterr().out
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\nmarkers = mine\n"
    assert (tmp_path / ".gitignore").read_text().startswith("reports/")


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


def _github_problems(flow: dict[str, Any]) -> list[str]:
    """What keeps a GitHub Actions workflow of ours from working on a real runner, or from
    running once per change with least rights."""
    problems = []
    on = flow.get("on") or flow.get(True) or {}  # YAML 1.1 reads a bare `on` as True
    if (on.get("push") or {}).get("branches") != ["main"] and "pull_request" in on:
        problems.append("push to any branch and pull_request: a pull request runs twice")
    if flow.get("permissions") != {"contents": "read"}:
        problems.append("no least-rights permissions block")
    for name, job in flow["jobs"].items():
        if "timeout-minutes" not in job:
            problems.append(f"{name}: no timeout-minutes")
        runs = [str(step.get("run", "")) for step in job["steps"]]
        problems += _sandbox_problems(name, runs, "\n".join(runs))
        if any("pip install" in r and "pytest-scylla==" in r for r in runs):
            problems.append(f"{name}: pins pytest-scylla to a version no index may have")
    return problems


def _gitlab_problems(flow: dict[str, Any]) -> list[str]:
    problems = []
    rules = [r.get("if", "") for r in (flow.get("workflow") or {}).get("rules", [])]
    if not any("$CI_OPEN_MERGE_REQUESTS" in r for r in rules):
        problems.append("no workflow:rules: a merge request runs a branch and an MR pipeline")
    default = flow.get("default") or {}
    for name in ("smoke", "evaluate"):
        job = flow[name]
        if "timeout" not in job and "timeout" not in default:
            problems.append(f"{name}: no timeout")
        runs = [*default.get("before_script", []), *job["script"]]
        problems += _sandbox_problems(name, runs, "\n".join(runs))
        if "--scylla-sandbox=docker" in "\n".join(runs) and not any(
            "docker:" in str(s) and "dind" in str(s) for s in default.get("services", [])
        ):
            problems.append(f"{name}: the docker sandbox without a Docker engine")
    return problems


def _sandbox_problems(name: str, runs: list[str], script: str) -> list[str]:
    """A job that runs cases must check its sandbox first and use that one explicitly, and
    bubblewrap on ubuntu-24.04 needs AppArmor's namespace restriction lifted."""
    sessions = [r for r in runs if r.startswith("pytest cases")]
    if not sessions:
        return []
    problems = []
    checked = re.findall(r"scylla sandbox (\w+)", script)
    for session in sessions:
        used = re.search(r"--scylla-sandbox=(\w+)", session)
        if used is None:
            problems.append(f"{name}: `{session[:40]}...` leaves the sandbox to auto")
        elif used[1] not in checked or script.index(f"scylla sandbox {used[1]}") > script.index(
            session
        ):
            problems.append(f"{name}: no `scylla sandbox {used[1]}` step before the session")
        elif used[1] == "bwrap" and "apparmor_restrict_unprivileged_userns=0" not in script:
            problems.append(f"{name}: bubblewrap, with AppArmor's restriction in place")
    return problems


def test_the_ci_workflows_follow_the_runners_rules(tmp_path: Path) -> None:
    """The generated workflows: one run per change, least rights, a timeout per job, the
    sandbox checked (failing loudly) before a session and then named, bubblewrap unblocked on
    GitHub's runners and Docker-in-Docker on GitLab's executor, the package installed from a
    requirements file the team points at its copy. Control: each rule finds the fault it is
    there for in a workflow that has it."""
    assert main(["init", str(tmp_path)]) == 0
    github = yaml.safe_load((tmp_path / ".github/workflows/scylla.yml").read_text())
    gitlab = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())
    assert _github_problems(github) == []
    assert _gitlab_problems(gitlab) == []
    requirements = (tmp_path / "requirements-scylla.txt").read_text()
    assert f"\npytest-scylla=={__version__}\n" in requirements
    assert "git+https://" in requirements  # what to write instead, said where it is needed
    broken = copy.deepcopy(github)
    broken[True if True in broken else "on"]["push"] = None
    del broken["permissions"]
    del broken["jobs"]["smoke"]["timeout-minutes"]
    broken["jobs"]["smoke"]["steps"] = [
        s for s in broken["jobs"]["smoke"]["steps"] if s.get("name") != "sandbox"
    ]
    sandbox = next(s for s in broken["jobs"]["evaluate"]["steps"] if s.get("name") == "sandbox")
    sandbox["run"] = "sudo apt-get install -y bubblewrap\nscylla sandbox bwrap"
    broken["jobs"]["evaluate"]["steps"].append({"run": "pip install pytest-scylla==0.1.0"})
    assert len(_github_problems(broken)) == 6, _github_problems(broken)
    broken = copy.deepcopy(gitlab)
    del broken["workflow"], broken["default"]["timeout"], broken["default"]["services"]
    broken["smoke"]["script"] = ["pytest cases --scylla-oracle"]
    assert len(_gitlab_problems(broken)) == 4, _gitlab_problems(broken)  # evaluate: its own


def test_the_real_jobs_selection_fits_its_budget(tmp_path: Path) -> None:
    """The scheduled job's `scylla plan` step, run on the generated project: its selection's
    runs, bounded by the case's per-run limit, fit the job's budget (it would otherwise end
    PARTIAL every week)."""
    from pytest_scylla.scaffold import PLAN

    assert main(["init", str(tmp_path)]) == 0
    assert PLAN in (tmp_path / ".github/workflows/scylla.yml").read_text()
    assert PLAN in (tmp_path / ".gitlab-ci.yml").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_scylla.cli", *PLAN.split()[1:], "-p", "no:cacheprovider"],
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
