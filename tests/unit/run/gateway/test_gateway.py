"""The gateway's parts on their own: usage reading, pricing, the ablation comparison, the oracle's
script, and the proxy's real-upstream path against a local stand-in for the vendor API."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from pytest_scylla.core import pricing
from pytest_scylla.run.gateway import Gateway, Route, sse
from pytest_scylla.run.gateway import reached as ablation
from pytest_scylla.run.gateway.oracle import model as oracle
from pytest_scylla.run.gateway.routes import RetryPolicy


def test_usage_reader_follows_a_stream_cut_anywhere() -> None:
    usage = {
        "input_tokens": 120,
        "output_tokens": 33,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 900,
    }
    data = b"".join(
        sse.message_events(
            "m1",
            "claude-sonnet-5",
            [
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "a"}},
            ],
            "tool_use",
            usage,
        )
    )
    for size in (1, 7, 64, len(data)):
        reader = sse.UsageReader()
        for i in range(0, len(data), size):
            reader.feed(data[i : i + size])
        assert reader.model == "claude-sonnet-5"
        assert reader.stop_reason == "tool_use"
        assert reader.usage == usage


def test_prices_match_the_cli_and_unknown_models_are_priced_high() -> None:
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 1_000_000,
        "cache_creation_input_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000,
    }
    assert pricing.cost("claude-sonnet-5", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)
    assert pricing.price("claude-sonnet-4-5-20250929").input == 3.0  # dated snapshot
    assert pricing.price("claude-opus-4-8").output == 25.0
    unknown = pricing.price("some-new-model")
    assert not unknown.known
    assert unknown.output == max(o for _, o in pricing.PRICES.values())


def _request(
    skills: list[str],
    agents: list[str],
    tools: list[str],
    claude_md: dict[str, str] | None = None,
    system: str = "x" * 20000,
    as_system_message: bool = False,
) -> dict[str, Any]:
    listing = (
        "Available agent types for the Agent tool:\n"
        + "".join(f"- {a}: agent {a} (Tools: *)\n" for a in agents)
        + "\nThe following skills are available for use with the Skill tool:\n\n"
        + "".join(f"- {s}: skill {s}\n" for s in skills)
    )
    md = "".join(
        f"Contents of {p} (project instructions):\n\n{t}\n\n" for p, t in (claude_md or {}).items()
    )
    content = [{"type": "text", "text": f"<system-reminder>\n# claudeMd\n{md}</system-reminder>"}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if as_system_message:
        messages.append({"role": "system", "content": listing})
    else:
        content.append({"type": "text", "text": f"<system-reminder>\n{listing}</system-reminder>"})
    content.append({"type": "text", "text": "Do the task."})
    return {
        "system": [{"type": "text", "text": system}],
        "messages": messages,
        "tools": [{"name": t} for t in tools],
    }


def _expected(**changes: Any) -> ablation.Expected:
    base: dict[str, Any] = dict(
        tools=frozenset({"Bash", "Write", "Skill", "Agent"}),
        mcp_servers=frozenset({"notes"}),
        skills=frozenset({"debug", "mine"}),
        agents=frozenset({"Plan", "helper"}),
        claude_md_path="/w/CLAUDE.md",
        claude_md_blocks=(("rules", "Always run the tests."),),
        other_blocks=(("other", "Never touch the build files under any circumstance."),),
        system_mode="default",
        system_text=None,
        default_system_chars=20000,
    )
    base.update(changes)
    return ablation.Expected(**base)


@pytest.mark.parametrize("as_system_message", [False, True])
def test_ablation_accepts_exactly_the_declaration(as_system_message: bool) -> None:
    request = _request(
        ["debug", "mine"],
        ["Plan", "helper"],
        ["Bash", "Write", "Skill", "Agent", "mcp__notes__note", "ListMcpResourcesTool"],
        {"/w/CLAUDE.md": "Always run the tests."},
        as_system_message=as_system_message,
    )
    assert ablation.compare(_expected(), ablation.observe(request)) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"skills": ["debug"]}, "declared skill 'mine' is missing from the request"),
        (
            {"skills": ["debug", "mine", "stray"]},
            "skill 'stray' is in the request but not declared",
        ),
        ({"agents": ["Plan"]}, "declared agent 'helper' is missing from the request"),
        (
            {"tools": ["Bash", "Write", "Skill", "Agent", "WebFetch", "mcp__notes__note"]},
            "tool 'WebFetch' is in the request but not declared",
        ),
        (
            {"tools": ["Bash", "Write", "Skill", "Agent"]},
            "declared MCP server 'notes' is missing from the request",
        ),
        (
            {"claude_md": {"/w/CLAUDE.md": "Something else."}},
            "declared CLAUDE.md block 'rules' is missing from the request",
        ),
        (
            {
                "claude_md": {
                    "/w/CLAUDE.md": "Always run the tests.",
                    "/home/u/.claude/CLAUDE.md": "Leak.",
                }
            },
            "CLAUDE.md from /home/u/.claude/CLAUDE.md is in the request but not declared",
        ),
        (
            {
                "claude_md": {
                    "/w/CLAUDE.md": "Always run the tests.\n\nNever touch the build files "
                    "under any circumstance."
                }
            },
            "CLAUDE.md block 'other' is in the request but not declared",
        ),
        ({"system": "short"}, "the default system prompt is missing (5 characters)"),
    ],
)
def test_ablation_names_every_difference(change: dict[str, Any], problem: str) -> None:
    args: dict[str, Any] = dict(
        skills=["debug", "mine"],
        agents=["Plan", "helper"],
        tools=["Bash", "Write", "Skill", "Agent", "mcp__notes__note"],
        claude_md={"/w/CLAUDE.md": "Always run the tests."},
    )
    args.update(change)
    assert problem in ablation.compare(_expected(), ablation.observe(_request(**args)))


def test_ablation_checks_allow_and_deny_lists_and_system_prompt_modes() -> None:
    seen = ablation.observe(
        _request(
            ["debug", "mine"],
            ["Plan", "helper"],
            ["Bash", "Write", "mcp__notes__note"],
            {"/w/CLAUDE.md": "Always run the tests."},
            system="s",
        )
    )
    expected = _expected(
        tools=frozenset({"Bash", "Write"}),
        tools_allow=frozenset({"Write"}),
        tools_deny=frozenset({"Bash"}),
        system_mode="replace",
        system_text="be lean",
    )
    problems = ablation.compare(expected, seen)
    assert "tool 'Bash' is outside the declared allow-list" in problems
    assert "denied tool 'Bash' is in the request" in problems
    assert "the declared system prompt text (replace) is missing" in problems


def test_oracle_script_reads_before_it_overwrites_and_finishes(tmp_path: Path) -> None:
    solution = tmp_path / "solution"
    (solution / "pkg").mkdir(parents=True)
    (solution / "pkg" / "a.py").write_text("A = 1\nB = 2\n")
    (solution / "new.md").write_text("# New\n")
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "a.py").write_text("A = 0\n")
    script = oracle.Script.for_case("solution", solution, ws)
    request: dict[str, Any] = {
        "tools": [{"name": "Write"}, {"name": "Read"}],
        "messages": [{"role": "user", "content": "go"}],
    }
    steps = []
    for _ in range(4):
        reply = oracle.answer(script, request)
        steps.append([b.get("name") for b in reply.blocks])
        if reply.stop_reason != "tool_use":
            break
        request["messages"] += [
            {"role": "assistant", "content": reply.blocks},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": b["id"]} for b in reply.blocks],
            },
        ]
    assert steps == [["Read"], ["Write", "Write"], [None]]
    wrong = oracle.Script.for_case("wrong", solution, ws)
    assert dict(wrong.files) == {"new.md": "", "pkg/a.py": "A = 1\n"}
    assert oracle.Script.for_case("noop", solution, ws).files == ()


def test_oracle_answers_side_calls_without_tools() -> None:
    script = oracle.Script(mode="solution", workspace=Path("/w"), files=(("a", "b"),))
    reply = oracle.answer(script, {"messages": [{"role": "user", "content": "title?"}]})
    assert reply.stop_reason == "end_turn"
    assert reply.blocks[0]["type"] == "text"


class _Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    keys: ClassVar[list[str | None]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        type(self).keys.append(self.headers.get("x-api-key"))
        if self.path.startswith("/v1/messages?beta=fail"):  # a query the gateway passes on
            body = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
            self.send_response(529)
            self.send_header("retry-after", "1")
        else:
            body = b"".join(
                sse.message_events(
                    "m",
                    "claude-haiku-4-5",
                    [{"type": "text", "text": "ok"}],
                    "end_turn",
                    {"input_tokens": 1000, "output_tokens": 100},
                )
            )
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-real")
    gw = Gateway(upstream_url=f"http://127.0.0.1:{server.server_address[1]}").start()
    yield gw
    gw.stop()
    server.shutdown()


def test_proxy_streams_unchanged_logs_usage_and_classifies_overload(
    gateway: Gateway, tmp_path: Path
) -> None:
    gateway.retry = RetryPolicy(attempts=2, max_wait=10)
    route = gateway.open(
        Route(key="r1", log_path=tmp_path / "calls.jsonl", upstream="anthropic", max_cost_usd=0.001)
    )
    assert not route.called.is_set()  # until its first call (which ends the run's start slot)
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    url = gateway.base_url("r1") + "/v1/messages"
    with httpx.Client(timeout=30) as client:
        began = time.monotonic()
        busy = client.post(url + "?beta=fail", content=body, headers={"x-api-key": "dummy"})
        assert time.monotonic() - began >= 1  # the gateway waited out retry-after once
        assert busy.status_code == 529  # then passed the second 529 on, unchanged
        assert busy.headers["retry-after"] == "1"
        ok = client.post(url, content=body, headers={"x-api-key": "dummy"})
        assert ok.status_code == 200
        assert b"message_stop" in ok.content
        refused = client.post(url, content=body, headers={"x-api-key": "dummy"})
        assert refused.status_code == 400
        assert "budget" in refused.text
        missing = client.post(gateway.base_url("nope") + "/v1/messages", content=body)
        assert missing.status_code == 404
    assert route.called.is_set()
    assert _Upstream.keys[-3:] == ["sk-real", "sk-real", "sk-real"]  # 529 twice, then 200
    assert route.usage["claude-haiku-4-5"]["input_tokens"] == 1000
    assert route.spent_usd == pytest.approx((1000 * 1 + 100 * 5) / 1e6)
    assert route.budget_exceeded
    assert route.refused == 1
    assert [(e["status"], e["retry_after"], e["retried_by_gateway"]) for e in route.infra] == [
        (529, "1", True),
        (529, "1", False),
    ]
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [x["status"] for x in log] == [529, 200, 400]
    assert (log[0]["attempts"], log[0]["retry_wait_s"]) == (2, 1.0)
    assert log[1]["usage"]["output_tokens"] == 100
    assert log[1]["ttft_s"] >= 0


def test_without_a_credential_only_pass_through_routes_reach_the_upstream(
    gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    gateway.open(Route(key="agent", log_path=tmp_path / "a.jsonl", upstream="anthropic"))
    gateway.open(
        Route(key="login", log_path=tmp_path / "b.jsonl", upstream="anthropic", pass_auth=True)
    )
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    with httpx.Client() as client:
        refused = client.post(
            gateway.base_url("agent") + "/v1/messages",
            content=body,
            headers={"x-api-key": "cli-login"},
        )
        passed = client.post(
            gateway.base_url("login") + "/v1/messages",
            content=body,
            headers={"x-api-key": "cli-login"},
        )
    assert refused.status_code == 401
    assert "ANTHROPIC_API_KEY" in refused.text
    assert passed.status_code == 200
    assert _Upstream.keys[-1] == "cli-login"


def test_oracle_faults_spare_the_harness_baseline_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SCYLLA_ORACLE_FAULT hits the runs' calls, not the CLI baseline probe (a stalled probe
    would hang the session's setup)."""
    from pytest_scylla.run.gateway.oracle import model as oracle

    monkeypatch.setenv("SCYLLA_ORACLE_FAULT", "overloaded")
    request = {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": "Say OK."}]}
    run = oracle.Script(mode="noop", workspace=tmp_path, files=())
    assert oracle.answer(run, request).status == 529
    probe = oracle.Script(mode="noop", workspace=tmp_path, files=(), faults=False)
    assert oracle.answer(probe, request).status == 200


@pytest.mark.parametrize(
    "path", ["/v1/files", "/v1/messages/batches", "/v1/models", "//v1/messages", "/v1/complete"]
)
def test_only_model_endpoints_are_forwarded(gateway: Gateway, tmp_path: Path, path: str) -> None:
    """The gateway is no open proxy: anything but the model endpoints is refused with 403, never
    reaches the upstream (the real credential stays unused) and is logged as refused. The same
    client and route reach /v1/messages (the positive control)."""
    route = gateway.open(Route(key="r", log_path=tmp_path / "calls.jsonl", upstream="anthropic"))
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    before = len(_Upstream.keys)
    with httpx.Client(timeout=30) as client:
        refused = client.post(
            gateway.base_url("r") + path, content=body, headers={"x-api-key": "dummy"}
        )
        assert len(_Upstream.keys) == before  # nothing forwarded
        ok = client.post(
            gateway.base_url("r") + "/v1/messages", content=body, headers={"x-api-key": "dummy"}
        )
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    assert ok.status_code == 200
    assert _Upstream.keys[before:] == ["sk-real"]
    assert route.refused == 1
    deadline = time.monotonic() + 10  # the log line is written once the answer is sent
    while (
        len((tmp_path / "calls.jsonl").read_text().splitlines()) < 2 and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(x["endpoint"], x["status"], "refused" in x) for x in log] == [
        (path, 403, True),
        ("/v1/messages", 200, False),
    ]


def test_attack_file_is_read_once_and_a_bad_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_scylla.run.gateway import attack

    good = tmp_path / "attack.json"
    good.write_text(
        json.dumps({"steps": [[{"name": "Bash", "input": {"command": "true"}}]], "final": "bye"})
    )
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(good))
    loaded = attack.current()
    assert loaded == attack.Attack(steps=((("Bash", {"command": "true"}),),), final="bye")
    script = oracle.Script(mode="solution", workspace=tmp_path, files=())
    request = {
        "tools": [{"name": "Bash"}, {"name": "Write"}],
        "messages": [{"role": "user", "content": "go"}],
    }
    first = oracle.answer(script, request)
    assert [b["input"] for b in first.blocks] == [{"command": "true"}]
    request["messages"] += [
        {"role": "assistant", "content": first.blocks},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": first.blocks[0]["id"], "is_error": True}
            ],
        },
    ]
    assert oracle.answer(script, request).blocks == [{"type": "text", "text": "bye"}]
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": [[{"name": "Bash"}]]}')
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(bad))
    with pytest.raises(attack.AttackFileError, match=r"bad\.json: expected .*KeyError"):
        attack.current()


