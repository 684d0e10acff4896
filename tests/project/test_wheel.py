"""The built wheel in a clean virtual environment, as a user installs it: it is inert in a
project that has nothing to evaluate, and every report format works from its declared
dependencies alone (slow tier: builds the wheel and installs it with its dependencies)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.formats.tiers import TierSet

from ..conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def clean_env() -> dict[str, str]:
    """The environment without anything that would import this checkout instead of the wheel."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("PYTEST")
    }


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(base / "dist"),
            str(ROOT),
        ],
        check=True,
        env=clean_env(),
        timeout=600,
    )
    [wheel] = (base / "dist").glob("pytest_scylla-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    python = base / "venv" / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        env=clean_env(),
        timeout=900,
    )
    return base / "venv"


def run(venv: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", *args],
        cwd=cwd,
        env={**clean_env(), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_wheel_is_what_runs(venv: Path, tmp_path: Path) -> None:
    done = run(venv, ["pip", "show", "-f", "pytest-scylla"], tmp_path)
    assert "Location: " + str(venv) in done.stdout
    assert "pytest_scylla/formats/schemas/case.schema.json" in done.stdout
    for shipped in (
        "pytest_scylla/tiers/T0.yaml",
        "pytest_scylla/tiers/T6.yaml",
        "pytest_scylla/rubrics/python-change.yaml",
    ):
        assert shipped in done.stdout


def test_the_wheel_is_inert_in_a_project_with_nothing_to_evaluate(
    venv: Path, tmp_path: Path
) -> None:
    (tmp_path / "tests" / "k8s").mkdir(parents=True)
    (tmp_path / "tests" / "k8s" / "test.yaml").write_text("apiVersion: v1\nkind: Pod\n")
    (tmp_path / "tests" / "test_app.py").write_text(
        "def test_ok():\n    assert True\n\n\ndef test_bad():\n    assert False\n"
    )
    outputs = []
    for extra in (["-p", "no:scylla"], []):
        done = run(venv, ["pytest", "-p", "no:cacheprovider", *extra], tmp_path)
        assert done.returncode == 1, done.stdout
        outputs.append(
            [
                re.sub(r" in [\d.]+s", "", line)
                for line in done.stdout.splitlines()
                if not line.startswith(("platform ", "plugins:", "rootdir:"))
            ]
        )
    assert outputs[0] == outputs[1]
    assert "1 failed, 1 passed" in outputs[1][-1]
    assert not (tmp_path / "reports").exists()


def test_scylla_init_then_pytest_passes_with_the_packaged_tiers(venv: Path, tmp_path: Path) -> None:
    """As a user types it: `scylla init x && cd x && pytest --scylla-oracle -n 2`, here each
    packaged tier's first subtest of the example case and of its Python evaluation (T0 and T5):
    every packaged subtest's resources are in the wheel byte for byte (checked below), and the
    shipped subtests each run end to end in the slow tier's shipped sessions (all 85 of this
    project's runs took 4 minutes here; the campaign tier runs them all)."""
    init = subprocess.run(
        [str(venv / "bin" / "scylla"), "init", "x"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert init.returncode == 0, init.stderr
    done = run(venv, ["pytest", "--scylla-oracle", "-n", "2", "-k", "01-r1"], tmp_path / "x")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tiers = TierSet(ROOT / "tiers").tiers
    assert f" {len(tiers) + 2} passed" in done.stdout, done.stdout[-1000:]
    site = next(venv.glob("lib/python*/site-packages/pytest_scylla"))
    for folder in ("tiers", "rubrics"):  # the packaged tier set and rubrics, whole
        shipped = {
            p.relative_to(ROOT / folder): p.read_bytes()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        packaged = {
            p.relative_to(site / folder): p.read_bytes()
            for p in (site / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }  # (pip compiles them)
        assert packaged == shipped, folder


def test_every_report_format_works_from_the_wheel_alone(venv: Path, tmp_path: Path) -> None:
    out = tmp_path / "rebuilt"
    done = run(
        venv,
        [
            "pytest_scylla.cli",
            "report",
            str(FIXTURES / "dryrun"),
            "--out",
            str(out),
            "--report",
            "md,html",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("report.html", "tables.md", "tables.tex", "summary.json", "runs.csv"):
        assert (out / name).is_file(), name
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "mini", project)
    shutil.rmtree(project / "tiers")  # the wheel's own T0-T6 serve
    session = tmp_path / "session"
    done = run(
        venv,
        [
            "pytest",
            "cases",
            "-k",
            "alpha and T0-01",
            "-p",
            "no:cacheprovider",
            "--scylla-oracle",
            f"--scylla-out={session}",
            "--scylla-report=all",
        ],
        project,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in (
        "report.html",
        "tables.md",
        "tables.tex",
        "summary.json",
        "runs.csv",
        "runs.jsonl",
        "manifest.json",
    ):
        assert (session / name).is_file(), name
    assert "Traceback" not in done.stdout + done.stderr
    manifest = (session / "manifest.json").read_text()
    assert '"T0": "packaged (pytest-scylla ' in manifest
