"""The sandboxes on their own: what a sandboxed process can and cannot reach.

Here the in-process tests; the sessions are in `tests/e2e/test_sandbox.py`."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest

from pytest_scylla.run.sandbox import Bwrap, Sandbox, SandboxError, choose

from ....conftest import needs_bwrap


def test_auto_prefers_bwrap_when_it_works_and_no_docker_engine_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where bubblewrap works and no Docker engine answers, `auto` picks bwrap and says why
    (in CI, where bubblewrap is installed, this always runs)."""
    needs_bwrap()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    kind, note = choose("auto")
    assert kind is Bwrap
    assert note is not None
    assert note.startswith(
        "sandbox=bwrap (auto: bubblewrap works; no docker: no Docker engine answers"
    )


@pytest.mark.parametrize("real_model", [False, True], ids=["oracle", "real"])
def test_auto_never_falls_back_to_local_where_nothing_isolates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, real_model: bool
) -> None:
    """Where bubblewrap is not installed and no Docker engine answers, `auto` stops, with the
    oracle as with a real model (a smoke job must fail where the real job would), naming both
    reasons, what to install, and `local` as the knowing choice."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no bwrap to be found
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxError) as stopped:
        choose("auto", real_model=real_model)
    said = str(stopped.value)
    assert "bubblewrap (bwrap) is not installed" in said
    assert "apt-get install bubblewrap" in said
    assert "docker: " in said
    assert "--scylla-sandbox=local" in said
    assert ("credential" in said) is real_model
    assert choose("local") == (Sandbox, None)  # the knowing choice still works


BLOCKED = {  # what bubblewrap prints where the kernel refuses it, and the advice expected
    "apparmor": (
        "bwrap: setting up uid map: Permission denied",
        "kernel.apparmor_restrict_unprivileged_userns=0",
    ),
    "container": (
        "bwrap: No permissions to creating new namespace, likely because the kernel "
        "does not allow non-privileged user namespaces",
        "inside a container",
    ),
}


def _blocked(
    where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rest: str
) -> tuple[str, str]:
    """A bubblewrap first on PATH that fails as the kernel makes it fail `where`, and no Docker
    engine: (what it prints, the advice expected)."""
    printed, advice = BLOCKED[where]
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(f"#!/bin/sh\necho '{printed}' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{rest}")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    return printed, advice


@pytest.mark.parametrize("where", sorted(BLOCKED))
def test_a_blocked_bubblewrap_says_what_blocks_it_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str
) -> None:
    """Installed but refused by the kernel (GitHub's Ubuntu 24.04 runners, GitLab's Docker
    executor): the message quotes bubblewrap and gives that case's fix, not "install it"; the
    control: the same probe with a bubblewrap that works chooses bwrap."""
    printed, advice = _blocked(where, monkeypatch, tmp_path, f"/usr/bin{os.pathsep}/bin")
    for kind in ("bwrap", "auto"):
        with pytest.raises(SandboxError) as stopped:
            choose(kind)
        assert printed in str(stopped.value)
        assert advice in str(stopped.value)
        assert "apt-get install" not in str(stopped.value)
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])  # the real one
    needs_bwrap()  # the control needs it to work
    assert choose("auto")[0] is Bwrap


def test_a_removal_cut_by_ctrl_c_is_finished_at_the_session_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ctrl-C may land while a run's folder is being removed (a big workspace takes a while):
    the folder stays claimed, and the session's end removes it; released folders are not
    claimed any more, and another process's folder is never touched."""
    import shutil

    from pytest_scylla.core import tempdirs

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempdirs, "_claimed", set())
    cut, whole, other = (tempdirs.claim_private() for _ in range(3))
    for folder in (cut, whole):
        (folder / "work" / "src").mkdir(parents=True)
        (folder / "work" / "src" / "a.py").write_text("x = 1\n")
    tempdirs._claimed.discard(other)  # as if another process had claimed it
    real_rmtree = shutil.rmtree

    def interrupted(path: Path, **kwargs: object) -> None:
        real_rmtree(Path(path) / "work" / "src")  # part of it goes, then the interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tempdirs.release_private(cut)
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    assert cut.is_dir()
    tempdirs.release_private(whole)
    assert not whole.exists()
    held = tempdirs.claim_private()  # held before a (nested) session: that one keeps it
    assert tempdirs.release_all(keep=frozenset({held})) == [cut]  # only the cut one was left
    assert not cut.exists()
    assert other.is_dir()
    assert held.is_dir()
    assert tempdirs.release_all() == [held]


def test_scylla_sandbox_says_which_one_works_or_why_none_with_exit_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`scylla sandbox KIND`, a CI step before a session: exit 0 naming the sandbox where it
    works; where bubblewrap is blocked (AppArmor's words) or no engine answers, exit 1 with the
    reason and the fix."""
    from pytest_scylla.cli.main import main

    needs_bwrap()
    assert main(["sandbox", "bwrap"]) == 0
    assert capsys.readouterr().out == "sandbox bwrap works here\n"
    printed, advice = _blocked("apparmor", monkeypatch, tmp_path, os.environ["PATH"])
    for kind in ("bwrap", "auto", "docker"):
        assert main(["sandbox", kind]) == 1, kind
        said = capsys.readouterr().err
        assert said.startswith("scylla sandbox: --scylla-sandbox="), said
        if kind != "docker":
            assert printed in said
            assert advice in said
        else:
            assert "no Docker engine answers" in said
            assert "scylla image build --host" in said


def test_scylla_image_list_and_rm_touch_only_the_images_it_made(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`scylla image list` shows the host image under each of its tags; `rm` removes a tag of
    one of ours and refuses any other image, removing nothing; `scylla sandbox docker` of an
    image the engine lacks names the build command."""
    from pytest_scylla.cli.main import main
    from pytest_scylla.run.sandbox.docker import engine as docker_engine

    from ....conftest import needs_docker

    needs_docker()
    engine = docker_engine.client()
    docker_engine.ensure_image(engine)
    engine.images.get(docker_engine.IMAGE).tag("scylla-host", "rm-test")
    try:
        assert main(["image", "list"]) == 0
        listed = capsys.readouterr().out
        assert "scylla-host:rm-test" in listed
        assert docker_engine.IMAGE in listed
        assert main(["image", "rm", "scylla-host:rm-test", "debian:bookworm-slim"]) == 2
        assert "debian:bookworm-slim: not an image pytest-scylla made" in capsys.readouterr().err
        assert docker_engine.image_present(engine, "scylla-host:rm-test")  # nothing removed
        assert main(["image", "rm", "scylla-host:rm-test"]) == 0
        assert not docker_engine.image_present(engine, "scylla-host:rm-test")
        assert docker_engine.image_present(engine, docker_engine.IMAGE)  # its other tag stays
        assert main(["sandbox", "docker"]) == 0
        assert main(["sandbox", "docker", "--image", "scylla-absent:0"]) == 1
        assert "`scylla image build --tag scylla-absent:0`" in capsys.readouterr().err
    finally:
        with contextlib.suppress(Exception):
            engine.images.remove("scylla-host:rm-test")
        engine.close()
