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
    venv = cache / "pypi" / f"{FAKE}==1.0"
    assert server["command"] == "/bin/sh"
    assert server["args"] == ["-c", mcp_install.LAUNCH, str(venv), FAKE, "--flag"]
    assert (venv / ".scylla-installed").is_file()
    started = subprocess.run(
        [server["command"], *server["args"]], capture_output=True, text=True, timeout=30
    )
    assert started.stdout == "fake server up\n"
    (index / "scylla_fake_server-1.0-py3-none-any.whl").unlink()  # installed: never asked again
    again = _config("pipx", ["run", "--spec", f"{FAKE}==1.0", FAKE])
    mcp_install.localize(again, {"fake": {"pypi": pypi}}, cache)
    assert again["mcpServers"]["fake"]["args"][2:] == [str(venv), FAKE]


def test_in_an_image_without_this_python_the_image_python3_of_the_same_version_runs_it(
    index: Path, tmp_path: Path
) -> None:
    """A docker image of one's own has its own Python, not this host's that the venv links to:
    the launcher runs the console script with the image's python3 over the venv's packages
    when it is the same version (the wheels were chosen for it), else says what is missing."""
    pypi = {"requirement": f"{FAKE}==1.0", "entry": FAKE}
    config = _config("uvx", [f"{FAKE}@1.0"])
    server = mcp_install.localize(config, {"fake": {"pypi": pypi}}, tmp_path / "c")
    venv = Path(server["mcpServers"]["fake"]["args"][2])
    (venv / "bin" / "python").unlink()  # as the image sees it: a link to nothing
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3").symlink_to(sys.executable)  # the image's python3: the same version
    argv = ["/bin/sh", *server["mcpServers"]["fake"]["args"]]
    path = {"PATH": f"{shims}:/usr/bin:/bin"}
    same = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=path)
    assert (same.returncode, same.stdout) == (0, "fake server up\n"), same.stderr
    (shims / "python3").unlink()
    (shims / "python3").write_text("#!/bin/sh\nexit 1\n")  # another version
    (shims / "python3").chmod(0o755)
    other = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=path)
    assert other.returncode == 1
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert other.stderr == (
        f"scylla: {FAKE} needs Python {version} (its wheels were installed for it), which this "
        "image lacks: install it in the image, or use the bwrap sandbox\n"
    )


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


@pytest.mark.parametrize(
    ("command", "args"), [("uvx", ["mcp-server-time"]), ("pipx", ["run", "mcp-server-time"])]
)
def test_a_uvx_server_without_its_pypi_key_is_one_clear_error(
    tmp_path: Path, command: str, args: list[str]
) -> None:
    """It would download its package in a sandbox without network: never started so."""
    with pytest.raises(InstallError) as caught:
        mcp_install.localize(_config(command, args), {"fake": {}}, tmp_path)
    assert str(caught.value).startswith(
        f"MCP server 'fake' is started by {command}, which downloads its package, and a sandbox "
        "has no network: give its declaration the `pypi` key"
    )


def test_pass_env_gives_the_server_the_users_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's environment is built without the user's variables, so the CLI would expand
    `${TOKEN}` to nothing: a variable named in `pass_env` is written into the server's own
    config, in its `${...}` and its env."""
    config = _config("python3", [])
    declared = {"fake": {"pass_env": ["TEAM_TOKEN"]}}
    monkeypatch.setenv("TEAM_TOKEN", "t0ken")
    config["mcpServers"]["fake"]["args"] = ["s.py", "--token=${TEAM_TOKEN:-none}", "${HOME}"]
    config["mcpServers"]["fake"]["env"] = {"AUTH": "Bearer ${TEAM_TOKEN}"}
    server = mcp_install.localize(config, declared, tmp_path)["mcpServers"]["fake"]
    assert server["args"] == ["s.py", "--token=t0ken", "${HOME}"]  # HOME: the agent's own
    assert server["env"] == {"AUTH": "Bearer t0ken", "TEAM_TOKEN": "t0ken"}


def test_a_variable_not_passed_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The positive control of pass_env: set here but not named, the user's value would never
    reach the server (Claude Code 2.1.197 hands an unset `${VAR}` over as the text itself)."""
    monkeypatch.setenv("TEAM_TOKEN", "t0ken")
    config = _config("python3", ["s.py", "--token=${TEAM_TOKEN}", "${OPT:-x}"])
    with pytest.raises(InstallError) as caught:
        mcp_install.localize(config, {"fake": {}}, tmp_path)
    assert str(caught.value) == (
        "MCP server 'fake': its ${TEAM_TOKEN} would reach it as those very characters (the "
        "agent's environment has none of your variables): name TEAM_TOKEN in its declaration's "
        "pass_env, or give it a default (${TEAM_TOKEN:-value})"
    )


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