# Google's Gemini API, relayed: a local server plays Google ------------------------------------
GEMINI_STREAM = (  # as Google streams it (`alt=sse`): \r\n line ends, running usage totals
    b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"index":0}],'
    b'"usageMetadata":{"promptTokenCount":1200,"cachedContentTokenCount":1000,'
    b'"totalTokenCount":1200},"modelVersion":"gemini-2.5-flash","responseId":"r1"}\r\n\r\n'
    b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":" world"}]},'
    b'"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1200,'
    b'"candidatesTokenCount":30,"thoughtsTokenCount":70,"cachedContentTokenCount":1000,'
    b'"totalTokenCount":1300},"modelVersion":"gemini-2.5-flash","responseId":"r1"}\r\n\r\n'
)
GEMINI_STREAM_USAGE = {
    "input_tokens": 200,
    "cache_read_input_tokens": 1000,
    "output_tokens": 100,
}  # thoughts billed as output, cached split out
GEMINI_WHOLE = json.dumps(
    {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Hi."}]},
                "finishReason": "MAX_TOKENS",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 500,
            "candidatesTokenCount": 40,
            "thoughtsTokenCount": 10,
            "totalTokenCount": 550,
        },
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r2",
    },
    indent=1,
).encode()


def test_usage_reader_reads_gemini_streamed_cut_anywhere_and_whole() -> None:
    for stream in (GEMINI_STREAM, GEMINI_STREAM.replace(b"\r\n", b"\n")):
        for size in (1, 2, 7, 64, len(stream)):
            reader = sse.UsageReader()
            for i in range(0, len(stream), size):
                reader.feed(stream[i : i + size])
            assert (reader.model, reader.stop_reason, reader.usage) == (
                "gemini-2.5-flash",
                "STOP",
                GEMINI_STREAM_USAGE,
            )
    whole = sse.UsageReader()
    whole.read_json(GEMINI_WHOLE)
    assert (whole.model, whole.stop_reason, whole.usage) == (
        "gemini-2.5-pro",
        "MAX_TOKENS",
        {"input_tokens": 500, "cache_read_input_tokens": 0, "output_tokens": 50},
    )
    chunks = sse.UsageReader()  # streamGenerateContent without alt=sse: a JSON array of chunks
    chunks.read_json(
        b"[" + b",".join(line[6:] for line in GEMINI_STREAM.split(b"\r\n\r\n") if line) + b"]"
    )
    assert chunks.usage == GEMINI_STREAM_USAGE
    error = sse.UsageReader()
    error.read_json(
        b'{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}'
    )
    assert (error.error or {}).get("type") == "RESOURCE_EXHAUSTED"
    assert (error.error or {}).get("message") == "Quota exceeded"
    assert error.usage == {}


