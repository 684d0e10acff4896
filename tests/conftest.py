"""Shared fixtures: a small project of cases, tiers and rubrics copied into a pytester dir."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

# The heavy libraries the plugin imports, imported here once: pytester's inline runs snapshot
# and restore sys.modules, so a library first imported inside one would be imported again by
# the next (seconds per end-to-end test), and C extensions (numpy) cannot load twice at all.
import anthropic  # noqa: F401

# httpx imports httpcore on its first client, and caches the map from httpcore's exceptions to its
# own: an httpcore first imported inside an inline run would come back as a second module whose
# exceptions the map does not know (the gateway's upstream errors then escape unmapped)
import httpcore  # noqa: F401
import jinja2  # noqa: F401
import jsonschema  # noqa: F401
import krippendorff  # noqa: F401
import matplotlib
import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import scipy.stats  # noqa: F401
import statsmodels.stats.multitest
import statsmodels.stats.proportion  # noqa: F401

matplotlib.use("Agg")  # before seaborn (pyplot): no display here
import seaborn  # noqa: F401

# the docker SDK too: a client made before an inline run must still work after it (a re-imported
# `requests` breaks it: "You can only merge into CookieJar"); without the SDK the tests say so
with contextlib.suppress(ImportError):
    import docker  # noqa: F401

# the readers of stored results, loaded here for the same reason as the libraries above: a
# reader first imported inside an inline run would raise its errors as a second module's
# classes, which the `scylla` commands' handlers (imported before) do not catch
import pytest_scylla.results.inputs
import pytest_scylla.results.tables  # noqa: F401
from pytest_scylla.run.sandbox import bwrap_works

# The sessions the tests start write their bytecode, pytest's rewritten plugin modules included:
# with PYTHONDONTWRITEBYTECODE set in the shell, each of about 150 would compile hypothesis,
# anyio and more afresh (1.2 s a session measured; the harness sets its checks' own variables)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

FIXTURES = Path(__file__).parent / "fixtures"
# for what exists only in pytest 9 (the plugin supports 8 too; CI runs its tests under the lowest)
PYTEST_9 = pytest.mark.skipif(
    int(pytest.__version__.split(".")[0]) < 9,
    reason="native TOML configuration ([tool.pytest], pytest.toml) came with pytest 9",
)
ROOT = Path(__file__).resolve().parents[1]
Edit = Callable[[str, str, str], None]
# The fixture projects hold cases: they are copied into pytester dirs, never collected here.
collect_ignore = ["fixtures"]

# Every item of the `mini` project: alpha runs in every tier, beta only in T0 and T1.
MINI_SUBTESTS = ["T0-00", "T0-01", "T0-02", "T1-01", "T1-02", "T5-01", "T5-02"]
MINI_ITEMS = [f"alpha[{s}-r1]" for s in MINI_SUBTESTS] + [
    f"beta[{s}-r1]" for s in MINI_SUBTESTS if s[:2] in ("T0", "T1")
]


# `@pytest.mark.each_sandbox` on an end-to-end test that uses `mini`: it runs under the
# default sandbox and again under docker (that one in the slow tier)
SANDBOX_KINDS = ["default", pytest.param("docker", marks=pytest.mark.slow)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("each_sandbox") and "mini" in metafunc.fixturenames:
        metafunc.parametrize("sandbox_kind", SANDBOX_KINDS, indirect=True)


@pytest.fixture
def sandbox_kind(request: pytest.FixtureRequest) -> str:
    """The sandbox the `mini` project's sessions use: docker, or the default (bwrap where it
    works, else local)."""
    kind: str = getattr(request, "param", "default")
    if kind == "docker":
        needs_docker()
    return kind


@pytest.fixture
def mini(pytester: pytest.Pytester, sandbox_kind: str) -> Path:
    """The `mini` project (cases alpha and beta, tiers T0, T1, T5) as the pytester root."""
    shutil.copytree(FIXTURES / "mini", pytester.path, dirs_exist_ok=True)
    # named, unless a test asks for another sandbox: `auto` would pick docker once a docker
    # test has set up the host image, and the suite's runs would change sandbox halfway
    sandbox = "docker" if sandbox_kind == "docker" else _without_docker()
    pytester.makeini(
        "[pytest]\naddopts = -p no:cacheprovider -p no:benchmark "
        f"-p no:hypothesispytest\nscylla_sandbox = {sandbox}\n"
    )
    return pytester.path


@functools.cache
def _without_docker() -> str:
    return "local" if bwrap_works() else "bwrap"


@pytest.fixture
def standin(mini: Path) -> Path:
    """The mini project with the stand-in runner (`fixtures/standin/conftest.py`): every run's
    record made from its key in-process, no CLI; everything after the runner seam is real."""
    shutil.copy(FIXTURES / "standin" / "conftest.py", mini / "conftest.py")
    return mini


@pytest.fixture
def edit(mini: Path) -> Callable[[str, str, str], None]:
    """Replace `old` (which must be present) by `new` in a file of the mini project; an empty
    `old` replaces the whole file."""

    def replace(rel: str, old: str, new: str) -> None:
        path = mini / rel
        text = path.read_text(errors="surrogateescape")  # "\udce9" writes the byte 0xe9
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1) if old else new, errors="surrogateescape")

    return replace


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Arguments that run items end to end offline: the oracle, and one cache of MCP packages and
    CLI baselines shared by every pytester run of this test run: under xdist the workers share
    it (in the folder their temp folders share), so each baseline is measured once, not once a
    worker (two CLI calls, about 6 s each time). The cache is made for sessions running at
    once; its start slots are then the whole test run's, as on a machine of several sessions."""
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "scylla-cache"
    return ["--scylla-oracle", f"--scylla-cache-dir={cache}"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default suite leaves out the long end-to-end tier: `-m slow` runs only that tier,
    `-m "slow or not slow"` both (CI runs the default suite, then `-m slow`). The `campaign`
    tier (the whole matrix of shipped CLIs and cases, for a scheduled job) runs only when the
    mark expression names it (`-m campaign`)."""
    if "campaign" not in (config.option.markexpr or ""):  # the whole matrix: only when asked
        campaign = [item for item in items if item.get_closest_marker("campaign")]
        if campaign:
            config.hook.pytest_deselected(items=campaign)
            items[:] = [item for item in items if not item.get_closest_marker("campaign")]
    if config.option.markexpr:
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


# timing fields: the only columns of an export that may differ between two runs of the same runs
TIMINGS = {
    "duration_seconds",
    "agent_duration_seconds",
    "judge_duration_seconds",
    "checks_duration_seconds",
    "judge_seconds",
    "mean_duration",
    "written_at",
    "ttft_seconds",
}


def without_timings(value: object) -> object:
    """The value with every timing field removed, at any depth."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def export_rows(path: Path) -> list[dict[str, str]]:
    """A CSV export's rows without their timing columns."""
    with path.open() as handle:
        return [
            {k: v for k, v in row.items() if k not in TIMINGS} for row in csv.DictReader(handle)
        ]


def workers(n: int) -> list[str]:
    """pytest arguments for n xdist workers (n=0: no xdist at all)."""
    return ["-n", str(n)] if n else ["-p", "no:xdist"]


def in_ci() -> bool:
    """True in CI (`CI` set to anything but empty, 0, false or no; `.ci/run` sets CI=true)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(problem: str | None) -> None:
    """Go on when `problem` is None. Otherwise skip the calling test, naming the problem, or
    under CI fail it: CI installs what the test needs, so there a missing tool is a failure,
    never a silent pass."""
    if problem is None:
        return
    if in_ci():
        pytest.fail(f"CI: {problem}", pytrace=False)
    pytest.skip(problem)


def sdists(requirements: list[str], where: Path, isolated: bool = False) -> Path:
    """Download source distributions pinned by hash (`name==version --hash=sha256:...`) into
    `where/dl`, whatever Python they ask for; without `isolated`, with no build environment
    (their backend must be installed here: hatchling is a dev dependency). Skip, or under CI
    fail, when pip cannot."""
    (where / "req.txt").write_text("\n".join(requirements) + "\n")
    got = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"),
            *(() if isolated else ("--no-build-isolation",)),
            *("--ignore-requires-python", "--require-hashes"),
            *("-r", "req.txt", "-d", "dl"),
        ],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    require(None if got.returncode == 0 else f"pip could not download: {got.stderr[-300:]}")
    return where / "dl"


def needs_bwrap() -> None:
    """Every test that needs bubblewrap calls this first (skip outside CI, fail in CI)."""
    require(bwrap_works())  # None, or why not ("bubblewrap cannot create a sandbox here: ...")


def docker_problem() -> str | None:
    """None when a Docker engine answers (through the SDK); else why not."""
    from pytest_scylla.run.sandbox import SandboxError

    try:
        from pytest_scylla.run.sandbox.docker.engine import client

        client().close()
    except SandboxError as exc:
        return str(exc)
    return None


def needs_docker() -> None:
    """Every test that needs a Docker engine calls this first (skip outside CI, fail in CI:
    `.ci/run` installs and starts one)."""
    require(docker_problem())


# The shipped sessions' cases. The whole matrix (every CLI on every case, ~1,000 runs) is the
# `campaign` tier (`-m campaign`, for a scheduled job); the slow tier samples it: every CLI on
# test-001 (the support matrix and test-001's own test read those runs), and Claude Code on one
# more case in one tier, both rotating with the commit (a case is ~60 runs: 3-10 minutes of a
# 2-core machine per CLI; so a case's tier per CI run, not a case per CLI).
SHIPPED_CASES = sorted(p.parent.name for p in (ROOT / "cases").glob("*/test.yaml"))
SHIPPED_AGENTS = ["claude-code", "codex", "gemini-cli", "opencode"]


def _commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else "0"


SHIPPED_TIERS = [f"T{i}" for i in range(7)]


def rotation(commit: str | None = None) -> int:
    """The number the slow tier's samples rotate by: the commit's (`SCYLLA_TEST_ROTATION=<n>`
    instead, to pick a sample by hand)."""
    return int(
        os.environ.get("SCYLLA_TEST_ROTATION") or str(int((commit or _commit())[:8] or "0", 16))
    )


def sampled_cases(agent: str, commit: str | None = None) -> dict[str, str | None]:
    """The cases of `agent`'s shipped session in the slow tier, each with the one tier it runs
    in (None: every tier): test-001 in every tier, and for Claude Code one more case in one
    tier, both rotating with the commit (`SCYLLA_TEST_ROTATION=<n>` picks them instead)."""
    first, others = SHIPPED_CASES[0], SHIPPED_CASES[1:]
    seed = rotation(commit)
    if not others or agent != SHIPPED_AGENTS[0]:
        return {first: None}
    return {
        first: None,
        others[seed % len(others)]: SHIPPED_TIERS[seed // len(others) % len(SHIPPED_TIERS)],
    }


def shipped_session(
    agent: str, base: Path, cache: str, everything: bool = False
) -> tuple[Path, str, dict[str, str | None]]:
    """`pytest cases/<...> --scylla-oracle --scylla-agent=<agent> -n 2` from the project root
    (under bubblewrap) over the slow tier's sample of cases and tiers, or every case in every
    tier (`everything`): its experiment folder, output and {case: its tier, None for all},
    made once per test run even when xdist workers share it."""
    needs_bwrap()
    cases = dict.fromkeys(SHIPPED_CASES) if everything else sampled_cases(agent)
    only = " or ".join(f"({c} and {t})" if t else c for c, t in cases.items())
    name = f"{agent}-all" if everything else agent
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shipped"
    shared.mkdir(exist_ok=True)
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        said = shared / f"{name}.txt"
        if not said.is_file():
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    *(f"cases/{c}" for c in cases),
                    "-p",
                    "no:cacheprovider",
                    cache,
                    f"--scylla-agent={agent}",
                    "-rs",
                    "--scylla-oracle",
                    # bubblewrap, whatever the machine has (no engine calls per run: Claude
                    # Code's harness time per run 1.07 s against docker's 1.59 s), and one judge
                    # (the sandboxes and panels have their own tests; these are about the CLIs)
                    "--scylla-sandbox=bwrap",
                    "--scylla-judges=claude-haiku-4-5",
                    "--scylla-min-judges=1",
                    "-n",
                    "2",
                    f"--scylla-out={shared / name}",
                    "-k",
                    only,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=3600,
            )
            said.write_text(done.stdout[-20000:])
    return shared / name, said.read_text(), cases


def default_sigint() -> None:
    """For a session a test interrupts with SIGINT (as Ctrl-C does): the signal's default
    action, whatever this process inherited. A test run started in the background by a
    non-interactive shell (`pytest ... &`) has SIGINT ignored, which its children inherit, and
    Python then never raises KeyboardInterrupt: the interrupted session would run on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (exec keeps an ignored signal ignored)
