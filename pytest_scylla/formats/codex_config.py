"""Codex's own files beside AGENTS.md and the skills (`scylla ablate plan --agent codex`, and the
Codex adapter, which carries the settings): the keys of .codex/config.toml and the AGENTS.md of
subfolders.

What Codex 0.169.0 does with them (docs/codex.md):
- a key of .codex/config.toml that is configuration (`model_reasoning_effort`, `features`, ...)
  is kept: every Codex run carries it as `-c key=value` (Codex itself reads the file only in a
  project its user trusted; a run's workspace is a copy nobody trusted).
- a key that redirects the CLI (its provider, endpoint, key, login or model) is dropped from
  every arm: the session's gateway decides where the model is. So are the keys the run decides
  (its sandbox and approvals: the plugin's sandbox isolates the run; what would leave the run:
  analytics, telemetry, web search, update checks, notifications; a user's trusted projects).
- `[mcp_servers.<name>]` are components (`agent_config.mcp_in`); `[profiles.<name>]` apply
  only when chosen: the one `profile = "<name>"` chooses is carried with the file's own keys,
  the others are in no arm.
- a subfolder's AGENTS.md: Codex reads the AGENTS.md files from the repository's root down to
  its working folder, at the start only, and a run works at the root: a file of the project
  like any other, left in every arm's workspace."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_scylla.formats.claude_parts import SKIP_DIRS
from pytest_scylla.formats.components import Component, inside, rel, slug
from pytest_scylla.formats.yamlmarks import SpecError, read_text

CONFIG = ".codex/config.toml"
KEPT = "a Codex setting: carried in every arm (each Codex run passes the project's "
KEPT += f"{CONFIG} settings as `-c key=value`)"
DROPPED = "redirects the CLI (its provider, endpoint, key, login or model): dropped from every "
DROPPED += "arm; the session's gateway decides where the model is"
REDIRECT = {"model", "review_model", "model_provider", "model_providers", "oss_provider"}
REDIRECT |= {"preferred_auth_method", "forced_login_method", "forced_chatgpt_workspace_id"}
REDIRECT |= {"cli_auth_credentials_store", "mcp_oauth_credentials_store"}
REDIRECTING = re.compile(r"(base_url|api_key|bearer_token|auth_token|_auth|_login)$")
RUNS = "the run decides it (the plugin's sandbox isolates the run and Codex's own is off; "
RUNS += "nothing leaves a run but its model calls): dropped from every arm"
THE_RUNS = {"sandbox_mode", "sandbox_workspace_write", "approval_policy", "analytics"}
THE_RUNS |= {"feedback", "otel", "web_search", "tools.web_search", "check_for_update_on_startup"}
THE_RUNS |= {"notify", "projects"}
INSTRUCTIONS = "names a file that replaces Codex's base instructions: in no arm (a tier "
INSTRUCTIONS += "carries it as `system_prompt: {replace: <file>}`)"
OWN_FILE = {"model_instructions_file", "experimental_instructions_file"}
PROFILE = "a profile: Codex applies it only when chosen (`codex --profile {name}`); in no arm"
CHOSEN = "the profile `profile` chooses: its settings are carried in every arm over the file's "
CHOSEN += "own (those that redirect the CLI or the run's dropped, as the file's)"
NESTED = (
    "a subfolder's {name}: Codex reads the AGENTS.md files from the repository's root down to "
    "its working folder, at the start only, and a run works at the root (0.169.0 loads none "
    "below it, not when the agent works there either): a file of the project like any other, "
    "left in the workspace of every arm (not varied)"
)
BARE = re.compile(r"^[A-Za-z0-9_-]+$")  # a key Codex's `-c` takes in a dotted path


def read(path: Path) -> dict[str, Any]:
    """The file's TOML; one that is not TOML is a SpecError naming its line."""
    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column (\d+)\)", r" (column \1)", str(exc))
        raise SpecError.one(
            path, int(at.group(1)) if at else None, f"{message}: the file is not TOML"
        ) from None


