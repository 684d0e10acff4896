"""The `--scylla-*` options and their `scylla_*` ini keys: names, help texts and defaults."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from pytest_scylla.core.folders import shown
from pytest_scylla.judging.judges import DEFAULT_JUDGES

ORACLE_MODES = ("solution", "noop", "wrong", "mixed")
DEFAULT_MODEL = "claude-sonnet-5"

# (name, help, metavar, default as an ini string)
OPTIONS: tuple[tuple[str, str, str, str], ...] = (
    ("runs", "runs per case x tier-subtest cell (default 1)", "N", "1"),
    ("tiers", "only these tiers, comma-separated, e.g. T0,T5 (default: all)", "TIERS", ""),
    ("subtests", "only these subtests, comma-separated: 02, 02-core, T5-02 (default: all)",
     "SUBTESTS", ""),
    ("out", "experiment folder for results (default: reports/<timestamp>-<label>/)", "DIR", ""),
    ("label", "the experiment's name in its default folder (default: the model id, or "
     "oracle-<mode> under --scylla-oracle)", "NAME", ""),
    ("report", "reports to write: terminal,html,md,json,csv, one a plugin adds, all or none "
     "(default terminal)",
     "FORMATS", "terminal"),
    ("tiers-dir", "folder of tier files T0.yaml ... (default: <rootdir>/tiers)", "DIR", ""),
    ("packaged-tiers", "the package's T0-T6: auto (used when the project has no tiers folder), "
     "under (the project's tiers laid over them: same name replaces, new names add) or off "
     "(default auto)", "MODE", "auto"),
    ("rubrics-dir", "folder of shared rubrics (default: <rootdir>/rubrics)", "DIR", ""),
    ("shard", "run only share I of N of the selected runs (CI matrix jobs, Kubernetes Indexed "
     "Jobs): runs are split by their key, so the N shards partition the selection exactly; "
     "merge the shards' folders with `scylla report` (default: all)", "I/N", ""),
    ("agent", "the agent CLI adapter: claude-code, codex, gemini-cli, opencode, or one a plugin "
     "adds through the pytest_scylla_agents hook (default claude-code)", "NAME", "claude-code"),
    ("model", f"model id the agent runs with unless a subtest sets one (default {DEFAULT_MODEL})",
     "MODEL", DEFAULT_MODEL),
    ("models", "a model axis: every run once per model, comma-separated model ids, e.g. "
     "claude-sonnet-5,claude-haiku-4-5; the model ends the run's id (-k haiku), is a marker and "
     "a column of every table, and overrides a subtest's model (default: no axis, --scylla-model)",
     "MODELS", ""),
    ("sandbox", "how the agent and checks are isolated: auto (docker when an engine answers "
     "and the image is on it, else bwrap if it works, else local), bwrap, docker (a container "
     "per run, docker SDK) or local (default auto)", "KIND", "auto"),
    ("image", "the Docker image of every run under the docker sandbox, unless its case names "
     "one (image:): host (an empty image with this machine's system, Python and agent CLI "
     "bound read-only) or an image on the engine that has the agent CLI, git and Python (make "
     "one with `scylla image build`); never pulled (default host)", "IMAGE", "host"),
    ("limits", "each run's limits under docker and bwrap (bwrap: a cgroup; /tmp a quarter of "
     "the memory): memory, cpus, pids (default "
     "memory=4g,cpus=2,pids=1024)", "LIST", "memory=4g,cpus=2,pids=1024"),
    ("cli", "the Claude Code executable (default: claude on PATH)", "PATH", ""),
    ("judges", "the judge panel, comma-separated: model ids (Anthropic, through the gateway), "
     "claude-cli:<model>, gemini:<model> (Google's Gemini API, GEMINI_API_KEY) or "
     f"openai:<model>@<base-url> (default: {','.join(DEFAULT_JUDGES)})",
     "JUDGES", ",".join(DEFAULT_JUDGES)),
    ("min-judges", "valid judges a verdict needs, else judge_error (default 2, at most the "
     "panel size)", "N", "2"),
    ("panel", "how the panel is asked: full (every judge at once) or adaptive (the cheaper "
     "judges first, the most expensive one only when their verdicts differ by more than 0.15, "
     "straddle the pass line or are too few) (default full)", "MODE", "full"),
    ("replay", "answer every model call (agents and judges) from an experiment recorded with "
     "--scylla-record-bodies in DIR, matched by run and call order: offline and deterministic; "
     "a request that differs from the recording ends its run as infra_error (default: off)",
     "DIR", ""),
    ("cache-dir", "shared cache for repo mirrors, MCP packages and CLI baselines "
     "(default: $XDG_CACHE_HOME/pytest-scylla or ~/.cache/pytest-scylla)", "DIR", ""),
    ("budget-usd", "session budget in dollars, agents and judges together: once the session's "
     "spend would pass it no new run starts (those are skipped, saying why); runs in flight "
     "finish (default: no budget)", "USD", ""),
    ("max-run-cost", "every run's own cost limit in dollars, instead of each case's "
     "max_cost_usd (default: each case's max_cost_usd; $2.00 for a case that sets none)",
     "USD", ""),
    ("retries", "attempts the gateway makes on a 408/429/5xx/529 answer or a lost connection "
     "before the run is an infra_error (default 4)", "N", "4"),
    ("retry-wait", "most seconds the gateway waits on one call's retries; a longer retry-after "
     "(a usage-window limit) pauses new runs instead (default 120)", "SECONDS", "120"),
    ("max-pause", "longest pause for a usage-window limit; beyond it the remaining runs are "
     "skipped (default 21600 = 6 h)", "SECONDS", "21600"),
    ("progress", "seconds between progress lines (runs done/total, passes, spend, ETA); 0 turns "
     "them off (default 10 on a terminal, 60 otherwise)", "SECONDS", ""),
)
# (name, help): on/off switches
FLAGS: tuple[tuple[str, str], ...] = (
    ("keep-workspaces", "keep each run's workspace in its run folder (default: removed; the "
     "diff and file list are always kept)"),
    ("record-bodies", "also store every model request and response body in the run folder "
     "(bodies/, the judges' in bodies/judge<n>/): what --scylla-replay re-runs"),
    ("fresh", "run again the runs already stored in --scylla-out (by default they are reused, "
     "and a stored run made under other conditions stops the session)"),
    ("rejudge", "re-score the runs stored in --scylla-out with the current rubric and judge "
     "panel; no agent runs"),
    ("docker-copy", "docker: copy each run's folder (workspace, HOME) into its container and "
     "back through the engine's API, and reach the gateway through a relay, instead of bind "
     "mounts (always so on a remote engine); what comes back is extracted as hostile data"),
    ("plan", "print how many runs the selection has and what they should cost and take (from "
     "stored history), then stop without running anything"),
)


# keys whose value holds several items: one string of them comma-separated, or a list (a TOML
# list, or `[a, b]` in an ini file), as pytest's own list-valued keys may be written
LIST_KEYS = frozenset(f"scylla_{name}" for name in ("tiers", "subtests", "report", "judges",
                                                     "limits", "models"))
TRUTH = "true or false (also yes/no, on/off, 1/0)"
# pytest 9 warns of a TOML list for a string key with this class; pytest 8 has no such warning
REMOVED_IN_10: type[Warning] = getattr(pytest, "PytestRemovedIn10Warning",
                                       pytest.PytestDeprecationWarning)


def value(config: pytest.Config, dest: str) -> tuple[Any, str]:
    """(value, where it came from) with CLI over ini."""
    cli = config.getoption(dest)
    if cli is not None:
        return cli, f"--{dest.replace('_', '-')}"
    return ini(config, dest)


def flag(config: pytest.Config, dest: str) -> bool:
    """An on/off switch: its `--scylla-*` flag, else its ini key. An ini value that is not a
    boolean is a usage error naming the file, the key and the values allowed."""
    if config.getoption(dest):
        return True
    try:
        return bool(config.getini(dest))
    except (ValueError, TypeError, pytest.UsageError) as exc:  # "invalid truth value 'always'"
        # (pytest 9.2 raises it as a UsageError from the ValueError or TypeError; 9.0 bare)
        cause = exc.__cause__ if isinstance(exc, pytest.UsageError) and exc.__cause__ else exc
        origin = _origin(config, dest)
        said = f"{_native_toml(config, dest)!r} is not a boolean" \
            if isinstance(cause, TypeError) else str(cause)
        raise pytest.UsageError(f"{origin}: {said}; expected {TRUTH}, e.g. {dest} = "
                                f"{'true' if _in_toml(config) else 'yes'}") from None


def ini(config: pytest.Config, dest: str) -> tuple[Any, str]:
    """A string ini key's (value, where it came from: `-o key`, or `<file>: key`). A key of
    several items (LIST_KEYS) written as a list is read as its items comma-separated; any other
    key written as a list is refused."""
    with warnings.catch_warnings():  # pytest warns of a TOML list for a string key: read here
        warnings.simplefilter("ignore", REMOVED_IN_10)
        try:
            raw = config.getini(dest)
        except (TypeError, ValueError, pytest.UsageError) as exc:  # native TOML
            # ([tool.pytest]): a list (or a number) for a string key (pytest 9.2 raises the
            # TypeError as a UsageError); or a number key whose value is no number
            name = dest.removeprefix("scylla_").replace("_", "-")
            if TYPED_INI and name in TYPED and not (
                    _in_toml(config) and isinstance(_native_toml(config, dest), list)):
                cause = exc.__cause__ if isinstance(exc, pytest.UsageError) and \
                    exc.__cause__ else exc
                raise pytest.UsageError(
                    f"{_origin(config, dest)}: {cause}; expected "
                    f"{'a whole number' if TYPED[name] == 'int' else 'a number'}, e.g. "
                    f"{dest} = {'3' if TYPED[name] == 'int' else '60'}") from None
            if not _in_toml(config):
                raise
            raw = _native_toml(config, dest)
    origin = _origin(config, dest)
    text = raw.strip() if isinstance(raw, str) else ""
    bracketed = dest in LIST_KEYS and text.startswith("[") and text.endswith("]")
    if not isinstance(raw, list) and not bracketed:
        return raw if isinstance(raw, str) else str(raw), origin
    if dest not in LIST_KEYS:
        raise pytest.UsageError(f"{origin}: {json.dumps(raw) if isinstance(raw, list) else text}"
                                " is a list; expected one value")
    items = [str(x) for x in raw] if isinstance(raw, list) else \
        [x.strip().strip("'\"") for x in text[1:-1].split(",")]
    return ",".join(x.strip() for x in items if x.strip()), origin


def _origin(config: pytest.Config, dest: str) -> str:
    """Where an ini key's value came from: `-o key`, or `<file>: key`."""
    overrides = config.getoption("override_ini") or ()
    if any(str(o).partition("=")[0].strip() == dest for o in overrides):
        return f"-o {dest}"
    if config.inipath is not None:
        return f"{shown(config.inipath, config.invocation_params.dir)}: {dest}"
    return dest


