"""`--scylla-docker-copy`: the run's folder goes into its container and comes back through the
engine's archive API. What comes back is the agent's: extracted as hostile data, member by
member by descriptor (unit tests on crafted archives, among them the link chain of
CVE-2025-4517 that tarfile's own `data` filter lets out on this Python), and end to end a FIFO,
a set-uid file and links the agent left are refused, stripped or kept as links, with the
bind-mounted run as the positive control. Each escape's positive control extracts the same
archive with tarfile and shows it lands outside.

Here the in-process tests; the sessions are in `tests/e2e/test_docker_copy.py`."""

from __future__ import annotations

import errno
import io
import os
import stat
import tarfile
from pathlib import Path
from typing import Literal

import pytest

from pytest_scylla.run import hostile
from pytest_scylla.run.sandbox.docker import copy as docker_copy
from pytest_scylla.run.sandbox.docker.extract import REFUSED, SPECIAL, file_mode

from ....support.hostile_repos import tarfile_unpatched
from ....support.hostile_tars import archive, cve_4517_chain, entry

THROUGH = REFUSED[errno.ENOTDIR]  # a link or a file on the way
THERE = REFUSED[errno.EEXIST]
HARD_OUT = "a hard link to no file this copy placed: not copied back"


def _extract(data: bytes, landing: Path) -> dict[str, str]:
    """{member: why refused} of `data` extracted into `landing` by the copy-back."""
    refused = docker_copy._extract(io.BytesIO(data), landing)
    return dict(line.split(": ", 1) for line in refused)


