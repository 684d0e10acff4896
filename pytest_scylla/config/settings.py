"""The `--scylla-*` options and `scylla_*` ini keys (declared in `options`), resolved once
(CLI > ini > default) into a frozen `Settings` kept in `config.stash`."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypedDict

import pytest

from pytest_scylla.config.agent import agent_settings
from pytest_scylla.config.options import (
    BY_NAME,
    ORACLE_MODES,
    PANEL_MODES,
    PanelMode,
    StopMode,
    one_of,
)
from pytest_scylla.config.options import DEFAULTS as D
from pytest_scylla.config.sandbox import sandbox_settings
from pytest_scylla.config.selection import check_subtests, matches, selection_settings
from pytest_scylla.config.stop import stop_settings
from pytest_scylla.config.values import as_list as _list
from pytest_scylla.config.values import flag as _flag
from pytest_scylla.config.values import folder as _folder
from pytest_scylla.config.values import value as _value
from pytest_scylla.formats.tiers import Subtest, TierSet
from pytest_scylla.judging.judges import JudgeSpec, JudgeSpecError
from pytest_scylla.judging.judges import parse as parse_judge

REPORT_FORMATS = BY_NAME["report"].choices
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_RUNS = 1000


@dataclass(frozen=True)
class Settings:
    """The options' values; a field's default is its option's declared one (`options`)."""

    runs: int = D["runs"]
    tiers: tuple[str, ...] | None = D["tiers"]
    subtests: tuple[str, ...] | None = D["subtests"]
    out: Path | None = D["out"]
    label: str = D["label"]
    report: tuple[str, ...] = D["report"]
    oracle: str | None = D["oracle"]
    tiers_dir: Path = Path("tiers")  # resolved: <rootdir>/tiers unless set
    tier_dirs: tuple[Path, ...] = ()  # the layered tier folders, the first winning
    rubrics_dir: Path = Path("rubrics")  # resolved: <rootdir>/rubrics unless set
    model: str = D["model"]
    models: tuple[str, ...] = D["models"]  # the model axis (empty: none)
    agent: str = D["agent"]  # the adapter's name (checked against the registered ones)
    sandbox: str = D["sandbox"]
    image: str = D["image"]  # the docker sandbox's image (a case's own image: wins)
    limits: tuple[int, float, int] = D["limits"]  # docker: memory bytes, cpus, pids
    docker_copy: bool = D["docker_copy"]  # docker: the run's folder by copy, not a bind mount
    starts: int | None = D["starts"]  # agents starting at once on the machine (None: its cores)
    cli: str | None = D["cli"]
    cache_dir: Path = Path(".cache")  # resolved: default_cache_dir() unless set
    keep_workspaces: bool = D["keep_workspaces"]
    record_bodies: bool = D["record_bodies"]
    replay: Path | None = D["replay"]  # an experiment recorded with bodies: its answers replayed
    judges: tuple[JudgeSpec, ...] = tuple(parse_judge(j) for j in D["judges"])
    min_judges: int = D["min_judges"]
    panel: PanelMode = D["panel"]
    budget_usd: float | None = D["budget_usd"]
    max_run_cost: float | None = D["max_run_cost"]
    retries: int = D["retries"]
    retry_wait: float = D["retry_wait"]
    max_pause: float = D["max_pause"]
    progress: float | None = D["progress"]  # None: by terminal kind
    fresh: bool = D["fresh"]
    rejudge: bool = D["rejudge"]
    plan: bool = D["plan"]
    shard: tuple[int, int] | None = D["shard"]  # (index from 1, count)
    stop: StopMode = D["stop"]  # (operations/stopping.py)
    reference: str | None = D["reference"]  # the subtest cells are compared with (None: first)
    alpha: float = D["alpha"]
    margin: float = D["margin"]

    def selects_tier(self, tier: str) -> bool:
        return self.tiers is None or tier in self.tiers

    def selects_subtest(self, sub: Subtest) -> bool:
        return self.subtests is None or any(matches(s, sub) for s in self.subtests)


SETTINGS_KEY = pytest.StashKey[Settings]()
TIERSET_KEY = pytest.StashKey[TierSet]()
EXPERIMENT_KEY = pytest.StashKey[Path]()  # the experiment folder, the same in every process
SESSION_KEY = pytest.StashKey[str]()  # the session's id, the same on the controller and workers


