"""git over the agent's files: an allow-listed environment, settings that make git ignore what a
repository could say about itself, and output read back bounded."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

MAX_DIFF_BYTES = 8_000_000  # the diff read back from git, at most
# Settings that make git ignore what a repository could say about itself: no fsmonitor, hooks,
# attribute files, external diff or text conversion, and symlinks stored as links.
SAFE_GIT = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.symlinks=true",
    "-c",
    "core.quotepath=off",
    "-c",
    "diff.external=",
    "-c",
    "protocol.allow=never",
)


HELD = "/proc/self/fd/"  # a path through a descriptor the harness holds (`pinned`)


def held_fds(path: str) -> tuple[int, ...]:
    """The descriptor a /proc/self/fd path goes through (kept open for git, whose /proc/self
    is its own), or none."""
    rest = path.removeprefix(HELD)
    return (int(rest),) if rest != path and rest.isdigit() else ()


class HostileDataError(RuntimeError):
    """Reading the workspace back failed (an infrastructure failure, never the agent's)."""


def git_env(git_dir: Path, work_tree: Path, index: Path, home: Path) -> dict[str, str]:
    """An allow-listed environment for git over the agent's files: no credential, no HOME or
    global/system configuration of the user's."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(work_tree),
        "GIT_INDEX_FILE": str(index),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }


def run_git(args: Sequence[str], env: dict[str, str], limit: int = MAX_DIFF_BYTES) -> bytes:
    """git with the safety settings; its output cut at `limit` bytes (the process is stopped)."""
    # stderr to a file: warnings per file (the agent chooses how many) must not fill a pipe
    # that nobody reads while stdout is being read
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            ["git", *SAFE_GIT, *args],
            cwd=env["GIT_WORK_TREE"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            pass_fds=held_fds(env["GIT_WORK_TREE"]),
        )
        assert proc.stdout is not None
        chunks, size = [], 0
        while size <= limit and (chunk := proc.stdout.read(1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
        out = b"".join(chunks)
        cut = size > limit
        if cut:
            proc.kill()
            out = out[:limit] + b"\n[... output cut by the harness ...]\n"
        proc.stdout.close()
        proc.wait()
        errors.seek(0)
        err = errors.read(300).decode(errors="replace")
    if proc.returncode != 0 and not cut:
        raise HostileDataError(f"git {' '.join(args[:2])}: {err}")
    return out
