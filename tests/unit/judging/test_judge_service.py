"""The judge service: under xdist the controller asks every worker's Anthropic judges, so that
the SDK is imported once per session (see pytest_scylla.judging.service).

Here the in-process tests; the sessions are in `tests/e2e/test_judge_service.py`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging import service
from pytest_scylla.judging.judges import JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt

ITEMS = [RubricItem(id="Q2", category="code_quality", description="plain", points=1.0)]
PROMPT = Prompt(system="judge", prefix="the case", material="the run")
GATEWAY_URL = "http://127.0.0.1:9/run/alpha-T0-00-r1-judge1-0123"


class Asked:
    """An asker that records what reached it and answers like a judge (or raises)."""

    def __init__(self, raises: Exception | None = None) -> None:
        self.calls: list[tuple[str, str, Prompt, list[RubricItem]]] = []
        self.raises = raises

    def __call__(
        self,
        spec: JudgeSpec,
        prompt: Prompt,
        items: Sequence[RubricItem],
        base_url: str,
        result: JudgeResult,
    ) -> None:
        self.calls.append((spec.model, base_url, prompt, list(items)))
        result.attempts = 1
        if self.raises is not None:
            raise self.raises
        result.valid, result.verdict = True, {"items": {"Q2": {"achieved": 1}}}
        result.usage, result.cost_usd = {"input_tokens": 10}, 0.25
        result.response_model = spec.model


@pytest.fixture
def running() -> Iterator[tuple[service.JudgeService, Asked]]:
    asked = Asked()
    svc = service.JudgeService(asked)
    yield svc, asked
    svc.stop()
    service.use(None)


def _ask(base_url: str = GATEWAY_URL) -> JudgeResult:
    result = JudgeResult(number=2, model="claude-sonnet-5", kind="anthropic")
    assert service.ask_remote(
        JudgeSpec(kind="anthropic", model="claude-sonnet-5"), PROMPT, ITEMS, base_url, result
    )
    return result


def test_a_worker_gets_the_verdict_the_service_asked_for(
    running: tuple[service.JudgeService, Asked],
) -> None:
    svc, asked = running
    service.use(svc.address)
    result = _ask()
    assert asked.calls == [("claude-sonnet-5", GATEWAY_URL, PROMPT, ITEMS)]
    assert (result.valid, result.attempts, result.cost_usd) == (True, 1, 0.25)
    assert result.verdict == {"items": {"Q2": {"achieved": 1}}}
    assert result.usage == {"input_tokens": 10}
    assert (result.number, result.response_model) == (2, "claude-sonnet-5")  # its own number


def test_an_error_in_the_service_is_the_judges_error_as_in_process() -> None:
    asked = Asked(raises=RuntimeError("upstream said no"))
    svc = service.JudgeService(asked)
    try:
        service.use(svc.address)
        result = _ask()
    finally:
        svc.stop()
        service.use(None)
    assert result.valid is False
    assert result.errors == ["RuntimeError: upstream said no"]  # what run_panel would write
    assert result.attempts == 1


@pytest.mark.parametrize("how", ["wrong token", "no token", "not a gateway URL"])
def test_the_service_answers_no_one_but_its_workers(
    running: tuple[service.JudgeService, Asked], how: str
) -> None:
    svc, asked = running
    path, _, token = svc.address.rpartition("#")
    service.use(
        {
            "wrong token": f"{path}#{'0' * len(token)}",
            "no token": f"{path}#",
            "not a gateway URL": svc.address,
        }[how]
    )
    url = "http://attacker.example/steal" if how == "not a gateway URL" else GATEWAY_URL
    result = JudgeResult(number=2, model="claude-sonnet-5", kind="anthropic")
    with pytest.raises(service.ServiceGone):  # closed unanswered
        service.ask_remote(
            JudgeSpec(kind="anthropic", model="claude-sonnet-5"), PROMPT, ITEMS, url, result
        )
    assert asked.calls == []  # the model was never asked
    assert result.attempts == 0
    assert not result.valid
    service.use(svc.address)  # positive control: the same call, as a worker makes it
    _ask()
    assert len(asked.calls) == 1


def test_without_a_service_to_reach_a_worker_asks_its_judges_itself(
    running: tuple[service.JudgeService, Asked],
) -> None:
    svc, asked = running
    service.use(svc.address)
    svc.stop()
    result = JudgeResult(number=1, model="m", kind="anthropic")
    assert not service.ask_remote(
        JudgeSpec(kind="anthropic", model="m"), PROMPT, ITEMS, GATEWAY_URL, result
    )
    assert result.attempts == 0  # nothing was asked: no double call
    assert asked.calls == []
    assert not Path(svc.address.rpartition("#")[0]).parent.exists()  # its folder is removed


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_service_that_dies_mid_call_leaves_the_run_not_judged(
    running: tuple[service.JudgeService, Asked],
) -> None:
    """The controller killed while it asks (SIGKILL to pytest: its workers finish their run in
    flight): no answer comes, and the ask ends as an interruption, past the panel (which
    catches each judge's Exception), so the run is stored "not judged yet" and resume asks its
    judges, as for Ctrl-C (tests/e2e/test_interrupt.py's SIGKILL campaign is the end-to-end
    test)."""
    svc, asked = running
    asked.raises = SystemExit()  # the handler's thread ends without a word, as in a dying process
    service.use(svc.address)
    result = JudgeResult(number=1, model="m", kind="anthropic")
    with pytest.raises(service.ServiceGone):
        service.ask_remote(
            JudgeSpec(kind="anthropic", model="m"), PROMPT, ITEMS, GATEWAY_URL, result
        )
    assert len(asked.calls) == 1  # it was asked
    assert not issubclass(service.ServiceGone, Exception)  # no judge's error
    assert result.errors == []
    assert result.attempts == 0  # nothing half-filled
