"""Unit tests of the pure loaders: YAML line marks, tier composition, rubric grading."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

from pytest_scylla.formats.rubric import load_rubric
from pytest_scylla.formats.tiers import SystemPrompt, TierSet
from pytest_scylla.formats.yamlmarks import SpecError, load_yaml


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


RESOURCES = {
    "blocks/a.md": "# A\nalpha\n",
    "blocks/b.md": "# B\nbeta\n",
    "skills/s1/SKILL.md": "---\nname: s1\ndescription: one\n---\nDo one.\n",
    "agents/g1.md": "---\nname: g1\ndescription: agent\ntools: Read\n---\nYou are g1.\n",
    "prompts/p.md": "Be brief.\n",
}


def tiers(tmp_path: Path, **tier_files: str) -> TierSet:
    files = dict(RESOURCES)
    files.update({f"{name}.yaml": text for name, text in tier_files.items()})
    return TierSet(write(tmp_path / "tiers", files))


def test_line_marks_point_at_keys_and_items(tmp_path: Path) -> None:
    doc = load_yaml(write(tmp_path, {"x.yaml": "a: 1\nb:\n  - x\n  - y\nc: {d: 2}\n"}) / "x.yaml")
    assert doc.data == {"a": 1, "b": ["x", "y"], "c": {"d": 2}}
    assert doc.line(("b",)) == 2
    assert doc.line(("b", 1)) == 4
    assert doc.line(("c", "d")) == 5
    assert doc.line(("c", "nope", 3)) == 5  # nearest known ancestor
    assert doc.line(()) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "x.yaml:1: the file is empty; expected a YAML mapping"),
        ("a: 1\na: 2\n", "x.yaml:2: duplicate key 'a' (first at line 1); keep one of them"),
        ("a: [1\n", "x.yaml:2: YAML syntax error: *"),
        ("? [1, 2]\n: x\n", "x.yaml:1: key [[]1, 2] must be a string"),
    ],
)
def test_yaml_problems_name_the_line(
    tmp_path: Path, text: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.yaml").write_text(text)
    with pytest.raises(SpecError) as info:
        load_yaml(Path("x.yaml"))
    assert fnmatch(str(info.value), message), str(info.value)


def test_extends_unites_in_order_and_own_keys_win(tmp_path: Path) -> None:
    ts = tiers(
        tmp_path,
        T0="tier: T0\nname: P\nsubtests:\n"
        "  01-a:\n    description: a\n    claude_md: [a]\n    system_prompt: none\n"
        "    tools: {allow: [Read, Bash], deny: [WebFetch]}\n    settings: {x: {y: 1}}\n",
        T1="tier: T1\nname: S\nsubtests:\n"
        "  01-s:\n    description: s\n    skills: [s1]\n    claude_md: [b, a]\n"
        "    tools: {allow: [Edit], deny: [WebSearch]}\n    settings: {x: {z: 2}}\n"
        "    model: m-small\n",
        T5="tier: T5\nname: H\nsubtests:\n"
        "  01-h:\n    description: h\n    extends: [T0-01, T1-01]\n    agents: [g1]\n"
        "  02-own:\n    description: own\n    extends: [T5-01]\n"
        "    system_prompt: default\n    tools: {allow: [Read]}\n    model: m-big\n",
    )
    assert not ts.errors
    h = ts.resolve("T5-01")
    assert h.claude_md == ("a", "b")
    assert h.skills == ("s1",)
    assert h.agents == ("g1",)
    assert h.system_prompt == SystemPrompt("none")
    assert h.tools_allow == ("Read", "Bash", "Edit")
    assert h.tools_deny == ("WebFetch", "WebSearch")
    assert h.settings == {"x": {"y": 1, "z": 2}}
    assert h.model == "m-small"
    own = ts.resolve("T5-02")
    assert own.system_prompt == SystemPrompt("default")
    assert own.tools_allow == ("Read",)
    assert own.model == "m-big"
    assert own.claude_md == ("a", "b")
    plain = ts.resolve("T0-01")
    assert plain.extends == ()
    assert ts.subtest("T5-01").claude_md == ()  # the declaration itself is untouched


def test_conflicting_inherited_values_must_be_settled(tmp_path: Path) -> None:
    ts = tiers(
        tmp_path,
        T0="tier: T0\nname: P\nsubtests:\n"
        "  01-a:\n    description: a\n    system_prompt: none\n"
        "  02-b:\n    description: b\n    system_prompt: {append: prompts/p.md}\n",
        T5="tier: T5\nname: H\nsubtests:\n"
        "  01-h:\n    description: h\n    extends: [T0-01, T0-02]\n"
        "  02-ok:\n    description: ok\n    extends: [T0-01, T0-02]\n"
        "    system_prompt: default\n",
    )
    with pytest.raises(SpecError, match="set 'system_prompt' in T5-01 itself"):
        ts.resolve("T5-01")
    assert ts.resolve("T5-02").system_prompt == SystemPrompt("default")


def test_a_broken_tier_keeps_its_error_and_others_work(tmp_path: Path) -> None:
    ts = tiers(
        tmp_path,
        T0="tier: T0\nname: P\nsubtests:\n  01-a:\n    description: a\n",
        T1="tier: T1\nname: S\nsubtests:\n  01-s:\n    skills: [s1]\n",
    )
    assert list(ts.tiers) == ["T0"]
    assert "missing required key 'description'" in str(ts.errors["T1"])
    assert ts.names == ["T0", "T1"]


def test_tier_numbers_sort_numerically(tmp_path: Path) -> None:
    body = "name: x\nsubtests:\n  01-a:\n    description: a\n"
    ts = tiers(tmp_path, T10=f"tier: T10\n{body}", T2=f"tier: T2\n{body}", T0=f"tier: T0\n{body}")
    assert ts.names == ["T0", "T2", "T10"]


def test_shared_subtest_numbers_are_an_error(tmp_path: Path) -> None:
    ts = tiers(
        tmp_path,
        T0="tier: T0\nname: P\nsubtests:\n  01-a:\n    description: a\n"
        "  01-b:\n    description: b\n",
    )
    assert "share the number 01" in str(ts.errors["T0"])


@pytest.mark.parametrize(
    ("score", "grade"),
    [(1.0, "S"), (0.999, "A"), (0.8, "A"), (0.6, "B"), (0.59, "C"), (0.2, "D"), (0.0, "F")],
)
def test_paper_grade_scale(tmp_path: Path, score: float, grade: str) -> None:
    path = (
        write(
            tmp_path,
            {
                "r.yaml": "categories:\n  c:\n    weight: 1\n    items:\n"
                "      - {id: X1, description: d, points: 1}\n"
            },
        )
        / "r.yaml"
    )
    rubric = load_rubric(path)
    assert rubric.grade(score) == grade
    assert rubric.pass_threshold == 0.6


def test_rubric_check_key_needs_kind_check(tmp_path: Path) -> None:
    path = (
        write(
            tmp_path,
            {
                "r.yaml": "categories:\n  c:\n    weight: 1\n    items:\n"
                "      - {id: X1, description: d, points: 1, check: a}\n"
                "      - {id: X2, description: d, points: 1, kind: check}\n"
            },
        )
        / "r.yaml"
    )
    with pytest.raises(SpecError) as info:
        load_rubric(path)
    text = str(info.value)
    assert "r.yaml:5: item 'X1' names a check but is not kind: check" in text
    assert "r.yaml:6: item 'X2' has kind: check but no 'check:'" in text


def test_grade_scale_must_decrease(tmp_path: Path) -> None:
    path = (
        write(
            tmp_path,
            {
                "r.yaml": "categories:\n  c:\n    weight: 1\n    items:\n"
                "      - {id: X1, description: d, points: 1}\n"
                "grading:\n  grade_scale: {S: 1, A: 0.5, B: 0.6, C: 0.4,"
                " D: 0.2, F: 0}\n"
            },
        )
        / "r.yaml"
    )
    with pytest.raises(SpecError, match=r"r\.yaml:7: grade_scale must not increase"):
        load_rubric(path)
