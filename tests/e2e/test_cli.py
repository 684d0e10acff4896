"""The `scylla` command.

Here the sessions; the in-process tests are in `tests/unit/face/test_cli.py`."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main


def test_validate_accepts_a_good_project(mini: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(mini)]) == 0
    out = capsys.readouterr().out
    assert "ok   alpha (bug-fixing, 1 checks, 2 rubric items)" in out
    assert "ok   T5 (2 subtests)" in out
    assert out.rstrip().endswith("all valid")


def test_validate_reports_every_bad_file(
    mini: Path,
    edit: Callable[[str, str, str], None],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(mini)
    edit("rubrics/basic.yaml", "weight: 0.6", "weight: 0.7")
    edit("tiers/T1.yaml", "skills: [review]\n", "skills: [nope]\n")
    assert main(["validate", "."]) == 2
    out = capsys.readouterr().out
    assert "rubrics/basic.yaml:2: category weights sum to 1.1, not 1" in out
    assert "tiers/T1.yaml:6: unknown skill 'nope'" in out
    assert out.rstrip().endswith("invalid")


def test_a_resource_that_is_not_utf8_fails_only_the_tiers_that_use_it(
    mini: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(mini)
    with (mini / "tiers/skills/review/SKILL.md").open("ab") as handle:
        handle.write(b"Look \xff\n")
    assert main(["validate", "."]) == 2
    out = capsys.readouterr().out.splitlines()
    message = (
        "tiers/skills/review/SKILL.md:6: column 6: byte 0xff is not UTF-8; save the file as UTF-8"
    )
    assert out[:3] == ["FAIL T1:", message, "ok   T0 (3 subtests)"]  # T0 does not use it
    assert out[-1] == "3 invalid"  # T1, and T5's two subtests that extend T1
    only_t0 = pytester.runpytest("cases", "--co", "-q", "--scylla-tiers=T0")
    assert only_t0.ret == pytest.ExitCode.OK
    assert "Traceback" not in only_t0.stdout.str()
    every = pytester.runpytest("cases", "--co", "-q")
    every.stdout.fnmatch_lines([message])
    assert "Traceback" not in every.stdout.str()


def test_validate_sees_what_collection_sees(
    mini: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nested case folders, a duplicate case id, a misnamed case file (whose Python files
    must not be collected as tests) and a broken shared rubric no case uses: `scylla
    validate` and collection name the same problems, with the same words."""
    monkeypatch.chdir(mini)
    shutil.copytree(mini / "cases/alpha", mini / "cases/group/alpha")
    shutil.copytree(mini / "cases/beta", mini / "cases/group/beta2")
    (mini / "cases/group/beta2/test.yaml").write_text(
        (mini / "cases/group/beta2/test.yaml").read_text().replace("id: beta", "id: beta2")
    )
    shutil.copytree(mini / "cases/beta", mini / "cases/group/gamma")
    (mini / "cases/group/gamma/test.yaml").rename(mini / "cases/group/gamma/test.yml")
    (mini / "cases/group/gamma/test_hidden.py").write_text("def test_x():\n    pass\n")
    (mini / "rubrics/unused.yaml").write_text("name: unused\ncategories: [\n")
    for payload in ("cases/alpha/source/examples/demo", "cases/.archive/old"):  # not cases
        (mini / payload).mkdir(parents=True)
        (mini / payload / "test.yaml").write_text("id: [broken\n")
    assert main(["validate", "."]) == 2
    out = capsys.readouterr().out
    duplicate = (
        "cases/group/alpha/test.yaml: case id 'alpha' is already that of "
        "cases/alpha/test.yaml; case ids name the runs and must be unique: rename one "
        "folder and its id"
    )
    misnamed = (
        "cases/group/gamma/test.yml: the case file must be named test.yaml; rename it "
        "(nothing in cases/group/gamma is collected until then)"
    )
    assert duplicate in out.splitlines()
    assert misnamed in out.splitlines()
    assert "ok   beta2 (documentation" in out  # nested, found
    assert "rubrics/unused.yaml:3: YAML syntax error" in out
    assert out.rstrip().endswith("3 invalid")
    listed = pytester.runpytest("cases", "--co", "-q")
    listed.stdout.fnmatch_lines([duplicate, misnamed])
    assert "test_hidden.py" not in listed.stdout.str()
    assert any(line.startswith("cases/group/beta2/test.yaml::beta2[") for line in listed.outlines)
