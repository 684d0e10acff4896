"""Bad folder options, single-valued ini keys written as lists and non-finite amounts: each is
refused when pytest starts (a usage error naming the option, or the ini file and key), or as one
collection error for a case file, never with a traceback; the `scylla` command refuses the same
folders.

Here the in-process tests; the sessions are in `tests/e2e/test_bad_options.py`."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

ON_LINUX = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
# the same strerror text everywhere: root meets ENOENT in /proc, other users EACCES
IN_PROC = "cannot write in /proc (*)"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["init", "afile"], "scylla init: afile is a file; expected a folder (made if missing)"),
        (
            ["init", "afile/project"],
            "scylla init: afile is a file, so no folder can be made under it",
        ),
        pytest.param(["init", "/proc/scylla"], f"scylla init: {IN_PROC}", marks=ON_LINUX),
        (
            ["import", "source", "afile"],
            "scylla import: afile is a file; expected a folder (made if missing)",
        ),
        (
            ["report", "exp", "--out", "afile/exp"],
            "scylla report: --out afile is a file, so no folder can be made under it",
        ),
        (
            ["image", "build", "--ca-bundle", "nope.pem"],
            "scylla image build: --ca-bundle nope.pem: "
            "not a file; expected a PEM file of CA "
            "certificates",
        ),
    ],
    ids=["init-file", "init-under-file", "init-proc", "import-file", "report-out", "ca-bundle"],
)
def test_the_command_refuses_the_same_folders(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert fnmatch.fnmatchcase(err[0], message), err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing made
