"""The checks on a case's untouched source, once per case and condition: the baseline that tells
a run's regressions (checks that passed before any agent and fail after it) from the checks
the task is about (those that fail until it is done). It is measured in the runs' own kind of
sandbox and image, in a workspace of its own that no agent ever sees, and stored in the
experiment folder's `.baselines/` (outside every sandbox), shared under a lock by the xdist
workers and by later sessions of the folder."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_scylla.core.record import write_json
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.core.tempdirs import claim_private, release_private
from pytest_scylla.formats.provenance import content_hash
from pytest_scylla.run import checks, hostile, integrity, workspace
from pytest_scylla.run.sandbox import base_env

if TYPE_CHECKING:
    from pytest_scylla.operations.runtime import Runtime

FOLDER = ".baselines"


def source_checks(rt: Runtime, spec: RunSpec, experiment: Path) -> dict[str, bool]:
    """{check name: passed} on the case's source at its pinned commit, hidden files in place."""
    case, image = spec.case, rt.image(spec)
    condition = json.dumps(
        [content_hash(case.root), rt.sandbox.name, rt.sandbox.describe(image)],
        sort_keys=True,
        default=str,
    )
    key = f"{case.id}-{hashlib.sha256(condition.encode()).hexdigest()[:12]}"
    folder = experiment / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    stored = folder / f"{key}.json"
    with workspace.locked(folder / f"{key}.lock"):
        if stored.is_file():
            found = json.loads(stored.read_text(encoding="utf-8"))["checks"]
            return {str(name): bool(passed) for name, passed in found.items()}
        private, harness = claim_private(), claim_private()
        try:
            (private / "tmp").mkdir()
            rt.sandbox.assign(private, image)
            work = private / "work"
            ws = workspace.create(case, work, rt.settings.cache_dir, harness)
            entries, cut = hostile.walk(work)
            integrity.secure(case, ws.tree(), entries, cut)  # the hidden files go in

            def wrap(cmd: list[str]) -> list[str]:
                return rt.sandbox.wrap(cmd, work, private)

            results = checks.run_checks(
                case,
                work,
                base_env(private),
                private / f"checks-{secrets.token_hex(8)}",
                wrap,
                rt.sandbox.executor(private),
                rt.bytecode,
            )
        finally:
            rt.sandbox.close(private)
            for made in (private, harness):
                release_private(made)
        verdicts = {r.name: r.passed for r in results}
        write_json(
            stored,
            {
                "case": case.id,
                "checks": verdicts,
                "reasons": {r.name: r.reason for r in results if not r.passed},
            },
        )
        return verdicts


def regressions(before: dict[str, bool], after: dict[str, bool]) -> list[str]:
    """The checks that passed on the untouched source and fail after the agent."""
    return [name for name, passed in before.items() if passed and after.get(name) is False]
