"""A case's deterministic checks: run each command in the workspace, compare.

The commands run (in the sandbox) after `integrity.secure` has copied the hidden files in, with
`python` meaning this interpreter and a fresh HOME and temp folder the agent never saw. Python
is isolated from what the agent could have planted around it: no user site, no start-up file
from the environment, bytecode neither written nor read next to the sources (a planted .pyc
cannot stand in for a hidden test; under bwrap it is read only from `bytecode.prefix`, the
interpreter's own), pytest's cache off.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.formats.spec import Case, Check
from pytest_scylla.run import sandbox

Wrap = Callable[[list[str]], list[str]]
# runs a command in the sandbox itself: (argv, cwd, env, timeout) -> (exit code or None at the
# timeout, stdout, stderr); the docker sandbox's, which needs no process on the host
Execute = Callable[[list[str], Path, Mapping[str, str], float], tuple[int | None, str, str]]
OUTPUT_LIMIT = 8_000  # characters of stdout/stderr kept per check (head and tail)


class Halt(Exception):
    """Raised by `run_checks`'s `between`: no further check may run (the results so far
    stand)."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    exit_code: int | None  # None: killed at the timeout
    seconds: float
    stdout: str
    stderr: str
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def truncate(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


# Where the checks' Python looks for bytecode: a path no process can create (under a device
# file), so no bytecode is read or written at all: neither the `__pycache__` folders the agent
# left in the workspace, nor a file an earlier check (running the agent's code) could plant
# for a later one, as it could in any writable cache folder.
NO_BYTECODE = "/dev/null/scylla-no-bytecode"


def check_env(base: Mapping[str, str], fresh: Path, bytecode: str = NO_BYTECODE) -> dict[str, str]:
    """The checks' environment: `base` (an allow-list) with HOME and TMPDIR in `fresh`, a new
    folder the agent never saw, and bytecode read only from `bytecode` (`bytecode.prefix`: the
    interpreter's own, read-only in the sandbox), never written."""
    for sub in ("home", "tmp"):
        (fresh / sub).mkdir(parents=True)
    env = {k: v for k, v in base.items() if not k.startswith(("PYTHON", "PYTEST"))}
    bindir = str(Path(sys.executable).parent)
    env.update(
        {
            "PATH": os.pathsep.join([bindir, env.get("PATH", os.defpath)]),
            "HOME": str(fresh / "home"),
            "TMPDIR": str(fresh / "tmp"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONPYCACHEPREFIX": bytecode,
            "PYTEST_ADDOPTS": "-p no:cacheprovider",
        }
    )
    return env


def _verdict(check: Check, code: int | None, stdout: str) -> str:
    """Why a check failed ('' when it passed)."""
    if code is None:
        return f"timed out after {check.timeout_seconds}s"
    if code != check.expect_exit:
        return f"exit code {code}, expected {check.expect_exit}"
    if check.expect_stdout is not None:
        mode, want = check.expect_stdout
        ok = {
            "exact": stdout == want,
            "contains": want in stdout,
            "regex": re.search(want, stdout, re.MULTILINE) is not None,
        }[mode]
        if not ok:
            return f"stdout does not {'equal' if mode == 'exact' else 'match'} {want!r}"
    return ""


def run_check(
    check: Check,
    workspace: Path,
    env: Mapping[str, str],
    wrap: Wrap | None = None,
    execute: Execute | None = None,
) -> CheckResult:
    """Run one check in its own process group; at the timeout the whole group is killed.
    `wrap` turns the command's argv into the sandbox's argv; `execute`, when given, runs it in
    the sandbox instead."""
    start = time.monotonic()
    argv = ["/bin/sh", "-c", check.run] if isinstance(check.run, str) else list(check.run)
    if execute is not None:
        return _result(check, *execute(argv, workspace, env, check.timeout_seconds), start)
    # what the check detaches (a new session, a double fork) is reparented here and stopped
    # with the rest: nothing of one check may go on changing files while the next one runs
    before = sandbox.own_children()
    sandbox.subreaper(True)
    try:
        return _run_host(check, argv, workspace, env, wrap, start, before)
    finally:
        sandbox.subreaper(False)


def _run_host(
    check: Check,
    argv: list[str],
    workspace: Path,
    env: Mapping[str, str],
    wrap: Wrap | None,
    start: float,
    before: set[int],
) -> CheckResult:
    proc = subprocess.Popen(
        wrap(argv) if wrap else argv,
        cwd=workspace,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    code: int | None
    try:
        stdout, stderr = proc.communicate(timeout=check.timeout_seconds)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        code = None
    sandbox.sweep(proc.pid, before)  # what the check left running, too
    return _result(check, code, stdout, stderr, start)


def _result(check: Check, code: int | None, stdout: str, stderr: str, start: float) -> CheckResult:
    reason = _verdict(check, code, stdout)
    return CheckResult(
        name=check.name,
        passed=not reason,
        exit_code=code,
        seconds=round(time.monotonic() - start, 3),
        stdout=truncate(stdout),
        stderr=truncate(stderr),
        reason=reason,
    )


def run_checks(
    case: Case,
    workspace: Path,
    env: Mapping[str, str],
    fresh: Path,
    wrap: Wrap | None = None,
    execute: Execute | None = None,
    bytecode: str = NO_BYTECODE,
    between: Callable[[str], None] | None = None,
) -> list[CheckResult]:
    """Run every check in order (the hidden files already in place). `between(name)` runs
    after the check `name` has ended (nothing it started is left running) and before the next
    one: the runner puts the hidden files back there (`integrity.recheck`), since a check runs
    the agent's code, which could rewrite the next check's hidden script, or replace the
    workspace itself: `between` then raises `Halt`, and the checks end there."""
    run_env = check_env(env, fresh, bytecode)
    results: list[CheckResult] = []
    for check in case.checks:
        if results and between is not None:
            try:
                between(results[-1].name)
            except Halt:
                break
        results.append(run_check(check, workspace, run_env, wrap, execute))
    return results
