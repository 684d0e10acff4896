"""Issue #29's bad input: files saved with Windows (CRLF) line endings are read like any other,
an ini boolean that is no boolean names its file, key and the values allowed, and a list-valued
ini key may be written as a list (as pytest's own list-valued keys may).

Here the sessions; the in-process tests are in `tests/unit/face/test_bad_input_settings.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_scylla.config.options import OPTIONS
from pytest_scylla.config.settings import SETTINGS_KEY

from ..conftest import MINI_ITEMS, PYTEST_9

# every Markdown/YAML file of the mini project a collection reads: cases, tiers (their skills,
# agents, CLAUDE.md blocks, prompts) and the rubric
READ_AT_COLLECTION = ("cases", "tiers", "rubrics")


def _crlf(root: Path) -> list[Path]:
    """Rewrite every .md/.yaml file under the project's folders with CRLF line endings."""
    changed = []
    for top in READ_AT_COLLECTION:
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".md", ".yaml") and path.is_file():
                data = path.read_bytes()
                assert b"\r" not in data
                path.write_bytes(data.replace(b"\n", b"\r\n"))
                changed.append(path)
    return changed


def test_files_with_windows_line_endings_collect_as_the_same_items(
    mini: Path, pytester: pytest.Pytester
) -> None:
    plain = pytester.runpytest("cases", "--co", "-q", "-p", "no:xdist")
    assert plain.ret == pytest.ExitCode.OK
    changed = _crlf(mini)
    assert {p.name for p in changed} >= {
        "SKILL.md",
        "helper.md",
        "rules.md",
        "T1.yaml",
        "test.yaml",
        "basic.yaml",
        "prompt.md",
    }
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    listed = [ln for ln in result.outlines if "test.yaml::" in ln]
    assert listed == [ln for ln in plain.outlines if "test.yaml::" in ln]
    assert len(listed) == len(MINI_ITEMS)


def test_a_crlf_skill_without_front_matter_is_still_refused(
    mini: Path, pytester: pytest.Pytester
) -> None:
    """The control: the CRLF files above were checked, not skipped: a CRLF skill that lacks
    its front matter is the usual collection error."""
    skill = mini / "tiers" / "skills" / "review" / "SKILL.md"
    skill.write_bytes(b"Look for bugs.\r\n")
    result = pytester.runpytest("cases", "--co", "-q", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*tiers/skills/review/SKILL.md:1: expected YAML front matter "
            "between '---' lines with name and description*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_crlf_skill_is_what_the_agent_is_given(
    mini: Path, pytester: pytest.Pytester, oracle: list[str]
) -> None:
    """End to end: a tier whose skill and agent files are CRLF runs, and the gateway's
    ablation check finds them offered to the real CLI (else the run is an infra_error)."""
    for name in ("skills/review/SKILL.md", "agents/helper.md", "T1.yaml"):
        path = mini / "tiers" / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    result = pytester.runpytest(
        "cases", "-p", "no:xdist", "-k", "alpha and T1-02", *oracle, "--scylla-out=exp"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)
    record = json.loads(next((mini / "exp" / "runs").glob("*/run.json")).read_text())
    assert record["outcome"] == "pass"


def _write_config(root: Path, kind: str, *lines: str) -> None:
    """Replace the fixture's tox.ini by `kind` holding its keys and `lines`."""
    keys = [ln.partition("=") for ln in (root / "tox.ini").read_text().splitlines()[1:]]
    (root / "tox.ini").unlink()
    if kind == "tox.ini":
        body = "[pytest]\n" + "".join(f"{k.strip()} = {v.strip()}\n" for k, _, v in keys)
    else:
        table = "[tool.pytest.ini_options]" if kind == "ini_options" else "[tool.pytest]"
        body = f"{table}\n" + "".join(
            f"{k.strip()} = {json.dumps(_toml(kind, k, v))}\n" for k, _, v in keys
        )
    (root / ("tox.ini" if kind == "tox.ini" else "pyproject.toml")).write_text(
        body + "".join(f"{ln}\n" for ln in lines)
    )


def _toml(kind: str, key: str, value: str) -> str | list[str]:
    """A value of the fixture's ini file as TOML: addopts is a list in a native table."""
    key, value = key.strip(), value.strip()
    return value.split() if key == "addopts" and kind == "native" else value


SWITCHES = [o.dest for o in OPTIONS if o.kind == "flag"]


