"""Bad folder options, single-valued ini keys written as lists and non-finite amounts: each is
refused when pytest starts (a usage error naming the option, or the ini file and key), or as one
collection error for a case file, never with a traceback; the `scylla` command refuses the same
folders.

Here the sessions; the in-process tests are in `tests/unit/face/test_bad_options.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

Edit = Callable[[str, str, str], None]  # the `edit` fixture (conftest)

ON_LINUX = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
# the same strerror text everywhere: root meets ENOENT in /proc, other users EACCES
IN_PROC = "cannot write in /proc (*)"

# (id, where the value is set: "cli", "-o" or an ini file, the option or `key = value`, the
# expected stderr line after "ERROR: ")
ENTRIES: list[tuple[str, str, str, str]] = [
    (
        "out-file",
        "cli",
        "--scylla-out=afile",
        "--scylla-out='afile': afile is a file; expected a folder (made if missing)",
    ),
    (
        "out-under-file",
        "cli",
        "--scylla-out=afile/exp",
        "--scylla-out='afile/exp': afile is a file, so no folder can be made under it",
    ),
    (
        "out-proc",
        "cli",
        "--scylla-out=/proc/scylla-exp",
        f"--scylla-out='/proc/scylla-exp': {IN_PROC}",
    ),
    (
        "out-ini",
        "tox.ini",
        "scylla_out = afile",
        "tox.ini: scylla_out='afile': afile is a file; expected a folder (made if missing)",
    ),
    (
        "cache-file",
        "cli",
        "--scylla-cache-dir=afile",
        "--scylla-cache-dir='afile': afile is a file; expected a folder (made if missing)",
    ),
    (
        "cache-under-file",
        "pyproject.toml",
        'scylla_cache_dir = "afile/cache"',
        "pyproject.toml: scylla_cache_dir='afile/cache': afile is a file, so no folder can be "
        "made under it",
    ),
    (
        "cache-proc",
        "cli",
        "--scylla-cache-dir=/proc/scylla/cache",
        f"--scylla-cache-dir='/proc/scylla/cache': {IN_PROC}",
    ),
    (
        "rubrics-missing",
        "cli",
        "--scylla-rubrics-dir=nope",
        "--scylla-rubrics-dir='nope': nope "
        "does not exist; expected a folder of shared rubrics (<name>.yaml)",
    ),
    (
        "rubrics-file",
        "pytest.ini",
        "scylla_rubrics_dir = afile",
        "pytest.ini: "
        "scylla_rubrics_dir='afile': afile is a file; expected a folder of shared rubrics "
        "(<name>.yaml)",
    ),
    (
        "tiers-dir-missing",
        "cli",
        "--scylla-tiers-dir=nope",
        "--scylla-tiers-dir='nope': nope "
        "does not exist; expected a folder of tier files (T0.yaml ...)",
    ),
    (
        "tiers-dir-file",
        "cli",
        "--scylla-tiers-dir=afile",
        "--scylla-tiers-dir='afile': afile "
        "is a file; expected a folder of tier files (T0.yaml ...)",
    ),
    (
        "tiers-dir-ini",
        "tox.ini",
        "scylla_tiers_dir = nope",
        "tox.ini: scylla_tiers_dir='nope': "
        "nope does not exist; expected a folder of tier files (T0.yaml ...)",
    ),
    (
        "tiers-dir-override",
        "-o",
        "scylla_tiers_dir=afile",
        "-o scylla_tiers_dir='afile': afile "
        "is a file; expected a folder of tier files (T0.yaml ...)",
    ),
    (
        "out-toml-list",
        "pyproject.toml",
        'scylla_out = ["a", "b"]',
        'pyproject.toml: scylla_out: ["a", "b"] is a list; expected one value',
    ),
    (
        "max-run-cost-inf",
        "cli",
        "--scylla-max-run-cost=inf",
        "--scylla-max-run-cost='inf': "
        "expected a number of dollars > 0, e.g. --scylla-max-run-cost=2.5",
    ),
    (
        "budget-nan",
        "cli",
        "--scylla-budget-usd=nan",
        "--scylla-budget-usd='nan': expected a number of dollars > 0, e.g. --scylla-budget-usd=25",
    ),
    (
        "alpha-2",
        "cli",
        "--scylla-alpha=2",
        "--scylla-alpha='2': expected a number between 0 and 1, e.g. --scylla-alpha=0.05",
    ),
    (
        "margin-ini",
        "tox.ini",
        "scylla_margin = 1.5",
        "tox.ini: scylla_margin='1.5': expected a number between 0 and 1, e.g. "
        "--scylla-margin=0.10",
    ),
    (
        "stop-fresh",
        "cli",
        "--scylla-stop=decided --scylla-fresh",
        "--scylla-stop=decided decides from the stored runs, which --scylla-fresh and "
        "--scylla-rejudge make again: run them without --scylla-stop, or stop by decision into "
        "a new --scylla-out",
    ),
    (
        "reference-unselected",
        "cli",
        "--scylla-stop=decided --scylla-reference=T1-01 --scylla-tiers=T0",
        "--scylla-reference=T1-01: case alpha runs no T1-01 in this selection (T0-00, T0-01, "
        "T0-02); select it or name one of these",
    ),
    (
        "stop-unknown",
        "cli",
        "--scylla-stop=never",
        "--scylla-stop='never': expected off or decided",
    ),
    (
        "panel-unknown",
        "tox.ini",
        "scylla_panel = half",
        "tox.ini: scylla_panel='half': expected full or adaptive",
    ),
]


def configure(root: Path, where: str, *settings: str) -> list[str]:
    """Put `settings` where they belong; the pytest arguments that go with them. An ini file
    other than the fixture's tox.ini replaces it, keeping its keys."""
    if where == "cli":
        return [arg for setting in settings for arg in setting.split()]
    if where == "-o":
        return [arg for setting in settings for arg in ("-o", setting)]
    keys = [line.partition("=") for line in (root / "tox.ini").read_text().splitlines()[1:]]
    added = "".join(f"{setting}\n" for setting in settings)
    if where == "pyproject.toml":
        body = "".join(f"{k.strip()} = {json.dumps(v.strip())}\n" for k, _, v in keys)
        text = f"[tool.pytest.ini_options]\n{body}{added}"
    else:
        text = "[pytest]\n" + "".join(f"{k.strip()} = {v.strip()}\n" for k, _, v in keys) + added
    (root / "tox.ini").unlink()
    (root / where).write_text(text)
    return []


