"""A document found valid is remembered in the cache folder (formats/yamlmarks.py), so that the
next process (every xdist worker parses every case and tier) does not check it again; what is
invalid is never remembered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_scylla.formats import yamlmarks


def _tier(description: str) -> dict[str, object]:
    return {
        "tier": "T0",
        "name": "Prompts",
        "description": description,
        "subtests": {"00-empty": {"description": "x", "system_prompt": "none"}},
    }


@pytest.fixture
def remembered(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "valid"
    yamlmarks.remember_valid(folder)
    yield folder
    yamlmarks.remember_valid(None)


def _doc(data: object) -> yamlmarks.Document:
    return yamlmarks.Document(Path("tier.yaml"), data, {})


def test_a_valid_document_is_checked_once(
    remembered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _doc(_tier("x"))
    try:
        yamlmarks.validate(doc, "tier")
    except yamlmarks.SpecError as exc:  # the fixture must be valid for the test to mean much
        pytest.fail(str(exc))
    assert len(list(remembered.iterdir())) == 1
    checked = []
    monkeypatch.setattr(yamlmarks, "_check", lambda d, s: checked.append(s))
    yamlmarks.validate(_doc(_tier("x")), "tier")  # equal data
    assert checked == []
    yamlmarks.validate(_doc(_tier("y")), "tier")  # other data
    assert checked == ["tier"]
    yamlmarks.remember_valid(None)  # the positive control: nothing remembered, checked again
    yamlmarks.validate(doc, "tier")
    assert checked == ["tier", "tier"]


def test_an_invalid_document_is_never_remembered(remembered: Path) -> None:
    doc = _doc({"name": 7, "unknown_field": True})
    for _ in range(2):
        with pytest.raises(yamlmarks.SpecError):
            yamlmarks.validate(doc, "tier")
    assert not remembered.exists() or not list(remembered.iterdir())