def _in_toml(config: pytest.Config) -> bool:
    return config.inipath is not None and config.inipath.suffix == ".toml"


def _native_toml(config: pytest.Config, dest: str) -> Any:
    """A key's value as written in a native TOML table (`[tool.pytest]` of pyproject.toml,
    `[pytest]` of pytest.toml), where pytest refuses a value of another type than the key's."""
    import tomllib

    assert config.inipath is not None  # a TypeError comes only from a TOML file
    data = tomllib.loads(config.inipath.read_text(encoding="utf-8"))
    table = data.get("pytest", {}) if config.inipath.name != "pyproject.toml" else \
        data.get("tool", {}).get("pytest", {})
    return table.get(dest)


def as_list(raw: Any) -> tuple[str, ...] | None:
    """A comma- (or line-) separated value as a tuple of its items; None when empty."""
    items = tuple(x.strip() for x in str(raw).replace("\n", ",").split(",") if x.strip())
    return items or None


# `pytest --help` shows the options in these groups, in this order
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "scylla": ("pytest-scylla: what runs (evaluate agentic coding CLIs)", (
        "oracle", "only", "skip", "runs", "tiers", "subtests", "agent", "model", "models",
        "shard", "plan")),
    "scylla-results": ("pytest-scylla: results and resuming", (
        "out", "label", "report", "fresh", "rejudge", "keep-workspaces", "record-bodies",
        "replay", "progress")),
    "scylla-isolation": ("pytest-scylla: sandbox and limits", (
        "sandbox", "image", "limits", "docker-copy", "cli")),
    "scylla-judging": ("pytest-scylla: judges", ("judges", "min-judges", "panel")),
    "scylla-spend": ("pytest-scylla: spend and faults", (
        "budget-usd", "max-run-cost", "retries", "retry-wait", "max-pause")),
    "scylla-inputs": ("pytest-scylla: where inputs are", (
        "tiers-dir", "packaged-tiers", "rubrics-dir", "cache-dir")),
}
# ini keys read as numbers (pytest 8.4 and later say so in --help); the others are strings
# (an empty value, as for --scylla-budget-usd, means "not set")
TYPED = {"runs": "int", "min-judges": "int", "retries": "int", "retry-wait": "float",
         "max-pause": "float"}
