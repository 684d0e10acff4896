"""Before the checks: put back the ground they stand on, and record every sign of tampering.

The checks run the agent's code; they must not also run test machinery the agent supplied:
- a case's `protected` paths are restored from the pinned commit (`protected_path`);
- conftest.py files, interpreter start-up files (sitecustomize.py, usercustomize.py, *.pth) and
  modules named like the standard library that the agent added where they would be imported are
  removed (`conftest`, `startup_file`, `shadowing_module`);
- pytest settings the agent changed or added (addopts, a new pytest.ini, ... in any folder) are
  put back as the pinned commit had them (`test_config`);
- hidden files go only where nothing is: what the agent placed there is removed (`hidden_path`);
- what the walk could not read is removed where possible, never passed over (`unreadable`);
- between two checks (`recheck`: the earlier one ran the agent's code) all of this again, and a
  hidden file that changed is copied fresh (`hidden_changed`).
Each finding names its path; the run is then checked and judged on the restored workspace
(a workspace the agent replaced is not: `pinned`, the run fails unjudged).
Nothing here follows a link or runs anything the agent wrote (see `hostile`).
"""

from __future__ import annotations

import configparser
import hashlib
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pytest_scylla.formats.spec import Case
from pytest_scylla.run import hostile
from pytest_scylla.run.hostile import Entry

STARTUP_FILES = frozenset({"sitecustomize.py", "usercustomize.py"})
MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")  # what Python imports from a path entry
# files pytest takes its settings from, in any folder (it looks upwards from its arguments)
TEST_CONFIG = {
    "pytest.ini": "pytest",
    ".pytest.ini": "pytest",
    "tox.ini": "pytest",
    "setup.cfg": "tool:pytest",
    "pyproject.toml": "",
}
# the standard library's top-level names, less the dunder ones a project legitimately has
STDLIB = frozenset(n for n in sys.stdlib_module_names if not n.startswith("__"))


@dataclass(frozen=True)
class Finding:
    kind: str  # protected_path | hidden_path | hidden_changed | conftest | startup_file |
    # shadowing_module | test_config | unchecked | unreadable; and of the CLI's own account
    # (`run.account`): forged_events | transcript_mismatch; and of the run's folders
    # (`pinned`): workspace_replaced
    path: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob (`*`, `?`, `**`; a trailing `/` means everything below) as a
    regex over workspace-relative paths."""
    pattern = pattern.strip("/") + ("/**" if pattern.endswith("/") else "")
    out = ""
    for token in re.split(r"(\*\*/|/\*\*|\*\*|\*|\?)", pattern):
        out += {"**/": "(?:.*/)?", "/**": "(?:/.*)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(
            token, re.escape(token)
        )
    return re.compile(out + r"\Z")


def _blob_id(data: bytes, like: str) -> str:
    algo = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def _unchanged(root: Path, entry: Entry, mode: str, blob_id: str) -> bool:
    """Whether the workspace entry still is the pinned commit's file (content, link, exec bit)."""
    if mode == "120000":
        return (
            entry.kind == "link"
            and _blob_id(
                hostile.readlink(root, entry.rel).encode("utf-8", "surrogateescape"), blob_id
            )
            == blob_id
        )
    if entry.kind != "file" or entry.size > hostile.MAX_FILE_BYTES:
        return False
    if entry.executable != (mode == "100755"):
        return False
    data = _read(root, entry.rel)
    return data is not None and _blob_id(data, blob_id) == blob_id


def _read(root: Path, rel: str) -> bytes | None:
    """The file's bytes, reached by descriptor (any depth, no link followed); b"" when it is
    not a regular file of at most MAX_FILE_BYTES, None when it is gone."""
    try:
        return hostile.read(root, rel, hostile.MAX_FILE_BYTES)
    except hostile.HostileDataError:
        return b""
    except OSError:
        return None


def _protected(
    case: Case, ws: hostile.Tree, base: dict[str, tuple[str, str]], entries: dict[str, Entry]
) -> list[Finding]:
    rules = [glob_regex(p) for p in case.protected]
    findings = []
    for rel in sorted({*base, *entries}):
        if not any(rule.match(rel) for rule in rules):
            continue
        entry = entries.get(rel)
        if rel not in base:
            if entry is not None and entry.kind != "dir" and hostile.delete(ws.root, rel):
                findings.append(Finding("protected_path", rel, "added by the agent; removed"))
            continue
        mode, blob_id = base[rel]
        if mode == "160000" or (entry is not None and _unchanged(ws.root, entry, mode, blob_id)):
            continue  # a submodule is not a file to restore
        hostile.place(ws.root, rel, ws.blob(blob_id), mode)
        what = "deleted" if entry is None else "changed"
        findings.append(
            Finding("protected_path", rel, f"{what} by the agent; restored from the pinned commit")
        )
    return findings


