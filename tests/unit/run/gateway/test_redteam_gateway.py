"""Red team (#29 items 3-5): the agent's calls against the gateway's budget, model, headers and
body limits. The real gateway over HTTP on loopback, in front of a local stand-in for the vendor
API that bills what it was sent; each attack next to its positive control."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from pytest_scylla.run.gateway import Gateway, Route, limits, sse

MODEL = "claude-haiku-4-5"


class _Vendor(http.server.BaseHTTPRequestHandler):
    """Bills a quarter-token per body byte in and the request's max_tokens out, after `delay`."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, Any]]] = []
    delay: ClassVar[float] = 0.0
    open: ClassVar[list[int]] = [0, 0]  # calls being answered now, the most at once
    output: ClassVar[int | None] = None  # output tokens billed (None: the request's max_tokens)

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).seen.append(
            {"path": self.path, "headers": dict(self.headers.items()), "bytes": len(body)}
        )
        held = type(self).open
        held[0] += 1
        held[1] = max(held)
        time.sleep(type(self).delay)
        held[0] -= 1
        request = json.loads(body)
        if "max_tokens" not in request:  # as Anthropic's API answers it
            return self._answer(
                400,
                "application/json",
                b'{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens"}}',
            )
        usage = {
            "input_tokens": len(body) // 4,
            "output_tokens": type(self).output or int(request["max_tokens"]),
        }
        data = b"".join(
            sse.message_events(
                "m", request["model"], [{"type": "text", "text": "ok"}], "end_turn", usage
            )
        )
        self._answer(200, "text/event-stream", data)

    def _answer(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    _Vendor.seen, _Vendor.delay, _Vendor.open, _Vendor.output = [], 0.0, [0, 0], None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Vendor)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real")
    gw = Gateway(upstream_url=f"http://127.0.0.1:{server.server_address[1]}").start()
    yield gw
    gw.stop()
    server.shutdown()


def _call(
    gw: Gateway,
    key: str,
    body: dict[str, Any] | bytes,
    headers: dict[str, str] | None = None,
    query: str = "",
) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        gw.base_url(key) + "/v1/messages" + query,
        content=content,
        headers={"x-api-key": "dummy", **(headers or {})},
        timeout=30,
    )


def _log(path: Path) -> list[dict[str, Any]]:
    """The call log, once it has a line (a call is logged just after its answer is out)."""
    deadline = time.monotonic() + 5
    while not path.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    return [json.loads(x) for x in path.read_text().splitlines()]


def _at_once(n: int, call: Any) -> list[httpx.Response]:
    """`n` calls released together."""
    barrier = threading.Barrier(n)
    answers: list[httpx.Response] = []

    def one() -> None:
        barrier.wait()
        answers.append(call())

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return answers


def _settled(route: Route) -> None:
    """Every reservation given back (the gateway settles just after the answer is out)."""
    deadline = time.monotonic() + 5
    while (route.in_flight or route.open_calls) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (route.in_flight, route.open_calls) == (0, 0)
    assert route.reserved_usd == pytest.approx(0.0)


