"""`scylla validate [ROOT]`: every case, tier and rubric under a project checked, without runs
or network; exit code 2 when any is invalid."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pytest_scylla.core.terminal import echo
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.rubric import load_rubric
from pytest_scylla.formats.spec import load_case
from pytest_scylla.formats.tiers import TierSet
from pytest_scylla.formats.yamlmarks import SpecError, display
from pytest_scylla.session.collect import case_file_problem, case_files, duplicate_id


def register(sub: Any) -> None:
    """The `validate` command on the `scylla` parser's subparsers."""
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
    val.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
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
