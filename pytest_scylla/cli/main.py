"""The `scylla` command: `validate` checks cases, tiers and rubrics without running anything;
`report`, `compare`, `matrix`, `import` and `plan` work on stored experiments; `init` starts a
project; `image` manages the docker sandbox's images and `sandbox` checks a sandbox works;
`ablate plan` designs an ablation of a project's own agent configuration."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_scylla import __version__
from pytest_scylla.cli import ablate as ablate_cli
from pytest_scylla.cli import mine as mine_cli
from pytest_scylla.cli import results as results_cli
from pytest_scylla.cli import sandbox as sandbox_cli
from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.rubric import load_rubric
from pytest_scylla.formats.spec import load_case
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError, display
from pytest_scylla.session.collect import case_file_problem, case_files, duplicate_id


def validate(root: Path, out: list[str]) -> int:
    """Validate every tier subtest, rubric and case under `root` (nested case folders too, as
    collection finds them); returns the number of bad files."""
    bad = 0
    tiers = TierSet(root / "tiers" if (root / "tiers").is_dir() else PACKAGED)
    for name, error in tiers.errors.items():
        bad += 1
        out.append(f"FAIL {name}:\n{error}")
    for tier in tiers.tiers.values():
        for sub in tier.subtests:
            try:
                tiers.resolve(sub.ref)
            except SpecError as exc:
                bad += 1
                out.append(f"FAIL {sub.ref}:\n{exc}")
        out.append(f"ok   {tier.name} ({len(tier.subtests)} subtests)")
    rubrics = root / "rubrics"
    for file in sorted(rubrics.glob("*.yaml")) if rubrics.is_dir() else ():
        try:  # shared rubrics, used by a case or not yet
            load_rubric(file)
        except SpecError as exc:
            bad += 1
            out.append(f"FAIL rubric {file.stem}:\n{exc}")
    seen: dict[str, Path] = {}
    for file in case_files(root / "cases") if (root / "cases").is_dir() else ():
        name = display(file.parent)
        try:
            misnamed = case_file_problem(file)
            if misnamed:
                raise SpecError.one(file, None, misnamed)
            case = load_case(file, rubrics, known_tiers=tiers.names)
            twice = duplicate_id(seen, case.id, file)
            if twice:
                raise SpecError.one(file, None, twice)
        except SpecError as exc:
            bad += 1
            out.append(f"FAIL {name}:\n{exc}")
        else:
            out.append(
                f"ok   {case.id} ({case.category}, {len(case.checks)} checks, "
                f"{len(case.rubric.items)} rubric items)"
            )
    return bad


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scylla",
        description="pytest-scylla: evaluate agentic coding CLIs by ablation tiers. Runs are "
        "started with pytest (pytest cases/ ...); this command checks inputs and "
        "works on stored results.",
    )
    parser.add_argument("--version", action="version", version=f"pytest-scylla {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_validate(sub)
    results_cli.add_parsers(sub)
    _add_project(sub)
    sandbox_cli.add_parsers(sub)
    ablate_cli.add_parsers(sub)
    mine_cli.add_parsers(sub)
    return parser


def _add_validate(sub: Any) -> None:
    val = sub.add_parser(
        "validate",
        help="check every case, tier and rubric under a project "
        "folder (no runs, no network); exit code 2 when any is invalid",
    )
    val.add_argument(
        "root",
        nargs="?",
        default=".",
        type=Path,
        help="project folder holding cases/, tiers/ and rubrics/ (default: .)",
    )


def _add_project(sub: Any) -> None:
    """`init`, `import`, `plan` and `check-case`."""
    ini = sub.add_parser(
        "init",
        help="start an evaluation project: pytest configuration, an "
        "example case, .gitignore, GitHub Actions and GitLab CI workflows "
        "(existing files are kept)",
    )
    ini.add_argument(
        "dir",
        nargs="?",
        default=".",
        type=Path,
        help="the project folder, made if missing (default: .)",
    )
    imp = sub.add_parser(
        "import",
        help="convert a run tree of the paper's original implementation into an experiment folder",
    )
    imp.add_argument("src", type=Path)
    imp.add_argument("dest", type=Path)
    pln = sub.add_parser(
        "plan",
        help="estimate runs, cost and time before spending anything "
        "(runs pytest --scylla-plan: collects, runs nothing)",
    )
    pln.add_argument(
        "pytest_args",
        nargs=argparse.REMAINDER,
        metavar="PYTEST ARGS",
        help="the pytest arguments of the session to plan, e.g. cases/ -n 4 "
        "--scylla-runs=10 --scylla-out=reports/main",
    )
    chk = sub.add_parser(
        "check-case",
        help="check that each case tells a solved task from an "
        "unsolved one: an oracle run (the reference solution, through the real "
        "CLI and sandbox) passes every check, and the untouched source fails one "
        "(no real model, nothing spent); exit code 1 when a case does not",
    )
    chk.add_argument(
        "cases",
        nargs="*",
        type=Path,
        metavar="CASE",
        help="case folders, or folders above them (default: cases)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["plan"] and not {"-h", "--help"} & set(given[1:2]):
        return _plan(given[1:])  # everything after `plan` belongs to pytest, options first too
    from pytest_scylla.config.extensions import ExtensionError

    try:  # an option whose choices are the registry's names reads the plugins' offers
        args = parser.parse_args(given)
    except ExtensionError as exc:
        echo(f"scylla: {exc}", file=sys.stderr)
        return 2
    if args.command is None:
        parser.print_help()
        return 0
    return COMMANDS[args.command](args)


def _plan(pytest_args: list[str]) -> int:
    import subprocess

    return subprocess.call([sys.executable, "-m", "pytest", "-qq", "--scylla-plan", *pytest_args])


def _validate(args: argparse.Namespace) -> int:
    root: Path = args.root
    if not (root / "cases").is_dir() and not (root / "tiers").is_dir():
        echo(
            f"scylla validate: {root} has neither cases/ nor tiers/; pass the project folder",
            file=sys.stderr,
        )
        return 2
    out: list[str] = []
    bad = validate(root, out)
    echo("\n".join(out))
    echo(f"{bad} invalid" if bad else "all valid")
    return 2 if bad else 0  # bad input: the same exit code as report's and import's


def _unwritable(command: str, folder: Path) -> bool:
    """The folder a command writes, checked before anything else (said when it cannot be)."""
    problem = write_problem(folder.resolve(), Path.cwd())
    if problem:
        echo(f"scylla {command}: {problem}", file=sys.stderr)
    return bool(problem)


def _init(args: argparse.Namespace) -> int:
    from pytest_scylla.cli.scaffold import init, refused

    if _unwritable("init", args.dir):
        return 2
    lines = init(args.dir)
    echo("\n".join(lines))
    if refused(lines):
        echo("scylla init: some files were not written (named above, with why)", file=sys.stderr)
        return 2
    echo(
        f"next: cd {args.dir} && pytest --scylla-oracle -n 2   (a simulated model; "
        "drop --scylla-oracle and set ANTHROPIC_API_KEY for a real run)"
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from pytest_scylla.results.importer import convert

    if _unwritable("import", args.dest):
        return 2
    try:
        count = results_cli.reading(
            "scylla import",
            lambda: convert(
                args.src, args.dest, lambda text: echo(f"scylla import: {text}", file=sys.stderr)
            ),
        )
    except (ValueError, KeyError) as exc:  # a shape no check knows yet
        echo(f"scylla import: {args.src}: cannot be read ({exc!r})", file=sys.stderr)
        return 2
    if count is None:
        return 2
    echo(
        f"imported {count} runs from {args.src} into {args.dest}; "
        f"rebuild with: scylla report {args.dest}"
    )
    return 0


def _check_case(args: argparse.Namespace) -> int:
    from pytest_scylla.cli.check_case import check_cases

    return check_cases(args.cases, [])


# each command's handler: what `scylla COMMAND ...` runs, its exit code returned
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _validate,
    **results_cli.HANDLERS,
    "init": _init,
    "import": _import,
    "plan": lambda args: _plan(args.pytest_args),
    "check-case": _check_case,
    "image": sandbox_cli.image,
    "sandbox": sandbox_cli.sandbox,
    "ablate": ablate_cli.ablate,
    "cases": mine_cli.cases,
}


if __name__ == "__main__":
    sys.exit(main())