TYPED_INI = pytest.version_tuple[:2] >= (8, 4)


def _group(parser: pytest.Parser, name: str) -> Any:
    found = next(g for g, (_, names) in GROUPS.items() if name in names)
    return parser.getgroup(found, GROUPS[found][0])


def addoptions(parser: pytest.Parser) -> None:
    for key in GROUPS:  # made in order, so --help lists them so
        parser.getgroup(key, GROUPS[key][0])
    for name, help_text, metavar, default in OPTIONS:
        dest = f"scylla_{name.replace('-', '_')}"
        _group(parser, name).addoption(f"--scylla-{name}", dest=dest, metavar=metavar,
                                       default=None, help=help_text)
        kind = TYPED.get(name) if TYPED_INI else None
        ini_type: Any = kind or "string"  # "int"/"float": pytest 8.4's, unknown to 8.0's stubs
        parser.addini(dest, f"[pytest-scylla] {help_text}", type=ini_type,
                      default=(int(default) if kind == "int" else float(default)) if kind
                      else default)
    for name, help_text in FLAGS:
        dest = f"scylla_{name.replace('-', '_')}"
        _group(parser, name).addoption(f"--scylla-{name}", dest=dest, action="store_true",
                                       default=None, help=help_text)
        parser.addini(dest, f"[pytest-scylla] {help_text}", type="bool", default=False)
    group = _group(parser, "oracle")
    group.addoption(
        "--scylla-oracle", dest="scylla_oracle", nargs="?", const="solution", default=None,
        choices=ORACLE_MODES, metavar="MODE",
        help="offline SIMULATED model instead of a real one: solution (default: applies the "
             "case's reference solution), noop (does nothing), wrong (applies a broken change), "
             "mixed (one of the three per run, fixed by the run's key: varied results). "
             "Write it as --scylla-oracle=MODE or put it after the paths")
    group.addoption("--scylla-only", dest="scylla_only", action="store_true", default=False,
                    help="run the evaluations only: every other test collected is deselected "
                         "(a bare `pytest` in a project with its own tests runs those only)")
    group.addoption("--scylla-skip", dest="scylla_skip", action="store_true", default=False,
                    help="run no evaluation, whatever the paths given: the plugin stays inert "
                         "and the case folders are left out of collection")
    parser.addini("scylla_oracle", "[pytest-scylla] oracle mode: solution, noop, wrong, mixed or "
                  "empty",
                  default="")
    parser.addini("scylla_cases", "[pytest-scylla] folders (relative to the ini file) whose case "
                  "folders are collected as evaluations (default: cases)", type="linelist",
                  default=["cases"])
