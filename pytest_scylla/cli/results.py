"""`scylla report`, `scylla compare` and `scylla matrix`: what stored experiments say, rebuilt,
compared or tabled; a file they cannot read is one line naming it, and exit code 2."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo

T = TypeVar("T")


def add_parsers(sub: Any) -> None:
    """The `report`, `compare` and `matrix` commands on the `scylla` parser's subparsers."""
    rep = sub.add_parser(
        "report",
        help="rebuild exports, summary and statistics from stored experiment folders "
        "(several merge, e.g. shards from several machines) or a folder of paper-format CSVs",
    )
    rep.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    rep.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write (default: the DIR itself when there is one; required with several)",
    )
    rep.add_argument(
        "--report",
        default="md,html",
        metavar="FORMATS",
        help="reports besides the CSV/JSON exports: md, html (with figures), "
        "a report a package of the pytest_scylla entry-point group adds, or "
        "none (default: md,html)",
    )
    _add_compare(sub)
    mtx = sub.add_parser(
        "matrix",
        help="the CLI support matrix of stored experiments: which "
        "tier components reached each CLI's model (from the ablation check of "
        "every run), which its adapter cannot express, in markdown",
    )
    mtx.add_argument("dirs", nargs="+", type=Path, metavar="DIR")


def _add_compare(sub: Any) -> None:
    cmp = sub.add_parser(
        "compare",
        help="compare two experiments tier by tier and case by case: the change in "
        "pass rate, score, cost and Cost-of-Pass with bootstrap intervals and Holm-corrected "
        "tests; writes compare.md, compare.json and compare.html",
    )
    cmp.add_argument(
        "base", metavar="BASE", help="the base experiment folder (shards: folders joined by commas)"
    )
    cmp.add_argument(
        "candidate",
        metavar="CANDIDATE",
        help="the candidate experiment folder (shards: folders joined by commas)",
    )
    cmp.add_argument(
        "--out", type=Path, default=None, help="where to write (default: CANDIDATE/compare)"
    )
    cmp.add_argument(
        "--intersect",
        action="store_true",
        help="compare only the cases and tiers both sides have (else differing sets are refused)",
    )
    cmp.add_argument(
        "--fail-on-regression",
        type=float,
        default=None,
        metavar="POINTS",
        help="exit 1 when a pass rate drops significantly by more than POINTS "
        "percentage points (a CI gate)",
    )


def _compare(args: argparse.Namespace) -> int:
    from pytest_scylla.results.compare import differences as compare
    from pytest_scylla.results.compare import text as compare_text

    sides = [[Path(p) for p in str(given).split(",") if p] for given in (args.base, args.candidate)]
    out: Path = args.out or sides[1][0] / "compare"
    points = args.fail_on_regression
    if points is not None and not (math.isfinite(points) and points >= 0):
        echo(
            f"scylla compare: --fail-on-regression={points}: expected a number of "
            "percentage points >= 0, e.g. 5",
            file=sys.stderr,
        )
        return 2
    if problem := write_problem(out.resolve(), Path.cwd()):
        echo(f"scylla compare: --out {problem}", file=sys.stderr)
        return 2
    result = reading(
        "scylla compare", lambda: compare.compare(sides[0], sides[1], intersect=args.intersect)
    )
    if result is None:
        return 2
    compare_text.write(out, result, points)
    echo(compare_text.markdown(result, points), end="")
    echo(f"written: {out / 'compare.md'}, compare.json, compare.html")
    if points is not None and compare.regressions(result, points):
        return 1
    return 0


def _report(args: argparse.Namespace) -> int:
    from pytest_scylla.results import report
    from pytest_scylla.results.tables import load

    dirs: list[Path] = args.dirs
    out: Path | None = args.out
    formats = tuple(f for f in args.report.split(",") if f.strip() and f != "none")
    if out is None and len(dirs) > 1:
        echo("scylla report: several folders merge into a new one: pass --out DIR", file=sys.stderr)
        return 2
    if out is not None and (problem := write_problem(out.resolve(), Path.cwd())):
        echo(f"scylla report: --out {problem}", file=sys.stderr)  # before any reading
        return 2
    target = out or dirs[0]
    tables = reading("scylla report", lambda: load(dirs))
    if tables is None:
        return 2
    if not tables.runs:
        echo(f"scylla report: no runs in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    from pytest_scylla.config.extensions import ExtensionError, report_writers

    try:  # reports of the packages in the `pytest_scylla` entry-point group
        writers = report_writers(None)
    except ExtensionError as exc:
        echo(f"scylla report: {exc}", file=sys.stderr)
        return 2
    unknown = set(formats) - set(writers)
    if unknown:
        echo(
            f"scylla report: unknown report format(s) {', '.join(sorted(unknown))}; use "
            f"{', '.join(writers)} or none",
            file=sys.stderr,
        )
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
            tables.partial = (
                f"shards missing: {', '.join(f'{i}/{count}' for i in absent)} "
                f"(merged {count - len(absent)} of {count})"
            )
    report.write(target, tables, manifest, formats=("csv", "json", *formats), writers=writers)
    from pytest_scylla.results.decisions import stored

    echo("\n".join(report.tier_table(tables, target, stored(manifest.get("stop")))))
    return 0


def _matrix(args: argparse.Namespace) -> int:
    from pytest_scylla.results.support import matrix
    from pytest_scylla.results.tables import read_records
    from pytest_scylla.run.agents import claude_code, codex, gemini_cli, opencode

    dirs: list[Path] = args.dirs
    records = reading("scylla matrix", lambda: [r for d in dirs for r in read_records(d)])
    if records is None:
        return 2
    if not records:
        echo(f"scylla matrix: no runs in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    echo(
        matrix(
            records,
            {
                a.name: a
                for a in (claude_code.ADAPTER, codex.ADAPTER, gemini_cli.ADAPTER, opencode.ADAPTER)
            },
        ),
        end="",
    )
    return 0


def reading(command: str, read: Callable[[], T]) -> T | None:
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
    session's options and decisions, merged folders list their own manifests (per-run hashes
    left out)."""
    import json

    from pytest_scylla.formats import provenance

    found: list[dict[str, Any]] = []
    for folder in dirs:
        path = folder / "manifest.json"
        try:
            old = json.loads(path.read_text("utf-8")) if path.is_file() else {}
        except ValueError:
            old = {"unreadable": str(path)}
        found.append(
            {"folder": str(folder), **{k: v for k, v in old.items() if k != "config_hashes"}}
        )
    if len(dirs) == 1:
        one = found[0]
        manifest = provenance.manifest(tables.records, one.get("options"), one.get("merged_from"))
        if isinstance(one.get("stop"), dict):  # its session's decisions (--scylla-stop)
            manifest["stop"] = one["stop"]
    else:
        from pytest_scylla.results.decisions import merged_stop

        manifest = provenance.manifest(tables.records, None, found)
        stop, why = merged_stop([one.get("stop") for one in found], tables.runs)
        if stop is not None:  # shards of one session: decided again from all their runs
            manifest["stop"] = stop
        elif why:
            tables.warnings.append(why)
    manifest["rebuilt_by"] = f"scylla report {' '.join(map(str, dirs))}"
    return manifest


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "report": _report,
    "compare": _compare,
    "matrix": _matrix,
}
