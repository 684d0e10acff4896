"""Command line interface of logq."""

from __future__ import annotations

import argparse
import sys
from collections import deque
from collections.abc import Iterator, Sequence

from logq.query import count_by, format_table, select
from logq.records import LEVELS, LogFormatError, Record, level_value, parse_timestamp, read_records


def _level(text: str) -> str:
    try:
        return LEVELS[level_value(text)]
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _timestamp(text: str):
    try:
        return parse_timestamp(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="log file to read, - for stdin")
    parser.add_argument(
        "--strict", action="store_true", help="fail on lines that are not log records"
    )


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--level", type=_level, help="only records at this level or more severe")
    parser.add_argument(
        "--component",
        action="append",
        default=[],
        help="only this component and its sub-components (repeatable)",
    )
    parser.add_argument("--since", type=_timestamp, help="only records at or after this time")
    parser.add_argument("--until", type=_timestamp, help="only records before this time")
    parser.add_argument("--grep", metavar="TEXT", help="only records whose message contains TEXT")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="logq", description="Query plain-text application logs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    count = commands.add_parser("count", help="count records by level or component")
    _add_input_arguments(count)
    _add_selection_options(count)
    count.add_argument(
        "--by", choices=("level", "component"), default="level", help="what to count by"
    )

    filter_ = commands.add_parser("filter", help="print the records that match")
    _add_input_arguments(filter_)
    _add_selection_options(filter_)

    tail = commands.add_parser("tail", help="print the last records")
    _add_input_arguments(tail)
    tail.add_argument(
        "-n", "--lines", type=_positive_int, default=10, help="how many records (default 10)"
    )
    return parser


def _records(args: argparse.Namespace) -> Iterator[Record]:
    for name in args.files:
        if name == "-":
            yield from read_records(sys.stdin, strict=args.strict)
            continue
        with open(name, encoding="utf-8", errors="replace") as handle:
            yield from read_records(handle, strict=args.strict)


def _selected(args: argparse.Namespace) -> Iterator[Record]:
    return select(
        _records(args),
        min_level=args.level,
        components=args.component,
        since=args.since,
        until=args.until,
        grep=args.grep,
    )


def _run_count(args: argparse.Namespace) -> None:
    counts = count_by(_selected(args), args.by)
    if args.by == "level":
        rows = [(level, counts[level]) for level in LEVELS if counts[level]]
    else:
        rows = sorted(counts.items())
    for line in format_table(rows):
        print(line)


def _run_filter(args: argparse.Namespace) -> None:
    for record in _selected(args):
        print(record.raw)


def _run_tail(args: argparse.Namespace) -> None:
    for record in deque(_records(args), maxlen=args.lines):
        print(record.raw)


RUNNERS = {"count": _run_count, "filter": _run_filter, "tail": _run_tail}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        RUNNERS[args.command](args)
    except OSError as error:
        print(f"logq: cannot read {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    except LogFormatError as error:
        print(f"logq: {error}", file=sys.stderr)
        return 1
    return 0
