"""`scylla init`: a new evaluation project that runs as scaffolded, with CI workflows that
validate against the GitHub Actions and GitLab CI schemas.

Here the in-process tests; the sessions are in `tests/e2e/test_init.py`."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_scylla import __version__
from pytest_scylla.cli.main import main
from pytest_scylla.cli.scaffold import FILES

from ...support.docs import docs_page


def test_the_readme_documents_the_scaffolded_evaluation_word_for_word() -> None:
    page = docs_page("getting-started")  # the README's evaluation section moved there
    assert "```python\n" + FILES["cases/test_greet_eval.py"] + "```" in page


def test_init_keeps_what_is_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = mine\n")
    assert main(["init", str(tmp_path)]) == 0
    assert "kept    pytest.ini (exists; not overwritten)" in capsys.readouterr().out
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\nmarkers = mine\n"
    assert (tmp_path / ".gitignore").read_text().startswith("reports/")


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


def test_init_says_which_file_is_in_the_way_of_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cases").write_text("not a folder\n")
    assert main(["init", str(tmp_path)]) == 2
    said = capsys.readouterr()
    assert (
        f"refused cases/conftest.py ({tmp_path / 'cases'}: not a folder, where one is needed)"
        in (said.out)
    )
    assert "some files were not written" in said.err
    assert (tmp_path / "pytest.ini").is_file()  # the rest is made
