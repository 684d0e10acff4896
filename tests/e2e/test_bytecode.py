"""The checks' bytecode links (`run/bytecode.py`): only the interpreter's own library is linked,
bwrap shows the links read-only, the checks use them, and a check cannot forge them.

Here the sessions; the in-process tests are in `tests/unit/run/test_bytecode.py`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pytest_scylla.run import bytecode

from ..conftest import Edit, needs_bwrap
from .test_run_promises import records

LINK_CHECKS = """
  - name: reads-links
    run: python -v -c 'import pluggy' 2>&1 | grep -q "code object from '.*/scylla-pyc-"
  - name: links-read-only
    run: python -c "import pathlib, sys; pathlib.Path(sys.pycache_prefix, 'x').write_text('x')"
    expect_exit: 1
"""


@pytest.mark.parametrize(("sandbox", "reads"), [("bwrap", True), ("local", False)])
def test_a_sessions_checks_read_the_links_only_under_bwrap(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], edit: Edit, sandbox: str, reads: bool
) -> None:
    """Two checks of the session's own: one reads a library module's bytecode from the links,
    the other tries to write among them. Under bwrap the first passes and the write fails;
    under local (the control) no links are made, and no bytecode is read."""
    if sandbox == "bwrap":
        needs_bwrap()
    edit("cases/alpha/test.yaml", '{exact: "ok\\n"}\n', '{exact: "ok\\n"}\n' + LINK_CHECKS)
    out = mini / "out"
    pytester.runpytest(
        "cases",
        "-k",
        "alpha and T0-01",
        "-p",
        "no:xdist",
        *oracle,
        f"--scylla-out={out}",
        f"--scylla-sandbox={sandbox}",
    )
    rec = records(out)["alpha-T0-01-r1"]
    verdicts = {c["name"]: c["passed"] for c in rec["checks"]}
    assert verdicts == {"runs": True, "reads-links": reads, "links-read-only": True}, rec["checks"]
    assert not list(Path(tempfile.gettempdir()).glob(f"{bytecode.PREFIX}*/x"))
