"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
fd 3 in, fd 4 out, NUL-separated JSON), to test what a reader of the HTML pages sees and does:
the rendered elements, clicks (real mouse events at an element's position), typing, and the
page's console errors. No browser driver package: the protocol is small enough to speak."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from .conftest import require


class Browser:
    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        require(
            None
            if shutil.which("chromium")
            else "Debian's chromium is not installed (.ci/run installs it)"
        )
        to_browser, self._in = os.pipe()  # we write, it reads on fd 3
        self._out, from_browser = os.pipe()  # it writes on fd 4, we read
        args = [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.log = profile.with_name(profile.name + ".log")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                ["bash", "-c", f'exec "$@" 3<&{to_browser} 4>&{from_browser}', "bash", *args],
                pass_fds=(to_browser, from_browser),
                stdout=log,
                stderr=log,
            )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next, self.events = b"", 0, []  # type: list[dict[str, Any]]
        self.session = ""

    def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send one command (to the page's session once one is attached); its result."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        try:
            os.write(self._in, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise RuntimeError(f"chromium has exited: {self._log_tail()}") from None
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._out], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer in time: {self._log_tail()}")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe: {self._log_tail()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return dict(json.loads(raw))

    def _log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.is_file() else ""

    def open(self, url: str) -> None:
        """Open `url` in a new page and wait until it has loaded."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && !!document.body")

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception fails the test)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not self.js(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true: {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element (scrolled into view first)."""
        box = self.js(
            f"(function () {{ var e = document.querySelector({json.dumps(selector)});"
            "e.scrollIntoView({block: 'center'}); var r = e.getBoundingClientRect();"
            "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )
        self.settle()

    def settle(self) -> None:
        """Let the events an action queued (a link's `hashchange`) run before the next look."""
        self.call(
            "Runtime.evaluate",
            awaitPromise=True,
            expression="new Promise(function (r) { setTimeout(r, 50); })",
        )

    def type(self, selector: str, text: str) -> None:
        """Focus the element and type into it (input events, as a keyboard would)."""
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.call("Input.insertText", text=text)
        self.settle()

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a select, as a reader does (its change event fires)."""
        self.js(
            f"(function () {{ var s = document.querySelector({json.dumps(selector)});"
            f"s.value = {json.dumps(value)};"
            "s.dispatchEvent(new Event('change', {bubbles: true})); })()"
        )
        self.settle()

    def errors(self) -> list[str]:
        """Uncaught exceptions and console errors the page produced so far."""
        found = []
        for event in self.events:
            params = event.get("params") or {}
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails")))
            elif (
                event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error"
            ):
                found.append(str(params.get("args")))
            elif (
                event.get("method") == "Log.entryAdded"
                and (params.get("entry") or {}).get("level") == "error"
            ):
                found.append(str(params["entry"].get("text")))
        return found

    def close(self) -> None:
        try:
            self.session = ""
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        finally:
            self.process.kill()
            self.process.wait()
            os.close(self._in)
            os.close(self._out)
