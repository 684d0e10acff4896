"""The manifest's `source_commits`: the commit each case's task starts from, one per source,
however many tiers folded their configuration into the commit their agent started from."""

from __future__ import annotations

from pytest_scylla.formats.provenance import _source_commits


def _run(case: str, **source: str) -> dict[str, object]:
    return {"case": case, "source": {"repo": None, "path": "source", **source}}


def test_arms_that_start_from_different_commits_share_the_task_commit() -> None:
    records = [
        _run("alpha", task_commit="aaa", base_commit="s01"),
        _run("alpha", task_commit="aaa", base_commit="s02"),
        _run("beta", commit="ccc", base_commit="s03"),  # a pinned repo: its own commit
        _run("gamma", base_commit="ddd"),  # a record from before task_commit existed
    ]
    assert _source_commits(records) == {  # type: ignore[arg-type]
        "alpha": ["source@aaa"],
        "beta": ["source@ccc"],
        "gamma": ["source@ddd"],
    }
    # the control: were the start commits read, alpha would list one per arm
    started = [_run("alpha", base_commit=b) for b in ("s01", "s02")]
    assert _source_commits(started) == {"alpha": ["source@s01", "source@s02"]}  # type: ignore[arg-type]