def pytest_settings(name: str, data: bytes) -> object:
    """What pytest would read from a settings file (None: nothing; pytest.ini always counts);
    text that does not parse counts as itself."""
    try:
        if name == "pyproject.toml":
            return tomllib.loads(data.decode()).get("tool", {}).get("pytest")
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return data
    section = TEST_CONFIG[name]
    if not parser.has_section(section):
        return {} if name in ("pytest.ini", ".pytest.ini") else None
    return dict(parser.items(section))


def _test_config(
    ws: hostile.Tree, base: dict[str, tuple[str, str]], entries: dict[str, Entry], keep: set[str]
) -> list[Finding]:
    """Put back pytest settings the agent changed or added (whole files: pytest reads them)."""
    findings = []
    for rel, entry in sorted(entries.items()):
        name = rel.rpartition("/")[2]
        if name not in TEST_CONFIG or rel in keep or entry.kind == "dir":
            continue
        now = b"" if entry.kind != "file" else _read(ws.root, rel)
        if now is None:
            continue  # gone with a folder removed above
        if rel in base:
            mode, blob_id = base[rel]
            if mode == "160000":
                continue
            pinned = ws.blob(blob_id)
            if entry.kind == "file" and pytest_settings(name, now) == pytest_settings(name, pinned):
                continue
            hostile.place(ws.root, rel, pinned, mode)
            findings.append(
                Finding(
                    "test_config",
                    rel,
                    "pytest settings changed by the agent; file restored from the pinned commit",
                )
            )
        elif (entry.kind != "file" or pytest_settings(name, now) is not None) and hostile.delete(
            ws.root, rel
        ):
            findings.append(
                Finding(
                    "test_config",
                    rel,
                    "pytest settings added by the agent; removed before the checks",
                )
            )
    return findings


def _planted(rel: str, entry: Entry, entries: dict[str, Entry]) -> tuple[str, str] | None:
    """(kind, detail) when `rel` is test or interpreter machinery the checks would pick up."""
    parent, _, name = rel.rpartition("/")
    if name == "conftest.py":
        return "conftest", "a conftest.py the case does not ship; removed before the checks"
    if name in STARTUP_FILES or (name.endswith(".pth") and entry.kind != "dir"):
        return "startup_file", "an interpreter start-up file; removed before the checks"
    module = (
        name.split(".")[0]
        if name.endswith(MODULE_SUFFIXES) and entry.kind != "dir"
        else name
        if entry.kind == "dir" and f"{rel}/__init__.py" in entries
        else None
    )
    on_path = not parent or f"{parent}/__init__.py" not in entries  # a sys.path root
    if module in STDLIB and on_path:
        return "shadowing_module", (
            f"named like the standard-library module '{module}'; removed before the checks"
        )
    return None


def _remove_planted(
    ws: hostile.Tree, entries: dict[str, Entry], base: dict[str, tuple[str, str]], keep: set[str]
) -> list[Finding]:
    findings: list[Finding] = []
    gone: list[str] = []
    for rel, entry in sorted(entries.items()):
        if rel in keep or any(rel.startswith(g + "/") for g in gone):
            continue
        if rel in base or any(p.startswith(rel + "/") for p in base):
            continue  # there at the pinned commit: the case's own
        planted = _planted(rel, entry, entries)
        if planted is not None and hostile.delete(ws.root, rel):
            findings.append(Finding(planted[0], rel, planted[1]))
            gone.append(rel)
    return findings


def _hidden_files(case: Case) -> dict[str, tuple[bytes, str]]:
    """The case's hidden files (trusted: the case author's), {path: (content, git mode)}."""
    if case.hidden is None:
        return {}
    return {
        p.relative_to(case.hidden).as_posix(): (
            p.read_bytes(),
            "100755" if p.stat().st_mode & 0o111 else "100644",
        )
        for p in sorted(case.hidden.rglob("*"))
        if p.is_file()
    }


def _place_hidden(
    ws: hostile.Tree,
    hidden: dict[str, tuple[bytes, str]],
    base: dict[str, tuple[str, str]],
    entries: dict[str, Entry],
) -> list[Finding]:
    """Copy the hidden files in; a hidden top-level folder the pinned commit lacks but the agent
    made is removed whole first, and anything else in the way is removed and reported."""
    findings = []
    detail = "placed by the agent where a hidden file goes; removed before the copy"
    for top in _hidden_tops(hidden, base):
        if top in entries and hostile.delete(ws.root, top):
            findings.append(Finding("hidden_path", top, detail))
    return findings + _copy_hidden(ws, hidden, base, detail)


def _hidden_tops(
    hidden: dict[str, tuple[bytes, str]], base: dict[str, tuple[str, str]]
) -> list[str]:
    """The top-level names of hidden files that the pinned commit lacks: wholly the harness's."""
    tops = {rel.split("/")[0] for rel in hidden}
    return sorted(t for t in tops if t not in base and not any(p.startswith(t + "/") for p in base))