class _Google(http.server.BaseHTTPRequestHandler):
    """Google's Gemini API as the relay meets it: what each call brought, answered in kind."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        type(self).seen.append(
            {
                "path": self.path,
                "key": self.headers.get("x-goog-api-key"),
                "auth": self.headers.get("authorization"),
                "body": json.loads(body),
            }
        )
        streamed = ":streamGenerateContent" in self.path
        data = GEMINI_STREAM if streamed else GEMINI_WHOLE
        self.send_response(200)
        self.send_header(
            "content-type", "text/event-stream" if streamed else "application/json; charset=UTF-8"
        )
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Gateway, Route]]:
    """A gateway with one `gemini` route, opened as the runner opens a Gemini CLI run's (its URL
    from the adapter, which reads GOOGLE_GEMINI_BASE_URL), and the harness's key set."""
    from pytest_scylla.run.agents import gemini_cli

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Google)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    _Google.seen = []
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-harness-key")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    gw = Gateway().start()  # its own upstream stays Anthropic's: the route must not use it
    route = gw.open(
        Route(
            key="g",
            log_path=tmp_path / "calls.jsonl",
            upstream=gemini_cli.ADAPTER.upstream,
            upstream_url=gemini_cli.ADAPTER.upstream_url,
        )
    )
    yield gw, route
    gw.stop()
    server.shutdown()


