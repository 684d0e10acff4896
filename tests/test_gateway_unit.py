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
from pytest_scylla.run.gateway import Gateway, Route, ablation, oracle, sse
from pytest_scylla.run.gateway.routes import RetryPolicy


def test_usage_reader_follows_a_stream_cut_anywhere() -> None:
    usage = {"input_tokens": 120, "output_tokens": 33, "cache_creation_input_tokens": 7,
             "cache_read_input_tokens": 900}
    data = b"".join(sse.message_events("m1", "claude-sonnet-5", [
        {"type": "text", "text": "hi"},
        {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "a"}}],
        "tool_use", usage))
    for size in (1, 7, 64, len(data)):
        reader = sse.UsageReader()
        for i in range(0, len(data), size):
            reader.feed(data[i:i + size])
        assert reader.model == "claude-sonnet-5"
        assert reader.stop_reason == "tool_use"
        assert reader.usage == usage


def test_prices_match_the_cli_and_unknown_models_are_priced_high() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000,
             "cache_creation_input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000}
    assert pricing.cost("claude-sonnet-5", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)
    assert pricing.price("claude-sonnet-4-5-20250929").input == 3.0  # dated snapshot
    assert pricing.price("claude-opus-4-8").output == 25.0
    unknown = pricing.price("some-new-model")
    assert not unknown.known
    assert unknown.output == max(o for _, o in pricing.PRICES.values())


