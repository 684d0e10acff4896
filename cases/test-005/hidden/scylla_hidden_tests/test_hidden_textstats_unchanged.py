"""Hidden tests: documenting textstats must not change what it does."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from textstats import count_words, reading_time, sentence_count, summarize, tokenize, top_words

ROOT = Path(__file__).resolve().parent.parent

TEXT = """\
Rain fell on the roof. The roof held; the gutters did not!
Was it the storm, or the old gutters? Nobody knew.
"""


def textstats(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "textstats", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture
def story(tmp_path):
    path = tmp_path / "story.txt"
    path.write_text(TEXT, encoding="utf-8")
    return str(path)


def test_text_report(story):
    result = textstats("-n", "4", story)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "words:           22\n"
        "unique words:    16\n"
        "sentences:       4\n"
        "reading time:    1 min\n"
        "top words:\n"
        "  the      5\n"
        "  gutters  2\n"
        "  roof     2\n"
        "  did      1\n"
    )


def test_options_combined(story, tmp_path):
    stop = tmp_path / "stop.txt"
    stop.write_text("the\n# comment\nor\n", encoding="utf-8")
    result = textstats(
        "--top", "3", "--min-length", "4", "--stopwords", str(stop), "--wpm", "5", story
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[3] == "reading time:    5 min"
    assert result.stdout.splitlines()[-3:] == ["  gutters  2", "  roof     2", "  fell     1"]


def test_case_sensitive(story):
    result = textstats("--case-sensitive", "-n", "2", story)
    assert result.stdout.splitlines()[1] == "unique words:    17"
    assert result.stdout.splitlines()[-2:] == ["  the      4", "  gutters  2"]


def test_json_and_several_files(story):
    result = textstats("--format", "json", "-n", "1", story, "-", stdin="One more.")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.split("\n}\n{\n")
    data = json.loads(first + "\n}")
    assert data == {
        "file": story,
        "words": 22,
        "unique_words": 16,
        "sentences": 4,
        "reading_minutes": 1,
        "top": [{"word": "the", "count": 5}],
    }
    assert json.loads("{\n" + second)["file"] == "-"


def test_stdin_and_version():
    result = textstats("-n", "0", stdin="Hi there.")
    assert (
        result.stdout
        == "words:           2\nunique words:    2\nsentences:       1\nreading time:    1 min\n"
    )
    assert textstats("--version").stdout == "textstats 1.0.3\n"


def test_exit_statuses(story, tmp_path):
    missing = str(tmp_path / "missing.txt")
    result = textstats(missing, story)
    assert result.returncode == 1
    assert "cannot read" in result.stderr
    assert "== " + story in result.stdout
    assert textstats("--stopwords", missing, story).returncode == 2
    assert textstats("--wpm", "0", story).returncode == 2


def test_library_unchanged():
    assert tokenize("It's sealing-wax, 42!") == ["it's", "sealing-wax"]
    assert count_words(["a", "B", "b"], ["A"]) == {"B": 1, "b": 1}
    assert top_words(count_words(["b", "a", "b", "a", "c"]), 2) == [("a", 2), ("b", 2)]
    assert reading_time(231) == 2
    assert sentence_count("Yes. No") == 1
    summary = summarize(TEXT, top=1, lowercase=False)
    assert (summary.words, summary.unique_words, summary.top) == (22, 17, [("the", 4)])
    assert summary.as_dict()["top"] == [{"word": "the", "count": 4}]
