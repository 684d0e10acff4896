"""`scylla report DIR...`: a stored experiment's exports, summary and statistics rebuilt (several
folders merge, e.g. shards from several machines); a file it cannot read is one line naming it,
and exit code 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import reading
from pytest_scylla.core.folders import write_problem
from pytest_scylla.core.terminal import echo


def register(sub: Any) -> None:
    """The `report` command on the `scylla` parser's subparsers."""
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
    rep.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
