"""Red team (issue 44), end to end under docker with `--scylla-docker-copy`: the copy-back and
the gateway relay as weapons, from the agent's own shell in its container.

- A huge folder (a 3 GiB sparse file and 60,000 files) made the copy-back refuse with an error
  that ended the run as `infra_error`, out of the pass rate; now the run fails, with a
  `sandbox_bound` finding, and the host's copy stays as it was.
- A frame announcing 192 MiB, written into the relay's stdout, hung every later model call
  until the run's timeout; now the relay is dropped at once, the run's processes ended, and the
  run fails with the same finding.

Each has its positive control: the bound lifted, the attack goes through (the folder comes back
whole; the run hangs to its timeout). And a run quiet for longer than the exec socket's read
timeout keeps its relay (the timing-dependent step found on the copy path of
`test_docker_copy.py`, flaky on a loaded machine: the SDK's 60 s ended the relay, and the
run's later calls hung). Sessions under docker: the slow tier.

The in-process tests are `tests/unit/run/sandbox/test_redteam_copy.py` and
`test_redteam_relay.py`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.run.outcome import BOUND
from pytest_scylla.run.sandbox.docker import copy as docker_copy
from pytest_scylla.run.sandbox.docker import tunnel as docker_relay

from ..conftest import needs_docker
from ..support.copy_session import run_command

pytestmark = pytest.mark.slow

# a sparse file the copy-back streams whole, and a flood of files
HUGE = "truncate -s {size} big.bin && mkdir many && cd many && seq 1 {files} | xargs touch"
# the relay's stdout (its pid found by its mark), a frame header announcing 192 MiB written there
FRAME = (
    "for p in /proc/[0-9]*; do [ \"$(tail -c 21 $p/cmdline 2>/dev/null | tr '\\0' ' ')\" = "
    "'scylla-gateway-relay ' ] && relay=${p#/proc/}; done; echo relay=$relay; "
    "printf '\\000\\000\\000\\001\\014\\000\\000\\000' > /proc/$relay/fd/1 && echo sent"
)


def bound_findings(rec: dict[str, Any]) -> list[str]:
    return [f["detail"] for f in rec["integrity"] if f["kind"] == BOUND]


def test_a_huge_folder_left_in_the_container_fails_the_run(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack as reported, against the real bounds: never an infra_error."""
    needs_docker()
    command = HUGE.format(size="3G", files=60000)
    done, rec, run_dir = run_command(mini, pytester, oracle, monkeypatch, command)
    assert rec["outcome"] == "fail"
    assert rec["reason"] == (
        "the run broke the sandbox's bounds: copy-back refused: the run's folder in its "
        "container is over 2 GiB: not copied back"
    )
    assert len(bound_findings(rec)) == 1
    assert not (run_dir / "workspace" / "big.bin").exists()  # the host's copy as it was
    assert "Traceback" not in done.stdout.str()
    done.assert_outcomes(failed=1)  # the agent's failure, not an error of the harness


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_folder_over_the_copy_back_bound_fails_the_run(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    bounded: bool,
) -> None:
    """The same attack at a scale a test affords: 100 MiB against a 64 MiB bound."""
    needs_docker()
    limit = 64 << 20 if bounded else 1 << 30
    monkeypatch.setattr(docker_copy, "BOUNDS", docker_copy.Bounds(bytes=limit, free=limit))
    command = HUGE.format(size="100M", files=2000)
    _done, rec, run_dir = run_command(mini, pytester, oracle, monkeypatch, command)
    ws = run_dir / "workspace"
    if bounded:
        assert rec["outcome"] == "fail"
        assert bound_findings(rec) == [
            "copy-back refused: the run's folder in its container is over 64 MiB: not copied back"
        ]
        assert not (ws / "big.bin").exists()
    else:  # the control: the whole folder comes back to the host
        assert bound_findings(rec) == []
        assert (ws / "big.bin").stat().st_size == 100 << 20
        assert len(os.listdir(ws / "many")) == 2000


@pytest.mark.parametrize("bounded", [True, False], ids=["bounded", "lifted-control"])
def test_a_frame_written_into_the_relay_fails_the_run_at_once(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[str, str, str], None],
    bounded: bool,
) -> None:
    needs_docker()
    edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\ntimeout_seconds: 20")
    if not bounded:
        lifted = docker_relay.Bounds(frame=1 << 32, open=1 << 30, connections=1 << 30)
        monkeypatch.setattr(docker_relay, "BOUNDS", lifted)
    _done, rec, _run_dir = run_command(mini, pytester, oracle, monkeypatch, FRAME)
    if bounded:
        assert rec["outcome"] == "fail"
        assert bound_findings(rec) == [
            "gateway relay dropped: a frame of 201326592 bytes on connection 1 "
            "(relay.py sends at most 65536)"
        ]
        assert rec["timings"]["agent_s"] < 15  # ended at once, not at the timeout
    else:  # the control: the next model call waits behind the frame until the timeout
        assert rec["outcome"] == "timeout"
        assert bound_findings(rec) == []


@pytest.mark.parametrize("untimed", [True, False], ids=["untimed", "sdk-timeout-control"])
def test_a_quiet_spell_does_not_end_the_relay(
    mini: Path,
    pytester: pytest.Pytester,
    oracle: list[str],
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[str, str, str], None],
    untimed: bool,
) -> None:
    """A run quiet for longer than the exec socket's read timeout keeps its relay: its next
    call reaches the gateway. The control gives the socket a 3 s timeout (the SDK's is the
    client's 60 s, which a CLI slow to start on a loaded machine could outlast): the relay ends
    in the agent's 5 s sleep, and the run's second call never reaches the gateway."""
    needs_docker()
    edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\ntimeout_seconds: 25")
    if not untimed:
        monkeypatch.setattr(docker_relay, "untimed", lambda raw: (raw.settimeout(3), raw)[1])
    rec = run_command(mini, pytester, oracle, monkeypatch, "sleep 5 && echo awake")[1]
    if untimed:
        assert rec["api_calls"] == 2
        assert rec["final_message"] == "Done."
    else:  # the relay ended: before the second call (or, where the CLI took over 3 s to
        # make its first call on a loaded machine, before the first)
        assert rec["api_calls"] < 2
        assert rec["outcome"] in ("timeout", "agent_error")
