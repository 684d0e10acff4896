"""`scylla cases mine REPO`: verified evaluation cases mined from a repository's own history,
each checked by an oracle session before it is kept (see `operations.mine`)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from pytest_scylla.cli.common import Registered
from pytest_scylla.core.terminal import echo, safe
from pytest_scylla.operations.mining.progress import Status


def register(sub: Any) -> None:
    """The `cases` command on the `scylla` parser's subparsers."""
    cases = sub.add_parser("cases", help="make evaluation cases: mine them from a repository")
    actions = cases.add_subparsers(dest="cases_command", metavar="ACTION", required=True)
    mine = actions.add_parser(
        "mine",
        help="find commits that changed source and tests together, verify each in the sandbox "
        "(its new tests fail before it and pass with it, twice), and write a case for each",
    )
    mine.add_argument("repo", type=Path, metavar="REPO", help="a git repository (a full clone)")
    mine.add_argument(
        "revisions",
        nargs="?",
        default="HEAD",
        help="the history to mine: a revision (its first-parent history) or a range A..B "
        "(default: HEAD)",
    )
    mine.add_argument(
        "--since", help="only commits after this date (git's --since, e.g. 2024-01-01)"
    )
    mine.add_argument(
        "--max", dest="most", type=int, default=200, help="first-parent commits to look at (200)"
    )
    mine.add_argument(
        "--paths", nargs="+", default=[], help="only commits touching these paths (git pathspecs)"
    )
    mine.add_argument("--out", type=Path, default=Path("cases"), help="where to write (cases/)")
    mine.add_argument("--max-files", type=int, default=12, help="files a commit may change (12)")
    mine.add_argument(
        "--max-lines", type=int, default=400, help="lines a commit may add and remove (400)"
    )
    mine.add_argument(
        "--timeout", type=int, default=120, help="seconds for one run of a commit's tests (120)"
    )
    mine.add_argument(
        "--issues",
        type=Path,
        metavar="DIR",
        help="issue texts by number (123.md, 123.txt, or 123.json with title and body): an "
        "issue a commit message names (#123, GH-123) is added to its case's prompt",
    )
    _add_prompt_options(mine)
    cases.set_defaults(handler=run)


def _add_prompt_options(mine: Any) -> None:
    mine.add_argument(
        "--prompt-from-model",
        metavar="MODEL",
        help="a model (e.g. claude-haiku-4-5) rewrites each commit message into a task "
        "statement through the plugin's gateway (ANTHROPIC_API_KEY; priced, logged in the "
        "case's prompt_calls.jsonl, bounded by --prompt-budget); else the prompt is the message",
    )
    mine.add_argument(
        "--prompt-budget",
        type=float,
        default=1.0,
        metavar="USD",
        help="the most --prompt-from-model may spend in all (1.00)",
    )
    mine.add_argument(
        "--simulated",
        action="store_true",
        help="with --prompt-from-model: the offline oracle answers, by rule (SIMULATED, no "
        "model, no key): for trying the command and for tests",
    )
    mine.add_argument(
        "--sandbox",
        default="auto",
        help="where the tests run: bwrap (auto), or local, unisolated, knowingly",
    ).choices = Registered(_sandbox_names)  # `auto` and every registered sandbox's name
    mine.add_argument(
        "--no-oracle-check",
        action="store_true",
        help="keep the verified cases without the oracle session (solution passes, the "
        "untouched source fails) each is otherwise put through",
    )


def _sandbox_names() -> list[str]:
    from pytest_scylla.config.extensions import sandboxes

    return ["auto", *sandboxes(None)]


def run(args: argparse.Namespace) -> int:
    from pytest_scylla.operations.mining import mine
    from pytest_scylla.operations.mining.history import Limits, MineError

    for name in ("most", "max_files", "max_lines", "timeout"):
        if getattr(args, name) < 1:
            flag = "--max" if name == "most" else "--" + name.replace("_", "-")
            echo(
                f"scylla cases mine: {flag}={getattr(args, name)}: expected 1 or more",
                file=sys.stderr,
            )
            return 2
    options = mine.Options(
        args.revisions,
        args.since,
        args.most,
        tuple(args.paths),
        Limits(args.max_files, args.max_lines),
        args.timeout,
        args.issues,
    )
    from pytest_scylla.core.folders import write_problem

    if problem := write_problem(args.out.resolve(), Path.cwd()):
        echo(f"scylla cases mine: --out {problem}", file=sys.stderr)
        return 2
    if args.issues is not None and not args.issues.is_dir():
        echo(f"scylla cases mine: --issues {args.issues}: no such folder", file=sys.stderr)
        return 2
    box = _sandbox(args.sandbox)
    if box is None:
        return 2
    rewriter = _rewriter(args)
    if rewriter is False:
        return 2
    began = time.monotonic()
    status = Status()  # the progress line: in place on a terminal, plain lines in a log
    try:
        found = mine.mine(
            args.repo,
            dataclasses.replace(options, rewriter=rewriter or None),
            args.out,
            box,
            say=status.say,
            status=status.update,
        )
    except MineError as exc:
        echo(f"scylla cases mine: {exc}", file=sys.stderr)
        return 2
    finally:
        status.close()
        if rewriter:
            rewriter.close()
    _validate(found, args.out)
    if found.written and not args.no_oracle_check:
        _oracle_check(found)
        _untouched_check(found, args.repo, box, args.timeout)
    found.seconds = round(time.monotonic() - began, 1)
    echo("\n".join(mine.table(found)))
    return 0


