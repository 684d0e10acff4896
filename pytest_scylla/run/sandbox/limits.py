"""`--scylla-limits` under bwrap: a control group per run (cgroup v2 where its controllers are
delegated to this process, else v1 where it is writable) caps memory, CPU and processes of the
agent and of the checks; the sandbox's `/tmp` is a tmpfs sized to a quarter of the memory limit.
Where no cgroup can be made, processes fall back to RLIMIT_NPROC (per user, so it counts every
process of this user, and root ignores it) and memory and CPU are not limited: RLIMIT_AS would
break the agent CLI (Node reserves far more address space than it uses). What is not applied
is said in the session header (`summary`). A run's cgroups are removed when the run ends (its
processes killed first), and at exit whatever is left of them.

The first process of a sandboxed command (`wrapper`) joins the cgroups and becomes the command
(exec): a shell, or this file run as a script where the fallback rlimit is to be set.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
PERIOD = 100_000  # CPU quota period, microseconds
_serial = itertools.count()

DEFAULT_LIMITS = (4 << 30, 2.0, 1024)  # a run's (docker, bwrap): memory bytes, cpus, pids


@dataclass(frozen=True)
class Limits:
    memory: int  # bytes
    cpus: float
    pids: int

    @property
    def tmp(self) -> int:
        """The size of the sandbox's /tmp (a tmpfs, held in memory)."""
        return max(16 << 20, self.memory // 4)


@dataclass
class Group:
    """One run's cgroup directories (one for v2; one per controller for v1)."""

    dirs: list[Path] = field(default_factory=list)
    nproc: int = 0  # the RLIMIT_NPROC fallback (0: none)


def _own_paths() -> dict[str, str]:
    """{controller or '' (v2): this process's cgroup path} from /proc/self/cgroup."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                found[name] = path
    return found


def _v2_root() -> Path | None:
    for root in (ROOT, ROOT / "unified"):
        if (root / "cgroup.controllers").is_file():
            return root
    return None


@functools.lru_cache(maxsize=1)
def parents() -> dict[str, Path]:
    """{controller: the writable cgroup a run's own is made under}, v2 first, else v1."""
    own, found = _own_paths(), {}
    v2 = _v2_root()
    if v2 is not None and "" in own:
        parent = v2 / own[""].lstrip("/")
        with contextlib.suppress(OSError):
            delegated = set((parent / "cgroup.subtree_control").read_text().split())
            if os.access(parent, os.W_OK):
                found.update({c: parent for c in CONTROLLERS if c in delegated})
    for name in CONTROLLERS:
        v1 = ROOT / name / own.get(name, "/").lstrip("/")
        if name not in found and (v1 / "tasks").is_file() and os.access(v1, os.W_OK):
            found[name] = v1
    return found


def summary(limits: Limits) -> str:
    """What `limits` become under bwrap here, for the session header."""
    have = parents()
    mem, tmp = limits.memory >> 20, limits.tmp >> 20
    parts = [
        f"memory={mem}m" if "memory" in have else "memory NOT limited (no writable cgroup)",
        f"cpus={limits.cpus:g}" if "cpu" in have else "cpus NOT limited (no writable cgroup)",
        f"pids={limits.pids}"
        if "pids" in have
        else (
            f"pids={limits.pids} per user (RLIMIT_NPROC; no writable cgroup)"
            if os.geteuid()
            else "pids NOT limited (no writable cgroup; root ignores RLIMIT_NPROC)"
        ),
        f"/tmp={tmp}m",
    ]
    return "limits: " + ", ".join(parts)


def _settings(name: str, limits: Limits, v2: bool) -> dict[str, str]:
    quota = str(max(1000, int(limits.cpus * PERIOD)))
    if v2:
        return {
            "memory": {"memory.max": str(limits.memory), "memory.swap.max": "0"},
            "pids": {"pids.max": str(limits.pids)},
            "cpu": {"cpu.max": f"{quota} {PERIOD}"},
        }[name]
    return {
        "memory": {"memory.limit_in_bytes": str(limits.memory)},
        "pids": {"pids.max": str(limits.pids)},
        "cpu": {"cpu.cfs_period_us": str(PERIOD), "cpu.cfs_quota_us": quota},
    }[name]


def stale() -> Group:
    """The cgroups a killed session left (named after a process that is gone)."""
    found = Group()
    for parent in set(parents().values()):
        for path in parent.glob("scylla-*-*"):
            pid = path.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                found.dirs.append(path)
    return found


def create(limits: Limits) -> Group:
    """A new cgroup (or several, v1) with `limits`; the rlimit fallback where there is none."""
    if next(_serial) == 0:  # the first of this process: what a killed session left goes first
        remove(stale())
    group, made = Group(), dict[Path, Path]()
    name = f"scylla-{os.getpid()}-{next(_serial)}"
    try:
        for controller, parent in sorted(parents().items()):
            path = made.get(parent) or parent / name
            if parent not in made:
                path.mkdir()
                made[parent] = path
                group.dirs.append(path)
            v2 = (parent / "cgroup.controllers").is_file()
            for key, value in _settings(controller, limits, v2).items():
                with contextlib.suppress(FileNotFoundError):  # e.g. no swap accounting
                    (path / key).write_text(value)
    except OSError:
        remove(group)
        raise
    if "pids" not in parents() and os.geteuid():
        group.nproc = limits.pids
    _alive.append(group)
    return group


def remove(group: Group) -> None:
    """Kill every process left in `group`'s cgroups and remove them."""
    for path in group.dirs:
        deadline = time.monotonic() + 5
        while path.is_dir():
            with contextlib.suppress(OSError):
                (path / "cgroup.kill").write_text("1")  # v2 (5.14+): all at once
            with contextlib.suppress(OSError, ValueError):
                for pid in (path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                path.rmdir()
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
    group.dirs = [p for p in group.dirs if p.is_dir()]
    with contextlib.suppress(ValueError):
        _alive.remove(group)


_alive: list[Group] = []


@atexit.register
def _remove_all() -> None:
    for group in list(_alive):
        remove(group)


# joins the cgroups, then becomes the command: a shell starts in about a millisecond, where this
# file run by Python took 0.1 CPU-seconds (0.35-0.5 s on a busy 2-core machine) before every
# sandboxed command, a run's checks included
JOIN = (
    'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "scylla: cannot join the cgroup '
    '$1" >&2; exit 125; }; shift; done; shift; exec "$@"'
)


def wrapper(group: Group) -> list[str]:
    """The argv prefix that starts a command in `group`: a shell that joins its cgroups, or
    (with the fallback rlimit to set) this file run as a script."""
    procs = [str(path / "cgroup.procs") for path in group.dirs]
    if not group.nproc:
        return ["/bin/sh", "-c", JOIN, "scylla-limits", *procs, "--"]
    return [sys.executable, "-I", "-S", __file__, str(group.nproc), *procs, "--"]


def main(argv: list[str]) -> None:  # pragma: no cover - runs in the wrapper process
    split = argv.index("--")
    nproc, procs, command = int(argv[0]), argv[1:split], argv[split + 1 :]
    for path in procs:
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
    if nproc:
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
