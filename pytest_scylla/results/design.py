"""Which stored runs `scylla report` counts. A folder handed to it may have been forged, or
mixed up with another: the numbers are made only from runs that belong to the experiment, and
every run left out is named with the reason, in the terminal and in the report.

Left out (`Vetted.excluded`):
- a run whose key disagrees with its record's own case, tier, subtest, run or model (a run moved
  to another cell by editing its record);
- in the shards of a split (`--scylla-shard=I/N`, their manifests' `shard`): a run whose key is
  not in its folder's share (`operations/shard.share`), a run key found in two shard folders
  (every copy: which one is genuine cannot be told), a run beyond the runs per cell the shards
  declare (`--scylla-runs`, the least of theirs), of a tier their selection did not hold
  (`--scylla-tiers`), a key that is no run key, and every run of a folder that is not a shard
  of that split.
A key that names a path (`../../outside-run`) is refused before this, as the file is read
(`inputs.run_record`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import EXAMPLE, RunKey, model_label, share


@dataclass(frozen=True)
class Stored:
    """One folder handed to `scylla report`: its manifest and its run records."""

    path: Path
    manifest: dict[str, Any]
    records: list[RunRecord]

    @property
    def shard(self) -> tuple[int, int] | None:
        """(index, count) when the folder says it is a shard, else None."""
        said = self.manifest.get("shard")
        if not isinstance(said, dict):
            return None
        try:
            return int(said["index"]), int(said["count"])
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Design:
    """What a session was asked to run: runs per cell and the tiers selected (None: not
    said, or every one)."""

    runs: int | None = None
    tiers: tuple[str, ...] | None = None

    @classmethod
    def declared(cls, manifest: dict[str, Any]) -> Design:
        options = manifest.get("options")
        if not isinstance(options, dict):
            return cls()
        runs = options.get("runs")
        return cls(
            runs if isinstance(runs, int) and not isinstance(runs, bool) and runs > 0 else None,
            _names(options.get("tiers")),
        )

    def common(self, other: Design) -> Design:
        """What both designs hold: the fewer runs, the tiers both selected."""
        runs = [n for n in (self.runs, other.runs) if n is not None]
        return Design(min(runs) if runs else None, _both(self.tiers, other.tiers))

    def outside(self, key: RunKey) -> str | None:
        """Why the run `key` is not part of this design, else None."""
        if self.runs is not None and key.run > self.runs:
            return f"run r{key.run} is beyond the design's {self.runs} run(s) per cell"
        if self.tiers is not None and key.tier not in self.tiers:
            return f"tier {key.tier} is not among the tiers selected ({', '.join(self.tiers)})"
        return None


def _names(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _both(one: tuple[str, ...] | None, other: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if one is None or other is None:
        return one if other is None else other
    return tuple(v for v in one if v in other)


def disagreement(key: RunKey, rec: RunRecord) -> str | None:
    """Where a run's record says otherwise than its key, else None (fields it lacks agree)."""
    said = {
        "case": (rec.get("case"), key.case),
        "tier": (rec.get("tier"), key.tier),
        "subtest": (rec.get("subtest"), key.subtest),
        "run": (rec.get("run"), key.run),
    }
    model = rec.get("model")
    if key.model and isinstance(model, str):
        said["model"] = (model_label(model), key.model)
    for name, (field_value, in_key) in said.items():
        if field_value is not None and field_value != in_key:
            return f"its {name} is {field_value!r}, its run key says {in_key!r}"
    return None


@dataclass
class Vetted:
    """The records counted, per folder (in the folders' order), and the runs left out."""

    records: list[list[RunRecord]] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)


def vet(folders: list[Stored]) -> Vetted:
    """The runs of these folders that the report counts, and each one it leaves out, said as
    `<folder>: run <key>: <why>` (see the module's docstring)."""
    split = _split(folders)
    design = _shards_design(folders)
    twice = _in_two_shards(folders)
    vetted = Vetted()
    for folder in folders:
        kept = []
        for rec in folder.records:
            why = _why_out(folder, rec, split, design, twice)
            if why is None:
                kept.append(rec)
            else:
                vetted.excluded.append(f"{folder.path}: run {rec['run_key']}: {why}")
        vetted.records.append(kept)
    return vetted


def _split(folders: list[Stored]) -> int | None:
    """The shard count of the split these folders are shards of (None: no shards; several
    counts are refused earlier, `shard.missing`)."""
    counts = {f.shard[1] for f in folders if f.shard is not None}
    return min(counts) if counts else None


def _shards_design(folders: list[Stored]) -> Design:
    """The design every shard declares (the runs and tiers they all hold)."""
    designs = [Design.declared(f.manifest) for f in folders if f.shard is not None]
    common = designs[0] if designs else Design()
    for other in designs[1:]:
        common = common.common(other)
    return common


def _in_two_shards(folders: list[Stored]) -> set[str]:
    """The run keys found in more than one shard folder whose share they fall in (a copy in
    another share is left out for that alone)."""
    seen = Counter(
        key
        for f in folders
        if f.shard is not None
        for key in {r["run_key"] for r in f.records}
        if share(key, f.shard[1]) == f.shard[0]
    )
    return {key for key, n in seen.items() if n > 1}


def _why_out(
    folder: Stored, rec: RunRecord, split: int | None, design: Design, twice: set[str]
) -> str | None:
    """Why `rec` of `folder` is left out of the numbers, else None."""
    key = RunKey.from_folder(rec["run_key"])
    if key is not None and (why := disagreement(key, rec)):
        return why
    if split is None:  # no shards: the folders' runs as they are
        return None
    if folder.shard is None:
        return f"{folder.path.name} is not a shard, and the other folders are shards of {split}"
    if key is None:
        return f"not a run key ({EXAMPLE}); a shard holds runs of its session only"
    index, count = folder.shard
    if (owner := share(rec["run_key"], count)) != index:
        return f"its key falls to shard {owner}/{count}, not to this folder's {index}/{count}"
    if rec["run_key"] in twice:
        return "the same run key is in another shard folder too (every copy left out)"
    return design.outside(key)


EXCLUDED_SHOWN = 20  # runs left out named in the terminal (summary.json names every one)


def excluded_lines(excluded: list[str]) -> list[str]:
    """The runs left out of the numbers (`design.vet`), each with why; a long list is cut."""
    if not excluded:
        return []
    more = len(excluded) - EXCLUDED_SHOWN
    return [
        f"EXCLUDED: {len(excluded)} run(s) of these folders are not counted (they do not "
        "belong to the experiment's design, their shard's share, or are in two shards):",
        *(f"  {line}" for line in excluded[:EXCLUDED_SHOWN]),
        *([f"  ... and {more} more (summary.json lists every one)"] if more > 0 else []),
    ]
