"""The `--scylla-*` options and their `scylla_*` ini keys, each declared once (`OPTIONS`): its
name, help group, value kind, choices, default and help text. `pytest --help`, the ini keys,
the defaults of `settings.Settings` and docs/options.md's tables are made from them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import pytest

from pytest_scylla.judging.judges import DEFAULT_JUDGES
from pytest_scylla.run.sandbox.limits import DEFAULT_LIMITS

# how an option's value is read: str, int, float, list (items comma-separated, or a list in the
# ini file), flag (a switch with an ini key), switch (the command line's only) or optional (a
# value or choices[0])
OptionKind = Literal["str", "int", "float", "list", "flag", "switch", "optional"]
StopMode = Literal["off", "decided"]  # --scylla-stop
PanelMode = Literal["full", "adaptive"]  # --scylla-panel (judging/judge_run.py)
STOP_MODES: tuple[StopMode, ...] = get_args(StopMode)
PANEL_MODES: tuple[PanelMode, ...] = get_args(PanelMode)

# ini keys read as numbers say so in --help from pytest 8.4 on; before it every key is a string
TYPED_INI = pytest.version_tuple[:2] >= (8, 4)


def _text(value: Any) -> str:
    """A default as written on the command line or in the ini file ("" for none)."""
    if value is None or value is False:
        return ""
    if isinstance(value, tuple):
        return ",".join(map(_text, value))
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _limits_text(limits: tuple[int, float, int]) -> str:
    memory, cpus, pids = limits
    units = ((30, "g"), (20, "m"), (10, "k"), (0, ""))
    shift, unit = next((s, u) for s, u in units if memory % (1 << s) == 0)
    return f"memory={memory >> shift}{unit},cpus={cpus:g},pids={pids}"


@dataclass(frozen=True)
class Option:
    """`--scylla-<name>` and its ini key `scylla_<name>` (dashes as underscores)."""

    name: str
    group: str  # a key of GROUPS
    metavar: str = ""  # the value's placeholder in --help (none for a switch)
    default: Any = None  # the setting when neither the command line nor the ini sets it
    kind: OptionKind = "str"
    choices: tuple[str, ...] = ()  # the values allowed (checked by the settings that read it)
    show: Callable[[Any], str] = _text  # the default as written
    help: str = ""  # "{default}" in it reads as the default

    def with_help(self, text: str) -> Option:
        return replace(self, help=text)

    @property
    def field(self) -> str:
        """Its `Settings` field (and the rest of its ini key)."""
        return self.name.replace("-", "_")

    @property
    def dest(self) -> str:
        return f"scylla_{self.field}"

    @property
    def shown(self) -> str:
        return self.show(self.default)

    @property
    def text(self) -> str:
        """Its help text, the default written in."""
        return self.help.replace("{default}", self.shown)

    @property
    def ini_default(self) -> Any:
        if self.kind == "flag":
            return bool(self.default)
        if self.kind in ("int", "float") and TYPED_INI:
            return self.default
        return self.shown


# `pytest --help` shows the options in these groups, in this order
TITLES = {
    "scylla": "pytest-scylla: what runs (evaluate agentic coding CLIs)",
    "scylla-results": "pytest-scylla: results and resuming",
    "scylla-isolation": "pytest-scylla: sandbox and limits",
    "scylla-judging": "pytest-scylla: judges",
    "scylla-spend": "pytest-scylla: spend and faults",
    "scylla-inputs": "pytest-scylla: where inputs are",
}
_WHAT, _RESULTS, _ISOLATION, _JUDGING, _SPEND, _INPUTS = TITLES

OPTIONS: tuple[Option, ...] = (
    Option(
        "oracle", _WHAT, "MODE", None, "optional", ("solution", "noop", "wrong", "mixed")
    ).with_help(
        "offline SIMULATED model instead of a real one: solution (default: applies the "
        "case's reference solution), noop (does nothing), wrong (applies a broken change), "
        "mixed (one of the three per run, fixed by the run's key: varied results)"
    ),
    Option("only", _WHAT, default=False, kind="switch").with_help(
        "run the evaluations only: every other test collected is deselected "
        "(a bare `pytest` in a project with its own tests runs those only)"
    ),
    Option("skip", _WHAT, default=False, kind="switch").with_help(
        "run no evaluation, whatever the paths given: the plugin stays inert "
        "and the case folders are left out of collection"
    ),
    Option("runs", _WHAT, "N", 1, "int").with_help(
        "runs per case x tier-subtest cell (default {default})"
    ),
    Option("tiers", _WHAT, "TIERS", None, "list").with_help(
        "only these tiers, comma-separated, e.g. T0,T5 (default: all)"
    ),
    Option("subtests", _WHAT, "SUBTESTS", None, "list").with_help(
        "only these subtests, comma-separated: 02, 02-core, T5-02 (default: all)"
    ),
    Option("agent", _WHAT, "NAME", "claude-code").with_help(
        "the agent CLI adapter: claude-code, codex, gemini-cli, opencode, or one a plugin "
        "adds through the pytest_scylla_agents hook (default {default})"
    ),
    Option("model", _WHAT, "MODEL", "claude-sonnet-5").with_help(
        "model id the agent runs with unless a subtest sets one (default {default})"
    ),
    Option("models", _WHAT, "MODELS", (), "list").with_help(
        "a model axis: every run once per model, comma-separated model ids, e.g. "
        "claude-sonnet-5,claude-haiku-4-5; the model ends the run's id (-k haiku), is a "
        "marker and a column of every table, and overrides a subtest's model (default: no "
        "axis, --scylla-model)"
    ),
    Option("shard", _WHAT, "I/N").with_help(
        "run only share I of N of the selected runs (CI matrix jobs, Kubernetes Indexed "
        "Jobs): runs are split by their key, so the N shards partition the selection "
        "exactly; merge the shards' folders with `scylla report` (default: all)"
    ),
    Option("plan", _WHAT, default=False, kind="flag").with_help(
        "print how many runs the selection has and what they should cost and take (from "
        "stored history), then stop without running anything"
    ),
    Option("out", _RESULTS, "DIR").with_help(
        "experiment folder for results (default: reports/<timestamp>-<label>/)"
    ),
    Option("label", _RESULTS, "NAME", "").with_help(
        "the experiment's name in its default folder (default: the model id, or "
        "oracle-<mode> under --scylla-oracle)"
    ),
    Option(
        "report",
        _RESULTS,
        "FORMATS",
        ("terminal",),
        "list",
        ("terminal", "html", "md", "json", "csv"),
    ).with_help(
        "reports to write: terminal,html,md,json,csv, one a plugin adds, all or none "
        "(default {default})"
    ),
    Option("fresh", _RESULTS, default=False, kind="flag").with_help(
        "run again the runs already stored in --scylla-out (by default they are reused, "
        "and a stored run made under other conditions stops the session)"
    ),
    Option("rejudge", _RESULTS, default=False, kind="flag").with_help(
        "re-score the runs stored in --scylla-out with the current rubric and judge "
        "panel; no agent runs"
    ),
    Option("keep-workspaces", _RESULTS, default=False, kind="flag").with_help(
        "keep each run's workspace in its run folder (default: removed; the diff and "
        "file list are always kept)"
    ),
    Option("record-bodies", _RESULTS, default=False, kind="flag").with_help(
        "also store every model request and response body in the run folder (bodies/, "
        "the judges' in bodies/judge<n>/): what --scylla-replay re-runs"
    ),
    Option("replay", _RESULTS, "DIR").with_help(
        "answer every model call (agents and judges) from an experiment recorded with "
        "--scylla-record-bodies in DIR, matched by run and call order: offline and "
        "deterministic; a request that differs from the recording ends its run as "
        "infra_error (default: off)"
    ),
    Option("progress", _RESULTS, "SECONDS").with_help(
        "seconds between progress lines (runs done/total, passes, spend, ETA); 0 turns "
        "them off (default 10 on a terminal, 60 otherwise)"
    ),
    # the names: `auto` and the registry's sandboxes (sandbox_settings), not a list here
    Option("sandbox", _ISOLATION, "KIND", "auto").with_help(
        "how the agent and checks are isolated: auto (docker when an engine answers "
        "and the image is on it, else bwrap if it works, else local), bwrap, docker (a "
        "container per run, docker SDK) or local (default {default})"
    ),
    Option("image", _ISOLATION, "IMAGE", "host").with_help(
        "the Docker image of every run under the docker sandbox, unless its case names "
        "one (image:): host (an empty image with this machine's system, Python and agent "
        "CLI bound read-only) or an image on the engine that has the agent CLI, git and "
        "Python (make one with `scylla image build`); never pulled (default {default})"
    ),
    Option("limits", _ISOLATION, "LIST", DEFAULT_LIMITS, "list", show=_limits_text).with_help(
        "each run's limits under docker and bwrap (bwrap: a cgroup; /tmp a quarter of "
        "the memory): memory, cpus, pids (default {default})"
    ),
    Option("docker-copy", _ISOLATION, default=False, kind="flag").with_help(
        "docker: copy each run's folder (workspace, HOME) into its container and back "
        "through the engine's API, and reach the gateway through a relay, instead of "
        "bind mounts (always so on a remote engine); what comes back is extracted as "
        "hostile data"
    ),
    Option("starts", _ISOLATION, "N").with_help(
        "agents starting at once on this machine, across workers and sessions: a CLI's "
        "start, until its first model call, is most of its CPU, and more at once only "
        "share the cores, then wait on the model together; 0: no limit (default: the "
        "machine's cores)"
    ),
    Option("cli", _ISOLATION, "PATH").with_help(
        "the Claude Code executable (default: claude on PATH)"
    ),
    Option("judges", _JUDGING, "JUDGES", DEFAULT_JUDGES, "list").with_help(
        "the judge panel, comma-separated: model ids (Anthropic, through the gateway), "
        "claude-cli:<model>, gemini:<model> (Google's Gemini API, GEMINI_API_KEY) or "
        "openai:<model>@<base-url> (default: {default})"
    ),
    Option("min-judges", _JUDGING, "N", 2, "int").with_help(
        "valid judges a verdict needs, else judge_error (default {default}, at most the panel size)"
    ),
    Option("panel", _JUDGING, "MODE", "full", choices=PANEL_MODES).with_help(
        "how the panel is asked: full (every judge at once) or adaptive (the cheaper "
        "judges first, the most expensive one only when their verdicts differ by more "
        "than 0.15, straddle the pass line or are too few) (default {default})"
    ),
    Option("budget-usd", _SPEND, "USD").with_help(
        "session budget in dollars, agents and judges together: once the session's "
        "spend would pass it no new run starts (those are skipped, saying why); runs in "
        "flight finish (default: no budget)"
    ),
    Option("stop", _SPEND, "WHEN", "off", choices=STOP_MODES).with_help(
        "decided: --scylla-runs is the most runs per cell; runs go run-major (run 1 of "
        "every cell first) and a run starts only while its cell's comparison with the "
        "reference cell is undecided (anytime-valid sequential tests; skipped runs say "
        "why); off: every run (default {default})"
    ),
    Option("reference", _SPEND, "SUBTEST").with_help(
        "with --scylla-stop=decided: the subtest every cell of a case is compared with, "
        "e.g. T0-00 (default: the first subtest of the lowest tier selected)"
    ),
    Option("alpha", _SPEND, "A", 0.05, "float").with_help(
        "with --scylla-stop=decided: the chance of any wrong decision in the session, "
        "shared among its comparisons (default {default})"
    ),
    Option("margin", _SPEND, "D", 0.10, "float").with_help(
        "with --scylla-stop=decided: pass rates within +-D of the reference's are "
        "equivalent (default {default})"
    ),
    Option("max-run-cost", _SPEND, "USD").with_help(
        "every run's own cost limit in dollars, instead of each case's max_cost_usd "
        "(default: each case's max_cost_usd; $2.00 for a case that sets none)"
    ),
    Option("retries", _SPEND, "N", 4, "int").with_help(
        "attempts the gateway makes on a 408/429/5xx/529 answer or a lost connection "
        "before the run is an infra_error (default {default})"
    ),
    Option("retry-wait", _SPEND, "SECONDS", 120.0, "float").with_help(
        "most seconds the gateway waits on one call's retries; a longer retry-after "
        "(a usage-window limit) pauses new runs instead (default {default})"
    ),
    Option("max-pause", _SPEND, "SECONDS", 21600.0, "float").with_help(
        "longest pause for a usage-window limit; beyond it the remaining runs are "
        "skipped (default {default} = 6 h)"
    ),
    Option("tiers-dir", _INPUTS, "DIR").with_help(
        "folder of tier files T0.yaml ... (default: <rootdir>/tiers)"
    ),
    Option("packaged-tiers", _INPUTS, "MODE", "auto", choices=("auto", "under", "off")).with_help(
        "the package's T0-T6: auto (used when the project has no tiers folder), under "
        "(the project's tiers laid over them: same name replaces, new names add) or off "
        "(default {default})"
    ),
    Option("rubrics-dir", _INPUTS, "DIR").with_help(
        "folder of shared rubrics (default: <rootdir>/rubrics)"
    ),
    Option("cache-dir", _INPUTS, "DIR").with_help(
        "shared cache for repo mirrors, MCP packages and CLI baselines "
        "(default: $XDG_CACHE_HOME/pytest-scylla or ~/.cache/pytest-scylla)"
    ),
)
BY_NAME = {o.name: o for o in OPTIONS}
BY_DEST = {o.dest: o for o in OPTIONS}
DEFAULTS: dict[str, Any] = {o.field: o.default for o in OPTIONS}  # by `Settings` field
# group key -> (title, its options' names), in --help's order
GROUPS = {k: (t, tuple(o.name for o in OPTIONS if o.group == k)) for k, t in TITLES.items()}
# keys whose value holds several items: one string of them comma-separated, or a list (a TOML
# list, or `[a, b]` in an ini file), as pytest's own list-valued keys may be written
LIST_KEYS = frozenset(o.dest for o in OPTIONS if o.kind == "list")
ORACLE_MODES = BY_NAME["oracle"].choices


def one_of(choices: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return f"{', '.join(choices[:-1])} or {choices[-1]}"


def addoptions(parser: pytest.Parser) -> None:
    groups = {key: parser.getgroup(key, title) for key, title in TITLES.items()}  # in order
    for o in OPTIONS:
        args: dict[str, Any] = {"dest": o.dest, "default": None, "help": o.text}
        if o.kind in ("flag", "switch"):  # a switch's default is False, a flag's in its ini key
            args.update(action="store_true", default=None if o.kind == "flag" else o.default)
        else:
            args["metavar"] = o.metavar
        if o.kind == "optional":  # a bare --scylla-oracle would read the path after it
            note = f". Write it as --scylla-{o.name}={o.metavar} or put it after the paths"
            args.update(nargs="?", const=o.choices[0], choices=o.choices, help=o.text + note)
        groups[o.group].addoption(f"--scylla-{o.name}", **args)
        if o.kind != "switch":
            typed = o.kind in ("int", "float") and TYPED_INI  # 8.4's, unknown to 8.0's stubs
            kind: Any = "bool" if o.kind == "flag" else o.kind if typed else "string"
            parser.addini(o.dest, f"[pytest-scylla] {o.text}", type=kind, default=o.ini_default)
    parser.addini(
        "scylla_cases",
        "[pytest-scylla] folders (relative to the ini file) whose case "
        "folders are collected as evaluations (default: cases)",
        type="linelist",
        default=["cases"],
    )


def markdown_table() -> str:
    """docs/options.md's tables: one per --help group (a test keeps the page equal)."""
    out: list[str] = []
    for title, names in GROUPS.values():
        head = title.removeprefix("pytest-scylla: ")
        out += [f"**{head}**", "", "| option | meaning | default |", "|---|---|---|"]
        out += [*(_row(BY_NAME[name]) for name in names), ""]
    return "\n".join(out)


def _row(o: Option) -> str:
    """`| --scylla-NAME=METAVAR | help | default |`, the default taken from the help's end."""
    usage = f"--scylla-{o.name}"
    if o.metavar:
        usage += f"[={o.metavar}]" if o.kind == "optional" else f"={o.metavar}"
    match = re.fullmatch(r"(.*?)(?: \(default:? ([^()]*)\))?", o.text, re.DOTALL)
    assert match is not None  # the first group matches any text
    meaning, said = match[1], match[2] or "off"
    default = f"`{said}`" if said == o.shown else _cell(said)
    return f"| `{usage}` | {_cell(meaning)} | {default} |"


def _cell(text: str) -> str:
    """Text in a markdown table's cell, as written (no HTML tag, no column break)."""
    return text.replace("<", "\\<").replace("|", "\\|")
