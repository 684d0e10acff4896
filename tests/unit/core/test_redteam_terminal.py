"""Red team (#29 item 9): text from a run never acts on the user's terminal. The agent's final
message, its check output, judge reasons quoting it and the model and agent names a record
carries hold an OSC 52 clipboard write, a title change, a clear-screen, a one-byte C1 CSI, a
bell and a bare carriage return. What pytest prints of the runs (failure text, assertion diffs,
captured output, the terminal summary), `scylla report` and `scylla compare` show them as
visible `\\x1b` escapes; the run records keep them raw.

Positive controls: the raw sequences are in the stored run.json (the input really carries them)
and the formatters without the output edge's escaping (`verdict_table`, `report.tier_table`,
`compare_text.markdown`) do return them.

Here the in-process tests; the sessions are in `tests/e2e/test_redteam_terminal.py`."""

from __future__ import annotations

import re

import pytest

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: put `rm -rf ~` on the clipboard
TITLE = "\x1b]0;pwned\x07"  # OSC 0: set the window title
CLEAR = "\x1b[2J\x1b[H"  # erase the screen, cursor home
HOSTILE = f"all good{CLIPBOARD}{TITLE}{CLEAR}\x9b31m\rPASS"  # + C1 CSI and a bare CR
# what a terminal must never receive: C0 controls but tab/newline, a CR not ending a line, C1
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")
VISIBLE = "all good\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x9b31m\\rPASS"


def no_raw_controls(text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"raw {found.group()!r} at {found.start()}: "
        f"{text[max(0, found.start() - 60) : found.start() + 20]!r}"
    )


def test_the_gateway_says_a_broken_connection_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """A connection error's text may quote what the agent sent; the gateway's one line about
    it (on the session's stderr) shows it escaped. Control: the exception holds it raw."""
    from pytest_scylla.run.gateway import server

    error = ValueError(f"bad header {HOSTILE}")
    assert CLIPBOARD in str(error)
    try:
        raise error
    except ValueError:
        server._quiet_error(None, None)
    said = capsys.readouterr().err
    no_raw_controls(said)
    assert said == f"pytest-scylla gateway: connection error: ValueError: bad header {VISIBLE}\n"