# 3. the budget against parallel calls ---------------------------------------------------------
def _race(gw: Gateway, tmp_path: Path) -> tuple[Route, list[httpx.Response]]:
    _Vendor.delay = 2.0  # every call is in flight while the others arrive, even on a busy host
    request = {
        "model": MODEL,
        "max_tokens": 2000,
        "stream": True,
        "messages": [{"role": "user", "content": "x" * 400}],
    }
    one = (len(json.dumps(request)) // 4 * 1.0 + 2000 * 5.0) / 1e6  # what the vendor bills
    route = gw.open(
        Route(
            key="race",
            log_path=tmp_path / "calls.jsonl",
            upstream="anthropic",
            max_cost_usd=3 * one,
        )
    )
    return route, _at_once(10, lambda: _call(gw, "race", request))


def test_parallel_calls_cannot_spend_past_the_run_budget(gateway: Gateway, tmp_path: Path) -> None:
    route, answers = _race(gateway, tmp_path)
    _settled(route)
    assert route.spent_usd <= route.max_cost_usd  # every call in flight held its worst case
    refused = [a for a in answers if a.status_code == 400]
    assert refused
    assert all("budget" in a.text for a in refused)
    assert len(_Vendor.seen) == 10 - len(refused)
    assert route.budget_exceeded
    _settled(route)
    logged = _log(tmp_path / "calls.jsonl")
    assert all(e["reserved_usd"] > 0 for e in logged if e["status"] == 200)


def test_positive_control_without_the_reservation_ten_calls_overspend(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the check before this fix: only what was already spent counts
    monkeypatch.setattr(
        limits, "admit", lambda spent, reserved, estimate, in_flight, limit: spent < limit
    )
    route, answers = _race(gateway, tmp_path)
    assert all(a.status_code == 200 for a in answers)
    _settled(route)
    assert route.spent_usd >= 3 * route.max_cost_usd  # ten at once: over three times the limit


def _honest(gw: Gateway, tmp_path: Path) -> tuple[Route, list[httpx.Response]]:
    """Six calls at once whose worst cases (2,000 output tokens each) together overrun the
    budget, though what they really cost (10 output tokens each) fits it many times over: a
    CLI's side calls and parallel sub-agents."""
    _Vendor.delay, _Vendor.output = 0.5, 10
    request = {
        "model": MODEL,
        "max_tokens": 2000,
        "stream": True,
        "messages": [{"role": "user", "content": "x" * 400}],
    }
    worst = limits.worst_case_usd(MODEL, request, len(json.dumps(request)))
    route = gw.open(
        Route(
            key="honest",
            log_path=tmp_path / "calls.jsonl",
            upstream="anthropic",
            max_cost_usd=2.5 * worst,
        )
    )
    return route, _at_once(6, lambda: _call(gw, "honest", request))


def test_honest_parallel_calls_near_the_budget_wait_their_turn(
    gateway: Gateway, tmp_path: Path
) -> None:
    """None is refused: those that would overrun the budget at their worst wait for a call in
    flight to settle, so no more than two were ever in flight together."""
    route, answers = _honest(gateway, tmp_path)
    assert [a.status_code for a in answers] == [200] * 6
    _settled(route)
    assert not route.budget_exceeded
    assert route.spent_usd <= route.max_cost_usd
    assert _Vendor.open[1] <= 2  # 2.5 worst cases of budget: two at a time


def test_control_refusing_instead_of_waiting_ends_honest_calls(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule before: a call is refused once spent and reserved reach the budget."""
    monkeypatch.setattr(
        limits,
        "admit",
        lambda spent, reserved, estimate, in_flight, limit: spent + reserved < limit,
    )
    route, answers = _honest(gateway, tmp_path)
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 400, 400, 400]
    assert route.budget_exceeded


def test_a_failed_call_gives_its_reservation_back(gateway: Gateway, tmp_path: Path) -> None:
    route = gateway.open(
        Route(key="bad", log_path=tmp_path / "calls.jsonl", upstream="anthropic", max_cost_usd=1.0)
    )
    answer = _call(gateway, "bad", {"model": MODEL, "messages": []})  # refused: no max_tokens
    assert answer.status_code == 400
    _settled(route)
    assert route.spent_usd == 0
    ok = _call(gateway, "bad", {"model": MODEL, "max_tokens": 10, "messages": []})
    assert ok.status_code == 200
    _settled(route)
    assert route.spent_usd > 0


# 5. request bodies and connections -------------------------------------------------------------
def _raw(gw: Gateway, key: str, length: str) -> tuple[bytes, float]:
    """A request that states `length` and sends no body: the answer, and how long it took."""
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as conn:
        conn.sendall(
            f"POST /run/{key}/v1/messages HTTP/1.1\r\nhost: x\r\n"
            f"content-length: {length}\r\n\r\n".encode()
        )
        answer = conn.recv(65536)
    return answer, time.monotonic() - began


@pytest.mark.parametrize(
    ("length", "status"),
    [(str(limits.MAX_BODY_BYTES + 1), b"413"), ("-1", b"400"), ("12abc", b"400"), ("1e9", b"400")],
)
def test_an_oversized_or_malformed_body_is_refused_before_it_is_read(
    gateway: Gateway, tmp_path: Path, length: str, status: bytes
) -> None:
    route = gateway.open(
        Route(
            key="big",
            log_path=tmp_path / "calls.jsonl",
            upstream="anthropic",
            bodies_dir=tmp_path / "bodies",
        )
    )
    answer, took = _raw(gateway, "big", length)
    assert route.called.is_set()  # a refused call still ends the run's start slot
    assert answer.startswith(b"HTTP/1.1 " + status)  # answered without waiting for a body
    assert took < 5
    assert not _Vendor.seen
    assert not (tmp_path / "bodies").exists()  # nothing recorded
    assert _log(tmp_path / "calls.jsonl")[0]["status"] == int(status)


def test_positive_control_a_body_just_under_the_cap_goes_through(
    gateway: Gateway, tmp_path: Path
) -> None:
    gateway.open(Route(key="big", log_path=tmp_path / "calls.jsonl", upstream="anthropic"))
    head = json.dumps({"model": MODEL, "max_tokens": 1, "messages": [], "pad": ""})
    body = head[:-2].encode() + b"y" * (limits.MAX_BODY_BYTES - len(head)) + b'"}'
    assert len(body) == limits.MAX_BODY_BYTES
    answer = _call(gateway, "big", body)
    assert answer.status_code == 200
    assert _Vendor.seen[0]["bytes"] == limits.MAX_BODY_BYTES


def test_calls_beyond_the_open_limit_get_429_without_an_upstream_call(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_OPEN_CALLS", 3)
    _Vendor.delay = 0.5
    route = gateway.open(
        Route(key="flood", log_path=tmp_path / "calls.jsonl", upstream="anthropic")
    )
    request = {"model": MODEL, "max_tokens": 1, "messages": []}
    answers = _at_once(8, lambda: _call(gateway, "flood", request))
    statuses = sorted(a.status_code for a in answers)
    assert 429 in statuses
    assert _Vendor.open[1] <= 3  # never more than the limit at the vendor at once
    assert len(_Vendor.seen) == statuses.count(200)
    _settled(route)
    # positive control: the same calls one after another all go through
    _Vendor.seen = []
    assert all(_call(gateway, "flood", request).status_code == 200 for _ in range(8))
    assert len(_Vendor.seen) == 8


# 4. another model, forwarded headers and query -------------------------------------------------
def test_a_call_naming_another_model_is_refused_and_noted(gateway: Gateway, tmp_path: Path) -> None:
    route = gateway.open(
        Route(
            key="m",
            log_path=tmp_path / "calls.jsonl",
            upstream="anthropic",
            models=frozenset({MODEL}),
        )
    )
    dear = {"model": "claude-opus-4-1", "max_tokens": 10, "messages": []}
    refused = _call(gateway, "m", dear)
    assert refused.status_code == 400
    assert "'claude-opus-4-1' is not this run's" in refused.json()["error"]["message"]
    assert not _Vendor.seen
    assert route.models_refused == {"claude-opus-4-1"}
    assert "is not this run's" in _log(tmp_path / "calls.jsonl")[0]["refused"]
    # positive controls: the run's model (a dated snapshot of it too) goes through, and the
    # same dear call goes through a route that allows any model (the unprotected setting)
    for model in (MODEL, MODEL + "-20251001"):
        answer = _call(gateway, "m", {**dear, "model": model})
        assert answer.status_code == 200
    gateway.open(Route(key="any", log_path=tmp_path / "any.jsonl", upstream="anthropic"))
    assert _call(gateway, "any", dear).status_code == 200
    assert [s["path"] for s in _Vendor.seen] == ["/v1/messages"] * 3


def test_only_allowed_headers_and_query_go_upstream_and_the_rest_is_logged(
    gateway: Gateway, tmp_path: Path
) -> None:
    gateway.open(Route(key="h", log_path=tmp_path / "calls.jsonl", upstream="anthropic"))
    sent = {
        "anthropic-version": "2023-06-01",
        "x-stainless-lang": "js",
        "anthropic-beta": "interleaved-thinking-2025-05-14,context-1m-2025-08-07",
        "x-forwarded-for": "10.0.0.1",
        "x-made-up": "1",
        "cookie": "a=b",
    }
    answer = _call(
        gateway,
        "h",
        {"model": MODEL, "max_tokens": 1, "messages": []},
        sent,
        "?beta=true&evil=1&key=leak",
    )
    assert answer.status_code == 200
    upstream = _Vendor.seen[0]
    assert upstream["path"] == "/v1/messages?beta=true"
    got = {k.lower(): v for k, v in upstream["headers"].items()}
    # positive control: what a model call needs arrives unchanged (the key is the harness's)
    assert got["anthropic-version"] == "2023-06-01"
    assert got["x-stainless-lang"] == "js"
    assert got["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert got["x-api-key"] == "sk-real"
    assert not {"x-forwarded-for", "x-made-up", "cookie"} & set(got)
    logged = _log(tmp_path / "calls.jsonl")[0]
    assert sorted(logged["stripped"]) == sorted(
        ["x-forwarded-for", "x-made-up", "cookie", "anthropic-beta=context-1m-2025-08-07", "?evil"]
    )


def test_each_run_may_call_its_model_and_its_clis_declared_side_models() -> None:
    from pytest_scylla.run.agents.claude_code import ClaudeCode
    from pytest_scylla.run.gateway import allowlist

    models = allowlist.run_models(ClaudeCode(), "claude-sonnet-5")
    assert models == {"claude-sonnet-5", "claude-haiku-4-5"}
    assert allowlist.model_refusal(models, "claude-haiku-4-5-20251001") is None
    assert allowlist.model_refusal(models, "claude-opus-4-8") is not None
    assert allowlist.model_refusal(models, "claude-sonnet-5x") is not None  # not a snapshot


# what a run spent, read as soon as its agent is gone ------------------------------------------
@pytest.mark.parametrize("settling", [True, False], ids=["close-settles", "control-no-settle"])
def test_a_closed_route_has_priced_and_logged_every_call_its_client_saw_answered(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settling: bool
) -> None:
    """The answer reaches the client just before the gateway prices and logs the call: a run
    that reads its cost as soon as its CLI exits (and a judge, and the prompt writer) read it
    after `close`, which waits for that. Here the pricing is always late (as on a loaded
    machine); the control, closing without the wait, reads nothing spent and no log line."""
    account = Gateway.account

    def late(gw: Gateway, *args: Any) -> float:
        time.sleep(0.3)
        return account(gw, *args)

    monkeypatch.setattr(Gateway, "account", late)
    if not settling:
        monkeypatch.setattr(Gateway, "settle", lambda *_args: True)
    log = tmp_path / "calls.jsonl"
    gateway.open(Route(key="late", log_path=log, upstream="anthropic", max_cost_usd=1.0))
    request = {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": "x"}]}
    assert _call(gateway, "late", request).status_code == 200
    route = gateway.close("late")
    assert route is not None
    if settling:
        assert route.spent_usd > 0
        assert len(log.read_text().splitlines()) == 1
    else:
        assert (route.spent_usd, log.read_text()) == (0.0, "")
