"""`scylla ablate plan [PATH]`: a team's own agent configuration read into components, and the
ablation design over them written as a tiers folder that the session runs like any other."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import Registered
from pytest_scylla.core.terminal import echo
from pytest_scylla.formats.yamlmarks import SpecError

GROUPS = ("section", "rule", "memory", "skill", "command", "agent", "mcp", "hook")


def register(sub: Any) -> None:
    """The `ablate` command on the `scylla` parser's subparsers."""
    abl = sub.add_parser(
        "ablate",
        help="which part of your own agent configuration earns its cost: plan an ablation of it",
    )
    actions = abl.add_subparsers(dest="ablate_command", metavar="ACTION", required=True)
    _add_plan(actions)
    _add_report(actions)
    abl.set_defaults(handler=run)


def _add_plan(actions: Any) -> None:
    plan = actions.add_parser(
        "plan",
        help="list the components of a project's agent configuration (instruction file "
        "sections, skills, sub-agents, MCP servers, hooks) and write the arms as tier files",
    )
    plan.add_argument(
        "path",
        nargs="?",
        default=Path("."),
        type=Path,
        help="the project whose configuration is read (default: .)",
    )
    plan.add_argument(
        "--agent",
        default="claude-code",
        help="the CLI whose configuration is read (default: claude-code; codex reads AGENTS.md, "
        ".agents/skills and .codex/config.toml; gemini-cli GEMINI.md and .gemini/; opencode "
        "AGENTS.md, opencode.json and .opencode/)",
    ).choices = Registered(_agent_names)  # every registered adapter's name, asked when needed
    plan.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="the tiers folder to write (replaced if it exists; default: PATH/ablation)",
    )
    plan.add_argument(
        "--group",
        action="append",
        default=[],
        choices=GROUPS,
        help="ablate every component of this kind as one (repeatable), e.g. --group skill",
    )
    plan.add_argument(
        "--add-one",
        action="store_true",
        help="also one arm per component alone (with leave-one-out; a second view of each "
        "effect that shows interactions)",
    )
    plan.add_argument(
        "--factorial-above",
        type=int,
        default=8,
        metavar="K",
        help="above K factors, a Plackett-Burman design instead of leave-one-out (default: 8)",
    )
    plan.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAME",
        help="give the MCP servers that read ${NAME} your value of it at each run (repeatable; "
        "the value is then in the sandbox, where the agent can read it; never a model key)",
    )
    plan.add_argument(
        "--dry-run", action="store_true", help="list the components and arms; write nothing"
    )


def _agent_names() -> list[str]:
    from pytest_scylla.config.extensions import agents

    return list(agents(None))


def _add_report(actions: Any) -> None:
    report = actions.add_parser(
        "report",
        help="each component's effect on pass rate, cost, tokens and duration, with intervals "
        "and a verdict, from an experiment that ran a plan's arms",
    )
    report.add_argument("experiment", type=Path, help="the experiment folder (--scylla-out)")
    report.add_argument(
        "--design",
        type=Path,
        default=None,
        metavar="FILE",
        help="the plan's design.json (default: the one beside the tier file the experiment ran)",
    )
    report.add_argument(
        "--agent", default=None, help="only the runs of this CLI (when the arms ran under several)"
    )
    report.add_argument(
        "--model",
        default=None,
        help="only the runs of this model (when the arms ran under several)",
    )


def run(args: argparse.Namespace) -> int:
    return _report(args) if args.ablate_command == "report" else _plan(args)


