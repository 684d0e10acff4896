"""Shards (`--scylla-shard=I/N`): they partition a selection exactly, N shards merged by
`scylla report` equal one unsharded session, a missing shard is named, and the documented
GitHub Actions matrix and Kubernetes Indexed Job are valid YAML of their kind.

Here the in-process tests; the sessions are in `tests/e2e/test_shards.py`."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_scylla.operations.shard import missing, share

from ...support.docs import docs_page


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


def _yaml_texts() -> list[str]:
    text = docs_page("shards")
    section = text[text.index("# Beyond one machine: shards") : text.index("## A study on more")]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)


def _yaml_blocks() -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in _yaml_texts()]


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
