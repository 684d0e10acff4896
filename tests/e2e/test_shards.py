"""Shards (`--scylla-shard=I/N`): they partition a selection exactly, N shards merged by
`scylla report` equal one unsharded session, a missing shard is named, and the documented
GitHub Actions matrix and Kubernetes Indexed Job are valid YAML of their kind.

Here the sessions; the in-process tests are in `tests/unit/operations/test_shards.py`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_scylla.cli.main import main

from ..conftest import export_rows, workers
from ..support.docs import docs_page


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
    text = docs_page("shards")
    section = text[text.index("# Beyond one machine: shards") : text.index("## A study on more")]
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
