"""Red team (#29 item 9): text from a run never acts on the user's terminal. The agent's final
message, its check output, judge reasons quoting it and the model and agent names a record
carries hold an OSC 52 clipboard write, a title change, a clear-screen, a one-byte C1 CSI, a
bell and a bare carriage return. What pytest prints of the runs (failure text, assertion diffs,
captured output, the terminal summary), `scylla report` and `scylla compare` show them as
visible `\\x1b` escapes; the run records keep them raw.

Positive controls: the raw sequences are in the stored run.json (the input really carries them)
and the formatters without the output edge's escaping (`verdict_table`, `report.tier_table`,
`compare_text.markdown`) do return them.

Here the sessions; the in-process tests are in `tests/unit/core/test_redteam_terminal.py`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_scylla.cli.main import main
from pytest_scylla.core.record import verdict_table
from pytest_scylla.core.terminal import safe
from pytest_scylla.results import report
from pytest_scylla.results.compare import differences as compare
from pytest_scylla.results.compare import text as compare_text
from pytest_scylla.results.tables import load

from ..conftest import FIXTURES, workers

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: put `rm -rf ~` on the clipboard
TITLE = "\x1b]0;pwned\x07"  # OSC 0: set the window title
CLEAR = "\x1b[2J\x1b[H"  # erase the screen, cursor home
HOSTILE = f"all good{CLIPBOARD}{TITLE}{CLEAR}\x9b31m\rPASS"  # + C1 CSI and a bare CR
# what a terminal must never receive: C0 controls but tab/newline, a CR not ending a line, C1
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")
VISIBLE = "all good\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x9b31m\\rPASS"

# The stand-in runner (tests/fixtures/standin) with the run's text made hostile, as a real judge
# quoting the agent, a check printing what the agent wrote and a forged model/agent name would.
HOSTILE_STANDIN = f"""

HOSTILE = {HOSTILE!r}
_judge = StandIn.judge


def _hostile_judge(self):
    _judge(self)
    rec = self.record
    rec["final_message"] = HOSTILE
    for judge in rec.get("judges", []):
        for verdict in judge["verdict"]["items"].values():
            verdict["reason"] = "the agent said: " + HOSTILE
    rec["checks"] = [{{"name": "runs", "passed": False, "exit_code": 1, "seconds": 0.1,
                      "stdout": HOSTILE, "stderr": HOSTILE, "reason": "printed " + HOSTILE}}]
    if rec["tier"] == "T1":  # a second model and agent: their names become table columns
        rec["model"], rec["agent"] = "claude-x" + HOSTILE, "stand-in" + HOSTILE
    if rec["outcome"] == "pass":
        rec.update(outcome="fail", passed=False, reason="")
    rec["reason"] = "judged: " + HOSTILE


StandIn.judge = _hostile_judge
"""


def no_raw_controls(text: str) -> None:
    found = RAW.search(text)
    assert found is None, (
        f"raw {found.group()!r} at {found.start()}: "
        f"{text[max(0, found.start() - 60) : found.start() + 20]!r}"
    )


def hostile_session(root: Path, pytester: pytest.Pytester, n: int) -> tuple[str, Path]:
    """Run the mini project's T0 and T1 cells through the hostile stand-in; (output, folder)."""
    shutil.copy(FIXTURES / "standin" / "conftest.py", root / "conftest.py")
    with (root / "conftest.py").open("a") as conftest:
        conftest.write(HOSTILE_STANDIN)
    out = root / "exp"
    result = pytester.runpytest(
        "cases", "-k", "T0-01 or T1-01", *workers(n), "-rA", f"--scylla-out={out}"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    return result.stdout.str() + result.stderr.str(), out


def stored(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("runs/*/run.json"))]


@pytest.mark.parametrize("n", [0, 2])
def test_the_pytest_output_shows_hostile_run_text_escaped(
    mini: Path, pytester: pytest.Pytester, n: int
) -> None:
    printed, out = hostile_session(mini, pytester, n)
    recs = stored(out)
    assert len(recs) == 4
    # the control: the records keep the raw sequences, and the verdict table made from one
    # (the failure text before the output edge) carries them to whoever prints it
    for rec in recs:
        assert rec["final_message"] == HOSTILE
        assert rec["checks"][0]["stdout"] == HOSTILE
    assert CLIPBOARD in verdict_table(recs[0])
    assert TITLE in verdict_table(recs[0])
    # what the terminal got: no raw control, the sequences visible in the failure text (judge
    # reasons, failed check, the run's reason) and in the summary's model/agent columns
    no_raw_controls(printed)
    assert f"judged: {VISIBLE}" in printed
    assert f"FAIL check runs                 printed {VISIBLE}" in printed
    assert f"the agent said: {VISIBLE}"[:100] in printed
    assert f"claude-x{VISIBLE}" in printed


def test_scylla_report_and_compare_show_hostile_run_text_escaped(
    mini: Path,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out = hostile_session(mini, pytester, 0)
    capsys.readouterr()  # the session's own output (tested above) is not the command's
    # the control: the formatters themselves return the raw sequences
    table = "\n".join(report.tier_table(load([out]), out))
    assert f"stand-in{HOSTILE}" in table
    result = compare.compare([out], [out], intersect=False)
    assert HOSTILE in compare_text.markdown(result)
    monkeypatch.chdir(mini)
    assert main(["report", str(out)]) == 0
    assert main(["compare", str(out), str(out), "--out", str(mini / "cmp")]) == 0
    shown = capsys.readouterr()
    no_raw_controls(shown.out + shown.err)
    assert f"stand-in{VISIBLE}" in shown.out
    assert f"claude-x{VISIBLE}" in shown.out
    assert safe(table) in shown.out  # the same table, escaped


@pytest.mark.slow  # the real CLI end to end; the attack and its control run above
def test_a_hostile_agent_message_through_the_real_cli_is_escaped(
    mini: Path, pytester: pytest.Pytester, oracle: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end with the real CLI: the hostile oracle's agent ends with a message carrying
    the sequences and writes a main.py that prints them (the check's output); an evaluation's
    assert quotes the message, as a user's test would, and prints it."""
    attack = mini / "attack.json"
    script = f"print({HOSTILE!r})\n"
    write = {
        "name": "Bash",
        "input": {"command": f"cat > main.py <<'PY'\n{script}PY", "description": "red team"},
    }
    attack.write_text(json.dumps({"steps": [[write]], "final": HOSTILE}))
    monkeypatch.setenv("SCYLLA_ORACLE_ATTACK", str(attack))
    (mini / "cases" / "test_hostile.py").write_text(
        "import pytest\n\n\n@pytest.mark.scylla(case='alpha', tiers=['T0'])\n"
        "def test_message(scylla_run):\n    print(scylla_run.final_message)\n"
        "    assert scylla_run.final_message == 'Done.'\n"
    )
    result = pytester.runpytest(
        "cases/test_hostile.py", "-p", "no:xdist", "-k", "T0-01", *oracle, "--scylla-out=exp"
    )
    printed = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, printed[-3000:]
    (rec,) = stored(mini / "exp")
    assert rec["final_message"].endswith(HOSTILE)  # the control: the raw text is the record's
    assert f"{CLIPBOARD}{TITLE}{CLEAR}\x9b" in rec["checks"][0]["stdout"]  # (CR read as LF)
    no_raw_controls(printed)
    result.stdout.fnmatch_lines(["*Captured stdout call*", VISIBLE])
