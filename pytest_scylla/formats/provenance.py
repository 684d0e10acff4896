"""Where a result came from: content hashes of the inputs a run depends on (its case folder,
rubric, tier file and tier resources), the commits its source started from, and the manifest
that gathers them for an experiment (written at session end and by `scylla report`, so merged
shards keep every machine's provenance)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_scylla import __version__
from pytest_scylla.core import pricing
from pytest_scylla.core.environ import credential_free
from pytest_scylla.core.record import RunRecord
from pytest_scylla.core.runspec import RunSpec
from pytest_scylla.formats.spec import Case
from pytest_scylla.formats.tiers import Subtest, TierSet

SKIP_PARTS = {"__pycache__", ".pytest_cache", ".git"}


def content_hash(path: Path, exclude: tuple[Path, ...] = ()) -> str:
    """sha256 of a file's bytes, or of a folder's files (relative names and contents, sorted);
    caches and byte-code are left out so running a case's checks does not change its hash, and
    so are the `exclude`d files (a case's own rubric: hashed on its own)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    skip = {p.resolve() for p in exclude}
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path)
        if SKIP_PARTS & set(rel.parts) or file.suffix == ".pyc" or file.resolve() in skip:
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def _name(path: Path, root: Path) -> str:
    """A machine-independent name: the path below `root`'s parent (`cases/test-001/`)."""
    rel = path.resolve().relative_to(root.resolve().parent).as_posix()
    return rel + "/" if path.is_dir() else rel


def input_hashes(case: Case, sub: Subtest, tiers: TierSet) -> dict[str, str]:
    """{name: sha256} of every file or folder the run depends on: the case folder (its rubric
    apart), the rubric, the tier file and every resource the subtest names."""
    rubric = case.rubric.path.resolve()
    inside = rubric.is_relative_to(case.root.resolve())  # a case's own rubric.yaml
    found = {
        _name(case.root, case.root.parent): content_hash(case.root, exclude=(rubric,)),
        _name(rubric, case.root.parent if inside else rubric.parent): content_hash(rubric),
    }
    found[_name(sub.file, tiers.layer_of(sub.file))] = content_hash(sub.file)
    for kind, names in (
        ("claude_md", sub.claude_md),
        ("skills", sub.skills),
        ("agents", sub.agents),
        ("mcp_servers", sub.mcp_servers),
    ):
        for name in names:
            path = tiers.resource_path(kind, name)  # type: ignore[arg-type]
            if kind == "skills":
                path = path.parent  # a skill is its whole folder
            found[_name(path, tiers.layer_of(path))] = content_hash(path)
    if sub.system_prompt is not None and sub.system_prompt.file is not None:
        prompt_file = tiers.dir / sub.system_prompt.file  # absolute paths stay as they are
        found[_name(prompt_file, tiers.layer_of(prompt_file))] = content_hash(prompt_file)
    return dict(sorted(found.items()))


def _scoring_inputs(case: Case, sub: Subtest, tiers: TierSet) -> tuple[str, str]:
    """The names, in `input_hashes`, of the rubric and of the tier file."""
    rubric = case.rubric.path.resolve()
    inside = rubric.is_relative_to(case.root.resolve())
    return (
        _name(rubric, case.root.parent if inside else rubric.parent),
        _name(sub.file, tiers.layer_of(sub.file)),
    )


def subtest_conditions(sub: Subtest, tiers: TierSet) -> dict[str, Any]:
    """The resolved subtest as it reaches the CLI (where it is written down left out)."""
    fields = dataclasses.asdict(sub)
    for name in ("file", "line", "description", "extends", "name"):
        fields.pop(name, None)
    if sub.project_config == "keep":  # the default hashes as before it existed
        fields.pop("project_config")
    if not sub.keep_files:  # so does the default here
        fields.pop("keep_files")
    if sub.claude_md_file is None:  # and here
        fields.pop("claude_md_file")
    if sub.system_prompt is not None:
        prompt = sub.system_prompt.file
        fields["system_prompt"] = {
            "mode": sub.system_prompt.mode,
            "file": None if prompt is None else content_hash(tiers.dir / prompt),
        }
    return fields


@dataclass(frozen=True)
class Conditions:
    """What a stored run is compared against on resume, computed once per run: the content
    hashes of its inputs, the config hash (everything that decides how the agent's run goes)
    and the judge hash (what decides its scoring)."""

    inputs: dict[str, str]
    config_hash: str
    judge_hash: str
    config: dict[str, Any] = field(default_factory=dict)  # what config_hash hashes, kept
    # in the record so that a conflict on resume can say what changed


ABSENT = object()