def _report(args: argparse.Namespace) -> int:
    """`scylla ablate report`: the arms without a counted run and why, the terminal table,
    components.csv, .md and .html."""
    from pytest_scylla.cli.common import reading
    from pytest_scylla.results import component_effects as ce
    from pytest_scylla.results import component_tables as ct
    from pytest_scylla.results.design import excluded_lines
    from pytest_scylla.results.effect_limits import arm_notes, reasons_of
    from pytest_scylla.results.hook_notes import for_report
    from pytest_scylla.results.tables import load

    folder: Path = args.experiment
    try:
        design_path = args.design or ce.design_beside(folder)
        design = ce.load_design(design_path)
    except (OSError, ValueError) as exc:
        echo(f"scylla ablate report: {exc}", file=sys.stderr)
        return 2
    tables = reading("scylla ablate report", lambda: load([folder]))  # one line when bad
    if tables is None:
        return 2
    runs = [
        r
        for r in tables.runs
        if args.agent in (None, r.get("agent")) and args.model in (None, r.get("agent_model"))
    ]
    try:
        found = ce.effects(runs, design)
    except ValueError as exc:  # several agents or models: never pooled
        echo(f"scylla ablate report: {folder}: {exc}", file=sys.stderr)
        return 2
    notes = excluded_lines(tables.excluded) + arm_notes(runs, design, reasons_of(tables.records))
    notes += for_report(tables.records, runs, design_path, design.arms)  # did its hooks run
    if not found:
        chosen = "".join(
            f" with {k} {v}" for k, v in (("--agent", args.agent), ("--model", args.model)) if v
        )
        echo(
            f"scylla ablate report: {folder}: no arm of {design_path} has a counted run{chosen}",
            *(f"  {note}" for note in notes),
            sep="\n",
            file=sys.stderr,
        )
        return 2
    echo("\n".join(ct.terminal(found, notes)))
    written = ct.write_outputs(folder, found, design, notes)
    echo("wrote " + ", ".join(str(p) for p in written))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from pytest_scylla.formats import ablation_plan
    from pytest_scylla.formats.tiers import TierSet

    root: Path = args.path.resolve()  # the readers compare resolved paths: `.` too
    if not root.is_dir():
        echo(f"scylla ablate plan: {root}: no such folder", file=sys.stderr)
        return 2
    adapters = _adapters()
    read = None if adapters is None else _reader(adapters, args.agent)
    if adapters is None or read is None:
        return 2
    try:
        config = read(root)
    except SpecError as exc:
        echo(f"scylla ablate plan: {exc}", file=sys.stderr)
        return 2
    units = ablation_plan.factors(config, args.group)
    if not units:
        others = [name for name in _configured(adapters, root) if name != args.agent]
        hint = f"; found {', '.join(others)} files: try --agent {others[0]}" if others else ""
        echo(
            f"scylla ablate plan: {root}: no {args.agent} configuration to ablate (instructions, "
            f"skills, sub-agents, MCP servers or hooks){hint}",
            file=sys.stderr,
        )
        return 2
    arms = ablation_plan.design(units, add_one=args.add_one, factorial_above=args.factorial_above)
    echo("\n".join(_listing(config, units, arms)))
    if args.dry_run:
        return 0
    out: Path = args.out or root / "ablation"
    try:
        ablation_plan.write_tiers(config, units, arms, out, tuple(args.pass_env))
    except OSError as exc:
        echo(f"scylla ablate plan: {exc}", file=sys.stderr)
        return 2
    tiers = TierSet(out)
    broken = [str(e) for e in tiers.errors.values()]
    for sub in tiers.tiers["T0"].subtests if "T0" in tiers.tiers else ():
        try:
            tiers.resolve(sub.ref)
        except SpecError as exc:
            broken.append(str(exc))
    if broken:  # a component the tier format refuses: said, with the file to fix
        echo(
            "scylla ablate plan: the written tiers do not validate:\n" + "\n".join(broken),
            file=sys.stderr,
        )
        return 2
    _unpassed_notes(ablation_plan.unpassed(units, tuple(args.pass_env)))
    agent = f" --scylla-agent={args.agent}" if args.agent != "claude-code" else ""
    echo(
        f"wrote {out / 'T0.yaml'} ({len(arms)} arms); run them with:\n"
        f"  pytest cases/ --scylla-tiers-dir={out} --scylla-packaged-tiers=under "
        f"--scylla-tiers=T0 --scylla-runs=10 --scylla-out=reports/ablation{agent}\n"
        "then: scylla ablate report reports/ablation"
    )
    return 0


def _adapters() -> dict[str, Any] | None:
    """The registered agent adapters by name (None once a plugin's could not be read, said)."""
    from pytest_scylla.config.extensions import ExtensionError, agents

    try:
        return agents(None)
    except ExtensionError as exc:
        echo(f"scylla ablate plan: {exc}", file=sys.stderr)
        return None


def _reader(adapters: dict[str, Any], name: str) -> Any:
    """The configuration reader of the adapter `name`; None when there is none (said why):
    never another CLI's reader in its place."""
    from pytest_scylla.run.agents import configuration_reader

    if name not in adapters:
        echo(
            f"scylla ablate plan: --agent {name}: not an agent adapter here; known: "
            f"{', '.join(adapters)} (a plugin adds one through the pytest_scylla_agents hook)",
            file=sys.stderr,
        )
        return None
    read = configuration_reader(adapters[name])
    if read is None:
        echo(
            f"scylla ablate plan: --agent {name}: its adapter ships no configuration reader, "
            "and ablate needs one to read the project's configuration; give the adapter a "
            "read_configuration(root) method (see pytest_scylla.api.Agent), or plan with "
            f"--agent {' or '.join(n for n in adapters if configuration_reader(adapters[n]))}",
            file=sys.stderr,
        )
    return read


def _configured(adapters: dict[str, Any], root: Path) -> list[str]:
    """The adapters with a reader whose CLI's configuration files are in `root`."""
    from pytest_scylla.run.agents import configuration_files, configuration_reader

    return [
        name
        for name, adapter in adapters.items()
        if configuration_reader(adapter)
        and any((root / f).exists() for f in configuration_files(adapter))
    ]


def _unpassed_notes(unpassed: dict[str, list[str]]) -> None:
    """A note per MCP server that reads variables the plan does not pass."""
    for name, wanted in unpassed.items():
        echo(
            f"note: MCP server '{name}' reads {', '.join('${' + v + '}' for v in wanted)}: its "
            "runs stop with an infra_error until you plan with "
            + " ".join(f"--pass-env {v}" for v in wanted)
            + " (the value then reaches the sandbox, where the agent can read it)"
        )


def _listing(config: Any, units: list[Any], arms: list[Any]) -> list[str]:
    lines = [f"{config.cli} configuration {config.digest}: {len(config.components)} components"]
    width = max(len(c.id) for c in config.components)
    for comp in config.components:
        state = "ablated" if comp.ablated else "not ablated"
        state += f": {comp.reason}" if comp.reason else ""
        lines.append(f"  {comp.id:<{width}}  {comp.digest}  {comp.where:<28} {state}")
    design = "leave-one-out" if arms and arms[0].name.endswith("-full") else "Plackett-Burman"
    lines.append(f"{len(units)} factors, {len(arms)} arms ({design}):")
    lines += [f"  {arm.name}: {arm.description}" for arm in arms]
    return lines
