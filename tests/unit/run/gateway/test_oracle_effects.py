"""The oracle's effects mode (`SCYLLA_ORACLE_EFFECTS`): whether a run solves depends on the
markers that reached the model, drawn reproducibly from the run's key; a bad file is one clear
error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.run.gateway.oracle import effects as oracle_effects
from pytest_scylla.run.gateway.oracle.effects import Effects, EffectsFileError

REQUEST = {
    "system": [{"type": "text", "text": "You are Claude Code."}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "- money-math: Exact\n  arithmetic"}]}
    ],
}


def test_a_marker_that_reached_the_model_moves_the_chance(monkeypatch: pytest.MonkeyPatch) -> None:
    sure = Effects(0.0, (("Exact arithmetic", 1.0),), draw=0.99)
    assert sure.applies(REQUEST)  # found across the line break
    absent = Effects(0.0, (("not in the request", 1.0),), draw=0.0)
    assert not absent.applies(REQUEST)  # p = 0: never
    assert Effects(1.0, (("Exact arithmetic", -1.0),), draw=0.0).applies(REQUEST) is False


def test_the_draw_is_fixed_by_the_run_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "e.json").write_text(json.dumps({"base": 0.5, "effects": {"x": 0.1}}))
    monkeypatch.setenv("SCYLLA_ORACLE_EFFECTS", str(tmp_path / "e.json"))
    first = oracle_effects.for_run("alpha-T0-01-r1")
    assert first == oracle_effects.for_run("alpha-T0-01-r1")
    assert first is not None
    draws = {e.draw for k in range(40) if (e := oracle_effects.for_run(f"a-T0-01-r{k}"))}
    assert len(draws) == 40
    assert 0.3 < sum(draws) / 40 < 0.7  # spread over [0, 1)
    monkeypatch.delenv("SCYLLA_ORACLE_EFFECTS")
    assert oracle_effects.for_run("alpha-T0-01-r1") is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "No such file"),
        ("{nope", ":1: Expecting property name"),
        ('{"base": 2, "effects": {}}', 'expected {"base": 0..1'),
        ('{"base": 0.5, "effects": {"x": "big"}}', 'expected {"base": 0..1'),
    ],
)
def test_a_bad_effects_file_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, expected: str
) -> None:
    path = tmp_path / "e.json"
    if content is not None:
        path.write_text(content)
    monkeypatch.setenv("SCYLLA_ORACLE_EFFECTS", str(path))
    with pytest.raises(EffectsFileError, match="SCYLLA_ORACLE_EFFECTS=") as caught:
        oracle_effects.for_run("k")
    assert expected in str(caught.value)
