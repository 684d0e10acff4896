"""Installed into any project, the plugin stays out of the way until asked: a session that
collects no evaluation and passes no --scylla-* option looks exactly as without the plugin
(no header lines, no sandbox probe, no folders, no summary), and a `test.yaml` outside the
configured case roots is someone else's file. The same project, given cases and asked, runs
them (the positive control)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import FIXTURES

SUITE = {
    "tests/test_app.py": "import pytest\n\n\ndef test_ok():\n    assert 1 + 1 == 2\n\n\n"
    "def test_bad():\n    assert 1 + 1 == 3\n\n\n"
    "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n",
    # a Kubernetes-style fixture that happens to be called test.yaml, inside the suite
    "tests/deploy/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: test\n",
    "tests/deploy/test_deploy.py": "def test_manifest_exists():\n    import pathlib\n"
    "    assert (pathlib.Path(__file__).parent / 'test.yaml')"
    ".is_file()\n",
}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for rel, text in SUITE.items():
        path = pytester.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    # a bwrap first on PATH that notes every call: a probe would leave a trace
    bin_dir = pytester.path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(
        f"#!/bin/sh\necho probed >> {pytester.path / 'probes'}\nexit 1\n"
    )
    (bin_dir / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # a Docker "engine" that notes every connection (and answers none): a docker probe would
    # leave a trace too
    engine = socket.socket(socket.AF_UNIX)
    engine_path = Path(tempfile.mkdtemp(prefix="scy-")) / "docker.sock"  # short: a socket path
    engine.bind(str(engine_path))
    engine.listen(8)

    def note() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = engine.accept()
                with (pytester.path / "docker-probes").open("a") as log:
                    log.write("probed\n")
                conn.close()

    threading.Thread(target=note, daemon=True).start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{engine_path}")
    yield pytester.path
    engine.close()


def _normal(text: str) -> list[str]:
    """Output lines that do not depend on timing or on the list of plugins."""
    return [
        re.sub(r" in [\d.]+s", "", line)
        for line in text.splitlines()
        if not line.startswith(("platform ", "plugins:", "rootdir:", "cachedir:"))
    ]


@pytest.mark.parametrize(
    "args", [(), ("tests",), ("tests/deploy",)], ids=["no-args", "tests", "yaml-dir"]
)
def test_a_project_without_evaluations_sees_no_trace_of_the_plugin(
    project: Path, pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    without = pytester.runpytest_subprocess("-p", "no:scylla", "-p", "no:cacheprovider", *args)
    with_plugin = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    without.assert_outcomes(
        passed=2 if args != ("tests/deploy",) else 1,
        failed=0 if args == ("tests/deploy",) else 1,
        skipped=0 if args == ("tests/deploy",) else 1,
    )
    assert with_plugin.ret == without.ret
    assert with_plugin.parseoutcomes() == without.parseoutcomes()
    assert _normal(with_plugin.stdout.str()) == _normal(without.stdout.str())
    # (pytest's own `plugins:` line names it, as it names every installed plugin)
    assert "scylla" not in "\n".join(_normal(with_plugin.stdout.str())) + with_plugin.stderr.str()
    assert not (project / "reports").exists()
    assert not (project / "probes").exists()  # bubblewrap was never probed
    assert not (project / "docker-probes").exists()  # nor a Docker engine


def test_cases_under_the_roots_are_evaluations_and_elsewhere_are_not(
    project: Path, pytester: pytest.Pytester
) -> None:
    """Positive control: with a `cases/` folder and its tiers, the same project's `pytest cases`
    is an evaluation (header, probe, runs); its ordinary suite stays inert; `scylla_cases`
    moves the root."""
    mini = FIXTURES / "mini"
    for folder in ("cases", "tiers", "rubrics"):
        pytester.path.joinpath(folder).mkdir()
        os.system(f"cp -r {mini / folder}/. {pytester.path / folder}")
    plan = pytester.runpytest_subprocess("-p", "no:cacheprovider", "cases", "--scylla-plan")
    plan.stdout.fnmatch_lines(["scylla: runs=1 *", "*pytest-scylla plan*"])
    assert (project / "docker-probes").exists()  # the header asked for a Docker engine,
    assert (project / "probes").exists()  # then (none answered) probed bubblewrap
    (project / "probes").unlink()
    (project / "docker-probes").unlink()
    suite = pytester.runpytest_subprocess("-p", "no:cacheprovider", "tests")
    suite.assert_outcomes(passed=2, failed=1, skipped=1)
    # its only trace: the one line that says how to run the evaluations it left out
    assert [line for line in _normal(suite.stdout.str()) if "scylla" in line] == [
        "scylla: the evaluations in cases/ are not run by this session; run them with "
        "`pytest cases/` or `pytest --scylla-only`"
    ]
    assert not (project / "probes").exists()
    assert not (project / "docker-probes").exists()
    # another root: `cases/` is then an ordinary folder, `evals/` holds the evaluations
    (project / "cases").rename(project / "evals")
    pytester.makeini("[pytest]\nscylla_cases = evals\n")
    moved = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "evals", "--scylla-plan", "--co", "-q"
    )
    moved.stdout.fnmatch_lines(["*alpha*T0-00*"])


def test_this_repository_is_an_evaluation_project(tmp_path: Path) -> None:
    """A bare `pytest` at this checkout's root collects `cases/` (the card's commands work as
    written); without a key the session stops at the first run with one clear setup error."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PYTEST_"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--scylla-runs=1",
            "-k",
            "test-001 and T0",
            "-p",
            "no:cacheprovider",
            f"--scylla-out={tmp_path / 'out'}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "testpaths: cases" in done.stdout
    errors = [line for line in done.stdout.splitlines() if line.startswith("setup: ")]
    assert errors == [
        "setup: no model credential: set ANTHROPIC_API_KEY (or "
        "ANTHROPIC_AUTH_TOKEN) in the environment pytest runs in, or run offline "
        "with --scylla-oracle (a SIMULATED model)"
    ]
    assert "Traceback" not in done.stdout + done.stderr
    assert "1 error" in done.stdout  # the first run; the session stops there


