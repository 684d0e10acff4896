from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from textstats import __version__
from textstats.core import DEFAULT_WPM, load_stopwords, summarize
from textstats.report import format_json, format_text


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a whole number > 0, got '0'")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="textstats",
        description="Word counts, top words and reading time for plain-text files.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="files to read (default: stdin)")
    parser.add_argument("-n", "--top", type=_non_negative, default=10, help="top words to list")
    parser.add_argument(
        "--min-length", type=_positive, default=1, help="ignore shorter words in the top list"
    )
    parser.add_argument(
        "--case-sensitive", action="store_true", help="do not fold words to lower case"
    )
    parser.add_argument("--stopwords", metavar="FILE", help="words to leave out of the top list")
    parser.add_argument(
        "--wpm", type=_positive, default=DEFAULT_WPM, help="reading speed in words per minute"
    )
    parser.add_argument("-f", "--format", choices=("text", "json"), default="text")
    parser.add_argument("--version", action="version", version=f"textstats {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        stopwords = load_stopwords(args.stopwords) if args.stopwords else frozenset()
    except OSError as error:
        print(f"textstats: cannot read {args.stopwords}: {error.strerror}", file=sys.stderr)
        return 2
    render = format_json if args.format == "json" else format_text
    sources = args.files or ["-"]
    status = 0
    for number, name in enumerate(sources):
        try:
            if name == "-":
                text = sys.stdin.read()
            else:
                with open(name, encoding="utf-8") as handle:
                    text = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or "not UTF-8 text"
            print(f"textstats: cannot read {name}: {reason}", file=sys.stderr)
            status = 1
            continue
        summary = summarize(
            text,
            top=args.top,
            min_length=args.min_length,
            lowercase=not args.case_sensitive,
            stopwords=stopwords,
            wpm=args.wpm,
        )
        title = name if len(sources) > 1 else None
        if number and args.format == "text":
            print()
        sys.stdout.write(render(summary, title=title))
    return status
