"""`scylla cases mine` end to end: candidates verified by running their tests in bwrap, cases
written and put through an oracle session (the real CLI applying each reference solution), on
a repository the test builds with one commit of each kind and on a real project's history
(cachetools, pinned in `fixtures/mining`). The source repository is never changed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_scylla.cli.main import main

from ..support.mining_repo import build, digest

MINING = Path(__file__).parents[1] / "fixtures" / "mining"


def _table(text: str) -> dict[str, int]:
    """The closing table's rejections: {reason: count}."""
    found = {}
    rows = text.split("rejected:\n", 1)[1].split("\ntime:", 1)[0]
    for line in rows.splitlines():
        if match := re.match(r"^\s+(\d+)\s+(.+)$", line):
            found[match.group(2)] = int(match.group(1))
    return found


@pytest.mark.slow  # 4 candidates run 4 times each in bwrap, then an oracle session (~1 min)
def test_exactly_the_verified_commits_become_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "calc"
    shas = build(repo)
    before = digest(repo)
    out = tmp_path / "cases"
    assert main(["cases", "mine", str(repo), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    kept = sorted(p.name for p in out.iterdir())
    assert kept == sorted(f"calc-{shas[k][:10]}" for k in ("fix", "feature")), said
    assert "verified and written: 2" in said
    assert "candidates (source and tests changed, within the limits): 4" in said
    assert _table(said) == {
        "the root commit (no parent to start from)": 1,
        "no test file changed": 1,
        "only test files changed": 1,
        "flaky": 1,
        "tests cannot run": 1,
        "deletes or renames a source file (a solution folder can only add and change)": 1,
    }
    assert f"{shas['flaky'][:12]} rejected: flaky: a second try gave other results" in said
    assert (
        f"{shas['missing'][:12]} rejected: tests cannot run (a collection error: "
        "ModuleNotFoundError: No module named 'nonexistent_dep_for_scylla') at the commit"
    ) in said
    assert f"{shas['fix'][:12]} verified: 1 fail-to-pass, 1 pass-to-pass" in said
    # test_ops.py imports calc.ops, which the feature changes: its two tests are pass-to-pass
    assert f"{shas['feature'][:12]} verified: 2 fail-to-pass, 2 pass-to-pass" in said
    # each kept case passed its oracle session: the solution passes, the untouched source fails
    assert said.count("ok   calc-") == 2
    assert digest(repo) == before


@pytest.mark.slow  # 5 candidates in bwrap, then an oracle session over 2 cases (~1 min)
def test_a_real_projects_history_yields_cases_that_pass_their_oracle_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cachetools (MIT, tkem/cachetools at 28d4506f): its 25 newest first-parent commits."""
    repo = tmp_path / "cachetools"
    subprocess.run(["git", "clone", "-q", str(MINING / "cachetools.bundle"), str(repo)], check=True)
    before = digest(repo)
    out = tmp_path / "cases"
    assert main(["cases", "mine", str(repo), "--max", "25", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [
        "cachetools-18e5930ced",
        "cachetools-57d2e4813d",
    ], said
    assert "ok   cachetools-18e5930ced" in said
    assert "ok   cachetools-57d2e4813d" in said
    assert _table(said)["no test fails before the change (nothing to fix)"] == 2
    assert _table(said)["a release or version bump"] == 1  # 'Release v7.0.3.' changes a test too
    assert digest(repo) == before


@pytest.mark.slow  # five oracle sessions of one run each (about a minute)
def test_a_mined_case_runs_under_every_adapter_and_sandbox(tmp_path: Path) -> None:
    """The case mined from the bug-fix commit, run with its reference solution by each CLI
    adapter (bwrap) and by Claude Code under docker: it passes every time."""
    from pytest_scylla.operations.mining import history as mine_history
    from pytest_scylla.operations.mining import verify as mine_verify
    from pytest_scylla.operations.mining import write as mine_write
    from pytest_scylla.run.sandbox import Bwrap

    from ..conftest import needs_docker

    needs_docker()  # CI starts an engine: there its absence fails the test
    repo = tmp_path / "calc"
    shas = build(repo)
    private = tmp_path / "private"
    private.mkdir()
    with mine_history.opened(repo) as source:
        commit = mine_history.read(source, shas["fix"])
        assert commit is not None
        verdict = mine_verify.verify(
            source, commit, mine_verify.sandboxed(Bwrap(), private, 120), private
        )
        assert verdict.kept, verdict.reason
        folder = mine_write.write(source, verdict, tmp_path / "cases")
    runs = [(agent, "bwrap") for agent in ("claude-code", "codex", "gemini-cli", "opencode")]
    runs.append(("claude-code", "docker"))
    for agent, sandbox in runs:
        out = tmp_path / f"out-{agent}-{sandbox}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(folder / "test.yaml"),
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                "-o",
                f"scylla_cases={folder.parent}",
                "--scylla-oracle=solution",
                f"--scylla-cache-dir={tmp_path / 'cache'}",
                f"--scylla-agent={agent}",
                f"--scylla-sandbox={sandbox}",
                "--scylla-subtests=T0-01",
                "--scylla-runs=1",
                f"--scylla-out={out}",
                "--scylla-report=none",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        (record,) = [json.loads(p.read_text()) for p in out.glob("runs/*/run.json")] or [None]
        assert record is not None, done.stdout[-2000:]
        assert record["outcome"] == "pass", (agent, sandbox, record.get("reason"))
        assert [c["passed"] for c in record["checks"]] == [True, True]
        assert record["sandbox"] == sandbox


@pytest.mark.slow  # one candidate run 4 times in bwrap, then unisolated (about 15 s)
def test_a_mined_commits_tests_cannot_reach_the_host_or_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Red team: a commit whose test writes to a host file and into the repository being
    mined. In bwrap neither write lands; the positive control runs the same commit with
    `--sandbox local`, where both do."""
    from ..support.mining_repo import commit

    repo = tmp_path / "calc"
    build(repo)
    outside = tmp_path / "outside.txt"
    attack = (
        "import pathlib\n\nfrom calc.ops import add\n\n\ndef test_escape():\n"
        f"    for target in ({str(outside)!r}, {str(repo / 'calc' / 'ops.py')!r}):\n"
        "        try:\n"
        "            pathlib.Path(target).write_text('pwned')\n"
        "        except OSError:\n"
        "            pass\n"
        "    assert add(1, 2) == 3\n"
    )
    commit(
        repo, "Add sq", {"calc/sq.py": "def sq(a):\n    return a * a\n", "tests/test_x.py": attack}
    )
    before = digest(repo)
    mine = ["cases", "mine", str(repo), "HEAD~1..HEAD", "--no-oracle-check"]
    assert main([*mine, "--out", str(tmp_path / "a")]) == 0
    assert "rejected: no test fails before the change" in capsys.readouterr().out
    assert not outside.exists()
    assert digest(repo) == before
    # the positive control: unisolated, the same test reaches both
    assert main([*mine, "--out", str(tmp_path / "b"), "--sandbox", "local"]) == 0
    assert outside.read_text() == "pwned"
    assert (repo / "calc" / "ops.py").read_text() == "pwned"
