"""Red team (issue 44): the docker copy-back as a weapon. What the agent leaves comes back
through the engine's archive API: a huge file (a sparse 3 GiB one streams as 3 GiB) or a flood
of files made the harness refuse the copy with an error that ended the run as `infra_error`,
which takes a failing agent out of the pass rate. Now a copy over its bounds is refused whole,
the host's copy left as it was, and the run fails with a finding; and a copy-back past its free
bytes holds one of the host's spool slots, so that the copy-backs of a session's workers do not
fill the disk together; what comes back goes in again before each check, as a tar made as the
engine reads it (it was made whole in memory). Each attack's positive control lifts the bound.

Here the in-process tests (a stand-in for the container's `get_archive`); the session under
docker is in `tests/e2e/test_redteam_copy.py`."""

from __future__ import annotations

import io
import tarfile
import threading
import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.agents import Result
from pytest_scylla.run.gateway.routes import Route
from pytest_scylla.run.outcome import BOUND, bound_findings, classify
from pytest_scylla.run.sandbox import Finished, SandboxError
from pytest_scylla.run.sandbox.docker.copy import Bounds, OverLimit, pull, push
from pytest_scylla.run.sandbox.docker.spool import Spool

CHUNK = 16 << 10


def archive(files: dict[str, bytes]) -> bytes:
    """The tar the engine streams for the run's folder."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Container:
    """What `pull` asks of a container: its folder as a stream of chunks; `hold` pauses the
    stream once past `hold_at` bytes until it is set."""

    def __init__(self, data: bytes, hold: threading.Event | None = None, hold_at: int = 0):
        self.data, self.hold, self.hold_at = data, hold, hold_at
        self.streamed = 0
        self.holding = threading.Event()

    def get_archive(self, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        return self._chunks(), {}

    def _chunks(self) -> Iterator[bytes]:
        for start in range(0, len(self.data), CHUNK):
            if self.hold is not None and self.streamed > self.hold_at:
                self.holding.set()
                self.hold.wait(10)
            self.streamed += CHUNK
            yield self.data[start : start + CHUNK]


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """The host's copy of a run's folder, as the agent found it."""
    folder = tmp_path / "scylla-run-x"
    (folder / "work").mkdir(parents=True)
    (folder / "work" / "old.py").write_text("x = 1\n")
    return folder


def spool(tmp_path: Path, slots: int = 2) -> Spool:
    return Spool(tmp_path / "slots", slots)


def untouched(private: Path) -> bool:
    """The host's copy as it was before the copy-back (and no landing left behind)."""
    return sorted(p.name for p in private.rglob("*")) == ["old.py", "work"]


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_folder_over_the_byte_bound_is_refused_whole(
    tmp_path: Path, private: Path, bounded: bool
) -> None:
    """A 3 MiB file against a 1 MiB bound stands for a 3 GiB sparse file against 2 GiB."""
    data = archive({"work/small.py": b"y = 2\n", "work/big.bin": b"\0" * (3 << 20)})
    bounds = Bounds(bytes=1 << 20, free=1 << 30) if bounded else Bounds()
    if bounded:
        with pytest.raises(OverLimit, match=r"over 1 MiB: not copied back"):
            pull(Container(data), private, bounds, spool(tmp_path))
        assert untouched(private)
    else:  # the control: the whole folder comes back
        assert pull(Container(data), private, bounds, spool(tmp_path)) == []
        assert (private / "work" / "big.bin").stat().st_size == 3 << 20
        assert not (private / "work" / "old.py").exists()


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_flood_of_files_over_the_member_bound_is_refused_whole(
    tmp_path: Path, private: Path, bounded: bool
) -> None:
    """300 files against a bound of 100 stand for 60,000 against 500,000."""
    data = archive({f"work/f{i}.txt": b"x" for i in range(300)})
    bounds = Bounds(members=100) if bounded else Bounds()
    if bounded:
        with pytest.raises(OverLimit, match=r"holds over 100 entries: not copied back"):
            pull(Container(data), private, bounds, spool(tmp_path))
        assert untouched(private)
    else:
        pull(Container(data), private, bounds, spool(tmp_path))
        assert len(list((private / "work").iterdir())) == 300


