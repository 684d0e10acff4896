"""A plan's design as `scylla ablate report` reads it: the arms of `design.json` (written by
`scylla ablate plan` beside its tier file), by subtest number, and where to find it for an
experiment folder."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_scylla.formats.ablation_plan import DESIGN_KINDS, DesignKind


@dataclass(frozen=True)
class Design:
    """The arms of a plan (`design.json` beside its tier file), by subtest number."""

    kind: DesignKind
    configuration: str
    factors: tuple[str, ...]
    arms: Mapping[str, frozenset[str]]  # "03" -> the factors the arm keeps
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)  # "03" -> its name


def load_design(path: Path) -> Design:
    """A plan's design; a ValueError names the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        arms = {str(k)[:2]: frozenset(v) for k, v in data["arms"].items()}
        labels = {str(k)[:2]: str(k) for k in data["arms"]}
        design = Design(
            data["design"], str(data["configuration"]), tuple(data["factors"]), arms, labels
        )
        problem = _problem(design)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        problem = str(exc)
    else:
        if not problem:
            return design
    raise ValueError(f"{path}: not a design written by `scylla ablate plan` ({problem})")


def _problem(design: Design) -> str:
    """What makes a read design unusable, or ""."""
    if design.kind not in DESIGN_KINDS:
        return f"design {design.kind!r}: expected {' or '.join(DESIGN_KINDS)}"
    if not all(isinstance(f, str) for f in design.factors):
        return "factors: expected names"
    unknown = sorted(str(f) for kept in design.arms.values() for f in kept - set(design.factors))
    return f"arms keep factors not in factors: {', '.join(unknown)}" if unknown else ""


def design_beside(folder: Path) -> Path:
    """The design.json beside the tier file the experiment in `folder` ran."""
    return tier_source(folder).parent / "design.json"


def tier_source(folder: Path) -> Path:
    """The T0 tier file the experiment in `folder` ran, when it is a project's own."""
    from pytest_scylla.core.record import read_dict

    if not (folder / "manifest.json").is_file():
        raise ValueError(f"{folder}: no manifest.json, so no experiment folder (--scylla-out)")
    sources = read_dict(folder / "manifest.json").get("tier_sources")
    source = sources.get("T0") if isinstance(sources, dict) else None
    if not isinstance(source, str) or not source or source.startswith("packaged"):
        raise ValueError("the experiment did not run a plan's tiers; name its design with --design")
    return Path(source)