def why_not(key: str) -> str | None:
    """Why a key (a dotted path) of config.toml is in no arm; None: it is carried."""
    top = key.partition(".")[0]
    if top in REDIRECT or REDIRECTING.search(key.rpartition(".")[2]):
        return f"{key} {DROPPED}"
    if key in THE_RUNS or top in THE_RUNS:
        return f"{key}: {RUNS}"
    if top in OWN_FILE:
        return f"{key} {INSTRUCTIONS}"
    return None


def _line(path: Path, key: str) -> int | None:
    lines = read_text(path).split("\n")
    return next((i for i, x in enumerate(lines, 1) if key in x), None)


def profiles(path: Path, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every profile, the chosen one's settings); a `profile` naming none is a SpecError."""
    found = config.get("profiles") or {}
    chosen = config.get("profile")
    if not isinstance(found, dict) or not all(isinstance(p, dict) for p in found.values()):
        raise SpecError.one(path, _line(path, "profiles"), "expected [profiles.<name>] tables")
    if chosen is not None and chosen not in found:
        why = f"profile = {chosen!r}: no [profiles.{chosen}] table; add it or remove the key"
        raise SpecError.one(path, _line(path, "profile"), why)
    return found, found.get(chosen, {}) if chosen is not None else {}


def settings_in(root: Path, path: Path, config: dict[str, Any]) -> Iterator[Component]:
    """Each key of the file but the MCP servers (components of their own): kept, or in no arm
    with the reason; each profile listed."""
    found, _ = profiles(path, config)
    where = rel(root, path)
    for key, value in sorted(config.items()):
        if key in ("mcp_servers", "profiles"):
            continue
        reason = why_not(key)
        if key == "profile":
            reason = f"chooses the profile '{value}', whose settings are carried (below)"
        shown = "(not copied)" if reason and DROPPED in reason else repr(value)
        data = {} if reason else {key: value}
        yield Component("setting", slug(key), where, shown, False, reason or KEPT, data=data)
    for name, profile in sorted(found.items()):
        reason = CHOSEN if name == config.get("profile") else PROFILE.format(name=name)
        said = {k: "(not copied)" if why_not(k) else v for k, v in profile.items()}
        yield Component("setting", slug(f"profile-{name}"), where, repr(said), False, reason)


def _leaves(prefix: str, value: Any) -> Iterator[tuple[str, Any]]:
    """A table as the dotted paths of its values (a key `-c` cannot name in a path ends it:
    that table is passed whole)."""
    if isinstance(value, dict) and value and all(BARE.match(str(k)) for k in value):
        for key, inner in value.items():
            yield from _leaves(f"{prefix}.{key}", inner)
    else:
        yield prefix, value


def carried(root: Path) -> list[tuple[str, Any]]:
    """The settings of the project's .codex/config.toml every Codex run carries, as (dotted
    path, value) for `-c`: its own keys, then the chosen profile's over them; none without the
    file."""
    path = root / CONFIG
    if not path.is_file():
        return []
    config = read(inside(root, path))
    _, chosen = profiles(path, config)
    found: dict[str, Any] = {}
    for table in (config, chosen):
        for key, value in table.items():
            if key in ("mcp_servers", "profiles", "profile") or not BARE.match(key):
                continue
            found.update((k, v) for k, v in _leaves(key, value) if why_not(k) is None)
    return list(found.items())


def nested_in(root: Path) -> Iterator[Component]:
    """Each subfolder's AGENTS.md and AGENTS.override.md: listed, kept in every arm's workspace
    (the overlay takes out the root's only)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        here = Path(folder)
        if here == root:  # the root's are read as sections; .codex/ and .agents/ on their own
            dirs[:] = [d for d in dirs if d not in (".codex", ".agents")]
            continue
        names = {"AGENTS.md", "AGENTS.override.md"} & set(files)
        for name in sorted(names):
            path = inside(root, here / name)
            where = rel(root, path)
            reason, keep = NESTED.format(name=name), {"keep": where}
            yield Component("file", slug(where), where, read_text(path), False, reason, data=keep)
