"""`--scylla-docker-copy`: the run's folder goes into its container and comes back through the
engine's archive API. What comes back is the agent's: extracted as hostile data (unit tests on
crafted archives), and end to end a FIFO, a set-uid file and links the agent left are refused,
stripped or kept as links, with the bind-mounted run as the positive control.

Here the in-process tests; the sessions are in `tests/e2e/test_docker_copy.py`."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

from pytest_scylla.run.sandbox import docker_copy


def _archive(members: list[tuple[tarfile.TarInfo, bytes]]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    buf.seek(0)
    return buf


def _entry(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def test_an_archive_from_the_container_cannot_write_outside_the_run_folder(tmp_path: Path) -> None:
    landing = tmp_path / "private" / "landing"
    landing.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    refused = docker_copy._extract(
        _archive(
            [
                (_entry("work/ok.py"), b"x = 1\n"),  # the control: lands
                (_entry("work/run.sh", mode=0o4755), b"#!/bin/sh\n"),  # set-uid: stripped
                (_entry("work/abs", tarfile.SYMTYPE, "/etc/passwd"), b""),  # a link: kept as is
                (_entry("work/out", tarfile.SYMTYPE, str(outside)), b""),
                (_entry("work/out/precious.txt"), b"overwritten\n"),  # through a link
                (_entry("../escape.txt"), b"escaped\n"),  # climbs out
                (_entry("/abs.txt"), b"absolute\n"),  # absolute: made relative
                (_entry("work/hard", tarfile.LNKTYPE, "../../outside/precious.txt"), b""),
                (_entry("work/fifo", tarfile.FIFOTYPE), b""),  # special file
            ]
        ),
        landing,
    )
    assert (landing / "work" / "ok.py").read_text() == "x = 1\n"
    assert stat.S_IMODE((landing / "work" / "run.sh").stat().st_mode) == 0o755
    assert os.readlink(landing / "work" / "abs") == "/etc/passwd"
    assert os.readlink(landing / "work" / "out") == str(outside)
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert not (tmp_path / "private" / "escape.txt").exists()
    assert (landing / "abs.txt").read_text() == "absolute\n"  # inside, never at /abs.txt
    assert not (landing / "work" / "hard").exists()
    assert not (landing / "work" / "fifo").exists()
    assert sorted(r.split(":")[0] for r in refused) == [
        "../escape.txt",
        "work/fifo",
        "work/hard",
        "work/out/precious.txt",
    ]
