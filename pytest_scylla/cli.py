"""The `scylla` command: `validate` checks cases, tiers and rubrics without running anything;
`report`, `compare`, `matrix`, `import` and `plan` work on stored experiments; `init` starts a
project; `image` manages the docker sandbox's images and `sandbox` checks a sandbox works."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pytest_scylla import __version__, sandbox_cli
from pytest_scylla.collect import case_file_problem, case_files, duplicate_id
from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.spec import load_case, load_rubric
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError, display

T = TypeVar("T")


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
            out.append(f"ok   {case.id} ({case.category}, {len(case.checks)} checks, "
                       f"{len(case.rubric.items)} rubric items)")
    return bad


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scylla",
        description="pytest-scylla: evaluate agentic coding CLIs by ablation tiers. Runs are "
                    "started with pytest (pytest cases/ ...); this command checks inputs and "
                    "works on stored results.")
    parser.add_argument("--version", action="version", version=f"pytest-scylla {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    val = sub.add_parser("validate", help="check every case, tier and rubric under a project "
                         "folder (no runs, no network); exit code 2 when any is invalid")
    val.add_argument("root", nargs="?", default=".", type=Path,
                     help="project folder holding cases/, tiers/ and rubrics/ (default: .)")
    rep = sub.add_parser(
        "report", help="rebuild exports, summary and statistics from stored experiment folders "
        "(several merge, e.g. shards from several machines) or a folder of paper-format CSVs")
    rep.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    rep.add_argument("--out", type=Path, default=None,
                     help="where to write (default: the DIR itself when there is one; "
                          "required with several)")
    rep.add_argument("--report", default="md,html", metavar="FORMATS",
                     help="reports besides the CSV/JSON exports: md, html (with figures), "
                          "a report a package of the pytest_scylla entry-point group adds, or "
                          "none (default: md,html)")
    cmp = sub.add_parser(
        "compare", help="compare two experiments tier by tier and case by case: the change in "
        "pass rate, score, cost and Cost-of-Pass with bootstrap intervals and Holm-corrected "
        "tests; writes compare.md, compare.json and compare.html")
    cmp.add_argument("base", metavar="BASE", help="the base experiment folder (shards: "
                     "folders joined by commas)")
    cmp.add_argument("candidate", metavar="CANDIDATE", help="the candidate experiment folder "
                     "(shards: folders joined by commas)")
    cmp.add_argument("--out", type=Path, default=None,
                     help="where to write (default: CANDIDATE/compare)")
    cmp.add_argument("--intersect", action="store_true",
                     help="compare only the cases and tiers both sides have (else differing "
                          "sets are refused)")
    cmp.add_argument("--fail-on-regression", type=float, default=None, metavar="POINTS",
                     help="exit 1 when a pass rate drops significantly by more than POINTS "
                          "percentage points (a CI gate)")
    mtx = sub.add_parser("matrix", help="the CLI support matrix of stored experiments: which "
                         "tier components reached each CLI's model (from the ablation check of "
                         "every run), which its adapter cannot express, in markdown")
    mtx.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    ini = sub.add_parser("init", help="start an evaluation project: pytest configuration, an "
                         "example case, .gitignore, GitHub Actions and GitLab CI workflows "
                         "(existing files are kept)")
    ini.add_argument("dir", nargs="?", default=".", type=Path,
                     help="the project folder, made if missing (default: .)")
    imp = sub.add_parser("import", help="convert a run tree of the paper's original "
                         "implementation into an experiment folder")
    imp.add_argument("src", type=Path)
    imp.add_argument("dest", type=Path)
    pln = sub.add_parser("plan", help="estimate runs, cost and time before spending anything "
                         "(runs pytest --scylla-plan: collects, runs nothing)")
    pln.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST ARGS",
                     help="the pytest arguments of the session to plan, e.g. cases/ -n 4 "
                          "--scylla-runs=10 --scylla-out=reports/main")
    chk = sub.add_parser("check-case", help="check that each case tells a solved task from an "
                         "unsolved one: an oracle run (the reference solution, through the real "
                         "CLI and sandbox) passes every check, and the untouched source fails one "
                         "(no real model, nothing spent); exit code 1 when a case does not")
    chk.add_argument("cases", nargs="*", type=Path, metavar="CASE",
                     help="case folders, or folders above them (default: cases)")
    sandbox_cli.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["plan"] and not {"-h", "--help"} & set(given[1:2]):
        # everything after `plan` belongs to pytest, options first included
        import subprocess

        return subprocess.call([sys.executable, "-m", "pytest", "-qq", "--scylla-plan",
                                *given[1:]])
    args = parser.parse_args(given)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "validate":
        root: Path = args.root
        if not (root / "cases").is_dir() and not (root / "tiers").is_dir():
            echo(f"scylla validate: {root} has neither cases/ nor tiers/; pass the project "
                  "folder", file=sys.stderr)
            return 2
        out: list[str] = []
        bad = validate(root, out)
        echo("\n".join(out))
        echo(f"{bad} invalid" if bad else "all valid")
        return 2 if bad else 0  # bad input: the same exit code as report's and import's
    if args.command == "compare":
        return _compare(args)
    if args.command == "matrix":
        return _matrix(args.dirs)
    if args.command == "report":
        return _report(args.dirs, args.out, tuple(
            f for f in args.report.split(",") if f.strip() and f != "none"))
    if args.command in ("init", "import"):  # the folder written, checked before anything else
        folder: Path = args.dir if args.command == "init" else args.dest
        problem = write_problem(folder.resolve(), Path.cwd())
        if problem:
            echo(f"scylla {args.command}: {problem}", file=sys.stderr)
            return 2
    if args.command == "init":
        from pytest_scylla.scaffold import init

        echo("\n".join(init(args.dir)))
        echo(f"next: cd {args.dir} && pytest --scylla-oracle -n 2   (a simulated model; "
              "drop --scylla-oracle and set ANTHROPIC_API_KEY for a real run)")
        return 0
    if args.command == "import":
        from pytest_scylla.results.importer import convert

        try:
            count = _reading("scylla import", lambda: convert(
                args.src, args.dest, lambda text: echo(f"scylla import: {text}",
                                                       file=sys.stderr)))
        except (ValueError, KeyError) as exc:  # a shape no check knows yet
            echo(f"scylla import: {args.src}: cannot be read ({exc!r})", file=sys.stderr)
            return 2
        if count is None:
            return 2
        echo(f"imported {count} runs from {args.src} into {args.dest}; "
              f"rebuild with: scylla report {args.dest}")
        return 0
    if args.command == "check-case":
        from pytest_scylla.case_check import check_cases

        return check_cases(args.cases, [])
    if args.command == "image":
        return sandbox_cli.image(args)
    if args.command == "sandbox":
        return sandbox_cli.sandbox(args)
    parser.error(f"unknown command {args.command}")


def _compare(args: argparse.Namespace) -> int:
    from pytest_scylla.results import compare, compare_text

    sides = [[Path(p) for p in str(given).split(",") if p] for given in (args.base,
                                                                         args.candidate)]
    out: Path = args.out or sides[1][0] / "compare"
    points = args.fail_on_regression
    if points is not None and not (math.isfinite(points) and points >= 0):
        echo(f"scylla compare: --fail-on-regression={points}: expected a number of "
              "percentage points >= 0, e.g. 5", file=sys.stderr)
        return 2
    if problem := write_problem(out.resolve(), Path.cwd()):
        echo(f"scylla compare: --out {problem}", file=sys.stderr)
        return 2
    result = _reading("scylla compare",
                      lambda: compare.compare(sides[0], sides[1], intersect=args.intersect))
    if result is None:
        return 2
    compare_text.write(out, result, points)
    echo(compare_text.markdown(result, points), end="")
    echo(f"written: {out / 'compare.md'}, compare.json, compare.html")
    if points is not None and compare.regressions(result, points):
        return 1
    return 0


def _report(dirs: list[Path], out: Path | None, formats: tuple[str, ...]) -> int:
    from pytest_scylla.results import report
    from pytest_scylla.results.tables import load

    if out is None and len(dirs) > 1:
        echo("scylla report: several folders merge into a new one: pass --out DIR",
              file=sys.stderr)
        return 2
    if out is not None and (problem := write_problem(out.resolve(), Path.cwd())):
        echo(f"scylla report: --out {problem}", file=sys.stderr)  # before any reading
        return 2
    target = out or dirs[0]
    tables = _reading("scylla report", lambda: load(dirs))
    if tables is None:
        return 2
    if not tables.runs:
        echo(f"scylla report: no runs in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    from pytest_scylla.extensions import ExtensionError, report_writers

    try:  # reports of the packages in the `pytest_scylla` entry-point group
        writers = report_writers(None, ("md", "html", "csv", "json", "terminal"))
    except ExtensionError as exc:
        echo(f"scylla report: {exc}", file=sys.stderr)
        return 2
    unknown = set(formats) - {"md", "html", *writers}
    if unknown:
        echo(f"scylla report: unknown report format(s) {', '.join(sorted(unknown))}; use "
              f"{', '.join(['md', 'html', *writers])} or none", file=sys.stderr)
        return 2
    if out is None and (problem := write_problem(target.resolve(), Path.cwd())):
        echo(f"scylla report: {problem}", file=sys.stderr)  # a folder it may only read
        return 2
    manifest = _manifest(dirs, tables)
    from pytest_scylla.core.record import read_dict
    from pytest_scylla.operations.shard import missing

    try:
        shards = missing(read_dict(folder / "manifest.json") for folder in dirs)
    except ValueError as exc:
        echo(f"scylla report: {exc}", file=sys.stderr)
        return 2
    if shards is not None:
        count, absent = shards
        manifest["shards"] = {"count": count, "missing": absent}
        if absent:
            tables.partial = (f"shards missing: {', '.join(f'{i}/{count}' for i in absent)} "
                              f"(merged {count - len(absent)} of {count})")
    report.write(target, tables, manifest, formats=("csv", "json", *formats), writers=writers)
    echo("\n".join(report.tier_table(tables, target)))
    return 0


def _matrix(dirs: list[Path]) -> int:
    from pytest_scylla.results.support import matrix
    from pytest_scylla.results.tables import read_records
    from pytest_scylla.run.agents import claude_code, codex, gemini_cli, opencode

    records = _reading("scylla matrix", lambda: [r for d in dirs for r in read_records(d)])
    if records is None:
        return 2
    if not records:
        echo(f"scylla matrix: no runs in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    echo(matrix(records, {a.name: a for a in (claude_code.ADAPTER, codex.ADAPTER,
                                               gemini_cli.ADAPTER, opencode.ADAPTER)}), end="")
    return 0


def _reading(command: str, read: Callable[[], T]) -> T | None:
    """What `read()` returns; None once a file it reads is unreadable or not what it should be,
    said in one line naming the file (`path[:line]: ...`), for exit code 2."""
    from pytest_scylla.results.inputs import ReportInputError

    try:
        return read()
    except ReportInputError as exc:
        echo(exc, file=sys.stderr)
    except OSError as exc:
        echo(_os_error(exc, command), file=sys.stderr)
    return None


def _os_error(exc: OSError, command: str) -> str:
    """`path: reason` for a file the system would not let us read or write."""
    return f"{exc.filename}: {exc.strerror}" if exc.filename else f"{command}: {exc}"


def _manifest(dirs: list[Path], tables: Any) -> dict[str, Any]:
    """The rebuilt folder's manifest: provenance from its runs; a single folder rebuilt keeps its
    session's options, merged folders list their own manifests (per-run hashes left out)."""
    import json

    from pytest_scylla.formats import provenance

    found: list[dict[str, Any]] = []
    for folder in dirs:
        path = folder / "manifest.json"
        try:
            old = json.loads(path.read_text("utf-8")) if path.is_file() else {}
        except ValueError:
            old = {"unreadable": str(path)}
        found.append({"folder": str(folder), **{k: v for k, v in old.items()
                                                 if k != "config_hashes"}})
    if len(dirs) == 1:
        one = found[0]
        manifest = provenance.manifest(tables.records, one.get("options"),
                                       one.get("merged_from"))
    else:
        manifest = provenance.manifest(tables.records, None, found)
    manifest["rebuilt_by"] = f"scylla report {' '.join(map(str, dirs))}"
    return manifest


if __name__ == "__main__":
    sys.exit(main())