def test_evaluations_beside_a_projects_own_tests_run_only_when_asked(
    project: Path, pytester: pytest.Pytester
) -> None:
    """A repository with its own suite (no `testpaths`) gets `scylla init`'s case, Python
    evaluation and `cases/conftest.py`, its pytest configuration kept: a bare `pytest` runs the
    project's tests and no evaluation (one header line says how), probing neither Docker nor
    bubblewrap; `-p no:scylla` collects the project's tests only (the cases' hidden tests and
    the evaluation would fail there); `--scylla-only` selects the evaluations only; `pytest
    cases/` evaluates (the control)."""
    from pytest_scylla.cli.scaffold import init

    pytester.makepyprojecttoml('[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider"\n')
    made = init(project)
    assert any(line.startswith("skipped pytest.ini") for line in made), made
    assert not (project / "pytest.ini").exists()
    bare = pytester.runpytest_subprocess()
    bare.assert_outcomes(passed=2, failed=1, skipped=1)  # the project's suite, and only it
    said = [line for line in bare.stdout.lines if "scylla" in line and "plugins:" not in line]
    assert said == [
        "scylla: the evaluations in cases/ are not run by this session; run them "
        "with `pytest cases/` or `pytest --scylla-only`"
    ], said
    assert not (project / "reports").exists()
    assert not (project / "probes").exists()
    assert not (project / "docker-probes").exists()
    without = pytester.runpytest_subprocess("-p", "no:scylla")
    without.assert_outcomes(passed=2, failed=1, skipped=1)
    skip = pytester.runpytest_subprocess("cases", "--scylla-skip", "--co", "-q")
    assert "greet" not in skip.stdout.str()  # the paths name the cases, the switch wins
    only = pytester.runpytest_subprocess("--scylla-only", "--scylla-oracle", "--co", "-q")
    ids = [line for line in only.stdout.lines if "::" in line]
    assert ids, only.stdout.str()
    assert all(
        line.startswith(("cases/greet/test.yaml::greet[", "cases/test_greet_eval.py::"))
        for line in ids
    ), ids
    assert any(line.startswith("cases/test_greet_eval.py::") for line in ids), ids
    # with paths that hold the project's tests too, those are collected and deselected
    both = pytester.runpytest_subprocess(".", "--scylla-only", "--scylla-oracle", "--co", "-q")
    assert [line for line in both.stdout.lines if "::" in line] == ids
    both.stdout.fnmatch_lines(["*(4 deselected)*"])  # the project's four tests
    asked = pytester.runpytest_subprocess("cases", "--scylla-oracle", "--co", "-q")
    assert [line for line in asked.stdout.lines if "::" in line] == ids


PLUGGY = (
    "pluggy==1.5.0 --hash=sha256:2cffa88e94fdc978c4c574f15f9e59b7f4201d439195c3715ca9e2486f1d0cf1"
)


@pytest.mark.slow  # a real project's whole suite (~12 s); the default suite's inert tests
# check the same promise on the fixture projects
def test_a_real_projects_own_suite_beside_scylla_init(tmp_path: Path) -> None:
    """pluggy 1.5.0's own source and test suite (its sdist from PyPI, pinned by hash; its
    tox.ini makes every warning an error) with `scylla init .` run in it: a bare `pytest` with
    no key runs its 109 tests (on its own source), no evaluation, and says in one line how to
    run them; `-p
    no:scylla` runs the same 109; `--scylla-only` collects only the evaluations."""
    import subprocess
    import sys
    import tarfile

    from pytest_scylla.cli.main import main

    from ..conftest import sdists

    sdists([PLUGGY], tmp_path, isolated=True)  # its backend is setuptools-scm's
    with tarfile.open(tmp_path / "dl" / "pluggy-1.5.0.tar.gz") as sdist:
        sdist.extractall(tmp_path, filter="data")
    project = tmp_path / "pluggy-1.5.0"
    (project / "testing" / "benchmark.py").unlink()  # needs pytest-benchmark, not installed
    assert main(["init", str(project)]) == 0
    assert not (project / "pytest.ini").exists()  # tox.ini's [pytest] stays the project's
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")
    }
    env["PYTHONPATH"] = str(project / "src")  # its tests test its own code, not the pluggy
    # installed here (pytest itself runs on it then too, as in pluggy's own CI)

    def pytest_in(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    bare = pytest_in()
    assert bare.returncode == 0, bare.stdout[-3000:]
    assert re.search(r"^109 passed", bare.stdout.splitlines()[-1].strip("= ")), bare.stdout
    hints = [line for line in bare.stdout.splitlines() if line.startswith("scylla:")]
    assert hints == [
        "scylla: the evaluations in cases/ are not run by this session; run them "
        "with `pytest cases/` or `pytest --scylla-only`"
    ]
    assert not (project / "reports").exists()
    without = pytest_in("-p", "no:scylla")
    assert without.returncode == 0, without.stdout[-3000:]
    assert "109 passed" in without.stdout
    only = pytest_in("--scylla-only", "--collect-only", "-q")
    listed = [line for line in only.stdout.splitlines() if "::" in line]
    assert listed, only.stdout[-3000:]
    assert all(line.startswith("cases/") for line in listed)
    assert not any("testing/" in line for line in listed)