def differences(old: Any, new: Any, path: str = "") -> list[str]:
    """What differs between two stored conditions (`Conditions.config`), one short phrase per
    field: `model: claude-sonnet-5 -> claude-haiku-4-5`, `cases/alpha/prompt.md: changed`."""
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            found += differences(
                old.get(key, ABSENT),
                new.get(key, ABSENT),
                key if not path or path == "inputs" else f"{path}.{key}",
            )
        return found
    if old == new:
        return []
    if old is ABSENT or new is ABSENT:
        return [f"{path}: {'added' if old is ABSENT else 'removed'}"]
    if (
        isinstance(old, str)
        and isinstance(new, str)
        and len(old) == len(new) >= 16
        and all(c in "0123456789abcdef" for c in old + new)
    ):
        return [f"{path}: changed"]  # a content hash (sha256, or its first 16 digits)
    return [f"{path}: {_shown(old)} -> {_shown(new)}"]


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def _short(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def conditions(
    spec: RunSpec,
    tiers: TierSet,
    *,
    model: str,
    cli_version: str,
    oracle: str | None,
    sandbox: str,
    judges: list[str],
    min_judges: int,
    evaluation: str | None = None,
    container: dict[str, Any] | None = None,
    panel: str = "full",
    agent: str = "claude-code",
) -> Conditions:
    """The run's conditions. The config hash covers the inputs but the rubric (it only scores
    the run: a rubric edit calls for --scylla-rejudge, not a re-run) and the tier file (the
    resolved subtest stands for it: editing a neighbouring subtest changes nothing), plus model,
    the agent adapter, CLI version, oracle mode, sandbox and limits (docker: the image's id and
    the container's limits, `container`); no paths, so the same conditions hash the same in
    every run and on every machine. The judge hash covers the rubric's content and the
    panel, and for a Python evaluation its source (`evaluation`): its asserts score the run."""
    case, sub = spec.case, spec.subtest
    inputs = input_hashes(case, sub, tiers)
    if evaluation is not None:
        inputs["evaluation"] = evaluation
    rubric, tier_file = _scoring_inputs(case, sub, tiers)
    parts = json.loads(
        json.dumps(
            {
                "inputs": {
                    k: v for k, v in inputs.items() if k not in (rubric, tier_file, "evaluation")
                },
                "subtest": subtest_conditions(sub, tiers),
                "model": model,
                "cli": cli_version,
                "oracle": oracle,
                "sandbox": sandbox,
                "max_turns": case.max_turns,
                "timeout": case.timeout_seconds,
                "plugin": __version__,
                **({"container": container} if container else {}),
                **({"agent": agent} if agent != "claude-code" else {}),
            },  # claude-code: as before
            sort_keys=True,
            default=str,
        )
    )
    config = _short(parts)
    judge = _short(
        {
            "rubric": inputs[rubric],
            "judges": judges,
            "min_judges": min_judges,
            "oracle": oracle,
            **({"evaluation": evaluation} if evaluation else {}),
            **({"panel": panel} if panel != "full" else {}),
        }
    )  # full: hashes as before
    return Conditions(inputs=inputs, config_hash=config, judge_hash=judge, config=parts)


def plugin_commit() -> str | None:
    """The git commit of the plugin's own checkout (with `+dirty` for local edits), when it is
    installed from one; None for a packaged install."""
    here = Path(__file__).resolve().parents[2]  # the checkout holding pytest_scylla/
    if not (here / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            env=credential_free(),
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            env=credential_free(),
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def manifest(
    records: list[RunRecord],
    options: dict[str, Any] | None = None,
    sources: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The experiment's manifest from its run records. `options` are the session's; `sources`
    the manifests of the folders a `scylla report` merged."""
    inputs = _input_digests(records)
    return {
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "plugin_version": __version__,
        "plugin_commit": plugin_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **_what_ran(records),
        "prices_as_of": pricing.PRICES_AS_OF,
        "prices_usd_per_mtok": {
            m: {"input": i, "output": o} for m, (i, o) in pricing.PRICES.items()
        },
        "inputs": {
            n: sorted(d)[0] if len(d) == 1 else sorted(d) for n, d in sorted(inputs.items())
        },
        "inputs_changed_between_runs": sorted(n for n, d in inputs.items() if len(d) > 1),
        "source_commits": _source_commits(records),
        "config_hashes": dict(sorted((r["run_key"], r.get("config_hash")) for r in records)),
        "options": options or {},
        "merged_from": sources or [],
    }


def _input_digests(records: list[RunRecord]) -> dict[str, set[str]]:
    """Every digest each input file had across the runs."""
    inputs: dict[str, set[str]] = {}
    for rec in records:
        for name, digest in (rec.get("inputs") or {}).items():
            inputs.setdefault(name, set()).add(digest)
    return inputs


def _source_commits(records: list[RunRecord]) -> dict[str, list[str]]:
    """Per case, the `repo@commit`s its runs' sources started from."""
    commits: dict[str, set[str]] = {}
    for rec in records:
        src = rec.get("source") or {}
        # the task's commit (before the tier's configuration was folded into the start)
        task = src.get("commit") or src.get("task_commit") or src.get("base_commit")
        if rec.get("case") and task:
            commits.setdefault(rec["case"], set()).add(
                f"{src.get('repo') or src.get('path') or 'local'}@{task}"
            )
    return {c: sorted(v) for c, v in sorted(commits.items())}


def _what_ran(records: list[RunRecord]) -> dict[str, Any]:
    """The CLI versions, agents, models, sandboxes, images and oracle modes the runs used."""
    return {
        "cli_versions": sorted({r["cli_version"] for r in records if r.get("cli_version")}),
        "agents": sorted({r["agent"] for r in records if r.get("agent")}),
        "agent_models": sorted({r["model"] for r in records if r.get("model")}),
        "judge_models": sorted(
            {
                j["judge_model"]
                for r in records
                for j in r.get("judges") or []
                if j.get("judge_model")
            }
        ),
        "sandboxes": sorted({r["sandbox"] for r in records if r.get("sandbox")}),
        "images": [
            {"ref": ref, "id": digest}
            for ref, digest in sorted(
                {
                    (str(i.get("ref")), str(i.get("id")))
                    for i in (r.get("image") for r in records)
                    if isinstance(i, dict)
                }
            )
        ],
        "oracle_modes": sorted({r["oracle"] for r in records if r.get("oracle")}),
    }
