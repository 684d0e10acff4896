r"""Text from a run made safe for a terminal: the one owner of what may reach the user's screen.

Anything a run produced (the agent's final message, file names, check output, judge reasons,
even a model id the CLI reported) is hostile: an escape sequence in it would act on the user's
terminal (OSC 52 writes the clipboard, OSC 0 the title, `ESC[2J` clears the screen). What is
printed passes through `safe`, which shows every control character visibly instead:

>>> safe("ok\x1b]52;c;aGk=\x07 done\x9b2J\r\nnext\rover")
'ok\\x1b]52;c;aGk=\\x07 done\\x9b2J\r\nnext\\rover'
>>> safe("tab\tand\nnewline stay; \u202eevil")
'tab\tand\nnewline stay; \\u202eevil'

Stored data is never changed (run.json keeps the raw text); HTML escapes on its own.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any, TextIO

# C0 controls but tab and newline, a carriage return not ending a line (it moves the cursor back
# over what was printed), DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional
# marks, embeddings, overrides and isolates (they reorder what is shown: "Trojan Source")
UNSAFE = re.compile(
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return "\\r" if code == 0x0D else f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object) -> str:
    """`text` as a string whose control characters are shown as `\\xNN` (`\\r`, `\\uNNNN`)."""
    return UNSAFE.sub(_shown, str(text))


def echo(*values: object, sep: str = " ", end: str = "\n", file: TextIO | None = None) -> None:
    """`print`, made safe: what the `scylla` command prints."""
    print(safe(sep.join(map(str, values))), end=end, file=file or sys.stdout)


def scrub(value: Any) -> Any:
    """`value` with every string in it made safe: strings, lists, tuples and dicts are rebuilt,
    the fields of a (mutable) dataclass instance are set in place (pytest's failure reprs)."""
    if isinstance(value, str):
        return safe(value)
    if isinstance(value, list):
        value[:] = [scrub(v) for v in value]
        return value
    if isinstance(value, tuple):
        return (
            type(value)(*map(scrub, value))
            if hasattr(value, "_fields")
            else tuple(scrub(v) for v in value)
        )
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            if hasattr(value, field.name):  # an init=False field may be unset
                object.__setattr__(value, field.name, scrub(getattr(value, field.name)))
    return value
