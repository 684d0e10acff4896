"""The bad-input catalogue: each malformed file is one collection error `path:line: message`,
without a traceback, while the other case still collects; bad options are usage errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import MINI_ITEMS, workers

Edit = Callable[[str, str, str], None]
BETA = [i for i in MINI_ITEMS if i.startswith("beta")]
# What case beta depends on; an edit elsewhere must leave beta collecting.
BETA_USES = (
    "cases/beta",
    "tiers/T0.yaml",
    "tiers/T1.yaml",
    "tiers/blocks",
    "tiers/skills",
    "tiers/agents",
    "tiers/prompts",
)

# (id, edits as (file, old, new), the exact error line expected)
CATALOGUE: list[tuple[str, list[tuple[str, str, str]], str]] = [
    (
        "yaml-syntax",
        [("cases/alpha/test.yaml", "name: Alpha task", "name: [Alpha task")],
        "cases/alpha/test.yaml:3: YAML syntax error: while parsing a flow sequence*",
    ),
    (
        "duplicate-key",
        [("cases/alpha/test.yaml", "prompt: prompt.md", "prompt: prompt.md\nprompt: other.md")],
        "cases/alpha/test.yaml:8: duplicate key 'prompt' (first at line 7); keep one of them",
    ),
    (
        "unknown-key",
        [("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\ntimeout: 5")],
        "cases/alpha/test.yaml:9: unknown key 'timeout' in the top level; allowed keys: *",
    ),
    (
        "wrong-type",
        [("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\ntimeout_seconds: soon")],
        "cases/alpha/test.yaml:9: timeout_seconds must be an integer, not a string ('soon')",
    ),
    (
        "missing-required",
        [("cases/alpha/test.yaml", "prompt: prompt.md\n", "")],
        "cases/alpha/test.yaml:1: missing required key 'prompt' in the top level",
    ),
    (
        "unknown-tier",
        [("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\ntiers: [T9]")],
        "cases/alpha/test.yaml:9: unknown tier 'T9'; known tiers: T0, T1, T5",
    ),
    (
        "unknown-subtest",
        [("tiers/T5.yaml", "extends: [T0-02, T1-01]", "extends: [T0-02, T1-07]")],
        "tiers/T5.yaml:6: T5-01 extends 'T1-07', which does not exist; known subtests: *",
    ),
    (
        "unknown-block",
        [("tiers/T0.yaml", "claude_md: [rules]", "claude_md: [rules, nope]")],
        "tiers/T0.yaml:11: unknown CLAUDE.md block 'nope': expected the file tiers/blocks/nope.md",
    ),
    (
        "unknown-skill",
        [("tiers/T1.yaml", "skills: [review]\n", "skills: [review, ghost]\n")],
        "tiers/T1.yaml:6: unknown skill 'ghost': expected the file tiers/skills/ghost/SKILL.md",
    ),
    (
        "unknown-agent",
        [("tiers/T1.yaml", "agents: [helper]", "agents: [nobody]")],
        "tiers/T1.yaml:10: unknown agent 'nobody': expected the file tiers/agents/nobody.md",
    ),
    (
        "unknown-mcp-server",
        [("tiers/T5.yaml", "mcp_servers: [notes]", "mcp_servers: [nope]")],
        "tiers/T5.yaml:10: unknown MCP server 'nope': expected the file tiers/mcp/nope.json",
    ),
    (
        "weights",
        [("rubrics/basic.yaml", "weight: 0.6", "weight: 0.5")],
        "rubrics/basic.yaml:2: category weights sum to 0.9, not 1 (functional 0.5, quality 0.4); "
        "adjust them so they add up to 1",
    ),
    (
        "duplicate-item-id",
        [("rubrics/basic.yaml", "id: Q1", "id: F1")],
        "rubrics/basic.yaml:15: duplicate item id 'F1' (first at line 6); item ids must be unique",
    ),
    (
        "empty-rubric",
        [
            (
                "rubrics/basic.yaml",
                "    items:\n      - id: Q1\n        description: "
                "the change is minimal\n        points: 1\n",
                "    items: []\n",
            )
        ],
        "rubrics/basic.yaml:12: category 'quality' has no items; add at least one item or remove "
        "the category",
    ),
    (
        "no-categories",
        [("rubrics/basic.yaml", "", "name: basic\ncategories: {}\n")],
        "rubrics/basic.yaml:2: categories must not be empty",
    ),
    (
        "unknown-check",
        [("rubrics/basic.yaml", "check: runs", "check: walks")],
        "rubrics/basic.yaml:6: item 'F1' names check 'walks', which cases/alpha/test.yaml does not "
        "define; its checks: runs",
    ),
    (
        "prompt-missing",
        [("cases/alpha/test.yaml", "prompt: prompt.md", "prompt: task.md")],
        "cases/alpha/test.yaml:7: 'task.md' not found: expected a file at cases/alpha/task.md",
    ),
    (
        "path-escapes",
        [("cases/alpha/test.yaml", "path: source", "path: ../beta/source")],
        "cases/alpha/test.yaml:6: '../beta/source' points outside cases/alpha; expected a folder "
        "inside it",
    ),
    (
        "bad-commit",
        [
            (
                "cases/alpha/test.yaml",
                "  path: source",
                "  repo: https://example.invalid/x.git\n  commit: abc123",
            )
        ],
        "cases/alpha/test.yaml:7: source.commit is 'abc123', which is not valid; expected the full "
        "40-character lower-case hex commit hash",
    ),
    (
        "extends-cycle",
        [("tiers/T5.yaml", "extends: [T0-02, T1-01]", "extends: [T0-02, T5-02]")],
        "tiers/T5.yaml:6: 'extends' makes a cycle: T5-02 -> T5-01 -> T5-02; remove one link",
    ),
    (
        "tier-syntax",
        [("tiers/T1.yaml", "name: Skills", "name: Skills: bad")],  # libyaml's
        "tiers/T1.yaml:2: YAML syntax error: mapping values are not allowed *",
    ),  # "in this context"
    (
        "bad-enum",
        [("cases/alpha/test.yaml", "category: bug-fixing", "category: bugs")],
        "cases/alpha/test.yaml:3: category is 'bugs'; expected one of: build-system, *",
    ),
    (
        "skill-front-matter",
        [("tiers/skills/review/SKILL.md", "name: review\n", "")],
        "tiers/skills/review/SKILL.md:1: front matter lacks 'name'",
    ),
    # encodings and pasted control characters: where they are, never a traceback
    (
        "block-not-utf8",
        [("tiers/blocks/rules.md", "Keep changes small.", "Keep caf\udce9 small.")],
        "tiers/blocks/rules.md:2: column 9: byte 0xe9 is not UTF-8; save the file as UTF-8",
    ),
    (
        "skill-not-utf8",
        [("tiers/skills/review/SKILL.md", "Look for bugs.", "Look \udcff")],
        "tiers/skills/review/SKILL.md:5: column 6: byte 0xff is not UTF-8; save the file as UTF-8",
    ),
    (
        "case-not-utf8",
        [("cases/alpha/test.yaml", "name: Alpha task", "name: Alpha t\udce2sk")],
        "cases/alpha/test.yaml:2: column 14: byte 0xe2 is not UTF-8; save the file as UTF-8",
    ),
    (
        "case-colour-code",
        [("cases/alpha/test.yaml", "name: Alpha task", "name: \x1b[1mAlpha task")],
        "cases/alpha/test.yaml:2: column 7: control character U+001B (a terminal colour code?); "
        "remove it",
    ),
    (
        "regex-does-not-compile",
        [
            (
                "cases/alpha/test.yaml",
                'expect_stdout: {exact: "ok\\n"}',
                'expect_stdout: {regex: "o(k"}',
            )
        ],
        "cases/alpha/test.yaml:12: the regex does not compile: missing ), unterminated subpattern "
        "at position 1; fix the pattern",
    ),
    (
        "unknown-milestone",
        [
            (
                "cases/alpha/test.yaml",
                "solution: solution",
                "solution: solution\nmilestones: [runs, deploys]",
            )
        ],
        "cases/alpha/test.yaml:14: milestone 'deploys' is not one of the case's checks: runs",
    ),
    (
        "source-holds-the-solution",
        [("cases/alpha/test.yaml", "path: source", "path: .")],
        "cases/alpha/test.yaml:6: source.path '.' contains the case file (cases/alpha/test.yaml), "
        "which the agent must not see; point it at a folder with the code only",
    ),
    (
        "prompt-control-char",
        [("cases/alpha/prompt.md", "print ok.", "print ok.\x07")],
        "cases/alpha/prompt.md:1: column 23: control character U+0007; remove it",
    ),
]


# every entry without xdist; one under xdist too, where the other case's runs still run
@pytest.mark.parametrize(
    ("edits", "expected", "n"),
    [
        *(pytest.param(e, x, 0, id=i) for i, e, x in CATALOGUE),
        *(
            pytest.param(e, x, 2, id=f"{i}-xdist", marks=pytest.mark.slow)
            for i, e, x in CATALOGUE
            if i == "unknown-tier"
        ),
    ],
)
def test_bad_input_is_one_clear_collection_error(
    mini: Path,
    pytester: pytest.Pytester,
    edit: Edit,
    n: int,
    edits: list[tuple[str, str, str]],
    expected: str,
    oracle: list[str],
) -> None:
    for file, old, new in edits:
        edit(file, old, new)
    result = pytester.runpytest("cases", "-rs", *workers(n), *oracle)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([expected])
    assert "Traceback" not in out
    # pytest stops a session on collection errors (-n 0); xdist runs the rest and fails.
    assert result.ret == (pytest.ExitCode.INTERRUPTED if n == 0 else pytest.ExitCode.TESTS_FAILED)
    assert "ERROR collecting cases/alpha/test.yaml" in out
    # beta does not use what broke: it still collects (and, under xdist, runs).
    if not any(file.startswith(BETA_USES) for file, _, _ in edits):
        assert "ERROR collecting cases/beta/test.yaml" not in out
        if n == 0:
            assert "Interrupted: 1 error during collection" in out
            listed = pytester.runpytest("cases", "--co", "-q")
            assert [ln.split("::", 1)[1] for ln in listed.outlines if "test.yaml::" in ln] == BETA
        else:
            result.assert_outcomes(passed=len(BETA), errors=1)


def test_every_problem_in_a_file_is_listed(
    mini: Path, pytester: pytest.Pytester, edit: Edit
) -> None:
    edit("cases/alpha/test.yaml", "rubric: basic", "rubric: basic\nsize: huge\nmax_turns: 0")
    result = pytester.runpytest("cases", "--co", "-q")
    result.stdout.fnmatch_lines(
        [
            "cases/alpha/test.yaml:9: size is 'huge'; expected one of: small, medium, large",
            "cases/alpha/test.yaml:10: max_turns: 0 is less than the minimum of 1",
        ]
    )


@pytest.mark.parametrize("n", [0, 2])
@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--scylla-runs=0", "--scylla-runs=0: runs per cell must be between 1 and 1000*"),
        ("--scylla-runs=many", "--scylla-runs='many': expected a whole number of runs*"),
        ("--scylla-tiers=T9", "--scylla-tiers: unknown tier 'T9'; tiers in tiers: T0, T1, T5"),
        ("--scylla-tiers=five", "--scylla-tiers: 'five' is not a tier name*"),
        ("--scylla-subtests=T1-09", "--scylla-subtests: 'T1-09' matches no subtest*"),
        ("--scylla-subtests=first", "--scylla-subtests: 'first' is not a subtest selector*"),
        ("--scylla-report=pdf", "--scylla-report: unknown report format 'pdf'*"),
        ("--scylla-limits=memory=lots", "--scylla-limits: 'memory=lots' is not a usable limit*"),
        (
            "--scylla-limits=disk=1g",
            "--scylla-limits: unknown limit 'disk'; expected e.g. memory=4g,cpus=2,pids=1024*",
        ),
        (
            "--scylla-starts=-1",
            "--scylla-starts='-1': expected a number of agents from 0 (no limit) to 4096*",
        ),
        (
            "--scylla-image=bad image",
            "--scylla-image='bad image': expected host or an image reference*",
        ),
        (
            "--scylla-oracle=maybe",
            "*error: argument --scylla-oracle: invalid choice: 'maybe' "
            "(choose from 'solution', 'noop', 'wrong', 'mixed')",
        ),
    ],
)
def test_bad_options_are_usage_errors(
    mini: Path, pytester: pytest.Pytester, n: int, option: str, message: str
) -> None:
    result = pytester.runpytest("cases", option, *workers(n))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message if message.startswith("*") else f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_an_image_or_a_copy_outside_the_docker_sandbox_is_a_usage_error(
    mini: Path, pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest("cases", "--scylla-image=agent:1", "--scylla-sandbox=local")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --scylla-image=agent:1: images are for "
            "--scylla-sandbox=docker (or auto); this session uses "
            "--scylla-sandbox=local"
        ]
    )
    copy = pytester.runpytest("cases", "--scylla-docker-copy", "--scylla-sandbox=bwrap")
    assert copy.ret == pytest.ExitCode.USAGE_ERROR
    copy.stderr.fnmatch_lines(
        [
            "ERROR: --scylla-docker-copy is for --scylla-sandbox=docker (or "
            "auto); this session uses --scylla-sandbox=bwrap"
        ]
    )


def test_a_copy_that_auto_cannot_use_is_named_in_the_header(
    mini: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`auto` with no engine and --scylla-docker-copy: the session runs under bwrap or local,
    and the header says the copy mode does not apply (a team's ini may set it for every
    machine)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{mini}/no-engine.sock")
    result = pytester.runpytest("cases", "--co", "--scylla-docker-copy", "--scylla-sandbox=auto")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "scylla: sandbox=* (auto: *no docker: *); "
            "--scylla-docker-copy does not apply (no container)"
        ]
    )
