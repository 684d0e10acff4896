import json
from pathlib import Path

import pytest

from textstats.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WALRUS = str(EXAMPLES / "walrus.txt")


def test_text_report(capsys):
    assert main(["-n", "2", WALRUS]) == 0
    assert capsys.readouterr().out == (
        "words:           34\n"
        "unique words:    26\n"
        "sentences:       3\n"
        "reading time:    1 min\n"
        "top words:\n"
        "  and  5\n"
        "  of   3\n"
    )


def test_json_report(capsys):
    assert (
        main(
            [
                "--format",
                "json",
                "--top",
                "1",
                "--stopwords",
                str(EXAMPLES / "stopwords.txt"),
                WALRUS,
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["words"] == 34
    assert data["top"] == [{"word": "boiling", "count": 1}]


def test_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("Hello there. Hello!"))
    assert main(["-n", "1"]) == 0
    assert "  hello  2\n" in capsys.readouterr().out


def test_missing_file(capsys, tmp_path):
    assert main([str(tmp_path / "missing.txt")]) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["--top", "-1"], ["--wpm", "0"], ["--min-length", "x"], ["-f", "xml"]]
)
def test_usage_errors(argv):
    with pytest.raises(SystemExit) as error:
        main(argv)
    assert error.value.code == 2