@pytest.mark.parametrize(
    ("where", "setting", "message"),
    [
        pytest.param(w, s, m, id=i, marks=[ON_LINUX] if "/proc" in m else [])
        for i, w, s, m in ENTRIES
    ],
)
def test_a_bad_option_is_one_usage_error(
    mini: Path, pytester: pytest.Pytester, where: str, setting: str, message: str
) -> None:
    (mini / "afile").write_text("not a folder\n")
    args = configure(mini, where, setting)
    result = pytester.runpytest("cases", "--co", "-p", "no:xdist", *args)  # --co: never a run
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not list(mini.rglob(".scylla-probe-*"))


@pytest.mark.parametrize("where", ["cli", "pyproject.toml"])
def test_good_values_of_the_same_options_still_collect(
    mini: Path, pytester: pytest.Pytester, edit: Edit, where: str
) -> None:
    """The positive control: folders to make, folders that exist, tiers as one string, a finite
    max_cost_usd collect what the defaults collect (T0 and T5 of it); nothing is made by a
    collect-only session, and no probe is left."""
    edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\nmax_cost_usd: 2.5")
    plain = pytester.runpytest("cases", "--co", "-q", "-p", "no:xdist")
    values = {
        "out": "reports/exp",
        "cache_dir": "cache",
        "rubrics_dir": "rubrics",
        "tiers_dir": "tiers",
        "tiers": "T0,T5",
        "max_run_cost": "2.5",
    }
    args = configure(
        mini,
        where,
        *(
            f"--scylla-{key.replace('_', '-')}={v}"
            if where == "cli"
            else f"scylla_{key} = {json.dumps(v)}"
            for key, v in values.items()
        ),
    )
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:xdist", *args)
    assert result.ret == pytest.ExitCode.OK
    listed = [ln for ln in result.outlines if "test.yaml::" in ln]
    assert listed == [ln for ln in plain.outlines if "[T0-" in ln or "[T5-" in ln]
    assert len(listed) == 8
    assert not (mini / "reports").exists()
    assert not (mini / "cache").exists()
    assert not list(mini.rglob(".scylla-probe-*"))


@pytest.mark.parametrize(
    ("written", "shown"), [(".inf", ".inf"), ("-.Inf", "-.inf"), (".NaN", ".nan")]
)
def test_a_non_finite_max_cost_is_one_collection_error(
    mini: Path, pytester: pytest.Pytester, edit: Edit, written: str, shown: str
) -> None:
    """As --scylla-max-run-cost=inf is refused: one line, no second one for the minimum."""
    edit("cases/alpha/test.yaml", "rubric: basic", f"rubric: basic\nmax_cost_usd: {written}")
    result = pytester.runpytest("cases", "--co", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [f"cases/alpha/test.yaml:9: max_cost_usd must be a finite number, not {shown}"]
    )
    out = result.stdout.str()
    assert out.count("cases/alpha/test.yaml:9:") == 1
    assert "Traceback" not in out


def test_plan_refuses_a_file_as_the_experiment_folder(
    mini: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """It used to plan "0 stored in README.md"; now pytest's usage error, passed on."""
    monkeypatch.chdir(mini)
    (mini / "README.md").write_text("# notes\n")
    assert (
        main(["plan", "cases", "-p", "no:xdist", "--scylla-oracle", "--scylla-out=README.md"])
        == pytest.ExitCode.USAGE_ERROR
    )
    out, err = capfd.readouterr()
    assert (
        "ERROR: --scylla-out='README.md': README.md is a file; expected a folder (made if "
        "missing)" in err.splitlines()
    )
    assert "stored in" not in out
    assert "Traceback" not in out + err