def _trusting(
    data: bytes, landing: Path, kind: Literal["fully_trusted", "data"] = "fully_trusted"
) -> None:
    """The positive control: the same archive through tarfile's own extraction."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(landing, filter=kind)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    landing, outside = tmp_path / "private" / "landing", tmp_path / "outside"
    landing.mkdir(parents=True)
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    return landing, outside


ESCAPES = [
    (entry("work/out", tarfile.SYMTYPE, "../../../outside"), b""),
    (entry("work/out/precious.txt"), b"overwritten\n"),  # through a link
    (entry("../escape.txt"), b"escaped\n"),  # climbs out
    (entry("work/hard", tarfile.LNKTYPE, "../../outside/precious.txt"), b""),  # hard link out
]


@pytest.mark.parametrize("defended", [True, False], ids=["copy-back", "tarfile-control"])
def test_an_archive_from_the_container_cannot_write_outside_the_run_folder(
    tmp_path: Path, defended: bool
) -> None:
    landing, outside = _folders(tmp_path)
    data = archive([(entry("work/ok.py"), b"x = 1\n"), *ESCAPES])
    if not defended:  # the control: extracted as it says, it writes outside
        _trusting(data, landing)
        assert (outside / "precious.txt").read_text() == "overwritten\n"
        assert (tmp_path / "private" / "escape.txt").read_text() == "escaped\n"
        assert (landing / "work" / "hard").samefile(outside / "precious.txt")
        return
    refused = _extract(data, landing)
    assert (landing / "work" / "ok.py").read_text() == "x = 1\n"
    assert os.readlink(landing / "work" / "out") == "../../../outside"  # a link, kept as is
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert not (tmp_path / "private" / "escape.txt").exists()
    assert not (landing / "work" / "hard").exists()
    assert refused == {
        "work/out/precious.txt": THROUGH,
        "../escape.txt": "'../escape.txt' holds an empty, '.' or '..' part",
        "work/hard": HARD_OUT,
    }


@pytest.mark.parametrize("defended", [True, False], ids=["copy-back", "tarfile-data-control"])
def test_the_link_chain_of_cve_2025_4517_never_lands_outside(
    tmp_path: Path, defended: bool
) -> None:
    """Links whose expansion passes PATH_MAX, then `escape/newfile` through them: tarfile's
    `data` filter lets it out beside the landing on this Python (unpatched; a patched one
    refuses it itself); the copy-back refuses the members that go through a link."""
    landing = tmp_path / ("y" if defended else "x") / "land"  # both the same length
    landing.mkdir(parents=True)
    data = cve_4517_chain(landing)
    if not defended:
        if tarfile_unpatched():  # the positive control: the filter is bypassed
            _trusting(data, landing, "data")
            assert (landing.parent / "newfile").read_text() == "new"
        else:
            with pytest.raises((OSError, tarfile.TarError)):
                _trusting(data, landing, "data")
        return
    refused = _extract(data, landing)
    assert sorted(p.name for p in landing.parent.iterdir()) == ["land"]
    assert refused["escape/newfile"] == THROUGH
    assert len(refused) == 2  # and the link named through the chain of links
    assert all(why == THROUGH for why in refused.values())


SAME_PLACE = [
    # (what an earlier member placed, a later member at or under it, why refused)
    ((entry("w/out", tarfile.SYMTYPE, "../../../outside"), b""), "w/out/a/b/new.txt", THROUGH),
    ((entry("w/f"), b"first\n"), "w/f/x", THROUGH),
    ((entry("w/f"), b"first\n"), "w/f", THERE),
    ((entry("w/l", tarfile.SYMTYPE, "../../../outside/precious.txt"), b""), "w/l", THERE),
    ((entry("w/d", tarfile.SYMTYPE, "../../../outside"), b""), "w/d/", THERE),
]


@pytest.mark.parametrize(
    ("first", "later", "why"),
    SAME_PLACE,
    ids=["under-a-link", "under-a-file", "file-over-file", "file-over-link", "folder-over-link"],
)
def test_a_member_never_goes_through_or_over_what_an_earlier_one_placed(
    tmp_path: Path, first: tuple[tarfile.TarInfo, bytes], later: str, why: str
) -> None:
    landing, outside = _folders(tmp_path)
    second = (
        entry(later.rstrip("/"), tarfile.DIRTYPE, mode=0o755)
        if later.endswith("/")
        else entry(later)
    )
    refused = _extract(archive([first, (second, b"second\n")]), landing)
    assert refused == {later.rstrip("/"): why}
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text() == "keep\n"
    placed = landing / first[0].name
    assert placed.is_symlink() == first[0].issym()  # the first one, as it was placed
    if not first[0].issym():
        assert placed.read_text() == "first\n"


def test_a_hard_link_only_to_a_file_this_copy_placed(tmp_path: Path) -> None:
    landing, outside = _folders(tmp_path)
    refused = _extract(
        archive(
            [
                (entry("w/f"), b"mine\n"),
                (entry("w/to-link", tarfile.SYMTYPE, "../../../outside/precious.txt"), b""),
                (entry("w/out", tarfile.SYMTYPE, "../../../outside"), b""),
                (entry("w/h1", tarfile.LNKTYPE, "./w/f"), b""),  # inside: kept
                (entry("w/h2", tarfile.LNKTYPE, "w/to-link"), b""),  # a link, not a file
                (entry("w/h3", tarfile.LNKTYPE, "w/out/precious.txt"), b""),  # through a link
                (entry("w/h4", tarfile.LNKTYPE, "/etc/passwd"), b""),
            ]
        ),
        landing,
    )
    assert (landing / "w" / "h1").samefile(landing / "w" / "f")
    assert refused == {"w/h2": HARD_OUT, "w/h3": HARD_OUT, "w/h4": HARD_OUT}
    assert (outside / "precious.txt").stat().st_nlink == 1


def test_a_file_linked_past_the_filesystems_limit_is_refused_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ext4's 65,000 hard links to one file the kernel says EMLINK (made here at the
    second link): that member is refused, the copy goes on, never an error of the harness."""
    landing, _ = _folders(tmp_path)
    real = os.link
    made: list[tuple[object, ...]] = []

    def link(*args: object, **kwargs: object) -> None:
        if made:
            raise OSError(errno.EMLINK, "Too many links")
        made.append(args)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", link)
    members = [(entry("f"), b"x\n")]
    members += [(entry(f"h{i}", tarfile.LNKTYPE, "f"), b"") for i in range(2)]
    refused = _extract(archive([*members, (entry("after"), b"y\n")]), landing)
    assert refused == {"h1": REFUSED[errno.EMLINK]}
    assert (landing / "h0").samefile(landing / "f")
    assert (landing / "after").read_text() == "y\n"


def _sparse() -> tuple[tarfile.TarInfo, bytes]:
    """A PAX 0.1 sparse member: 5 bytes of data standing for a 1 GiB file."""
    info = entry("w/sparse")
    info.pax_headers = {"GNU.sparse.map": "0,5", "GNU.sparse.size": str(1 << 30)}
    return info, b"hello"


