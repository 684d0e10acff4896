"""What one run is, and the one spelling of its key.

A run is a case under a tier subtest, as run number `run` (and, on a model axis
`--scylla-models=a,b`, with one of its models). Its key has two spellings, both made and parsed
here only: the folder name `test-001-T5-02-r3` (run folders, gateway routes, records' `run_key`)
and the pytest item name `test-001[T5-02-r3]` (node ids, `-k`, `--lf`); on a model axis the
model's label ends both: `test-001-T5-02-r3-claude-haiku-4-5`,
`test-001[T5-02-r3-claude-haiku-4-5]`.

A key read back from a stored folder (`scylla report`) is checked here too: `folder_problem`
says why a string cannot be a run folder's name (`../../outside-run` names a path out of
`runs/`), `RunKey.from_folder` parses the folder spelling.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_scylla.formats.spec import Case
    from pytest_scylla.formats.tiers import Subtest

ITEM_NAME = re.compile(
    r"(?P<case>[^\[/:]+)\[(?P<tier>T\d+)-(?P<number>\d{2})-r(?P<run>\d+)"
    r"(?:-(?P<model>[A-Za-z0-9._-]+))?\]$"
)
NOT_IN_LABEL = re.compile(r"[^A-Za-z0-9._-]")
FOLDER_NAME = re.compile(
    r"(?P<case>[^/\\]+?)-(?P<tier>T\d+)-(?P<number>\d{2})-r(?P<run>\d+)"
    r"(?:-(?P<model>[A-Za-z0-9._-]+))?"
)
EXAMPLE = "a name such as test-001-T5-02-r3"


def folder_problem(key: str) -> str | None:
    """Why `key` cannot name a run's folder inside `runs/` (a path, `..`, a control character),
    else None: `folder_problem("../../outside-run")` -> "holds '/' ...".

    >>> folder_problem("test-001-T5-02-r3") is None
    True
    >>> folder_problem("..")
    "is '..', a path out of runs/"
    """
    if key in ("", ".", ".."):
        return f"is {key!r}, a path out of runs/" if key else "is empty"
    for bad in ("/", "\\", "\0"):
        if bad in key:
            return f"holds {bad!r}: a path, not a run folder's name"
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        return "holds a control character"
    return None


def model_label(model: str) -> str:
    """A model id as it appears in run keys, item ids and markers: `us.anthropic.x:0` ->
    `us.anthropic.x_0` (folder names, `-k` and `-m` take these characters only)."""
    return NOT_IN_LABEL.sub("_", model)


@dataclass(frozen=True)
class RunKey:
    """A run's identity, known without reading any case file."""

    case: str
    tier: str
    number: str  # the subtest's two digits
    run: int
    model: str = ""  # the model's label on a model axis, else empty

    @property
    def subtest(self) -> str:
        """The subtest reference, `T5-02`."""
        return f"{self.tier}-{self.number}"

    @property
    def folder(self) -> str:
        """`test-001-T5-02-r3`: the run's folder, route and record key."""
        return f"{self.case}-{self.subtest}-r{self.run}{self._model}"

    @property
    def item_name(self) -> str:
        """`test-001[T5-02-r3]`: the pytest item's name."""
        return f"{self.case}[{self.subtest}-r{self.run}{self._model}]"

    @property
    def _model(self) -> str:
        return f"-{self.model}" if self.model else ""

    @classmethod
    def from_folder(cls, folder: str) -> RunKey | None:
        """The key whose folder name is `folder`, else None.

        >>> RunKey.from_folder("test-001-T5-02-r3-claude-haiku-4-5")
        RunKey(case='test-001', tier='T5', number='02', run=3, model='claude-haiku-4-5')
        """
        match = FOLDER_NAME.fullmatch(folder)
        if match is None:
            return None
        return cls(
            match["case"], match["tier"], match["number"], int(match["run"]), match["model"] or ""
        )

    @classmethod
    def from_nodeid(cls, nodeid: str) -> RunKey | None:
        """The key of a run item's node id (`cases/x/test.yaml::x[T0-01-r1]`), else None."""
        match = ITEM_NAME.search(nodeid.rpartition("::")[2])
        if match is None or "::" not in nodeid:
            return None
        return cls(
            match["case"], match["tier"], match["number"], int(match["run"]), match["model"] or ""
        )


def share(run_key: str, count: int) -> int:
    """The shard (1..count) a run belongs to (`--scylla-shard`): a hash of its key alone."""
    return int(hashlib.sha256(run_key.encode()).hexdigest()[:12], 16) % count + 1


def is_run_item(nodeid: str) -> bool:
    return RunKey.from_nodeid(nodeid) is not None


@dataclass(frozen=True)
class RunSpec:
    """What one item runs: a case under a composed subtest, as run number `run`."""

    case: Case
    subtest: Subtest
    run: int
    model: str = ""  # the model id on a model axis (it overrides a subtest's `model:`)

    @property
    def key(self) -> RunKey:
        return RunKey(
            self.case.id,
            self.subtest.tier,
            self.subtest.number,
            self.run,
            model_label(self.model) if self.model else "",
        )
