"""PyPI MCP server packages installed on the host for a sandbox without network
(`run.mcp_install`): from wheels only into a venv of their own, once per cache folder, the
server's command rewritten to the venv's console script; a package with only a source archive
is refused, never built (its setup.py would run on the host); `pass_env` gives a server the
user's variables, never a credential of the harness.

Offline: pip is pointed at a folder of this test's own archives (PIP_NO_INDEX, PIP_FIND_LINKS),
which the install honours as it honours any pip configuration."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run import mcp_install
from pytest_scylla.run.mcp_install import InstallError

FAKE = "scylla-fake-server"
SDIST = "scylla-sdist-only==1.0"
PIP = (sys.executable, "-m", "pip", "install")


def _wheel(folder: Path) -> None:
    """A one-module wheel whose console script prints that it started."""
    info = "scylla_fake_server-1.0.dist-info"
    files = {
        "scylla_fake_server/__init__.py": "def main():\n    print('fake server up')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {FAKE}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": f"[console_scripts]\n{FAKE} = scylla_fake_server:main\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / "scylla_fake_server-1.0-py3-none-any.whl", "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)


def _sdist(folder: Path, marker: Path) -> None:
    """A source archive only, whose setup.py would leave `marker` if it ever ran."""
    files = {
        "PKG-INFO": "Metadata-Version: 2.1\nName: scylla-sdist-only\nVersion: 1.0\n",
        "setup.py": f"open({str(marker)!r}, 'w').write('ran')\nfrom setuptools import setup\n"
        "setup(name='scylla-sdist-only', version='1.0')\n",
    }
    with tarfile.open(folder / "scylla_sdist_only-1.0.tar.gz", "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            entry = tarfile.TarInfo(f"scylla_sdist_only-1.0/{name}")
            entry.size = len(data)
            tar.addfile(entry, io.BytesIO(data))


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local package index: the fake server's wheel and the source-only package."""
    folder = tmp_path / "index"
    folder.mkdir()
    _wheel(folder)
    _sdist(folder, tmp_path / "setup-py-ran")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def _config(command: str, args: list[str]) -> dict[str, Any]:
    return {"mcpServers": {"fake": {"type": "stdio", "command": command, "args": args}}}


def test_a_uvx_server_is_installed_once_and_started_from_its_venv(
    index: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    pypi = {"requirement": f"{FAKE}==1.0", "entry": FAKE}
    config = _config("uvx", [f"{FAKE}@1.0", "--flag"])
    server = mcp_install.localize(config, {"fake": {"pypi": pypi}}, cache)["mcpServers"]["fake"]
    script = cache / "pypi" / f"{FAKE}==1.0" / "bin" / FAKE
    assert server["command"] == str(script)
    assert server["args"] == ["--flag"]
    assert (script.parent.parent / ".scylla-installed").is_file()
    started = subprocess.run([server["command"]], capture_output=True, text=True, timeout=30)
    assert started.stdout == "fake server up\n"
    (index / "scylla_fake_server-1.0-py3-none-any.whl").unlink()  # installed: never asked again
    again = _config("pipx", ["run", "--spec", f"{FAKE}==1.0", FAKE])
    mcp_install.localize(again, {"fake": {"pypi": pypi}}, cache)
    assert again["mcpServers"]["fake"]["command"] == str(script)


def test_a_package_with_only_a_source_archive_is_refused_not_built(
    index: Path, tmp_path: Path
) -> None:
    """Red team: the install runs on the host, so a package's setup.py must never run there."""
    pypi = {"requirement": "scylla-sdist-only==1.0", "entry": "scylla-sdist-only"}
    config = _config("uvx", ["scylla-sdist-only@1.0"])
    with pytest.raises(InstallError) as caught:
        mcp_install.localize(config, {"fake": {"pypi": pypi}}, tmp_path / "cache")
    message = str(caught.value)
    assert message.startswith(
        "MCP server 'fake': scylla-sdist-only==1.0 (or a package it needs) has no wheel for "
        "this Python, and the host never builds a package from source"
    ), message
    assert message.endswith(
        "pin a version that publishes wheels, or install the server in the case's image"
    )
    assert not (tmp_path / "setup-py-ran").exists()
    assert not (tmp_path / "cache/pypi/scylla-sdist-only==1.0").exists()  # no half venv left


def test_control_the_source_archive_runs_its_setup_py_when_pip_may_build(
    index: Path, tmp_path: Path
) -> None:
    """The positive control of the red team above: the same archive installed as pip does by
    default (building what has no wheel) runs its setup.py on the host."""
    target = tmp_path / "built"
    subprocess.run(
        [*PIP, "--no-build-isolation", "--no-deps", "--target", str(target), SDIST],
        capture_output=True,
        timeout=120,
    )
    assert (tmp_path / "setup-py-ran").read_text() == "ran"


def test_a_missing_console_script_names_the_ones_there_are(index: Path, tmp_path: Path) -> None:
    pypi = {"requirement": f"{FAKE}==1.0", "entry": "other"}
    with pytest.raises(InstallError, match=f"has no command 'other' \\(it has: {FAKE}\\)"):
        mcp_install.localize(
            _config("uvx", ["--from", f"{FAKE}==1.0", "other"]),
            {"fake": {"pypi": pypi}},
            tmp_path / "cache",
        )


def test_a_pypi_key_on_another_command_is_one_clear_error(tmp_path: Path) -> None:
    pypi = {"requirement": f"{FAKE}==1.0", "entry": FAKE}
    with pytest.raises(InstallError, match="needs a `uvx` or `pipx run` command"):
        mcp_install.localize(_config("python3", ["s.py"]), {"fake": {"pypi": pypi}}, tmp_path)


def test_pass_env_gives_the_server_the_users_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's environment is built without the user's variables, so the CLI would expand
    `${TOKEN}` to nothing: a variable named in `pass_env` is written into the server's own
    config, in its `${...}` and its env."""
    config = _config("python3", [])
    declared = {"fake": {"pass_env": ["TEAM_TOKEN"]}}
    monkeypatch.setenv("TEAM_TOKEN", "t0ken")
    config["mcpServers"]["fake"]["args"] = ["s.py", "--token=${TEAM_TOKEN:-none}", "${OTHER}"]
    config["mcpServers"]["fake"]["env"] = {"AUTH": "Bearer ${TEAM_TOKEN}"}
    server = mcp_install.localize(config, declared, tmp_path)["mcpServers"]["fake"]
    assert server["args"] == ["s.py", "--token=t0ken", "${OTHER}"]
    assert server["env"] == {"AUTH": "Bearer t0ken", "TEAM_TOKEN": "t0ken"}


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SCYLLA_ORACLE"])
def test_pass_env_never_passes_a_credential_of_the_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "sk-not-for-agents")
    config = _config("python3", ["s.py"])
    with pytest.raises(InstallError) as caught:
        mcp_install.localize(config, {"fake": {"pass_env": [name]}}, tmp_path)
    assert str(caught.value) == (
        f"MCP server 'fake': pass_env names {name}, a credential of the harness that never "
        "reaches an agent; give the server a key of its own"
    )
    assert "sk-not-for-agents" not in str(config)


def test_pass_env_of_an_unset_variable_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEAM_TOKEN", raising=False)
    with pytest.raises(InstallError, match="pass_env names TEAM_TOKEN, which is not set here"):
        mcp_install.localize(
            _config("python3", ["s.py"]), {"fake": {"pass_env": ["TEAM_TOKEN"]}}, tmp_path
        )
