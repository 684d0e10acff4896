"""Harness overhead per run and gateway overhead per proxied call.

    python bench/overhead.py [--runs 10] [--calls 200]
                             [--sandbox local,bwrap,docker,docker-copy]

1. Per run, for each sandbox (`docker-copy` is docker with --scylla-docker-copy; one that does
   not work here is skipped with the reason): runs case test-001 under subtest T0-01 through the
   full harness path (workspace, overlay, gateway with the oracle upstream, sandbox, checks,
   record) `--runs` times after one warm-up run, and the same scripted conversation with the
   bare CLI (no workspace, overlay, sandbox or checks; gateway only as the scripted server) as
   often. Overhead = median harness total - median bare CLI wall time; reported with and
   without the checks' own time, and docker's next to bwrap's.
2. Per call: `--calls` streamed requests to a local stand-in upstream, directly and through the
   gateway's real-upstream path; overhead = difference of the medians.
Prints a small table; exits 0. Numbers depend on the machine: compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_scylla.config.settings import Settings  # noqa: E402
from pytest_scylla.core.runspec import RunSpec  # noqa: E402
from pytest_scylla.formats.spec import load_case  # noqa: E402
from pytest_scylla.formats.tiers import TierSet  # noqa: E402
from pytest_scylla.judging.judges import DEFAULT_JUDGES, parse  # noqa: E402
from pytest_scylla.operations import runner  # noqa: E402
from pytest_scylla.operations.runtime import build  # noqa: E402
from pytest_scylla.run.agents import claude_code  # noqa: E402
from pytest_scylla.run.gateway import Gateway, Route, sse  # noqa: E402
from pytest_scylla.run.gateway.oracle.model import Script  # noqa: E402


def harness_runs(n: int, sandbox: str, cache: Path, out: Path) -> list[dict]:
    tiers = TierSet(ROOT / "tiers")
    case = load_case(ROOT / "cases/test-001/test.yaml", ROOT / "rubrics", tiers.names)
    sub = tiers.resolve("T0-01")
    kind, _, copy = sandbox.partition("-")
    settings = Settings(
        oracle="solution",
        sandbox=kind,
        cache_dir=cache,
        docker_copy=bool(copy),
        model="claude-sonnet-5",
        judges=tuple(parse(j) for j in DEFAULT_JUDGES),
    )
    rt = build(settings, out, "bench", tiers)
    rt.baseline(RunSpec(case, sub, 1))  # measured once, not part of any run
    recs = []
    for i in range(n + 1):  # the first warms caches (and a docker image's layers): not counted
        spec = RunSpec(case, sub, i + 1)
        rec = runner.run_through(runner.execute(spec, rt, rt.conditions(spec)))
        assert rec["outcome"] == "pass", rec["reason"]
        recs.append(rec)
    rt.gateway.stop()
    return recs[1:]


def usable(sandbox: str) -> str | None:
    """Why this sandbox cannot run here, or None."""
    from pytest_scylla.run.sandbox import bwrap_works, docker_unusable

    if sandbox == "bwrap":
        return bwrap_works()
    return docker_unusable("host") if sandbox.startswith("docker") else None


def bare_cli_runs(n: int) -> list[float]:
    """The same two-call conversation with nothing around the CLI but a scripted server."""
    cli = claude_code.find_cli()
    gateway = Gateway().start()
    times = []
    for i in range(n):
        tmp = Path(tempfile.mkdtemp(prefix="bench-bare-"))
        ws, home = tmp / "work", tmp / "home"
        ws.mkdir()
        (home / ".claude").mkdir(parents=True)
        key = f"bare{i}"
        gateway.open(
            Route(
                key=key,
                log_path=tmp / "calls.jsonl",
                script=Script.for_case("solution", ROOT / "cases/test-001/solution", ws),
            )
        )
        env = claude_code.environment(
            {"PATH": os.environ["PATH"], "HOME": str(home)},
            {"CLAUDE_CONFIG_DIR": str(home / ".claude")},
            gateway.base_url(key),
        )
        start = time.monotonic()
        subprocess.run(
            claude_code.command(cli, "claude-sonnet-5", 30, ()),
            cwd=ws,
            env=env,
            input=(ROOT / "cases/test-001/prompt.md").read_bytes(),
            capture_output=True,
            check=True,
        )
        times.append(time.monotonic() - start)
        assert (ws / "hello.py").exists()
        gateway.close(key)
        shutil.rmtree(tmp)
    gateway.stop()
    return times


class _Stand(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    body = b"".join(
        sse.message_events(
            "m",
            "claude-sonnet-5",
            [{"type": "text", "text": "x"}],
            "end_turn",
            {"input_tokens": 10, "output_tokens": 2},
        )
    )

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def gateway_calls(n: int) -> tuple[list[float], list[float]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stand)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key")
    gateway = Gateway(upstream_url=upstream).start()
    tmp = Path(tempfile.mkdtemp(prefix="bench-gw-"))
    gateway.open(Route(key="bench", log_path=tmp / "calls.jsonl", upstream="anthropic"))
    payload = json.dumps(
        {
            "model": "claude-sonnet-5",
            "stream": True,
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "x" * 20000}],
        }
    ).encode()
    direct, proxied = [], []
    with httpx.Client() as client:
        for _ in range(n):
            for url, bucket in (
                (f"{upstream}/v1/messages", direct),
                (f"{gateway.base_url('bench')}/v1/messages", proxied),
            ):
                start = time.perf_counter()
                r = client.post(
                    url,
                    content=payload,
                    headers={"x-api-key": "dummy", "content-type": "application/json"},
                )
                r.read()
                bucket.append(time.perf_counter() - start)
                assert r.status_code == 200
    gateway.stop()
    server.shutdown()
    shutil.rmtree(tmp)
    return direct, proxied


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--sandbox",
        default="local,bwrap,docker,docker-copy",
        help="comma-separated: local, bwrap, docker, docker-copy",
    )
    args = parser.parse_args()
    sandboxes = [s.strip() for s in args.sandbox.split(",") if s.strip()]
    unknown = set(sandboxes) - {"local", "bwrap", "docker", "docker-copy"}
    if unknown:
        parser.error(f"--sandbox: unknown {', '.join(sorted(unknown))}")
    med = statistics.median
    rows: dict[str, tuple[float, float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for sandbox in sandboxes:
            problem = usable(sandbox)
            if problem:
                print(f"{sandbox}: skipped ({problem})")
                continue
            recs = harness_runs(args.runs, sandbox, Path(tmp) / "cache", Path(tmp) / sandbox)
            judges = med(r["judge_duration_seconds"] for r in recs)
            rows[sandbox] = (
                med(r["timings"]["agent_s"] for r in recs),
                med(r["timings"]["checks_s"] for r in recs),
                judges,
                med(r["timings"]["total_s"] for r in recs) - judges,
            )
        cli = med(bare_cli_runs(args.runs))
    direct, proxied = gateway_calls(args.calls)
    per_call_ms = (med(proxied) - med(direct)) * 1000
    print(f"runs per sandbox: {args.runs} (+1 warm-up); calls: {args.calls}; medians in s")
    print(f"bare CLI wall time {cli:.3f}")
    print("sandbox       agent  checks  judges*  run w/o judges  overhead  w/o checks")
    for sandbox, (agent, checks, judges, total) in rows.items():
        print(
            f"{sandbox:<12} {agent:6.3f} {checks:7.3f} {judges:8.3f} {total:15.3f} "
            f"{total - cli:9.3f} {total - checks - cli:11.3f}"
        )
    print("* the oracle judge panel's time, not part of the overhead (goal <= 0.5 s per run)")
    for sandbox in ("docker", "docker-copy"):
        if sandbox in rows and "bwrap" in rows:
            print(
                f"{sandbox} adds {rows[sandbox][3] - rows['bwrap'][3]:.3f} s per run over "
                "bwrap (goal <= 0.5 s)"
            )
    print(
        f"gateway per call: direct {med(direct) * 1000:.2f} ms, proxied "
        f"{med(proxied) * 1000:.2f} ms, overhead {per_call_ms:.2f} ms   (goal <= 5 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
