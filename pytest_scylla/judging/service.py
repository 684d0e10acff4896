"""One judge service per xdist session: the controller asks the Anthropic judges for all its
workers, so that the SDK (about 1 CPU-second to import, measured) is imported once per session
instead of once per worker. On a 2-core machine, eight workers each importing it spent 4.6 s of
both cores before their first verdict.

Each worker still builds the prompt and opens the gateway route of every call (its ledger, its
logs, its credential), so the service only holds the SDK conversation: it calls nothing but
`http://127.0.0.1:` routes, answers only callers that present the session's token, and listens
on a unix socket in a private folder of the host's temp dir, which no sandbox binds. A worker
that cannot reach the service (another host, a controller gone) asks in its own process."""

from __future__ import annotations

import hmac
import json
import secrets
import socket
import socketserver
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.core.warm import import_soon
from pytest_scylla.formats.rubric import RubricItem
from pytest_scylla.judging.judges import JudgeResult, JudgeSpec
from pytest_scylla.judging.prompt import Prompt

Asker = Callable[[JudgeSpec, Prompt, Sequence[RubricItem], str, JudgeResult], None]
LOCAL_GATEWAY = "http://127.0.0.1:"  # the only URLs it calls: its workers' gateway routes
FILLED = ("valid", "attempts", "errors", "verdict", "usage", "cost_usd", "response_model")

_address: str | None = None  # this worker's service, "<socket>#<token>", from its controller


class ServiceGone(BaseException):
    """The session's judge service closed mid-call: its controller was killed, or the session
    is ending. Not one judge's error (the panel lets it through): the run is left "not judged
    yet", as for any interruption, and the next session asks its judges, as an uninterrupted
    one would have. (Asking again here would make the run's verdict cost what a second call on
    the same route costs, not what its judging costs.)"""


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    token = ""
    ask: Asker


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        try:
            asked = json.loads(self.rfile.readline())
            if not hmac.compare_digest(str(asked["token"]).encode(), self.server.token.encode()):
                return  # not a worker of this session: closed unanswered
            base_url = str(asked["base_url"])
            if not base_url.startswith(LOCAL_GATEWAY):
                return
            spec = JudgeSpec(kind="anthropic", model=str(asked["model"]))
            prompt = Prompt(**asked["prompt"])
            items = [RubricItem(**item) for item in asked["items"]]
        except (ValueError, KeyError, TypeError, AttributeError):
            return
        result = JudgeResult(number=0, model=spec.model, kind=spec.kind)
        raised = None
        try:
            self.server.ask(spec, prompt, items, base_url, result)
        except Exception as exc:  # the worker records it as the judge's error, as in-process
            raised = f"{type(exc).__name__}: {exc}"
        answer = {"result": {k: getattr(result, k) for k in FILLED}, "raised": raised}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class JudgeService:
    """The controller's service; `address` is handed to each worker (`use`)."""

    def __init__(self, ask: Asker) -> None:
        self.folder = claim_private("scylla-judge-")
        path = self.folder / "judges.sock"
        self._server = _Server(str(path), _Handler)
        self._server.token, self._server.ask = secrets.token_hex(16), ask
        self.address = f"{path}#{self._server.token}"
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scylla-judges",
            daemon=True,
        ).start()
        import_soon("anthropic")  # while the workers start

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        close = getattr(self._server.ask, "close", None)
        if close is not None:
            close()
        release_private(self.folder)


def use(address: str | None) -> None:
    """Ask this process's Anthropic judges through the service at `address` (None: here)."""
    global _address
    _address = address


def remote() -> bool:
    """Whether this process's Anthropic judges are asked by a service."""
    return _address is not None


def ask_remote(
    spec: JudgeSpec, prompt: Prompt, items: Sequence[RubricItem], base_url: str, result: JudgeResult
) -> bool:
    """Ask through the session's service and fill in `result` as an in-process ask would;
    False when there is no service to reach (nothing was asked: the caller asks itself).
    Raises ServiceGone when it closed without an answer (the call may have been made)."""
    if _address is None:
        return False
    path, _, token = _address.rpartition("#")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return False
    request = {
        "token": token,
        "model": spec.model,
        "base_url": base_url,
        "prompt": asdict(prompt),
        "items": [asdict(item) for item in items],
    }
    with conn, conn.makefile("rwb") as stream:
        stream.write(json.dumps(request).encode() + b"\n")
        stream.flush()
        line = stream.readline()
    if not line:  # the controller is gone (killed, or ending)
        raise ServiceGone("the session's judge service closed without an answer")
    answer: dict[str, Any] = json.loads(line)
    for key in FILLED:
        setattr(result, key, answer["result"][key])
    if answer["raised"]:
        result.errors.append(answer["raised"])
        result.valid = False
    return True