def _rewriter(args: argparse.Namespace) -> Any:
    """The --prompt-from-model rewriter (None without it; False after saying why it cannot)."""
    if args.prompt_from_model is None:
        if args.simulated:
            echo("scylla cases mine: --simulated goes with --prompt-from-model", file=sys.stderr)
            return False
        return None
    from pytest_scylla.operations.mining.prompt import Rewriter
    from pytest_scylla.run.gateway.routes import UpstreamSetupError

    if not args.prompt_budget > 0:
        echo(
            f"scylla cases mine: --prompt-budget={args.prompt_budget}: expected dollars > 0",
            file=sys.stderr,
        )
        return False
    try:
        return Rewriter(args.prompt_from_model, args.simulated, args.prompt_budget)
    except UpstreamSetupError as exc:
        echo(
            f"scylla cases mine: --prompt-from-model: {str(exc).split(' in the environment')[0]}"
            " in the environment, or add --simulated (the offline oracle, SIMULATED)",
            file=sys.stderr,
        )
        return False


def _sandbox(kind: str) -> Any:
    """The sandbox the verification runs use: bubblewrap for `auto`, else the registered
    sandbox of that name (None once it cannot be used, said)."""
    from pytest_scylla.config.extensions import ExtensionError, sandboxes
    from pytest_scylla.run.sandbox import Bwrap, SandboxError, bwrap_advice, bwrap_works

    try:
        chosen = Bwrap if kind == "auto" else sandboxes(None).get(kind)
    except ExtensionError as exc:
        echo(f"scylla cases mine: {exc}", file=sys.stderr)
        return None
    if chosen is None:
        known = ", ".join(["auto", *sandboxes(None)])
        echo(f"scylla cases mine: --sandbox {kind}: unknown; known: {known}", file=sys.stderr)
        return None
    if chosen is Bwrap and (problem := bwrap_works()):
        echo(
            f"scylla cases mine: the tests of mined commits run isolated, and bubblewrap does "
            f"not work here ({problem}); to fix: {bwrap_advice(problem)}; or pass "
            "--sandbox local to run them unisolated knowingly",
            file=sys.stderr,
        )
        return None
    try:
        return chosen()
    except SandboxError as exc:
        echo(f"scylla cases mine: --sandbox {kind}: {exc}", file=sys.stderr)
        return None


def _validate(found: Any, out: Path) -> None:
    """Each written case loaded as `scylla validate` loads it (its schema, files and rubric);
    an invalid one is removed and counted."""
    from pytest_scylla.formats.spec import load_case
    from pytest_scylla.formats.yamlmarks import SpecError
    from pytest_scylla.operations.mining import mine

    for case, folder in list(found.written.items()):
        try:
            load_case(folder / "test.yaml", out.parent / "rubrics")
        except SpecError as exc:
            echo(safe(f"FAIL {case}: {exc}"))
            mine.drop(found, case, f"invalid case: {str(exc).splitlines()[0]}")


def _oracle_check(found: Any) -> None:
    """Each written case through an oracle session: kept only when its reference solution
    passes every check and its untouched source fails one (its fail-to-pass check itself)."""
    from pytest_scylla.cli.check_case import verdicts
    from pytest_scylla.operations.mining import mine

    echo(f"checking {len(found.written)} case(s) with an oracle session …")
    said, problem = verdicts([f / "test.yaml" for f in found.written.values()], [])
    for case, verdict in said.items():
        echo(safe(verdict))
        if not verdict.startswith("ok"):
            mine.drop(found, case, "the oracle check failed: " + verdict.split(": ", 1)[-1])
    if problem:
        echo(safe(problem), file=sys.stderr)


def _untouched_check(found: Any, repo: Path, box: Any, timeout: int) -> None:
    """Each case the oracle session kept: kept only when its untouched source fails each of
    its fail-to-pass tests (`mine_untouched`)."""
    from pytest_scylla.operations.mining import mine
    from pytest_scylla.operations.mining import untouched as mine_untouched

    if not found.written:
        return
    with mine_untouched.history(repo) as source:
        for case, folder in list(found.written.items()):
            if problem := mine_untouched.check(folder, source, box, timeout):
                echo(safe(f"FAIL {case}: {problem}"))
                mine.drop(found, case, "the oracle check failed: " + problem)
            else:
                echo(safe(f"noop {case}: its untouched source fails each fail-to-pass test"))