@pytest.mark.parametrize("defended", [True, False], ids=["copy-back", "tarfile-control"])
def test_fifos_devices_and_sparse_members_are_refused(tmp_path: Path, defended: bool) -> None:
    landing, _ = _folders(tmp_path)
    members = [
        (entry("w/fifo", tarfile.FIFOTYPE), b""),
        (entry("w/null", tarfile.CHRTYPE), b""),
        (entry("w/disk", tarfile.BLKTYPE), b""),
        _sparse(),
    ]
    if not defended:  # the control: tarfile makes them (1 GiB from an archive of a few KiB)
        _trusting(archive(members), landing)
        assert stat.S_ISFIFO((landing / "w" / "fifo").lstat().st_mode)
        assert (landing / "w" / "sparse").stat().st_size == 1 << 30
        return
    refused = _extract(archive(members), landing)
    assert refused == dict.fromkeys(["w/fifo", "w/null", "w/disk", "w/sparse"], SPECIAL)
    assert list(landing.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../x", "'../x' holds an empty, '.' or '..' part"),
        ("./../x", "'../x' holds an empty, '.' or '..' part"),
        ("w/../../x", "'w/../../x' holds an empty, '.' or '..' part"),
        ("w/./x", "'w/./x' holds an empty, '.' or '..' part"),
        ("/etc/x", "'/etc/x' is absolute or empty"),
        ("w/a\nb", "'w/a\\nb' holds a control character or is not UTF-8"),
    ],
)
def test_a_name_that_could_leave_the_landing_is_refused(
    tmp_path: Path, name: str, why: str
) -> None:
    landing, _ = _folders(tmp_path)
    refused = _extract(archive([(entry(name), b"x\n")]), landing)
    assert refused == {name.removeprefix("./"): why}
    assert list(tmp_path.rglob("x")) == []
    assert list(landing.iterdir()) == []


@pytest.mark.parametrize(
    ("mode", "kept"),
    [(0o4755, 0o755), (0o2755, 0o755), (0o1777, 0o755), (0o7666, 0o644), (0o610, 0o600)],
)
def test_set_uid_set_gid_sticky_and_others_write_are_dropped(
    tmp_path: Path, mode: int, kept: int
) -> None:
    landing, _ = _folders(tmp_path)
    assert _extract(archive([(entry("run.sh", mode=mode), b"#!/bin/sh\n")]), landing) == {}
    assert stat.S_IMODE((landing / "run.sh").stat().st_mode) == kept == file_mode(mode)


def _tree(root: Path) -> None:
    """Ordinary work: nested folders, an empty file, an executable one, links (relative,
    absolute, dangling) and a hard link."""
    (root / "work" / "pkg" / "sub").mkdir(parents=True)
    (root / "work" / "pkg" / "sub" / "deep.py").write_text("DEEP = 1\n")
    (root / "work" / "empty.txt").write_text("")
    (root / "work" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "work" / "run.sh").chmod(0o755)
    (root / "work" / "private.key").write_text("k\n")
    (root / "work" / "private.key").chmod(0o600)
    (root / "work" / "big.bin").write_bytes(os.urandom(300_000))
    (root / "work" / "rel").symlink_to("pkg/sub/deep.py")
    (root / "work" / "abs").symlink_to("/etc/passwd")
    (root / "work" / "dangling").symlink_to("nowhere/at/all")
    (root / "work" / "dirlink").symlink_to("pkg")
    os.link(root / "work" / "big.bin", root / "work" / "big-again.bin")
    (root / "home" / ".cache").mkdir(parents=True)


def _seen(root: Path) -> dict[str, tuple[str, int, str | bytes, int]]:
    """{path: (kind, permissions, content or link target, mtime)} of everything under root."""
    seen: dict[str, tuple[str, int, str | bytes, int]] = {}
    for item in hostile.walk(root)[0]:
        st = (root / item.rel).lstat()
        body: str | bytes = (
            os.readlink(root / item.rel)
            if item.kind == "link"
            else (root / item.rel).read_bytes()
            if item.kind == "file"
            else ""
        )
        mtime = int(st.st_mtime) if item.kind == "file" else 0
        seen[item.rel] = (item.kind, stat.S_IMODE(st.st_mode), body, mtime)
    return seen


def test_ordinary_work_comes_back_as_it_was(tmp_path: Path) -> None:
    """The tar the engine streams (`./` names, the folder itself first, hard links named from
    the top) comes back whole: folders, files with their bits and times, links as links."""
    source, landing = tmp_path / "source", tmp_path / "landing"
    source.mkdir()
    landing.mkdir()
    _tree(source)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(source, arcname=".")
    buf.seek(0)
    assert docker_copy._extract(buf, landing) == []
    assert _seen(landing) == _seen(source)
    assert (landing / "work" / "big-again.bin").samefile(landing / "work" / "big.bin")
    assert (landing / "work" / "dirlink").is_symlink()
