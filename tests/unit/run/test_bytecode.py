"""The checks' bytecode links (`run/bytecode.py`): only the interpreter's own library is linked,
bwrap shows the links read-only, the checks use them, and a check cannot forge them.

Here the in-process tests; the sessions are in `tests/e2e/test_bytecode.py`."""

from __future__ import annotations

import importlib.util
import py_compile
import sys
from pathlib import Path
from types import ModuleType

import pluggy
import pytest

from pytest_scylla.formats.spec import Check
from pytest_scylla.run import bytecode
from pytest_scylla.run.checks import NO_BYTECODE, check_env, run_check
from pytest_scylla.run.sandbox import SYSTEM_TOPS, Bwrap, system_paths

from ...conftest import needs_bwrap

TAG = sys.implementation.cache_tag


def _load(path: Path) -> ModuleType:
    """Import the module at `path` with its bytecode written next to it, as a library's is."""
    py_compile.compile(str(path), doraise=True)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_modules_of_the_interpreters_library_under_a_read_only_path_are_linked(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "victim.py").write_text("X = 1\n")
    outside = _load(tmp_path / "ws" / "victim.py")  # compiled, but not the library's
    assert outside.__spec__ is not None
    assert Path(str(outside.__spec__.cached)).is_file()
    shown = SYSTEM_TOPS + system_paths()
    into = tmp_path / "pyc"
    assert bytecode.mirror(into, shown, [pluggy, outside]) == 1
    source = Path(str(pluggy.__file__))
    link = into / str(source.parent).lstrip("/") / f"__init__.{TAG}.pyc"
    # where a check's Python looks for it under the prefix, pointing at the library's own file
    assert link.is_symlink()
    old, sys.pycache_prefix = sys.pycache_prefix, str(into)
    try:
        assert importlib.util.cache_from_source(str(source)) == str(link)
    finally:
        sys.pycache_prefix = old
    assert link.resolve() == Path(str(pluggy.__spec__.cached)).resolve()
    assert not list(into.rglob(f"victim.{TAG}.pyc"))
    # a library no sandbox shows read-only is not linked at all
    assert bytecode.mirror(tmp_path / "none", [tmp_path / "ws"], [pluggy]) == 0


FORGE = """import importlib.util, os, pathlib, py_compile, sys
real = pathlib.Path(sys.argv[1])
fake = pathlib.Path("fake.py")
fake.write_text('print("forged")'.ljust(len(real.read_bytes())))  # same size, same mtime:
st = real.stat()
os.utime(fake, (st.st_atime, st.st_mtime))  # the bytecode passes as the real file's
target = importlib.util.cache_from_source(str(real))  # the link, under the prefix
if sys.argv[2] == "replace":  # the link by a file of its own
    os.unlink(target)
    py_compile.compile(str(fake), cfile=target, dfile=str(real), doraise=True)
else:  # the file it links to, through the link
    py_compile.compile(str(fake), cfile="forged.pyc", dfile=str(real), doraise=True)
    pathlib.Path(target).write_bytes(pathlib.Path("forged.pyc").read_bytes())
"""


def _shell(command: str) -> Check:
    return Check("later", ("/bin/sh", "-c", command))


@pytest.mark.parametrize("how", ["replace", "through"])
@pytest.mark.parametrize("where", ["bwrap", "writable-control"])
def test_a_check_cannot_forge_the_bytecode_links(tmp_path: Path, where: str, how: str) -> None:
    """A check runs the agent's code, which could overwrite a link with forged bytecode for a
    library module a later check imports. Under bwrap the links are read-only: the forgery
    fails and the later check runs the real module, from its linked bytecode (`-v` says so).
    The control runs the same without a sandbox, where the folder is writable: the forgery
    works, so the read-only view is what stops it."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "victimlib.py").write_text('print("real")  # a library module a check imports\n')
    module = _load(lib / "victimlib.py")
    into = tmp_path / "pyc"
    assert bytecode.mirror(into, [lib], [module], folders=[lib]) == 1
    private = tmp_path / "private"
    work = private / "work"
    work.mkdir(parents=True)
    env = check_env({"PATH": "/usr/bin:/bin"}, private / "checks", str(into))
    wrap = None
    if where == "bwrap":
        needs_bwrap()
        sandbox = Bwrap(readable=[lib, into])
        wrap = lambda argv: sandbox.wrap(argv, work, private)  # noqa: E731
    forged = run_check(
        Check("forge", (sys.executable, "-c", FORGE, str(lib / "victimlib.py"), how)),
        work,
        env,
        wrap,
    )
    later = run_check(
        _shell(
            f'python -v -c \'import sys; sys.path.insert(0, "{lib}"); '
            "import victimlib' 2>&1 | grep -E '^(real|forged)$|code object from'"
        ),
        work,
        env,
        wrap,
    )
    if where == "bwrap":
        assert not forged.passed
        assert "Read-only file system" in forged.stderr
        assert "real" in later.stdout.split(), later.stdout
        assert "forged" not in later.stdout.split()
        assert f"code object from '{into}/" in later.stdout  # the link was read
    else:
        assert forged.passed, forged.stderr
        assert "forged" in later.stdout.split()
        assert "real" not in later.stdout.split()


def test_without_links_the_checks_read_no_bytecode(tmp_path: Path) -> None:
    """Where no prefix is made (local, docker), the checks' Python reads none: the library's
    module is compiled from source. The control is the test above, where the link is read."""
    env = check_env({"PATH": "/usr/bin:/bin"}, tmp_path / "checks")
    assert env["PYTHONPYCACHEPREFIX"] == NO_BYTECODE
    check = _shell("python -v -c 'import pluggy' 2>&1 | grep 'code object from'")
    found = run_check(check, tmp_path, env)
    assert found.passed
    assert "pluggy/__init__.py" in found.stdout
    assert "code object from '" not in found.stdout  # and no module from bytecode
    del env["PYTHONPYCACHEPREFIX"]  # control: its bytecode next to it is there to be read
    assert "pluggy/__pycache__" in run_check(check, tmp_path, env).stdout