def resolve(config: pytest.Config) -> Settings:
    """Read and check every scylla option once; a bad value is a `pytest.UsageError`."""
    selection, subtests_origin = selection_settings(config)
    judges, min_judges = _judges(config)
    flags: Flags = {
        "keep_workspaces": _flag(config, "scylla_keep_workspaces"),
        "record_bodies": _flag(config, "scylla_record_bodies"),
        "fresh": _flag(config, "scylla_fresh"),
        "rejudge": _flag(config, "scylla_rejudge"),
        "plan": _flag(config, "scylla_plan"),
    }
    replay = _folder(config, "scylla_replay", "recorded experiment (runs/<run>/bodies/)")
    if replay is not None and not any(replay.glob("runs/*/bodies/*.meta.json")):
        raise pytest.UsageError(
            f"--scylla-replay={replay}: no recorded model calls there (runs/<run>/bodies/); "
            "record an experiment with --scylla-record-bodies first"
        )
    if flags["fresh"] and flags["rejudge"]:
        raise pytest.UsageError(
            "--scylla-fresh and --scylla-rejudge exclude each other: fresh "
            "re-runs the agents, rejudge only re-scores stored runs"
        )
    settings = Settings(
        runs=_runs(config),
        **selection,
        out=_folder(config, "scylla_out"),
        label=_label(config),
        report=_report(config),
        oracle=_oracle(config),
        rubrics_dir=_folder(config, "scylla_rubrics_dir", "shared rubrics (<name>.yaml)")
        or config.rootpath / "rubrics",
        **agent_settings(config),
        **sandbox_settings(config),
        cli=str(_value(config, "scylla_cli")[0]).strip() or None,
        cache_dir=_folder(config, "scylla_cache_dir") or default_cache_dir(),
        replay=replay,
        judges=judges,
        min_judges=min_judges,
        panel=_panel(config),
        shard=_shard(config),
        **stop_settings(config),
        **_limits(config),
        **flags,
    )
    if settings.stop == "decided" and (settings.fresh or settings.rejudge):
        raise pytest.UsageError(
            "--scylla-stop=decided decides from the stored runs, which --scylla-fresh and "
            "--scylla-rejudge make again: run them without --scylla-stop, or stop by decision "
            "into a new --scylla-out"
        )
    if settings.subtests is not None:
        # Checking that each selector matches something needs the tiers: parse them now, once.
        config.stash[TIERSET_KEY] = TierSet(settings.tier_dirs)
        check_subtests(
            config.stash[TIERSET_KEY], settings.tiers, settings.subtests, subtests_origin
        )
    return settings


def _runs(config: pytest.Config) -> int:
    raw, origin = _value(config, "scylla_runs")
    try:
        runs = int(str(raw))
    except ValueError:
        raise pytest.UsageError(
            f"{origin}={raw!r}: expected a whole number of runs from 1 to "
            f"{MAX_RUNS}, e.g. --scylla-runs=10"
        ) from None
    if not 1 <= runs <= MAX_RUNS:
        raise pytest.UsageError(
            f"{origin}={runs}: runs per cell must be between 1 and "
            f"{MAX_RUNS}, e.g. --scylla-runs=10"
        )
    return runs


def _report(config: pytest.Config) -> tuple[str, ...]:
    from pytest_scylla.config.extensions import ExtensionError, report_writers

    raw, origin = _value(config, "scylla_report")
    report = _list(raw) or ()
    try:
        writers = report_writers(config)  # the built-in md and html, and plugins'
        known = (*REPORT_FORMATS, *(name for name in writers if name not in REPORT_FORMATS))
    except ExtensionError as exc:
        raise pytest.UsageError(str(exc)) from None
    if "all" in report:
        report = known
    elif "none" in report:
        report = ()
    for fmt in report:
        if fmt not in known:
            raise pytest.UsageError(
                f"{origin}: unknown report format '{fmt}'; choose from "
                f"{', '.join(known)}, all or none"
            )
    return tuple(report)


def _oracle(config: pytest.Config) -> str | None:
    raw, origin = _value(config, "scylla_oracle")
    oracle = str(raw) or None
    if oracle is not None and oracle not in ORACLE_MODES:
        raise pytest.UsageError(
            f"{origin}: unknown oracle mode '{oracle}'; choose from {', '.join(ORACLE_MODES)}"
        )
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
        raise pytest.UsageError(
            f"{origin}={raw!r}: a label is up to 64 letters, digits, '.', "
            "'_' or '-' (it becomes part of a folder name), e.g. "
            "--scylla-label=sonnet5-baseline"
        )
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
        raise pytest.UsageError(
            f"{origin}={text!r}: expected I/N with 1 <= I <= N, e.g. "
            "--scylla-shard=2/4 (shard 2 of 4)"
        )
    return shard


