"""The model axis, `--scylla-models=a,b`: every run once per model; the model ends the item id
(`-k`), is a marker (`-m`), is the run's model (over a subtest's own), and is a key of every
summary: the tiers per model, the model comparison table, the models' tests, resume and
`scylla compare`.

Here the in-process tests; the sessions are in `tests/e2e/test_models.py`."""

from __future__ import annotations

from pytest_scylla.core.runspec import RunKey, model_label


def test_a_run_key_carries_its_model_both_ways() -> None:
    key = RunKey("test-001", "T5", "02", 3, model_label("us.anthropic.claude-x:0"))
    assert key.folder == "test-001-T5-02-r3-us.anthropic.claude-x_0"
    assert key.item_name == "test-001[T5-02-r3-us.anthropic.claude-x_0]"
    assert RunKey.from_nodeid(f"cases/t/test.yaml::{key.item_name}") == key
    plain = RunKey("test-001", "T5", "02", 3)  # no axis: the spelling of before
    assert plain.item_name == "test-001[T5-02-r3]"
    assert RunKey.from_nodeid(f"cases/t/test.yaml::{plain.item_name}") == plain
