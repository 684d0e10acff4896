"""Shards (`--scylla-shard=I/N`): they partition a selection exactly, N shards merged by
`scylla report` equal one unsharded session, a missing shard is named, and the documented
GitHub Actions matrix and Kubernetes Indexed Job are valid YAML of their kind."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_scylla.cli import main
from pytest_scylla.operations.shard import missing, share

from .conftest import export_rows, workers

README = Path(__file__).parents[1] / "README.md"


def run_keys(out: Path) -> set[str]:
    return {p.parent.name for p in out.glob("runs/*/run.json")}


def test_shards_partition_the_runs_and_merge_into_the_unsharded_session(
    standin: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = standin / "whole"
    pytester.runpytest("cases", *workers(0), "--scylla-runs=2", f"--scylla-out={whole}")
    shards = []
    for index in (1, 2, 3):
        out = standin / f"shard-{index}"
        # one shard on two workers: the split does not depend on the worker count
        pytester.runpytest(
            "cases",
            *workers(2 if index == 3 else 0),
            "--scylla-runs=2",
            f"--scylla-shard={index}/3",
            f"--scylla-out={out}",
        )
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["shard"] == {"index": index, "count": 3, "experiment": "shards-of-3"}
        shards.append(out)
    keys = [run_keys(out) for out in shards]
    assert all(keys)  # 24 runs: every shard has some
    assert set.union(*keys) == run_keys(whole)
    assert sum(map(len, keys)) == len(run_keys(whole))  # disjoint
    merged = standin / "merged"
    assert main(["report", *map(str, shards), "--out", str(merged), "--report", "none"]) == 0

    def rows(path: Path) -> list[str]:  # the folder's name aside (rows sort by it first)
        return sorted(
            json.dumps({k: v for k, v in row.items() if k != "experiment"}, sort_keys=True)
            for row in export_rows(path)
        )

    for name in ("runs.csv", "judges.csv", "criteria.csv", "subtests.csv"):
        assert rows(merged / name) == rows(whole / name), name
    assert json.loads((merged / "manifest.json").read_text())["shards"] == {
        "count": 3,
        "missing": [],
    }
    capsys.readouterr()
    # one shard short: merged all the same, and said
    short = standin / "short"
    assert (
        main(["report", str(shards[0]), str(shards[2]), "--out", str(short), "--report", "none"])
        == 0
    )
    assert "shards missing: 2/3 (merged 2 of 3)" in capsys.readouterr().out
    summary = json.loads((short / "summary.json").read_text())
    assert summary["partial"] == "shards missing: 2/3 (merged 2 of 3)"


def test_the_split_is_even_and_splits_of_different_counts_do_not_merge() -> None:
    keys = [
        f"test-{c:03d}-T{t}-{s:02d}-r{r}"
        for c in range(5)
        for t in range(7)
        for s in range(6)
        for r in range(1, 11)
    ]
    counts = [sum(share(k, 4) == i for k in keys) for i in (1, 2, 3, 4)]
    assert min(counts) > 0.2 * len(keys)  # 2,100 runs: roughly a quarter each
    assert missing([{"shard": {"index": 1, "count": 4}}, {"other": 1}]) == (4, [2, 3, 4])
    with pytest.raises(ValueError, match="different splits"):
        missing([{"shard": {"index": 1, "count": 4}}, {"shard": {"index": 2, "count": 3}}])
    assert missing([{}]) is None


@pytest.mark.parametrize("value", ["0/3", "4/3", "two", "1/0", "1-3"])
def test_a_bad_shard_is_one_usage_error(
    standin: Path, pytester: pytest.Pytester, value: str
) -> None:
    done = pytester.runpytest("cases", "--co", f"--scylla-shard={value}")
    done.stderr.fnmatch_lines(
        [
            f"*--scylla-shard={value!r}: expected I/N with 1 <= I <= N, "
            "e.g. --scylla-shard=2/4 (shard 2 of 4)"
        ]
    )
    assert "Traceback" not in done.stderr.str()


def _yaml_texts() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Beyond one machine: shards") : text.index("## Long campaigns")]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def _yaml_blocks() -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in _yaml_texts()]


def test_the_documented_github_matrix_is_a_valid_workflow(tmp_path: Path) -> None:
    workflow = _yaml_blocks()[0]
    assert workflow["jobs"]["evaluate"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    path = tmp_path / "sharded.yml"
    path.write_text(_yaml_texts()[0])
    checker = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert checker is not None, "check-jsonschema is a dev dependency"
    done = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# The parts of the Kubernetes batch/v1 Job schema the documented manifest uses (closed where it
# matters: a misspelt field fails); no Kubernetes schema ships with the dev tools.
JOB = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "batch/v1"},
        "kind": {"const": "Job"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["completionMode", "completions", "parallelism", "template"],
            "properties": {
                "completionMode": {"enum": ["Indexed", "NonIndexed"]},
                "completions": {"type": "integer", "minimum": 1},
                "parallelism": {"type": "integer", "minimum": 1},
                "backoffLimit": {"type": "integer", "minimum": 0},
                "template": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["containers", "restartPolicy"],
                            "properties": {
                                "restartPolicy": {"enum": ["Never", "OnFailure"]},
                                "containers": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["name", "image"],
                                        "additionalProperties": False,
                                        "properties": {
                                            "name": {"type": "string"},
                                            "image": {"type": "string"},
                                            "command": {
                                                "type": "array",
                                                "items": {"type": "string"},
                                            },
                                            "args": {"type": "array", "items": {"type": "string"}},
                                            "env": {"type": "array"},
                                            "volumeMounts": {"type": "array"},
                                        },
                                    },
                                },
                                "volumes": {"type": "array"},
                            },
                        }
                    },
                },
            },
        },
    },
}


def test_the_documented_kubernetes_indexed_job_is_a_valid_job() -> None:
    job = _yaml_blocks()[1]
    jsonschema.validate(job, JOB)
    count = job["spec"]["completions"]
    assert job["spec"]["completionMode"] == "Indexed"
    command = " ".join(job["spec"]["template"]["spec"]["containers"][0]["args"])
    assert f"--scylla-shard=$((JOB_COMPLETION_INDEX + 1))/{count}" in command
    # positive control: the schema refuses a misspelt field
    broken = json.loads(json.dumps(job))
    broken["spec"]["completionmode"] = broken["spec"].pop("completionMode")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, JOB)