def _copy_hidden(
    ws: hostile.Tree,
    hidden: dict[str, tuple[bytes, str]],
    base: dict[str, tuple[str, str]],
    detail: str,
) -> list[Finding]:
    """Write every hidden file anew (what is in the way removed: reported unless pinned)."""
    return [
        Finding("hidden_path", cleared, detail)
        for rel, (data, mode) in hidden.items()
        for cleared in hostile.place(ws.root, rel, data, mode)
        if cleared not in base
    ]


def _unreadable(ws: hostile.Tree, listed: dict[str, Entry]) -> list[Finding]:
    """What the walk could not read (a folder closed to the harness, one too deep to open):
    never passed over in silence; removed when it can be."""
    findings = []
    for rel, entry in sorted(listed.items()):
        if entry.kind != "unreadable":
            continue
        try:
            removed = hostile.delete(ws.root, rel)
        except OSError:
            removed = False
        findings.append(
            Finding(
                "unreadable",
                rel,
                "could not be read by the harness, so not "
                "checked; "
                + ("removed before the checks" if removed else "it could not be removed either"),
            )
        )
    return findings


def _ground(
    case: Case,
    ws: hostile.Tree,
    base: dict[str, tuple[str, str]],
    hidden: dict[str, tuple[bytes, str]],
    listed: dict[str, Entry],
    cut: bool,
) -> list[Finding]:
    """Protected paths restored, planted machinery and unreadable entries removed."""
    findings = _protected(case, ws, base, listed)
    keep = set(hidden) | {f.path for f in findings}
    findings += _remove_planted(ws, listed, base, keep)
    findings += _test_config(ws, base, listed, keep | {f.path for f in findings})
    if cut:
        findings.append(
            Finding(
                "unchecked",
                ".",
                f"more than {hostile.MAX_ENTRIES} entries in "
                "the workspace: the rest was not scanned",
            )
        )
    return findings + _unreadable(ws, listed)


def secure(
    case: Case, ws: hostile.Tree, entries: Sequence[Entry], cut: bool = False
) -> list[Finding]:
    """Restore protected paths, remove planted machinery, copy the hidden files in: the
    workspace the checks run on. `entries`: the workspace as `hostile.walk` saw it (`cut`: not
    all of it, which is a finding of its own: what lies beyond was not checked)."""
    base = ws.files()
    listed = {e.rel: e for e in entries}
    hidden = _hidden_files(case)
    findings = _ground(case, ws, base, hidden, listed, cut)
    return findings + _place_hidden(ws, hidden, base, listed)


def recheck(case: Case, ws: hostile.Tree, after: str) -> list[Finding]:
    """Between two checks: the ground the next one stands on, put back. The check `after` ran
    the agent's code, which can write anywhere in the workspace: a hidden file it changed
    (`hidden_changed`), something it added among the hidden files (`hidden_path`) or planted
    machinery is reported and undone, and every hidden file is copied in fresh (no handle kept
    open on an old one reaches the new)."""
    entries, cut = hostile.walk(ws.root)
    base, listed, hidden = ws.files(), {e.rel: e for e in entries}, _hidden_files(case)
    findings = _ground(case, ws, base, hidden, listed, cut)
    for rel, (data, mode) in hidden.items():
        entry = listed.get(rel)
        if (
            entry is None
            or entry.kind != "file"
            or entry.executable != (mode == "100755")
            or _read(ws.root, rel) != data
        ):
            findings.append(
                Finding(
                    "hidden_changed",
                    rel,
                    "changed by the agent's code while "
                    "a check ran; copied fresh for the next check",
                )
            )
    owned, done = _folders(hidden), {f.path for f in findings}
    for top in _hidden_tops(hidden, base):
        for rel in sorted(listed):
            if _within(rel, {top}) and rel not in owned and not _within(rel, done):
                findings.append(
                    Finding(
                        "hidden_path",
                        rel,
                        "added among the hidden files by "
                        "the agent's code while a check ran; removed",
                    )
                )
                done.add(rel)
        hostile.delete(ws.root, top)
    _copy_hidden(ws, hidden, base, "")
    return [Finding(f.kind, f.path, f"{f.detail} (found after check '{after}')") for f in findings]


def _folders(hidden: dict[str, tuple[bytes, str]]) -> set[str]:
    """The hidden files and the folders that hold them."""
    parts = [rel.split("/") for rel in hidden]
    return {"/".join(p[:i]) for p in parts for i in range(1, len(p) + 1)}


def _within(rel: str, paths: set[str]) -> bool:
    """Whether `rel` is one of `paths` or lies below one."""
    return rel in paths or any(rel.startswith(p + "/") for p in paths)
