"""The compiled check in front of jsonschema (formats/fastcheck.py) only ever accepts what
jsonschema accepts: any document it lets through unexamined would otherwise be a record the
reports read without the schema's guarantees."""

from __future__ import annotations

import contextlib
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_scylla.formats import fastcheck, yamlmarks

RECORD: dict[str, Any] = {
    "run_key": "test-001-T0-01-r1",
    "tier": "T0",
    "outcome": "pass",
    "score": 0.8,
    "cost_usd": 0.12,
    "timings": {"total_s": 12.0},
    "tokens": {"input_tokens": 10},
    "checks": [{"name": "t", "passed": True, "exit_code": 0, "seconds": 1.0, "reason": ""}],
    "judges": [
        {
            "judge_model": "m",
            "score": 0.7,
            "verdict": {"items": {"R1": {"achieved": 1}}},
            "categories": [{"name": "f", "score": 0.5, "achieved": 1, "max": 2}],
        }
    ],
}

# every place a value can go wrong: the top-level fields and the nested ones the schema types
PATHS = [
    ("run_key",),
    ("tier",),
    ("outcome",),
    ("score",),
    ("cost_usd",),
    ("model",),
    ("simulated",),
    ("timings",),
    ("timings", "total_s"),
    ("tokens", "input_tokens"),
    ("regressions",),
    ("checks",),
    ("checks", 0),
    ("checks", 0, "name"),
    ("judges",),
    ("judges", 0),
    ("judges", 0, "score"),
    ("judges", 0, "verdict"),
    ("judges", 0, "verdict", "items"),
    ("judges", 0, "verdict", "items", "R1"),
    ("judges", 0, "categories", 0),
    ("judges", 0, "categories", 0, "max"),
    ("judges", 0, "categories", 0, "name"),
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 1.5, -0.1, math.inf, math.nan]),
    st.text(max_size=3),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=4,
)


def _slow_accepts(data: Any) -> bool:
    try:
        yamlmarks.validate(yamlmarks.Document(Path("r.json"), data, {}), "record-slow")
    except yamlmarks.SpecError:
        return False
    return True


@pytest.fixture(autouse=True)
def _slow_record_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """`record-slow`: the record schema through jsonschema alone (no compiled check)."""
    real = yamlmarks.schema
    monkeypatch.setattr(
        yamlmarks, "schema", lambda name: real("record" if name == "record-slow" else name)
    )


def _set(doc: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), values), min_size=1, max_size=3))
def test_what_the_compiled_check_accepts_jsonschema_accepts(changes: list[Any]) -> None:
    doc = copy.deepcopy(RECORD)
    for path, value in changes:
        with contextlib.suppress(KeyError, IndexError, TypeError):  # a parent was replaced
            _set(doc, path, value)
    check = fastcheck.compiled(json.dumps(yamlmarks.schema("record")))
    before = repr(doc)
    if fastcheck.accepts(check, doc):
        assert _slow_accepts(doc), doc
    assert repr(doc) == before  # the check fills in no defaults


def test_the_compiled_check_accepts_a_valid_record_and_refuses_what_the_schema_refuses() -> None:
    check = fastcheck.compiled(json.dumps(yamlmarks.schema("record")))
    assert check is not None
    assert fastcheck.accepts(check, RECORD)  # the positive control: the fast path is taken
    for path, bad in [
        (("score",), 1.5),
        (("score",), math.nan),
        (("cost_usd",), math.inf),
        (("judges", 0, "categories", 0, "max"), "4"),
        (("run_key",), ""),
        (("checks", 0), {"name": "t"}),
    ]:
        doc = copy.deepcopy(RECORD)
        _set(doc, path, bad)
        assert not fastcheck.accepts(check, doc), (path, bad)
        assert not _slow_accepts(doc), (path, bad)


def test_a_refused_record_gets_jsonschemas_message() -> None:
    doc = {**RECORD, "score": 2}
    with pytest.raises(yamlmarks.SpecError) as caught:
        yamlmarks.check_value(doc, "record", Path("runs.jsonl"))
    assert str(caught.value) == "runs.jsonl:1: score: 2 is greater than the maximum of 1"


def test_a_self_referring_schema_is_not_compiled() -> None:
    loop = {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}
    assert fastcheck.compiled(json.dumps(loop)) is None
    assert fastcheck.compiled(json.dumps({"$ref": "https://example.com/x.json"})) is None