def _log(path: Path, lines: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10  # the log line is written once the answer is sent
    while len(path.read_text().splitlines()) < lines and time.monotonic() < deadline:
        time.sleep(0.02)
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_gemini_relay_sends_the_harness_key_and_passes_answers_unchanged(
    google: tuple[Gateway, Route], tmp_path: Path
) -> None:
    gateway, route = google
    base = gateway.base_url("g") + "/v1beta/models"
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with httpx.Client(timeout=30) as client:
        streamed = client.post(
            f"{base}/gemini-2.5-flash:streamGenerateContent?alt=sse&key=client-dummy",
            json=request,
            headers={"x-goog-api-key": "client-dummy"},
        )
        whole = client.post(
            f"{base}/gemini-2.5-pro:generateContent?key=client-dummy",
            json=request,
            headers={"x-goog-api-key": "client-dummy", "authorization": "Bearer client-dummy"},
        )
    assert (streamed.status_code, whole.status_code) == (200, 200)
    assert streamed.content == GEMINI_STREAM  # byte for byte, \r\n and all
    assert whole.content == GEMINI_WHOLE
    assert [(s["path"], s["key"], s["auth"]) for s in _Google.seen] == [
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "AIza-harness-key", None),
        ("/v1beta/models/gemini-2.5-pro:generateContent", "AIza-harness-key", None),
    ]
    assert _Google.seen[0]["body"] == request
    calls = _log(tmp_path / "calls.jsonl", 2)
    assert [
        (c["endpoint"], c["upstream"], c["status"], c["stream"], c["model"], c["stop_reason"])
        for c in calls
    ] == [
        (
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "gemini",
            200,
            True,
            "gemini-2.5-flash",
            "STOP",
        ),
        (
            "/v1beta/models/gemini-2.5-pro:generateContent",
            "gemini",
            200,
            False,
            "gemini-2.5-pro",
            "MAX_TOKENS",
        ),
    ]
    assert calls[0]["usage"] == GEMINI_STREAM_USAGE
    assert calls[1]["usage"] == {
        "input_tokens": 500,
        "cache_read_input_tokens": 0,
        "output_tokens": 50,
    }
    flash = (200 * 0.30 + 1000 * 0.30 * 0.25 + 100 * 2.50) / 1e6  # cached input at 0.25x
    pro = (500 * 1.25 + 50 * 10.0) / 1e6
    assert calls[0]["cost_usd"] == pytest.approx(flash, abs=1e-9)
    assert calls[1]["cost_usd"] == pytest.approx(pro, abs=1e-9)
    assert route.spent_usd == pytest.approx(flash + pro)
    assert route.unpriced_models == set()
    # a `gemini` route that names no URL goes to Google's (here GOOGLE_GEMINI_BASE_URL), never
    # to the gateway's default upstream (Anthropic's)
    gateway.open(Route(key="g2", log_path=tmp_path / "g2.jsonl", upstream="gemini"))
    assert (
        httpx.post(
            gateway.base_url("g2") + "/v1beta/models/gemini-2.5-pro:generateContent",
            json=request,
            timeout=30,
        ).content
        == GEMINI_WHOLE
    )
    assert len(_Google.seen) == 3


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-pro:countTokens",
        "/v1beta/models",
        "/v1beta/files",
        "/v1/messages",
        "/chat/completions",
        "/v1beta/tunedModels/x:generateContent",
    ],
)
def test_a_gemini_route_forwards_only_gemini_model_calls(
    google: tuple[Gateway, Route], path: str
) -> None:
    gateway, route = google
    with httpx.Client(timeout=30) as client:
        refused = client.post(
            gateway.base_url("g") + path,
            json={"contents": []},
            headers={"x-goog-api-key": "client-dummy"},
        )
        assert _Google.seen == []  # never forwarded
        ok = client.post(
            gateway.base_url("g") + "/v1beta/models/gemini-2.5-pro:generateContent",
            json={"contents": []},
        )  # the positive control
    assert (refused.status_code, refused.json()["error"]["type"]) == (403, "permission_error")
    assert ok.status_code == 200
    assert [s["path"] for s in _Google.seen] == ["/v1beta/models/gemini-2.5-pro:generateContent"]
    assert route.refused == 1