@pytest.mark.parametrize(
    ("kind", "written", "message"),
    [
        (
            "tox.ini",
            "{key} = always",
            "tox.ini: {key}: invalid truth value 'always'; expected true "
            "or false (also yes/no, on/off, 1/0), e.g. {key} = yes",
        ),
        (
            "ini_options",
            '{key} = "always"',
            "pyproject.toml: {key}: invalid truth value 'always'; "
            "expected true or false (also yes/no, on/off, 1/0), e.g. {key} = true",
        ),
        pytest.param(
            "native",
            '{key} = "always"',
            "pyproject.toml: {key}: 'always' is not a "
            "boolean; expected true or false (also yes/no, on/off, 1/0), e.g. {key} = true",
            marks=PYTEST_9,
        ),
    ],
    ids=["ini", "ini_options", "native-toml"],
)
@pytest.mark.parametrize("key", [SWITCHES[0], "scylla_docker_copy"])
def test_an_ini_boolean_that_is_no_boolean_names_file_key_and_values(
    mini: Path, pytester: pytest.Pytester, kind: str, written: str, message: str, key: str
) -> None:
    _write_config(mini, kind, written.format(key=key))
    result = pytester.runpytest("cases", "--co", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message.format(key=key)}" in result.stderr.lines, result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_every_switch_is_read_through_the_same_check(mini: Path, pytester: pytest.Pytester) -> None:
    """Each on/off key, given `-o key=always`, is refused naming itself; given `yes`, it is
    read (the positive control: the same keys with a right value collect)."""
    for key in SWITCHES:
        result = pytester.runpytest("cases", "--co", "-p", "no:xdist", "-o", f"{key}=always")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, key
        assert (
            f"ERROR: -o {key}: invalid truth value 'always'; expected true or false (also "
            f"yes/no, on/off, 1/0), e.g. {key} = yes" in result.stderr.lines
        )
    config = pytester.parseconfigure(
        "cases", "-o", "scylla_keep_workspaces=yes", "-o", "scylla_record_bodies=on"
    )
    settings = config.stash[SETTINGS_KEY]
    assert settings.keep_workspaces
    assert settings.record_bodies
    assert not settings.fresh


# every list-valued key with a value that changes its setting from the default
LISTS = {
    "scylla_tiers": ["T0", "T5"],
    "scylla_subtests": ["01", "T5-02"],
    "scylla_report": ["terminal", "csv"],
    "scylla_judges": ["claude-haiku-4-5", "claude-sonnet-5"],
    "scylla_limits": ["memory=2g", "cpus=1", "pids=256"],
    "scylla_models": ["claude-sonnet-5", "claude-haiku-4-5"],
}
FIELDS = ("tiers", "subtests", "report", "judges", "limits", "models")


def _settings(pytester: pytest.Pytester) -> dict[str, object]:
    config = pytester.parseconfigure("cases")
    settings = config.stash[SETTINGS_KEY]
    return {f: getattr(settings, f) for f in FIELDS}


@pytest.mark.parametrize("kind", ["ini_options", pytest.param("native", marks=PYTEST_9), "tox.ini"])
def test_a_list_valued_key_written_as_a_list_reads_as_its_string(
    mini: Path, pytester: pytest.Pytester, kind: str
) -> None:
    """Written as a TOML list (or `[a, b]` in an ini file), each key gives the settings its
    comma-separated string gives; the control: those differ from the defaults."""
    default, ini = _settings(pytester), (mini / "tox.ini").read_text()
    as_text = {k: ",".join(v) for k, v in LISTS.items()}
    _write_config(mini, "tox.ini", *(f"{k} = {v}" for k, v in as_text.items()))
    from_text = _settings(pytester)
    assert all(from_text[f] != default[f] for f in FIELDS)
    written = [f"{k} = {json.dumps(v)}" for k, v in LISTS.items()]
    (mini / "tox.ini").write_text(ini)
    _write_config(mini, kind, *written)
    assert _settings(pytester) == from_text


@PYTEST_9
def test_a_single_valued_key_written_as_a_list_is_still_refused(
    mini: Path, pytester: pytest.Pytester
) -> None:
    _write_config(mini, "native", 'scylla_out = ["a", "b"]')
    result = pytester.runpytest("cases", "--co", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        'ERROR: pyproject.toml: scylla_out: ["a", "b"] is a list; expected one value'
        in result.stderr.lines
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@PYTEST_9
def test_native_toml_numbers_and_booleans_are_read(mini: Path, pytester: pytest.Pytester) -> None:
    """In a native `[tool.pytest]` table a value keeps its TOML type: a number for a numeric
    key and a boolean for a switch are read as written (pytest alone refuses a number for a
    string key with a TypeError)."""
    _write_config(
        mini,
        "native",
        "scylla_runs = 3",
        "scylla_budget_usd = 2.5",
        "scylla_fresh = true",
        'scylla_tiers = "T0"',
    )
    settings = pytester.parseconfigure("cases").stash[SETTINGS_KEY]
    assert (settings.runs, settings.budget_usd, settings.fresh, settings.tiers) == (
        3,
        2.5,
        True,
        ("T0",),
    )
