"""`scylla cases mine`: the repository to mine read as hostile input.

A repository's own configuration can run commands (`core.fsmonitor` during `git status`, filter
drivers during `git archive`, `gpg.program` with `log.showSignature` during `git show`, hooks
…), and its history can hold any path. So git never runs with that configuration: mining
starts by cloning the repository's history into a private bare mirror (`git clone --mirror
--no-local`: git's upload-pack serves it, as for a clone from anyone, and no configuration,
hook or attribute of the source is copied), and every command after reads that mirror, with no
system, global or repository configuration but the few safety settings of `hostile_git`. The
work tree is only read by `git status` through that mirror and a private index (its
`.gitattributes` name drivers no configuration defines)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_scylla.run.hostile_git import SAFE_GIT, git_env

# `--no-local`: the history is served by upload-pack, as to anyone cloning (never a copy of the
# source's files); `--template=`: the mirror has no hooks, not even samples
CLONE = ("-c", "protocol.file.allow=always", "clone", "--mirror", "--no-local", "--quiet")
CLONE_TEMPLATE = "--template="
URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(?:([^/]*)@)?(.*)$")  # scheme, userinfo, rest


class GitError(RuntimeError):
    """A git command on the mirror failed: its first line of error."""


@dataclass(frozen=True)
class Source:
    """The repository being mined: its work tree as the user named it (its name, and where the
    cases point) and the private mirror every git command reads."""

    top: Path
    git_dir: Path
    scratch: Path  # private: an empty work tree, a HOME and an index for git
    origin: str = ""  # its `remote.origin.url`, read as data, credentials taken out

    def env(self, work_tree: Path | None = None) -> dict[str, str]:
        return git_env(
            self.git_dir, work_tree or self.scratch / "empty", self.scratch / "index", self.scratch
        )


def _git(
    args: Sequence[str], cwd: Path, env: dict[str, str], stdin: bytes = b""
) -> tuple[int, bytes, str]:
    """(exit code, output, error text) of `git ARGS` with the safety settings."""
    done = subprocess.run(
        ["git", *SAFE_GIT, *args], cwd=cwd, env=env, input=stdin, capture_output=True, check=False
    )
    return done.returncode, done.stdout, done.stderr.decode(errors="replace").strip()


def run(source: Source, args: Sequence[str], stdin: bytes = b"", check: bool = True) -> bytes:
    """`git ARGS` on the mirror (its output), with the safety settings and no configuration."""
    code, out, err = _git(args, source.scratch / "empty", source.env(), stdin)
    if check and code != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {(err.splitlines() or [str(code)])[0]}")
    return out


def _bare_env(home: Path) -> dict[str, str]:
    env = git_env(home, home, home / "index", home)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name)
    return env


def discover(repo: Path, home: Path) -> tuple[str, bool]:
    """(the top of the work tree holding `repo`, "" when none; whether it is shallow): asked
    of git with no configuration but the repository's, which these two questions only read."""
    asked = ["rev-parse", "--show-toplevel", "--is-shallow-repository"]
    code, out, _ = _git(asked, repo, _bare_env(home))
    lines = out.decode(errors="replace").splitlines() if code == 0 else []
    return (lines[0], lines[-1] == "true") if len(lines) == 2 else ("", False)


@contextlib.contextmanager
def mirrored(top: Path) -> Iterator[Source]:
    """A private, configuration-free mirror of `top`'s history (removed after)."""
    with tempfile.TemporaryDirectory(prefix="scylla-mine-git-") as private:
        scratch = Path(private)
        (scratch / "empty").mkdir()
        mirror = scratch / "mirror.git"
        code, _, err = _git(
            [*CLONE, CLONE_TEMPLATE, "--", str(top), str(mirror)], scratch, _bare_env(scratch)
        )
        if code != 0:
            said = (err.splitlines() or ["no reason given"])[-1]
            raise GitError(f"{top}: its history could not be copied to read ({said})")
        yield Source(top, mirror, scratch, origin_url(top, scratch))


def origin_url(top: Path, home: Path) -> str:
    """The work tree's `remote.origin.url` ("" when none), read from its configuration file as
    data (`git config --file`: no include, command or other setting of it is used), with any
    credential in it taken out (`without_credentials`)."""
    code, out, _ = _git(
        ["rev-parse", "--path-format=absolute", "--git-common-dir"], top, _bare_env(home)
    )
    config = Path(out.decode(errors="replace").strip()) / "config"
    if code != 0 or not config.is_file():
        return ""
    asked = ["config", "--file", str(config), "--no-includes", "--get", "remote.origin.url"]
    code, out, _ = _git(asked, home, _bare_env(home))
    url = out.decode(errors="replace").strip() if code == 0 else ""
    return without_credentials(url) if url and "\n" not in url else ""


def on_origin(source: Source, sha: str) -> bool:
    """Whether a branch of the origin remote (as the work tree last fetched it) holds `sha`."""
    asked = ["for-each-ref", "--count=1", "--contains", sha, "refs/remotes/origin/"]
    return bool(run(source, asked, check=False).strip())


def without_credentials(url: str) -> str:
    """`url` without a user's password or token: `https://user:token@host/x` and
    `https://token@host/x` become `https://host/x` (a query is dropped too); an ssh user name
    (`git@host:x`, `ssh://git@host/x`) is no secret and stays, its password does not."""
    if not (match := URL.match(url)):
        return url
    scheme, userinfo, rest = match.groups()
    if not userinfo:
        return url
    if scheme.lower() in ("ssh", "git+ssh", "ssh+git"):
        return f"{scheme}://{userinfo.split(':', 1)[0]}@{rest}"
    return f"{scheme}://{rest.split('?', 1)[0].split('#', 1)[0]}"


def changed_files(source: Source) -> str:
    """The first tracked file the work tree changed from HEAD ("" when none), read through the
    mirror and a private index: neither the repository's index, configuration nor hooks are
    used. A HEAD git cannot check out (an unsafe path) cannot be the work tree's: ""."""
    env = source.env(source.top)
    if _git(["read-tree", "HEAD"], source.top, env)[0] != 0:
        return ""
    status = ["status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all"]
    lines = _git(status, source.top, env)[1].decode(errors="replace").strip().splitlines()
    return lines[0].strip() if lines else ""


def blobs(source: Source, ids: Sequence[str]) -> dict[str, bytes]:
    """The raw content of each object id (no filter or conversion), read in one `cat-file`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    out = run(source, ["cat-file", "--batch"], stdin="".join(f"{i}\n" for i in wanted).encode())
    found, at = {}, 0
    for oid in wanted:
        end = out.index(b"\n", at)
        head = out[at:end].split()
        if len(head) != 3:
            raise GitError(f"git cat-file: object {oid} is missing")
        size = int(head[2])
        found[oid] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found
