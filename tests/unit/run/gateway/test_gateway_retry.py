"""The gateway's retries and backoff, against a scripted upstream on 127.0.0.1.

The upstream answers request k with step k of its script (the last step repeats): a status with
headers, a connection closed without an answer, or an answer cut off mid-way. It records when
each request arrived and when its answer went out, so the waits the gateway took between attempts
can be checked against the rule in docs/campaigns.md / `RetryPolicy`: an attempt k that
failed without a usable `retry-after` is followed by a wait of `min(cap, base * 2**k) * u`,
u uniform in [0.5, 1) (the jitter); a `retry-after` (seconds or an HTTP date) replaces it; at
most `max_wait` seconds of waiting per call; a 429 asking for more than that is a usage-window
limit. Lower bounds on the waits are exact (a wait never ends early); upper bounds allow SLACK
seconds for a loaded machine.
"""

from __future__ import annotations

import http.server
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest

from pytest_scylla.run.gateway import Gateway, Route
from pytest_scylla.run.gateway.routes import RetryPolicy, retry_after_seconds

SLACK = 1.5  # seconds a noisy 2-core machine may add to any wait
MODEL = "claude-haiku-4-5"  # $1 in, $5 out per million tokens
ANSWER = {
    "type": "message",
    "id": "msg_1",
    "model": MODEL,
    "role": "assistant",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1000, "output_tokens": 100},
}
ANSWER_USD = (1000 * 1.0 + 100 * 5.0) / 1e6