@pytest.mark.parametrize("slots", [1, 0], ids=["one-slot", "no-slots-control"])
def test_copy_backs_past_their_free_bytes_wait_for_a_spool_slot(tmp_path: Path, slots: int) -> None:
    """Two copy-backs of 1 MiB each, free 64 KiB, one slot: while the first holds the slot
    (its stream paused past its free bytes), the second streams no further than its own free
    bytes; the control, without slots, lands both at once."""
    bounds = Bounds(free=64 << 10)
    data = archive({"work/big.bin": b"\1" * (1 << 20)})
    release = threading.Event()
    first = Container(data, hold=release, hold_at=bounds.free)
    second = Container(data)
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    threads = [
        threading.Thread(target=pull, args=(box, folder, bounds, spool(tmp_path, slots)))
        for box, folder in zip((first, second), folders, strict=True)
    ]
    threads[0].start()
    assert first.holding.wait(5)
    threads[1].start()
    if slots:
        threads[1].join(1.0)
        assert threads[1].is_alive()  # waiting for the slot
        assert second.streamed <= bounds.free + 2 * CHUNK
    else:
        threads[1].join(5)
        assert not threads[1].is_alive()
        assert (folders[1] / "work" / "big.bin").stat().st_size == 1 << 20
    release.set()
    for thread in threads:
        thread.join(10)
    assert all((folder / "work" / "big.bin").stat().st_size == 1 << 20 for folder in folders)


class Receiver:
    """What `push` asks of a container: the clearing command, and the archive, read through;
    the Python memory held meanwhile at its peak. `hold`: the archive joined whole first (the
    control: what a tar made in memory costs)."""

    def __init__(self, hold: bool) -> None:
        self.hold, self.size, self.peak = hold, 0, 0

    def exec_run(self, argv: list[str]) -> tuple[int, bytes]:
        return 0, b""

    def put_archive(self, path: str, data: Iterable[bytes]) -> bool:
        tracemalloc.start()
        try:
            for chunk in [b"".join(data)] if self.hold else data:
                self.size += len(chunk)
            self.peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return True


@pytest.mark.parametrize("hold", [False, True], ids=["streamed", "held-control"])
def test_a_big_folder_goes_into_its_container_without_being_held(private: Path, hold: bool) -> None:
    """What came back (up to the 2 GiB bound) goes in again before each check: 64 MiB of it
    cost a few pieces of memory, never the archive whole."""
    with open(private / "work" / "big.bin", "wb") as big:
        big.truncate(64 << 20)
    box = Receiver(hold)
    push(box, private)
    assert box.size > 64 << 20
    if hold:
        assert box.peak > 64 << 20
    else:
        assert box.peak < 4 << 20


def test_a_spool_folder_open_to_others_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "slots"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with (
        pytest.raises(SandboxError, match=r"not this user's own with mode 0700: remove it"),
        Spool(folder, 1).slot(),
    ):
        pass
    folder.chmod(0o700)  # the control: its own, closed to others
    with Spool(folder, 1).slot():
        pass


UPSTREAM_DOWN = {"status": 529, "retry_after": None, "detail": "overloaded"}


@pytest.mark.parametrize("violated", [True, False], ids=["violated", "control"])
def test_a_broken_bound_is_the_agents_failure_never_infrastructure(violated: bool) -> None:
    """However the run ended besides (the CLI not started, the upstream failing), a broken
    bound fails it with a finding; the control, without it, is the infra_error that would have
    taken the run out of the pass rate."""
    why = ("copy-back refused: the run's folder in its container is over 2 GiB: not copied back",)
    finished = Finished(
        exit_code=1, timed_out=False, seconds=3.0, violations=why if violated else ()
    )
    route = Route(key="r", log_path=Path("/nonexistent/calls.jsonl"))
    route.infra = [UPSTREAM_DOWN]
    outcome, reason = classify(finished, Result(), route, "", "the CLI did not start")
    if violated:
        assert (outcome, reason) == ("fail", f"the run broke the sandbox's bounds: {why[0]}")
        assert [(f.kind, f.detail) for f in bound_findings(finished)] == [(BOUND, why[0])]
    else:
        assert outcome == "infra_error"
        assert bound_findings(finished) == []