def _judges(config: pytest.Config) -> tuple[tuple[JudgeSpec, ...], int]:
    """The panel and how many valid judges a verdict needs (at most the panel's size)."""
    raw, origin = _value(config, "scylla_judges")
    from pytest_scylla.config.extensions import judge_kinds

    kinds = judge_kinds(config)  # the built-in ones and those plugins add
    try:
        judges = tuple(parse_judge(e, kinds) for e in _list(raw) or ())
    except JudgeSpecError as exc:
        raise pytest.UsageError(f"{origin}: {exc}") from None
    if not judges:
        raise pytest.UsageError(
            f"{origin}: the panel needs at least one judge, e.g. --scylla-judges=claude-sonnet-5"
        )
    min_judges = _whole(config, "scylla_min_judges", 1, math.inf, "a whole number of judges >= 1")
    return judges, min(min_judges, len(judges))


def _panel(config: pytest.Config) -> PanelMode:
    raw, origin = _value(config, "scylla_panel")
    mode = next((m for m in PANEL_MODES if m == str(raw).strip()), None)
    if mode is None:
        raise pytest.UsageError(f"{origin}={raw!r}: expected {one_of(PANEL_MODES)}")
    return mode


class Flags(TypedDict):
    """The `Settings` fields of the switches with an ini key."""

    keep_workspaces: bool
    record_bodies: bool
    fresh: bool
    rejudge: bool
    plan: bool


class LimitsPart(TypedDict):
    """The `Settings` fields of the budgets, retries, pauses, progress and start slots."""

    budget_usd: float | None
    max_run_cost: float | None
    retries: int
    retry_wait: float
    max_pause: float
    progress: float | None
    starts: int | None


def _limits(config: pytest.Config) -> LimitsPart:
    """Budgets, retries, pauses, the progress interval and the machine's start slots."""
    retries = _whole(
        config,
        "scylla_retries",
        1,
        20,
        "a number of attempts from 1 to 20, e.g. --scylla-retries=4",
    )
    retry_wait = _number(config, "scylla_retry_wait", "seconds", "--scylla-retry-wait=120")
    max_pause = _number(config, "scylla_max_pause", "seconds", "--scylla-max-pause=3600")
    return {
        "budget_usd": _number(
            config, "scylla_budget_usd", "dollars", "--scylla-budget-usd=25", positive=True
        ),
        "max_run_cost": _number(
            config, "scylla_max_run_cost", "dollars", "--scylla-max-run-cost=2.5", positive=True
        ),
        "retries": retries,
        "retry_wait": D["retry_wait"] if retry_wait is None else retry_wait,
        "max_pause": D["max_pause"] if max_pause is None else max_pause,
        "progress": _number(config, "scylla_progress", "seconds", "--scylla-progress=30"),
        "starts": _starts(config),
    }


def _starts(config: pytest.Config) -> int | None:
    """`--scylla-starts`: 0 (no limit) to 4096; None (unset) for the machine's cores."""
    if not str(_value(config, "scylla_starts")[0] or "").strip():
        return None
    expected = "a number of agents from 0 (no limit) to 4096, e.g. --scylla-starts=2"
    return _whole(config, "scylla_starts", 0, 4096, expected)


def _whole(config: pytest.Config, dest: str, low: int, high: float, expected: str) -> int:
    """A whole number from `low` to `high`."""
    raw, origin = _value(config, dest)
    try:
        number = int(str(raw))
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise pytest.UsageError(f"{origin}={raw!r}: expected {expected}")
    return number


def _number(
    config: pytest.Config, dest: str, unit: str, example: str, positive: bool = False
) -> float | None:
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
        raise pytest.UsageError(
            f"{origin}={raw!r}: expected a number of {unit} "
            f"{'> 0' if positive else '>= 0'}, e.g. {example}"
        )
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
    label = s.label or re.sub(
        r"[^A-Za-z0-9._-]+",
        "-",
        f"oracle-{s.oracle}" if s.oracle else "+".join(s.models) or s.model,
    )
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