def test_without_a_gemini_key_nothing_is_forwarded_and_the_session_says_why(
    google: tuple[Gateway, Route], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_scylla.run.agents import gemini_cli
    from pytest_scylla.run.gateway.routes import UpstreamSetupError

    gemini_cli.ADAPTER.check_credential()  # with the key: no complaint (the positive control)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-google-api-key")  # the other name Google reads
    monkeypatch.delenv("GEMINI_API_KEY")
    gateway, _ = google
    url = gateway.base_url("g") + "/v1beta/models/gemini-2.5-pro:generateContent"
    with httpx.Client(timeout=30) as client:
        assert client.post(url, json={"contents": []}).status_code == 200
        monkeypatch.delenv("GOOGLE_API_KEY")
        refused = client.post(
            url, json={"contents": []}, headers={"x-goog-api-key": "client-dummy"}
        )
    assert [s["key"] for s in _Google.seen] == ["AIza-google-api-key"]  # and nothing after
    assert refused.status_code == 401
    message = refused.json()["error"]["message"]
    assert "set GEMINI_API_KEY" in message
    assert "--scylla-oracle (a SIMULATED model)" in message
    with pytest.raises(
        UpstreamSetupError,
        match=r"no model credential for Gemini CLI: set "
        r"GEMINI_API_KEY .*--scylla-oracle",
    ):
        gemini_cli.ADAPTER.check_credential()


def test_googles_sdk_reads_the_relayed_gemini_stream(google: tuple[Gateway, Route]) -> None:
    """Google's own client, pointed at the gateway with a dummy key, streams through the relay:
    it reads the text, finish reason and usage Google sent, and Google saw the harness's key."""
    from google import genai
    from google.genai import types

    gateway, _ = google
    client = genai.Client(
        api_key="client-dummy",
        http_options=types.HttpOptions(base_url=gateway.base_url("g"), api_version="v1beta"),
    )
    pieces = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    assert "".join(p.text or "" for p in pieces) == "Hello world"
    last = pieces[-1]
    assert last.candidates is not None
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None
    assert (
        last.usage_metadata.thoughts_token_count,
        last.usage_metadata.cached_content_token_count,
    ) == (70, 1000)
    [seen] = _Google.seen
    assert seen["path"] == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert seen["key"] == "AIza-harness-key"
