"""`scylla cases mine` on real histories pinned in `fixtures/mining`, for what their layouts and
messages need: more-itertools, whose first-parent history is merges of pull requests (a task
told from the commits a merge brought in, the issue a commit names), and six, whose tests are
one root-level `test_six.py` (found and run; a copyright-year commit rejected as a version
bump). Each verifies its candidates in bwrap; the source repository is never changed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_scylla.cli.main import main

from ..support.mining_repo import digest

MINING = Path(__file__).parents[1] / "fixtures" / "mining"


def _clone(bundle: str, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(MINING / bundle), str(where)], check=True)
    return where


@pytest.mark.slow  # 2 merges of more-itertools verified in bwrap, no oracle session (~1 min)
def test_merged_pull_requests_are_told_by_their_commits_and_issue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """more-itertools (MIT, at 2fe1b2ee): first-parent commits 6 to 9, two of them merges that
    change source and tests. The prompts are the merged commits' messages (no 'Merge pull
    request' line), with the text of the issue one names; the clone's origin URL is recorded
    without the token in it."""
    repo = _clone("more-itertools.bundle", tmp_path / "more-itertools")
    token_url = "https://someone:ghp_not_a_real_token@github.com/more-itertools/more-itertools"
    subprocess.run(["git", "-C", str(repo), "remote", "set-url", "origin", token_url], check=True)
    before = digest(repo)
    issues = tmp_path / "issues"
    issues.mkdir()
    (issues / "1214.md").write_text("numeric_range(0, 0) != numeric_range(1, 1), though both empty")
    out = tmp_path / "cases"
    mine = ["cases", "mine", str(repo), "HEAD~9..HEAD~5", "--out", str(out)]
    assert main([*mine, "--issues", str(issues), "--no-oracle-check"]) == 0
    said = capsys.readouterr().out
    assert "commits looked at: 4" in said
    assert "candidates (source and tests changed, within the limits): 2" in said
    kept = sorted(p.name for p in out.iterdir())
    assert kept == ["more-itertools-9ddc55c573", "more-itertools-f9cdcb990d"], said
    chunked = (out / kept[0] / "prompt.md").read_text()
    assert chunked.startswith("Raise a clear ValueError for negative n in chunked()\n\nchunked()")
    assert 'raise "n must be at least 0"' in chunked
    assert "Merge pull request" not in (out / kept[1] / "prompt.md").read_text()
    numeric = (out / kept[1] / "prompt.md").read_text()
    assert numeric.startswith("Issue 1214: Update __eq__ and __hash__ for numeric_range")
    assert (
        "The issue it refers to (#1214):\n\nnumeric_range(0, 0) != numeric_range(1, 1)" in numeric
    )
    case = yaml.safe_load((out / kept[0] / "test.yaml").read_text())
    assert case["name"] == "Raise a clear ValueError for negative n in chunked()"
    assert case["source"]["repo"] == "https://github.com/more-itertools/more-itertools"
    assert "ghp_not_a_real_token" not in said
    assert (
        "source.repo in the cases: https://github.com/more-itertools/more-itertools (the URL"
        in (said)
    )
    assert re.search(r"scylla cases mine: 4 commits looked at, 2 candidates, 2 kept", said)
    assert digest(repo) == before


@pytest.mark.slow  # one candidate of six run 4 times in bwrap (about 30 s)
def test_a_root_level_test_file_is_found_and_a_copyright_bump_is_no_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """six (MIT, at c8e39406): first-parent commits 15 to 46. 'Update copyright years' changes
    six.py and test_six.py but only in numbers: rejected as a version bump. 'Add assertNotRegex'
    is a candidate whose tests are the root-level test_six.py, and they are run. Where Python
    has no `_dbm` (this machine's), six's test_move_items[dbm_ndbm] fails at every commit, and
    the rejection names it; elsewhere the case is written, with `source.repo: self`. Its prompt
    is the message without its CRLF trailers either way."""
    from pytest_scylla.operations.mining import history as mine_history
    from pytest_scylla.operations.mining import verify as mine_verify
    from pytest_scylla.operations.mining import write as mine_write

    repo = _clone("six.bundle", tmp_path / "six")
    before = digest(repo / ".git"), (repo / "six.py").read_bytes()
    out = repo / "cases"
    mine = ["cases", "mine", str(repo), "HEAD~46..HEAD~14", "--out", str(out)]
    assert main([*mine, "--no-oracle-check"]) == 0
    said = capsys.readouterr().out
    assert "candidates (source and tests changed, within the limits): 1" in said
    assert re.search(r"^\s+1  a release or version bump$", said, re.M), said
    assert "source.repo in the cases: self (the cases live in the mined repository)" in said
    failed = re.search(
        r"^10a2b75b8be7 rejected: a test fails at the commit itself: (\S+)", said, re.M
    )
    if failed is None:  # where every test of test_six.py passes at the commit
        case = yaml.safe_load((out / "six-10a2b75b8b" / "test.yaml").read_text())
        assert case["source"]["repo"] == "self"
        assert case["checks"][1]["run"].endswith(" test_six.py")
    else:
        assert failed.group(1).startswith("test_six.py::"), said  # found at the root, and run
    with mine_history.opened(repo) as source:
        found = mine_history.read(source, "10a2b75b8be7")
        assert found is not None
        assert [c.path for c in found.tests] == ["test_six.py"]
        verdict = mine_verify.Verdict(found, "", ("test_six.py::test_assertNotRegex",))
        prompt = mine_write.prompt(verdict)
    assert prompt.startswith("Add assertNotRegex. (#289)\n\nFixes #288.\n\nMake this change")
    assert (digest(repo / ".git"), (repo / "six.py").read_bytes()) == before  # cases/ aside