# the scripted upstream ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One upstream answer. cut: "drop" closes the connection without answering; "headers"
    sends a 200's status line and headers, then closes before the body; "body" sends part of a
    200's body, then closes."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    cut: Literal["", "drop", "headers", "body"] = ""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    upstream: Upstream


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        up = self.server.upstream
        up.arrived.append((time.monotonic(), time.time()))
        up.keys.append(self.headers.get("x-api-key"))
        step = up.steps[min(len(up.arrived), len(up.steps)) - 1]
        if step.status == 200:
            body = json.dumps(ANSWER).encode()
        else:
            body = json.dumps(
                {
                    "type": "error",
                    "error": {"type": "api_error", "message": f"test upstream: HTTP {step.status}"},
                }
            ).encode()
        up.answered.append((time.monotonic(), time.time()))
        if step.cut == "drop":
            self.close_connection = True
            return
        self.send_response(step.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in step.headers:
            self.send_header(name, value)
        self.end_headers()
        if step.cut == "headers":
            self.wfile.flush()
            self.close_connection = True
            return
        if step.cut == "body":
            self.wfile.write(body[:20])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@dataclass
class Upstream:
    """A local stand-in for the vendor API, answering with its script."""

    steps: list[Step]
    port: int = 0
    arrived: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, wall)
    answered: list[tuple[float, float]] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = _Server(("127.0.0.1", self.port), _Handler)
        self.server.upstream = self
        self.port = self.server.server_address[1]
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *steps: Step) -> Upstream:
        """Answer the next requests with these steps, forgetting what came before."""
        self.steps[:] = steps
        for seen in (self.arrived, self.answered, self.keys):
            seen.clear()
        return self

    def gaps(self) -> list[float]:
        """Seconds between each answer and the next request: the gateway's wait, plus a little."""
        return [b[0] - a[0] for a, b in zip(self.answered, self.arrived[1:], strict=False)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _closed_port() -> int:
    """A local port with nothing listening on it (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# the gateway and one call through it ----------------------------------------------------------
@dataclass
class Call:
    """What the client saw of one call, and what the gateway recorded of it."""

    response: httpx.Response | None
    error: httpx.TransportError | None
    elapsed: float
    log: dict[str, Any]
    route: Route

    @property
    def infra(self) -> list[tuple[int | None, str | None, bool]]:
        return [(e["status"], e["retry_after"], e["retried_by_gateway"]) for e in self.route.infra]


Upstreams = Callable[..., Upstream]
Gateways = Callable[..., Gateway]


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Gateway, Upstream]]:
    """One upstream and one gateway for the module (a gateway takes a second to stop); the
    gateway finds the upstream through SCYLLA_UPSTREAM_URL, as a session's does."""
    up = Upstream([Step(200)])
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SCYLLA_UPSTREAM_URL", up.url)
        gw = Gateway().start()
    assert gw.upstream_url == up.url
    yield gw, up
    gw.stop()
    up.close()


@pytest.fixture
def upstream(shared: tuple[Gateway, Upstream]) -> Iterator[Upstreams]:
    """upstream(Step(...), ...): the shared upstream with a new script; with port=N, a new
    upstream listening on that port (stopped after the test)."""
    started: list[Upstream] = []

    def start(*steps: Step, port: int | None = None) -> Upstream:
        if port is None:
            return shared[1].script(*steps)
        started.append(Upstream(list(steps), port))
        return started[-1]

    yield start
    for up in started:
        up.close()


@pytest.fixture
def gateway(
    shared: tuple[Gateway, Upstream], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Gateways]:
    """gateway(url, **policy): the shared gateway, sending to `url` with this retry policy and
    no usage-window limit in force; its routes are closed after the test."""
    gw, up = shared
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-held-by-the-gateway")

    def configure(url: str, **policy: Any) -> Gateway:
        gw.upstream_url, gw.retry, gw.limited = url, RetryPolicy(**policy), None
        return gw

    yield configure
    for key in list(gw.routes):
        gw.close(key)
    gw.upstream_url, gw.retry, gw.limited = up.url, RetryPolicy(), None


def _open(gw: Gateway, tmp_path: Path, key: str = "r1") -> Route:
    return gw.open(Route(key=key, log_path=tmp_path / f"{key}.jsonl", upstream="anthropic"))


def _ask(gw: Gateway, route: Route, logged: bool = True) -> Call:
    """One non-streamed /v1/messages call through the route, as the CLI would make it; with
    `logged`, after the gateway has logged it."""
    body = json.dumps(
        {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
    )
    before = len(route.log_path.read_text().splitlines())
    began = time.monotonic()
    response: httpx.Response | None = None
    error: httpx.TransportError | None = None
    try:
        response = httpx.post(
            gw.base_url(route.key) + "/v1/messages",
            content=body,
            headers={"x-api-key": "dummy"},
            timeout=60,
        )
    except httpx.TransportError as exc:
        error = exc
    elapsed = time.monotonic() - began
    if not logged:
        return Call(response, error, elapsed, {}, route)
    deadline = time.monotonic() + 10  # the call's log line follows its answer
    while len(lines := route.log_path.read_text().splitlines()) == before:
        assert time.monotonic() < deadline, "the gateway never logged the call"
        time.sleep(0.01)
    [line] = lines[before:]
    return Call(response, error, elapsed, json.loads(line), route)


def _assert_waits(gaps: list[float], base: float, cap: float = 30.0) -> None:
    """Each gap is at least the jittered backoff's floor and at most its ceiling plus SLACK."""
    for k, gap in enumerate(gaps):
        nominal = min(cap, base * 2.0**k)
        assert 0.5 * nominal <= gap <= nominal + SLACK, (k, gap, nominal)


# the policy on its own ------------------------------------------------------------------------
def test_backoff_doubles_from_the_base_up_to_the_cap_with_jitter_between_half_and_all() -> None:
    """Without retry-after, attempt k waits min(cap, base*2^k) times a jitter spanning [0.5, 1)."""
    policy = RetryPolicy(base=1.0, cap=30.0)
    for k, nominal in enumerate([1, 2, 4, 8, 16, 30, 30]):  # 32 and 64 capped at 30
        delays = [policy.delay(k, None) for _ in range(2000)]
        assert all(0.5 * nominal <= d < nominal for d in delays), k
        assert min(delays) < 0.52 * nominal  # the jitter really spans the range
        assert max(delays) > 0.98 * nominal
    small = RetryPolicy(base=0.2, cap=0.5)
    assert all(0.1 <= small.delay(0, None) < 0.2 for _ in range(200))
    assert all(0.25 <= small.delay(3, None) < 0.5 for _ in range(200))  # 1.6 capped at 0.5


def test_a_retry_after_replaces_the_backoff_and_odd_values_fall_back_to_it() -> None:
    """Seconds or an HTTP date win over the backoff; past dates and negatives wait 0; absent or
    unparsable values are None (the backoff then decides)."""
    policy = RetryPolicy(base=10.0)
    assert policy.delay(0, "7") == 7.0
    assert policy.delay(5, "0.25") == 0.25
    assert policy.delay(0, "-3") == 0.0
    when = math.ceil(time.time()) + 60
    hinted = policy.delay(0, formatdate(when, usegmt=True))
    assert 59 <= hinted <= 61  # 60 s after the next whole second, read a moment later
    assert retry_after_seconds(formatdate(time.time() - 3600, usegmt=True)) == 0.0
    for odd in (None, "", "soon", "Thu, 45 Foo 2024 99:00:00 GMT"):
        assert retry_after_seconds(odd) is None, odd
        assert 5 <= policy.delay(0, odd) < 10  # the backoff of attempt 0, base 10


def test_an_asctime_retry_after_date_is_read_too() -> None:
    """All three HTTP date formats give the same wait."""
    when = time.gmtime(math.ceil(time.time()) + 60)
    asctime = time.strftime("%a %b %e %H:%M:%S %Y", when)
    seconds = retry_after_seconds(asctime)
    assert seconds is not None
    assert 59 <= seconds <= 61


# statuses ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
def test_a_timeout_or_server_error_is_retried_until_the_upstream_answers(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path, status: int
) -> None:
    """Two failures, then an answer: the client sees only the answer, accounted once."""
    up = upstream(Step(status), Step(status), Step(200))
    gw = gateway(up.url, attempts=3, base=0.05)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 200
    assert call.response.json()["content"] == ANSWER["content"]
    assert up.keys == ["sk-held-by-the-gateway"] * 3
    _assert_waits(up.gaps(), base=0.05)
    assert call.infra == [(status, None, True), (status, None, True)]
    assert (call.log["status"], call.log["attempts"]) == (200, 3)
    assert 0.025 + 0.05 <= call.log["retry_wait_s"] <= 0.05 + 0.1  # attempt 0, then 1
    assert call.route.spent_usd == pytest.approx(ANSWER_USD)  # only the answer is paid for


@pytest.mark.parametrize("status", [400, 401, 404, 413])
def test_a_client_error_is_passed_on_without_a_retry(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path, status: int
) -> None:
    """4xx other than 408/429 are the request's fault: asking again would not help."""
    up = upstream(Step(status), Step(200))
    gw = gateway(up.url, attempts=3, base=0.05)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == status
    assert call.response.json()["error"]["message"] == f"test upstream: HTTP {status}"
    assert len(up.arrived) == 1
    assert call.log["status"] == status
    assert "attempts" not in call.log


def test_a_persistent_server_error_backs_off_doubling_then_reaches_the_client(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """503 four times, no retry-after: waits of [0.1, 0.2), [0.2, 0.4), [0.4, 0.8) s (base 0.2),
    then the last 503 goes to the client unchanged."""
    up = upstream(Step(503, (("x-request-id", "req_9"),)))
    gw = gateway(up.url, attempts=4, base=0.2)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 503
    assert call.response.headers["x-request-id"] == "req_9"
    assert call.response.json()["error"]["message"] == "test upstream: HTTP 503"
    assert len(up.arrived) == 4
    gaps = up.gaps()
    _assert_waits(gaps, base=0.2)
    assert gaps[2] > gaps[0]  # [0.4, ..) against [0.1, 0.2 + a moment)
    assert call.infra == [(503, None, True)] * 3 + [(503, None, False)]
    assert (call.log["status"], call.log["attempts"]) == (503, 4)
    assert 0.1 + 0.2 + 0.4 <= call.log["retry_wait_s"] <= 0.2 + 0.4 + 0.8
    assert call.log["retry_wait_s"] <= sum(gaps) + 0.001  # the waits happened between attempts
    assert call.elapsed >= call.log["retry_wait_s"]


def test_the_backoff_stops_doubling_at_the_cap(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """base 0.2, cap 0.2: three waits of [0.1, 0.2) s, in all < 0.6 s (uncapped: >= 0.7 s)."""
    up = upstream(Step(500))
    gw = gateway(up.url, attempts=4, base=0.2, cap=0.2)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 500
    assert len(up.arrived) == 4
    _assert_waits(up.gaps(), base=0.2, cap=0.2)
    assert 0.3 <= call.log["retry_wait_s"] <= 0.6


def test_retry_wait_bounds_the_waiting_of_one_call(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """max_wait 0.25 s, base 0.2: the first wait (<= 0.2 s) fits, a second (>= 0.2 s more)
    would not, so the call ends after two attempts of the ten allowed; not a usage window."""
    limits: list[tuple[float, str]] = []
    up = upstream(Step(502))
    gw = gateway(
        up.url,
        attempts=10,
        base=0.2,
        max_wait=0.25,
        on_long_limit=lambda s, why: limits.append((s, why)),
    )
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 502
    assert len(up.arrived) == 2
    _assert_waits(up.gaps(), base=0.2)
    assert call.infra == [(502, None, True), (502, None, False)]
    assert (call.log["attempts"], call.log["retry_wait_s"] <= 0.25) == (2, True)
    assert (limits, gw.limited) == ([], None)


# lost connections -------------------------------------------------------------------------------
def test_a_connection_closed_before_any_answer_is_retried(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """The upstream hangs up twice without answering, then answers: the client sees the answer."""
    up = upstream(Step(cut="drop"), Step(cut="drop"), Step(200))
    gw = gateway(up.url, attempts=3, base=0.05)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 200
    assert call.response.json()["id"] == "msg_1"
    assert len(up.arrived) == 3
    _assert_waits(up.gaps(), base=0.05)
    assert call.infra == [(None, None, True), (None, None, True)]
    assert all("RemoteProtocolError" in e["detail"] for e in call.route.infra)
    assert (call.log["status"], call.log["attempts"]) == (200, 3)


def test_a_refused_connection_is_retried_then_reported_as_unreachable(
    gateway: Gateways, tmp_path: Path
) -> None:
    """Nothing listens upstream: three attempts with backoff, then a 502 naming the cause."""
    gw = gateway(f"http://127.0.0.1:{_closed_port()}", attempts=3, base=0.1)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 502
    message = call.response.json()["error"]["message"]
    assert "upstream unreachable" in message
    assert "ConnectError" in message
    assert call.infra == [(None, None, True), (None, None, True), (None, None, False)]
    assert (call.log["status"], call.log["attempts"]) == (None, 3)
    assert 0.05 + 0.1 <= call.log["retry_wait_s"] <= 0.1 + 0.2
    assert call.log["retry_wait_s"] <= call.elapsed <= 0.3 + SLACK


def test_a_refused_connection_recovers_once_the_upstream_listens(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """The upstream comes up during the gateway's first wait: the retry reaches it."""
    port = _closed_port()
    gw = gateway(f"http://127.0.0.1:{port}", attempts=3, base=0.6)  # first wait >= 0.3 s
    route = _open(gw, tmp_path)
    started: list[Upstream] = []

    def start_after_the_first_refusal() -> None:
        deadline = time.monotonic() + 10
        while not route.infra and time.monotonic() < deadline:
            time.sleep(0.005)
        started.append(upstream(Step(200), port=port))

    watcher = threading.Thread(target=start_after_the_first_refusal)
    watcher.start()
    call = _ask(gw, route)
    watcher.join()
    assert call.response is not None
    assert call.response.status_code == 200
    assert len(started[0].arrived) == 1
    assert call.infra == [(None, None, True)]
    assert "ConnectError" in route.infra[0]["detail"]
    assert (call.log["status"], call.log["attempts"]) == (200, 2)
    assert 0.3 <= call.log["retry_wait_s"] <= 0.6


def test_a_connection_cut_after_the_answer_began_is_not_retried(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """Part of the body already went to the client: a retry would splice two answers, so the
    gateway cuts the client's connection too and notes the failure."""
    up = upstream(Step(200, cut="body"), Step(200))
    gw = gateway(up.url, attempts=3, base=0.05)
    call = _ask(gw, _open(gw, tmp_path))
    assert isinstance(call.error, httpx.RemoteProtocolError)
    assert len(up.arrived) == 1
    assert call.infra == [(None, None, False)]
    assert "RemoteProtocolError" in call.route.infra[0]["detail"]
    assert call.log["status"] is None
    assert "attempts" not in call.log


def test_a_connection_cut_after_the_headers_never_corrupts_the_clients_answer(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """Either the retry's answer reaches the client whole, or there is no retry."""
    up = upstream(Step(200, cut="headers"), Step(200))
    gw = gateway(up.url, attempts=3, base=0.05)
    call = _ask(gw, _open(gw, tmp_path), logged=False)  # a broken client may leave no log
    if call.error is None:
        assert call.response is not None
        assert (call.response.status_code, call.response.json()["id"]) == (200, "msg_1")
    else:
        assert len(up.arrived) == 1, call.error


# retry-after ------------------------------------------------------------------------------------
def test_an_http_date_retry_after_is_waited_out(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """429 with `retry-after: <date>` a second or so ahead: the retry comes at that date, not
    after the backoff (base 10 s: 5 s or more)."""
    when = math.ceil(time.time() + 0.3)
    date = formatdate(when, usegmt=True)
    up = upstream(Step(429, (("retry-after", date),)), Step(200))
    gw = gateway(up.url, attempts=3, base=10.0, max_wait=30)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 200
    assert len(up.arrived) == 2
    answered_wall = up.answered[0][1]
    retried_wall = up.arrived[1][1]
    assert when - 0.01 <= retried_wall <= when + SLACK  # 10 ms: time.time() vs monotonic waits
    assert call.infra == [(429, date, True)]
    assert call.log["attempts"] == 2
    assert when - answered_wall - SLACK <= call.log["retry_wait_s"] <= when - answered_wall + 0.001


def test_a_retry_after_date_in_the_past_means_retry_at_once(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """A date an hour ago: no negative wait, and no backoff (base 10 s) either."""
    date = formatdate(time.time() - 3600, usegmt=True)
    up = upstream(Step(503, (("retry-after", date),)), Step(200))
    gw = gateway(up.url, attempts=3, base=10.0, max_wait=30)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 200
    assert len(up.arrived) == 2
    assert 0 <= up.gaps()[0] <= SLACK
    assert call.infra == [(503, date, True)]
    assert (call.log["attempts"], call.log["retry_wait_s"]) == (2, 0.0)


def test_an_unparsable_retry_after_falls_back_to_the_backoff(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """`retry-after: soon` counts as absent: waits of [0.1, 0.2) then [0.2, 0.4) s (base 0.2)."""
    up = upstream(Step(529, (("retry-after", "soon"),)))
    gw = gateway(up.url, attempts=3, base=0.2)
    call = _ask(gw, _open(gw, tmp_path))
    assert call.response is not None
    assert call.response.status_code == 529
    assert call.response.headers["retry-after"] == "soon"  # passed on as it came
    assert len(up.arrived) == 3
    _assert_waits(up.gaps(), base=0.2)
    assert call.infra == [(529, "soon", True), (529, "soon", True), (529, "soon", False)]
    assert 0.1 + 0.2 <= call.log["retry_wait_s"] <= 0.2 + 0.4


def test_a_429_dated_past_retry_wait_is_a_usage_window_limit(
    upstream: Upstreams, gateway: Gateways, tmp_path: Path
) -> None:
    """A 429 whose retry-after date is an hour away (> max_wait 30 s): no retry, the session is
    told the window's length, the client gets the 429 without retry-after, and the next call is
    answered by the gateway without reaching the upstream."""
    limits: list[tuple[float, str]] = []
    when = math.ceil(time.time()) + 3600
    date = formatdate(when, usegmt=True)
    up = upstream(Step(429, (("retry-after", date),)))
    gw = gateway(
        up.url,
        attempts=4,
        base=0.05,
        max_wait=30,
        on_long_limit=lambda s, why: limits.append((s, why)),
    )
    route = _open(gw, tmp_path)
    call = _ask(gw, route)
    assert call.response is not None
    assert call.response.status_code == 429
    assert "retry-after" not in call.response.headers
    assert len(up.arrived) == 1
    [(seconds, why)] = limits
    assert 3600 - SLACK <= seconds <= 3600 + 1
    assert why == "test upstream: HTTP 429"
    assert gw.limited is not None
    assert gw.limited[0] == pytest.approx(when, abs=SLACK)
    assert call.infra == [(429, date, False)]
    assert route.infra[0]["detail"] == "usage-window limit: test upstream: HTTP 429"
    assert "attempts" not in call.log
    again = _ask(gw, route)
    assert again.response is not None
    assert again.response.status_code == 429
    assert "new runs are paused" in again.response.json()["error"]["message"]
    assert len(up.arrived) == 1