def _request(skills: list[str], agents: list[str], tools: list[str],
             claude_md: dict[str, str] | None = None, system: str = "x" * 20000,
             as_system_message: bool = False) -> dict[str, Any]:
    listing = ("Available agent types for the Agent tool:\n"
               + "".join(f"- {a}: agent {a} (Tools: *)\n" for a in agents)
               + "\nThe following skills are available for use with the Skill tool:\n\n"
               + "".join(f"- {s}: skill {s}\n" for s in skills))
    md = "".join(f"Contents of {p} (project instructions):\n\n{t}\n\n"
                 for p, t in (claude_md or {}).items())
    content = [{"type": "text", "text": f"<system-reminder>\n# claudeMd\n{md}</system-reminder>"}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if as_system_message:
        messages.append({"role": "system", "content": listing})
    else:
        content.append({"type": "text", "text": f"<system-reminder>\n{listing}</system-reminder>"})
    content.append({"type": "text", "text": "Do the task."})
    return {"system": [{"type": "text", "text": system}], "messages": messages,
            "tools": [{"name": t} for t in tools]}


def _expected(**changes: Any) -> ablation.Expected:
    base: dict[str, Any] = dict(
        tools=frozenset({"Bash", "Write", "Skill", "Agent"}), mcp_servers=frozenset({"notes"}),
        skills=frozenset({"debug", "mine"}), agents=frozenset({"Plan", "helper"}),
        claude_md_path="/w/CLAUDE.md", claude_md_blocks=(("rules", "Always run the tests."),),
        other_blocks=(("other", "Never touch the build files under any circumstance."),),
        system_mode="default", system_text=None, default_system_chars=20000)
    base.update(changes)
    return ablation.Expected(**base)


@pytest.mark.parametrize("as_system_message", [False, True])
def test_ablation_accepts_exactly_the_declaration(as_system_message: bool) -> None:
    request = _request(["debug", "mine"], ["Plan", "helper"],
                       ["Bash", "Write", "Skill", "Agent", "mcp__notes__note",
                        "ListMcpResourcesTool"],
                       {"/w/CLAUDE.md": "Always run the tests."},
                       as_system_message=as_system_message)
    assert ablation.compare(_expected(), ablation.observe(request)) == []


@pytest.mark.parametrize(("change", "problem"), [
    ({"skills": ["debug"]}, "declared skill 'mine' is missing from the request"),
    ({"skills": ["debug", "mine", "stray"]}, "skill 'stray' is in the request but not declared"),
    ({"agents": ["Plan"]}, "declared agent 'helper' is missing from the request"),
    ({"tools": ["Bash", "Write", "Skill", "Agent", "WebFetch", "mcp__notes__note"]},
     "tool 'WebFetch' is in the request but not declared"),
    ({"tools": ["Bash", "Write", "Skill", "Agent"]},
     "declared MCP server 'notes' is missing from the request"),
    ({"claude_md": {"/w/CLAUDE.md": "Something else."}},
     "declared CLAUDE.md block 'rules' is missing from the request"),
    ({"claude_md": {"/w/CLAUDE.md": "Always run the tests.",
                    "/home/u/.claude/CLAUDE.md": "Leak."}},
     "CLAUDE.md from /home/u/.claude/CLAUDE.md is in the request but not declared"),
    ({"claude_md": {"/w/CLAUDE.md": "Always run the tests.\n\nNever touch the build files "
                                    "under any circumstance."}},
     "CLAUDE.md block 'other' is in the request but not declared"),
    ({"system": "short"}, "the default system prompt is missing (5 characters)"),
])
def test_ablation_names_every_difference(change: dict[str, Any], problem: str) -> None:
    args: dict[str, Any] = dict(skills=["debug", "mine"], agents=["Plan", "helper"],
                                tools=["Bash", "Write", "Skill", "Agent", "mcp__notes__note"],
                                claude_md={"/w/CLAUDE.md": "Always run the tests."})
    args.update(change)
    assert problem in ablation.compare(_expected(), ablation.observe(_request(**args)))


def test_ablation_checks_allow_and_deny_lists_and_system_prompt_modes() -> None:
    seen = ablation.observe(_request(["debug", "mine"], ["Plan", "helper"],
                                     ["Bash", "Write", "mcp__notes__note"],
                                     {"/w/CLAUDE.md": "Always run the tests."}, system="s"))
    expected = _expected(tools=frozenset({"Bash", "Write"}), tools_allow=frozenset({"Write"}),
                         tools_deny=frozenset({"Bash"}), system_mode="replace",
                         system_text="be lean")
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
    request: dict[str, Any] = {"tools": [{"name": "Write"}, {"name": "Read"}],
                               "messages": [{"role": "user", "content": "go"}]}
    steps = []
    for _ in range(4):
        reply = oracle.answer(script, request)
        steps.append([b.get("name") for b in reply.blocks])
        if reply.stop_reason != "tool_use":
            break
        request["messages"] += [{"role": "assistant", "content": reply.blocks},
                                {"role": "user", "content": [
                                    {"type": "tool_result", "tool_use_id": b["id"]}
                                    for b in reply.blocks]}]
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
        if self.path.startswith("/v1/messages?fail"):
            body = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
            self.send_response(529)
            self.send_header("retry-after", "1")
        else:
            body = b"".join(sse.message_events("m", "claude-haiku-4-5",
                                               [{"type": "text", "text": "ok"}], "end_turn",
                                               {"input_tokens": 1000, "output_tokens": 100}))
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


def test_proxy_streams_unchanged_logs_usage_and_classifies_overload(gateway: Gateway,
                                                                   tmp_path: Path) -> None:
    gateway.retry = RetryPolicy(attempts=2, max_wait=10)
    route = gateway.open(Route(key="r1", log_path=tmp_path / "calls.jsonl", upstream="anthropic",
                               max_cost_usd=0.001))
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    url = gateway.base_url("r1") + "/v1/messages"
    with httpx.Client(timeout=30) as client:
        began = time.monotonic()
        busy = client.post(url + "?fail", content=body, headers={"x-api-key": "dummy"})
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
    assert _Upstream.keys[-3:] == ["sk-real", "sk-real", "sk-real"]  # 529 twice, then 200
    assert route.usage["claude-haiku-4-5"]["input_tokens"] == 1000
    assert route.spent_usd == pytest.approx((1000 * 1 + 100 * 5) / 1e6)
    assert route.budget_exceeded
    assert route.refused == 1
    assert [(e["status"], e["retry_after"], e["retried_by_gateway"]) for e in route.infra] == [
        (529, "1", True), (529, "1", False)]
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [x["status"] for x in log] == [529, 200, 400]
    assert (log[0]["attempts"], log[0]["retry_wait_s"]) == (2, 1.0)
    assert log[1]["usage"]["output_tokens"] == 100
    assert log[1]["ttft_s"] >= 0


def test_without_a_credential_only_pass_through_routes_reach_the_upstream(
        gateway: Gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    gateway.open(Route(key="agent", log_path=tmp_path / "a.jsonl", upstream="anthropic"))
    gateway.open(Route(key="login", log_path=tmp_path / "b.jsonl", upstream="anthropic",
                       pass_auth=True))
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    with httpx.Client() as client:
        refused = client.post(gateway.base_url("agent") + "/v1/messages", content=body,
                              headers={"x-api-key": "cli-login"})
        passed = client.post(gateway.base_url("login") + "/v1/messages", content=body,
                             headers={"x-api-key": "cli-login"})
    assert refused.status_code == 401
    assert "ANTHROPIC_API_KEY" in refused.text
    assert passed.status_code == 200
    assert _Upstream.keys[-1] == "cli-login"


def test_oracle_faults_spare_the_harness_baseline_probe(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """SCYLLA_ORACLE_FAULT hits the runs' calls, not the CLI baseline probe (a stalled probe
    would hang the session's setup)."""
    from pytest_scylla.run.gateway import oracle

    monkeypatch.setenv("SCYLLA_ORACLE_FAULT", "overloaded")
    request = {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": "Say OK."}]}
    run = oracle.Script(mode="noop", workspace=tmp_path, files=())
    assert oracle.answer(run, request).status == 529
    probe = oracle.Script(mode="noop", workspace=tmp_path, files=(), faults=False)
    assert oracle.answer(probe, request).status == 200


@pytest.mark.parametrize("path", ["/v1/files", "/v1/messages/batches", "/v1/models",
                                  "//v1/messages", "/v1/complete"])
def test_only_model_endpoints_are_forwarded(gateway: Gateway, tmp_path: Path,
                                            path: str) -> None:
    """The gateway is no open proxy: anything but the model endpoints is refused with 403, never
    reaches the upstream (the real credential stays unused) and is logged as refused. The same
    client and route reach /v1/messages (the positive control)."""
    route = gateway.open(Route(key="r", log_path=tmp_path / "calls.jsonl", upstream="anthropic"))
    body = json.dumps({"model": "claude-haiku-4-5", "stream": True, "messages": []})
    before = len(_Upstream.keys)
    with httpx.Client(timeout=30) as client:
        refused = client.post(gateway.base_url("r") + path, content=body,
                              headers={"x-api-key": "dummy"})
        assert len(_Upstream.keys) == before  # nothing forwarded
        ok = client.post(gateway.base_url("r") + "/v1/messages", content=body,
                         headers={"x-api-key": "dummy"})
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    assert ok.status_code == 200
    assert _Upstream.keys[before:] == ["sk-real"]
    assert route.refused == 1
    deadline = time.monotonic() + 10  # the log line is written once the answer is sent
    while len((tmp_path / "calls.jsonl").read_text().splitlines()) < 2 \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    log = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(x["endpoint"], x["status"], "refused" in x) for x in log] == [
        (path, 403, True), ("/v1/messages", 200, False)]


def test_attack_file_is_read_once_and_a_bad_one_is_named(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_scylla.run.gateway import attack

    good = tmp_path / "attack.json"
    good.write_text(json.dumps({"steps": [[{"name": "Bash", "input": {"command": "true"}}]],
                                "final": "bye"}))
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(good))
    loaded = attack.current()
    assert loaded == attack.Attack(steps=((("Bash", {"command": "true"}),),), final="bye")
    script = oracle.Script(mode="solution", workspace=tmp_path, files=())
    request = {"tools": [{"name": "Bash"}, {"name": "Write"}],
               "messages": [{"role": "user", "content": "go"}]}
    first = oracle.answer(script, request)
    assert [b["input"] for b in first.blocks] == [{"command": "true"}]
    request["messages"] += [{"role": "assistant", "content": first.blocks},
                            {"role": "user", "content": [{"type": "tool_result",
                                                          "tool_use_id": first.blocks[0]["id"],
                                                          "is_error": True}]}]
    assert oracle.answer(script, request).blocks == [{"type": "text", "text": "bye"}]
    bad = tmp_path / "bad.json"
    bad.write_text('{"steps": [[{"name": "Bash"}]]}')
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(bad))
    with pytest.raises(attack.AttackFileError, match=r"bad\.json: expected .*KeyError"):
        attack.current()
