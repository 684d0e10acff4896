"""The `--scylla-*` options and `scylla_*` ini keys (declared in `options`), resolved once
(CLI > ini > default) into a frozen `Settings` kept in `config.stash`."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.agent_settings import agent_settings
from pytest_scylla.core.folders import read_problem, write_problem
from pytest_scylla.core.tiers import TIER_NAME
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.tiers import Subtest, TierSet, tier_files
from pytest_scylla.formats.yamlmarks import display
from pytest_scylla.judging.judges import JudgeSpec, JudgeSpecError
from pytest_scylla.judging.judges import parse as parse_judge
from pytest_scylla.options import DEFAULT_MODEL, ORACLE_MODES
from pytest_scylla.options import as_list as _list
from pytest_scylla.options import flag as _flag
from pytest_scylla.options import ini as _ini
from pytest_scylla.options import value as _value
from pytest_scylla.sandbox_settings import DEFAULT_LIMITS, sandbox_settings

REPORT_FORMATS = ("terminal", "html", "md", "json", "csv")
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SUBTEST_SELECTOR = re.compile(r"^(?:(T\d+)-)?(\d{2})(?:-([a-z0-9][a-z0-9-]*))?$")
MAX_RUNS = 1000

@dataclass(frozen=True)
class Settings:
    runs: int = 1
    tiers: tuple[str, ...] | None = None
    subtests: tuple[str, ...] | None = None
    out: Path | None = None
    label: str = ""
    report: tuple[str, ...] = ("terminal",)
    oracle: str | None = None
    tiers_dir: Path = Path("tiers")
    tier_dirs: tuple[Path, ...] = ()  # the layered tier folders, the first winning
    rubrics_dir: Path = Path("rubrics")
    model: str = DEFAULT_MODEL
    models: tuple[str, ...] = ()  # the model axis (empty: none)
    agent: str = "claude-code"  # the adapter's name (checked against the registered ones)
    sandbox: str = "auto"
    image: str = "host"  # the docker sandbox's image (a case's own image: wins)
    limits: tuple[int, float, int] = DEFAULT_LIMITS  # docker: memory bytes, cpus, pids
    docker_copy: bool = False  # docker: the run's folder by copy, not a bind mount
    cli: str | None = None
    cache_dir: Path = Path(".cache")
    keep_workspaces: bool = False
    record_bodies: bool = False
    replay: Path | None = None  # an experiment recorded with bodies: its answers are replayed
    judges: tuple[JudgeSpec, ...] = ()
    min_judges: int = 2
    panel: str = "full"  # or adaptive (judging/judge_run.py)
    budget_usd: float | None = None
    max_run_cost: float | None = None
    retries: int = 4
    retry_wait: float = 120.0
    max_pause: float = 21600.0
    progress: float | None = None  # None: by terminal kind
    fresh: bool = False
    rejudge: bool = False
    plan: bool = False
    shard: tuple[int, int] | None = None  # (index from 1, count)

    def selects_tier(self, tier: str) -> bool:
        return self.tiers is None or tier in self.tiers

    def selects_subtest(self, sub: Subtest) -> bool:
        return self.subtests is None or any(_matches(s, sub) for s in self.subtests)


SETTINGS_KEY = pytest.StashKey[Settings]()
TIERSET_KEY = pytest.StashKey[TierSet]()
EXPERIMENT_KEY = pytest.StashKey[Path]()  # the experiment folder, the same in every process
SESSION_KEY = pytest.StashKey[str]()  # the session's id, the same on the controller and workers


def _matches(selector: str, sub: Subtest) -> bool:
    match = SUBTEST_SELECTOR.match(selector)
    assert match, selector
    tier, number, words = match.groups()
    return ((tier is None or tier == sub.tier) and number == sub.number
            and (words is None or f"{number}-{words}" == sub.name))


def _folder(config: pytest.Config, dest: str, holding: str | None = None) -> Path | None:
    """A folder option, None when not set: the CLI's relative to the invocation folder, the
    ini's to the ini file's. It must be a folder of `holding` (read) or, without `holding`, one
    this session can write (the probe left to the controller)."""
    cli = config.getoption(dest)
    raw, origin = (cli, f"--{dest.replace('_', '-')}") if cli else _ini(config, dest)
    text = str(raw or "")
    if not text:
        return None
    here = config.invocation_params.dir
    base = here if cli else config.inipath.parent if config.inipath else config.rootpath
    path = (base / text).resolve()
    problem = write_problem(path, here, probe=not hasattr(config, "workerinput")) \
        if holding is None else read_problem(path, here, holding)
    if problem:
        raise pytest.UsageError(f"{origin}={raw!r}: {problem}")
    return path


def resolve(config: pytest.Config) -> Settings:
    """Read and check every scylla option once; a bad value is a `pytest.UsageError`."""
    tiers_dir = _folder(config, "scylla_tiers_dir", "tier files (T0.yaml ...)") or \
        config.rootpath / "tiers"
    tier_dirs = _tier_layers(config, tiers_dir)
    tiers, (subtests, subtests_origin) = _tiers(config, tier_dirs), _subtests(config)
    judges, min_judges = _judges(config)
    flags: dict[str, Any] = {
        name: _flag(config, f"scylla_{name}")
        for name in ("keep_workspaces", "record_bodies", "fresh", "rejudge", "plan")}
    replay = _folder(config, "scylla_replay", "recorded experiment (runs/<run>/bodies/)")
    if replay is not None and not any(replay.glob("runs/*/bodies/*.meta.json")):
        raise pytest.UsageError(
            f"--scylla-replay={replay}: no recorded model calls there (runs/<run>/bodies/); "
            "record an experiment with --scylla-record-bodies first")
    if flags["fresh"] and flags["rejudge"]:
        raise pytest.UsageError("--scylla-fresh and --scylla-rejudge exclude each other: fresh "
                                "re-runs the agents, rejudge only re-scores stored runs")
    settings = Settings(
        runs=_runs(config), tiers=tiers, subtests=subtests,
        out=_folder(config, "scylla_out"), label=_label(config),
        report=_report(config), oracle=_oracle(config), tiers_dir=tier_dirs[0],
        tier_dirs=tier_dirs,
        rubrics_dir=_folder(config, "scylla_rubrics_dir", "shared rubrics (<name>.yaml)") or
        config.rootpath / "rubrics",
        **agent_settings(config),
        **sandbox_settings(config),
        cli=str(_value(config, "scylla_cli")[0]).strip() or None,
        cache_dir=_folder(config, "scylla_cache_dir") or default_cache_dir(),
        replay=replay,
        judges=judges, min_judges=min_judges, panel=_panel(config), shard=_shard(config),
        **_limits(config), **flags)
    if subtests is not None:
        # Checking that each selector matches something needs the tiers: parse them now, once.
        config.stash[TIERSET_KEY] = TierSet(tier_dirs)
        _check_subtests_exist(config.stash[TIERSET_KEY], settings, subtests_origin)
    return settings


def _runs(config: pytest.Config) -> int:
    raw, origin = _value(config, "scylla_runs")
    try:
        runs = int(str(raw))
    except ValueError:
        raise pytest.UsageError(f"{origin}={raw!r}: expected a whole number of runs from 1 to "
                                f"{MAX_RUNS}, e.g. --scylla-runs=10") from None
    if not 1 <= runs <= MAX_RUNS:
        raise pytest.UsageError(f"{origin}={runs}: runs per cell must be between 1 and "
                                f"{MAX_RUNS}, e.g. --scylla-runs=10")
    return runs


def _tier_layers(config: pytest.Config, tiers_dir: Path) -> tuple[Path, ...]:
    """The tier folders, first winning: the project's, the package's, or the one over the
    other (`--scylla-packaged-tiers`)."""
    raw, origin = _value(config, "scylla_packaged_tiers")
    mode = str(raw).strip() or "auto"
    if mode not in ("auto", "under", "off"):
        raise pytest.UsageError(f"{origin}={mode!r}: expected auto, under or off")
    named = bool(config.getoption("scylla_tiers_dir") or _ini(config, "scylla_tiers_dir")[0])
    if mode == "under" and tiers_dir.resolve() != PACKAGED.resolve():
        return (tiers_dir, PACKAGED)
    if mode == "auto" and not named and not tiers_dir.is_dir():
        return (PACKAGED,)
    return (tiers_dir,)


def _tiers(config: pytest.Config, tiers_dir: tuple[Path, ...]) -> tuple[str, ...] | None:
    raw, origin = _value(config, "scylla_tiers")
    tiers = _list(raw)
    if tiers is not None:
        known = list(tier_files(tiers_dir))
        for tier in tiers:
            if not TIER_NAME.match(tier):
                raise pytest.UsageError(f"{origin}: '{tier}' is not a tier name; expected names "
                                        "such as T0 or T5, comma-separated")
            if tier not in known:
                raise pytest.UsageError(
                    f"{origin}: unknown tier '{tier}'; tiers in {display(tiers_dir[0])}: "
                    f"{', '.join(known) or 'none (no T*.yaml files there)'}")
    return tiers


def _subtests(config: pytest.Config) -> tuple[tuple[str, ...] | None, str]:
    raw, origin = _value(config, "scylla_subtests")
    subtests = _list(raw)
    for selector in subtests or ():
        if not SUBTEST_SELECTOR.match(selector):
            raise pytest.UsageError(f"{origin}: '{selector}' is not a subtest selector; "
                                    "expected e.g. 02, 02-core or T5-02")
    return subtests, origin


def _report(config: pytest.Config) -> tuple[str, ...]:
    from pytest_scylla.extensions import ExtensionError, report_writers

    raw, origin = _value(config, "scylla_report")
    report = _list(raw) or ()
    try:
        known = (*REPORT_FORMATS, *report_writers(config, REPORT_FORMATS))  # and plugins'
    except ExtensionError as exc:
        raise pytest.UsageError(str(exc)) from None
    if "all" in report:
        report = known
    elif "none" in report:
        report = ()
    for fmt in report:
        if fmt not in known:
            raise pytest.UsageError(f"{origin}: unknown report format '{fmt}'; choose from "
                                    f"{', '.join(known)}, all or none")
    return tuple(report)


def _oracle(config: pytest.Config) -> str | None:
    raw, origin = _value(config, "scylla_oracle")
    oracle = str(raw) or None
    if oracle is not None and oracle not in ORACLE_MODES:
        raise pytest.UsageError(f"{origin}: unknown oracle mode '{oracle}'; choose from "
                                f"{', '.join(ORACLE_MODES)}")
    if oracle is not None:
        from pytest_scylla.run.gateway import latency

        try:
            latency.seconds("check", 0)
        except latency.LatencyError as exc:
            raise pytest.UsageError(f"environment: {exc}") from None
    return oracle


def _label(config: pytest.Config) -> str:
    raw, origin = _value(config, "scylla_label")
    label = str(raw).strip()
    if label and not LABEL.match(label):
        raise pytest.UsageError(f"{origin}={raw!r}: a label is up to 64 letters, digits, '.', "
                                "'_' or '-' (it becomes part of a folder name), e.g. "
                                "--scylla-label=sonnet5-baseline")
    return label


def _shard(config: pytest.Config) -> tuple[int, int] | None:
    raw, origin = _value(config, "scylla_shard")
    text = str(raw).strip()
    if not text:
        return None
    index, _, count = text.partition("/")
    try:
        shard = int(index), int(count)
    except ValueError:
        shard = (0, 0)
    if not 1 <= shard[0] <= shard[1]:
        raise pytest.UsageError(f"{origin}={text!r}: expected I/N with 1 <= I <= N, e.g. "
                                "--scylla-shard=2/4 (shard 2 of 4)")
    return shard


def _judges(config: pytest.Config) -> tuple[tuple[JudgeSpec, ...], int]:
    """The panel and how many valid judges a verdict needs (at most the panel's size)."""
    raw, origin = _value(config, "scylla_judges")
    plugins: dict[str, Any] = {}  # the judge kinds plugins add
    for offered in config.hook.pytest_scylla_judge_kinds(config=config):
        plugins.update(offered or {})
    try:
        judges = tuple(parse_judge(e, plugins) for e in _list(raw) or ())
    except JudgeSpecError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None
    if not judges:
        raise pytest.UsageError(f"{origin}: the panel needs at least one judge, e.g. "
                                "--scylla-judges=claude-sonnet-5")
    raw, origin = _value(config, "scylla_min_judges")
    try:
        min_judges = int(str(raw))
    except ValueError:
        min_judges = 0
    if min_judges < 1:
        raise pytest.UsageError(f"{origin}={raw!r}: expected a whole number of judges >= 1")
    return judges, min(min_judges, len(judges))


def _panel(config: pytest.Config) -> str:
    raw, origin = _value(config, "scylla_panel")
    mode = str(raw).strip()
    if mode not in ("full", "adaptive"):
        raise pytest.UsageError(f"{origin}={raw!r}: expected full or adaptive")
    return mode


def _limits(config: pytest.Config) -> dict[str, Any]:
    """Budgets, retries, pauses and the progress interval."""
    raw, origin = _value(config, "scylla_retries")
    try:
        retries = int(str(raw))
    except ValueError:
        retries = 0
    if not 1 <= retries <= 20:
        raise pytest.UsageError(f"{origin}={raw!r}: expected a number of attempts from 1 to 20, "
                                "e.g. --scylla-retries=4")
    retry_wait = _number(config, "scylla_retry_wait", "seconds", "--scylla-retry-wait=120")
    max_pause = _number(config, "scylla_max_pause", "seconds", "--scylla-max-pause=3600")
    return {
        "budget_usd": _number(config, "scylla_budget_usd", "dollars", "--scylla-budget-usd=25",
                              positive=True),
        "max_run_cost": _number(config, "scylla_max_run_cost", "dollars",
                                "--scylla-max-run-cost=2.5", positive=True),
        "retries": retries, "retry_wait": 120.0 if retry_wait is None else retry_wait,
        "max_pause": 21600.0 if max_pause is None else max_pause,
        "progress": _number(config, "scylla_progress", "seconds", "--scylla-progress=30")}


def _number(config: pytest.Config, dest: str, unit: str, example: str,
            positive: bool = False) -> float | None:
    """A non-negative (or positive) number of `unit`, or None when the option is not set."""
    raw, origin = _value(config, dest)
    text = str(raw).strip() if raw is not None else ""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise pytest.UsageError(f"{origin}={raw!r}: expected a number of {unit} "
                                f"{'> 0' if positive else '>= 0'}, e.g. {example}")
    return value


def experiment_dir(config: pytest.Config) -> Path:
    """--scylla-out, else the controller's `reports/<timestamp>-<label>` (shared with its
    workers); the label defaults to the model id, or `oracle-<mode>` under the oracle."""
    s = config.stash[SETTINGS_KEY]
    if s.out is not None:
        return s.out
    worker = getattr(config, "workerinput", None)
    if worker and "scylla_out" in worker:
        return Path(worker["scylla_out"])
    label = s.label or re.sub(r"[^A-Za-z0-9._-]+", "-", f"oracle-{s.oracle}" if s.oracle
                              else "+".join(s.models) or s.model)
    folder = config.rootpath / "reports" / f"{datetime.now():%Y%m%d-%H%M%S}-{label}"
    suffix = 2
    while folder.exists():  # two sessions started in the same second
        folder = folder.with_name(f"{datetime.now():%Y%m%d-%H%M%S}-{label}-{suffix}")
        suffix += 1
    return folder


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-scylla"


def tierset(config: pytest.Config) -> TierSet:
    """The session's tiers, parsed once on first use."""
    if TIERSET_KEY not in config.stash:
        config.stash[TIERSET_KEY] = TierSet(config.stash[SETTINGS_KEY].tier_dirs)
    return config.stash[TIERSET_KEY]


def _check_subtests_exist(tiers: TierSet, settings: Settings, origin: str) -> None:
    subs = [s for t in tiers.tiers.values() if settings.selects_tier(t.name) for s in t.subtests]
    for selector in settings.subtests or ():
        if tiers.tiers and not any(_matches(selector, s) for s in subs):
            raise pytest.UsageError(
                f"{origin}: '{selector}' matches no subtest of the selected tiers; "
                f"known: {', '.join(f'{s.tier}-{s.name}' for s in subs)}")
