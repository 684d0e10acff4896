"""Issue 45, point 1: the `full` arm of `scylla ablate plan` is the team's configuration as the
team runs it. The real Claude Code CLI (2.1.197) is run twice on the realistic team setup:
directly in a copy of the repository, with no plugin at all, against a capture server on
loopback (it records the requests and answers each with one short streamed message); and as
the plan's full arm under the oracle with `--scylla-record-bodies`. The first main request of
the two must carry the same configuration, part by part, once what legitimately differs
between two runs is normalised (`_normalised`, each rule said there)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.run.agents import claude_code
from pytest_scylla.run.gateway import responses_wire, sse

from ..conftest import FIXTURES, _without_docker, needs_docker
from .test_ablate import _realistic

USAGE = {
    "input_tokens": 1,
    "output_tokens": 1,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


class _Capture(BaseHTTPRequestHandler):
    """Records every request body; a Messages call (Claude Code) or a Responses call (Codex) is
    answered with one streamed "OK"."""

    bodies: list[dict[str, Any]]

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        request = json.loads(body or b"{}")
        self.bodies.append(request)
        model = str(request.get("model", "model"))
        text = [{"type": "text", "text": "OK"}]
        if self.path.endswith(responses_wire.PATH):
            said = responses_wire.events("resp_capture", model, text, USAGE, False)
            self._send("text/event-stream", said)
        elif self.path.startswith("/v1/messages?") and "count_tokens" not in self.path:
            said = sse.message_events("msg_capture", model, text, "end_turn", USAGE)
            self._send("text/event-stream", said)
        else:
            self._send("application/json", [b'{"input_tokens": 1}'])

    def _send(self, kind: str, chunks: Any) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)


@contextmanager
def _capture_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A capture upstream on loopback: its base URL and the bodies it received, in order."""
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (_Capture,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def _git(repo: Path, *args: str) -> None:
    who = ["-c", "user.name=team", "-c", "user.email=team@example.com"]
    subprocess.run(["git", *who, *args], cwd=repo, check=True, capture_output=True)


def _direct(repo: Path, private: Path, model: str) -> dict[str, Any]:
    """The first main request of `claude -p` run directly in `repo` as the team runs it (its
    .mcp.json, its settings; the CLI's own flags of a headless run, as the plugin passes them,
    without the overlay's), against the capture server. Its HOME and config folder are
    private, so nobody's own configuration leaks in. The team's settings point the CLI at
    their proxy (`env.ANTHROPIC_BASE_URL`): here that proxy is the capture server."""
    home = private / "home"
    (home / ".claude").mkdir(parents=True)
    with _capture_server() as (url, bodies):
        settings_file = repo / ".claude" / "settings.json"
        settings = json.loads(settings_file.read_text())
        settings["env"]["ANTHROPIC_BASE_URL"] = url
        settings_file.write_text(json.dumps(settings, indent=2))
        _git(repo, "init", "-q")  # the team's clean checkout
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "the team's repository")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            **claude_code.FIXED_ENV,
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": claude_code.DUMMY_KEY,
            "MCP_CONNECTION_NONBLOCKING": "false",  # wait for the servers, as the plugin does
            "MCP_TIMEOUT": "60000",
            "MCP_CONNECT_TIMEOUT_MS": "60000",
        }
        argv = claude_code.command(shutil.which("claude") or "claude", model, 1, ())
        done = subprocess.run(
            argv, input=b"Say OK.", cwd=repo, env=env, capture_output=True, timeout=240
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return _first_main(bodies)


def _first_main(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """The first request of the main agent: the first with the tools the CLI offers it (Claude
    Code asks a small model first for a title or the like, without them)."""
    return next(b for b in bodies if len(b.get("tools") or []) > 3)


def _mini(root: Path, team: Callable[[Path], None] = _realistic, sandbox: str = "default") -> Path:
    """The `mini` project (as the `mini` fixture makes it) whose case alpha's source is the
    team's setup (default: the realistic Claude Code setup), its sessions in `sandbox`."""
    shutil.copytree(FIXTURES / "mini", root)
    (root / "tox.ini").write_text(
        "[pytest]\naddopts = -p no:cacheprovider -p no:benchmark -p no:hypothesispytest\n"
        f"scylla_sandbox = {'docker' if sandbox == 'docker' else _without_docker()}\n"
    )
    team(root / "cases" / "alpha" / "source")
    return root


CONTROL = "no-cmd-release"  # an arm without the team's command: the listing must show it


def _arms(mini: Path, oracle: list[str], control: str, *agent: str) -> dict[str, dict[str, Any]]:
    """The plan's full arm and the control arm, run under the oracle with their request bodies
    recorded: the first main request of each, by arm name. `agent`: the options naming
    another CLI (`--agent codex`, and the same for the session)."""
    source = mini / "cases" / "alpha" / "source"
    plan = ["ablate", "plan", str(source), "--out", str(mini / "ablation"), *agent[:2]]
    assert main([*plan, "--group", "section", "--factorial-above", "16"]) == 0
    design = json.loads((mini / "ablation" / "design.json").read_text())
    arms = {a[3:]: a for a in design["arms"] if a[3:] in ("full", control)}
    picked = " or ".join(f"T0-{a[:2]}" for a in arms.values())
    out = mini / "out"
    argv = [sys.executable, "-m", "pytest", "cases", "-k", f"alpha and ({picked})"]
    argv += ["-p", "no:xdist", *oracle, f"--scylla-tiers-dir={mini / 'ablation'}"]
    argv += ["--scylla-packaged-tiers=under", "--scylla-tiers=T0", "--scylla-record-bodies"]
    argv += agent[2:]
    done = subprocess.run(
        [*argv, f"--scylla-out={out}"], cwd=mini, capture_output=True, text=True, timeout=400
    )
    firsts = {}
    for run in sorted((out / "runs").glob("*/run.json")):
        record = json.loads(run.read_text())
        assert record["outcome"] == "pass", record["reason"]
        assert record["ablation"]["problems"] == []
        bodies = sorted(run.parent.glob("bodies/*.request.json"))
        firsts[record["subtest_name"][3:]] = _first_main(
            [json.loads(b.read_bytes()) for b in bodies]
        )
    assert sorted(firsts) == sorted(arms), done.stdout[-3000:]
    return firsts


@pytest.fixture(scope="module", params=["default", "docker"])
def first_requests(
    tmp_path_factory: pytest.TempPathFactory, oracle: list[str], request: pytest.FixtureRequest
) -> dict[str, dict[str, Any]]:
    """The first main request of the full arm and of the control arm (under the oracle, in the
    default sandbox and in docker), and of the team's own run (`team`: the CLI directly in a
    copy of the repository, against the capture server)."""
    if request.param == "docker":
        needs_docker()
    where = tmp_path_factory.mktemp("full-arm")
    mini = _mini(where / "mini", sandbox=request.param)
    repo = where / "team-repo"
    shutil.copytree(mini / "cases" / "alpha" / "source", repo)
    firsts = _arms(mini, oracle, CONTROL)
    firsts["team"] = _direct(repo, where / "private", firsts["full"]["model"])
    for name, request in firsts.items():  # kept for a failure's reader
        (where / f"{name}.json").write_text(json.dumps(request, indent=1))
    return firsts


# what legitimately differs between two runs of one configuration ------------------------------
def _normalised(text: str, request: dict[str, Any]) -> str:
    """`text` with what legitimately differs between two runs of one configuration replaced by a
    mark. Each rule, and why it is not configuration:
    - the workspace's absolute path: the plugin's workspace is a private copy (the CLI names
      the folder in its environment text and before each file it loads);
    - the run's private HOME (the CLI names its memory folder under it, with the workspace's
      path as the project's slug);
    - the date (the CLI says today's) and hexadecimal ids (git's commit ids);
    - the billing header's fingerprint (`cc_version=2.1.197.<3 hex>`: the CLI derives it from
      the first user message, the task's prompt here and "Say OK." there);
    - the branch and the latest commit's subject in the git snapshot (the plugin's workspace
      is a repository of its own, `scylla`, one commit "<case>: task source")."""
    where, home = _cwd(request), _home(request)
    text = text.replace(home, "<home>").replace(where, "<workspace>")
    text = text.replace(where.strip("/").replace("/", "-").replace("_", "-"), "<workspace>")
    text = re.sub(r"\d{4}-\d{2}-\d{2}", "<date>", text)
    text = re.sub(r"cc_version=([\d.]+)\.[0-9a-f]{3};", r"cc_version=\1.<fingerprint>;", text)
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "<id>", text)
    text = re.sub(r"(?m)^Current branch: \S+$", "Current branch: <branch>", text)
    return re.sub(r"(?m)^(<id>) .+\Z", r"\1 <subject>", text)


def _cwd(request: dict[str, Any]) -> str:
    """The working folder the CLI names in its environment text."""
    found = re.search(r"Primary working directory: ([^\\\n]+)", json.dumps(request))
    assert found is not None, "no working directory in the request"
    return found.group(1).strip()


def _home(request: dict[str, Any]) -> str:
    """The CLI's config folder, named before its memory folder."""
    found = re.search(r"memory system at `([^`]+?)/\.claude/projects/", json.dumps(request))
    assert found is not None, "no memory folder in the request"
    return found.group(1)


def _parts(request: dict[str, Any]) -> dict[str, Any]:
    """The configuration parts of a first request, normalised: the system text, each tool (its
    name, description and schema), the MCP tool set, and the CLI's context in the messages:
    every text but the task's prompt (the `<system-reminder>` with the CLAUDE.md files, rules
    and imports the CLI loaded; the system message listing the agents and the skills and
    commands)."""
    system = request.get("system") or []
    blocks = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    tools = request.get("tools") or []
    context, prompts = [], []
    for message in request["messages"]:
        content = message["content"]
        texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
        for text in texts:
            prompt = message["role"] == "user" and "<system-reminder>" not in text
            (prompts if prompt else context).append(_normalised(text, request))
    assert len(prompts) == 1, prompts  # the task's prompt (or "Say OK."), not configuration
    return {
        "system": [_normalised(t, request) for t in blocks],
        "tools": {t["name"]: _normalised(json.dumps(t, sort_keys=True), request) for t in tools},
        "mcp": sorted(t["name"] for t in tools if t["name"].startswith("mcp__")),
        "context": context,
    }


@pytest.mark.slow  # an npm install, one oracle run, one direct CLI run (about 40 s)
def test_the_full_arm_sends_the_teams_configuration(
    first_requests: dict[str, dict[str, Any]],
) -> None:
    """Tools (with the agent and skill listings in their descriptions), the MCP tool set, the
    CLI's context (CLAUDE.md as written, the file it imports and the unscoped rule each under
    its own header, the listings) and the system text (with the git snapshot of a clean
    checkout) are the team's byte for byte once normalised."""
    ours, theirs = _parts(first_requests["full"]), _parts(first_requests["team"])
    assert ours["mcp"] == theirs["mcp"]
    assert ours["mcp"]  # both servers connected: the npx one installed on the host
    assert list(ours["tools"]) == list(theirs["tools"])
    for name, tool in ours["tools"].items():
        assert tool == theirs["tools"][name], name
    assert ours["system"] == theirs["system"]
    assert "Status:\n(clean)" in "\n".join(ours["system"])  # the snapshot is compared
    assert ours["context"] == theirs["context"]
    said = "\n".join(ours["context"])
    for part in ("Never push to main", "- money-math:", "- release:", "- reviewer:"):
        assert part in said, part  # the rules and listings are compared, never normalised away
    # the control: an arm without the team's command differs from the team's by its line only
    control = _parts(first_requests[CONTROL])
    assert control["tools"] == ours["tools"]
    assert control["context"] != ours["context"]
    release = re.compile(r"(?m)^- release: .*\n")
    assert control["context"] == [release.sub("", c) for c in ours["context"]]
