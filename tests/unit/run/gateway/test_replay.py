"""Replay: an experiment recorded with `--scylla-record-bodies` re-runs with `--scylla-replay`,
every model call (agent and judges) answered from the recording and nothing else: the exports
are the original's, timings apart; a request the recording does not have ends its run as an
infra_error naming the call and the difference.

Here the in-process tests; the sessions are in `tests/e2e/test_replay.py`."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_scylla.run.gateway import replay


def test_what_differs_between_two_runs_of_the_same_thing_is_ignored() -> None:
    one = {
        "metadata": {"user_id": "a"},
        "messages": [
            {
                "role": "user",
                "content": "in /tmp/scylla-run-ab_cd123/work on 2026-11-25; "
                "<run-data-0123456789abcdef>x</run-data-0123456789abcdef>",
            }
        ],
        "input": [
            {"type": "message", "id": "msg_01a214d4-4afa-7081-aace-70901fdfca10"},
            {
                "type": "function_call_output",
                "output": "Chunk ID: 5546d7\nWall time: 0.0012 seconds",
            },
        ],
    }
    two = json.loads(
        json.dumps(one)
        .replace("ab_cd123", "zz-9y8x7")
        .replace("2026-11-25", "2027-01-02")
        .replace("0123456789abcdef", "fedcba9876543210")
        .replace("5546d7", "7c54bf")
        .replace("0.0012", "0.0101")
        .replace('"a"', '"b"')
        .replace("70901fdfca10", "99999fdfca10")
    )
    assert replay.normalized(one) == replay.normalized(two)
    three = json.loads(json.dumps(one).replace("work on", "work in"))
    assert replay.difference(replay.normalized(one), replay.normalized(three)) == (
        "$.messages[0].content at character 30: recorded 'on <date>; <run-data-<fence>>x"
        "</run-data-<fence>>', now 'in <date>; <run-data-<fence>>x</run-data-<fence>>'"
    )


def test_a_hostile_recording_cannot_inject_headers_or_paths(tmp_path: Path) -> None:
    """A recording may come from anyone. One whose meta carries a header line in its content
    type, a status that is no status, a folder name that is no run's and counts that are no
    numbers is answered as data: one content-type header, a 502, its bytes unchanged, nothing
    counted. Positive control: the same value written as the header the naive way does add a
    header of its own."""
    import http.server
    import threading

    import httpx

    from pytest_scylla.run.gateway import Gateway, Route

    folder = tmp_path / "bodies"
    folder.mkdir()
    request = {"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": "hi"}]}
    (folder / "0001.request.json").write_text(json.dumps(request))
    (folder / "0001.response").write_bytes(b'{"type": "message", "content": "a a"}')
    evil = "text/event-stream\r\nSet-Cookie: stolen=1"
    (folder / "0001.meta.json").write_text(
        json.dumps(
            {
                "status": "200\r\nX-Evil: 1",
                "content_type": evil,
                "private": "a",
                "model": "claude-haiku-4-5",
                "usage": {"input_tokens": "9" * 9, "output_tokens": -5},
            }
        )
    )
    gw = Gateway().start()
    try:
        route = gw.open(
            Route(
                key="r",
                log_path=tmp_path / "calls.jsonl",
                replay=replay.Recording.load(folder),
                private="scylla-run-abcd1234",
            )
        )
        with httpx.Client(timeout=30) as client:
            answer = client.post(gw.base_url("r") + "/v1/messages", json=request)
    finally:
        gw.stop()
    assert answer.status_code == 502
    assert answer.headers.get_list("content-type") == ["text/event-stream"]
    assert "set-cookie" not in answer.headers
    assert "x-evil" not in answer.headers
    assert answer.content == b'{"type": "message", "content": "a a"}'  # "a" is no run folder
    assert route.spent_usd == 0.0

    class Naive(http.server.BaseHTTPRequestHandler):  # the positive control
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", evil)
            self.send_header("content-length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Naive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        naive = httpx.get(f"http://127.0.0.1:{server.server_address[1]}/", timeout=30)
    finally:
        server.shutdown()
    assert naive.headers.get("set-cookie") == "stolen=1"
