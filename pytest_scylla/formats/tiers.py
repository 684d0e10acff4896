"""Tiers T0..Tn and their subtests: loading, resource checks and explicit `extends` composition.

A subtest declares by name what a run gets (system prompt mode, CLAUDE.md blocks, skills,
agents, MCP servers, tool rules, settings, model). Every named resource must exist; a missing one
is an error, never skipped. `resolve()` returns the composed declaration that a run uses.

A tier set is one or more folders, layered: the package ships the paper's T0-T6 (`PACKAGED`),
the default for a project without a `tiers/` folder; a project's folder can also be laid over
it, its tier files replacing packaged ones of the same name and adding new ones, its blocks,
skills, agents and MCP servers found before the packaged ones.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pytest_scylla.core.tiers import TIER_NAME, tier_key
from pytest_scylla.formats import PACKAGED
from pytest_scylla.formats.resources import ResourceKind, check_resource, front_matter
from pytest_scylla.formats.spec import inside
from pytest_scylla.formats.yamlmarks import Document, Problem, SpecError, load_yaml, validate


@dataclass(frozen=True)
class SystemPrompt:
    mode: Literal["none", "default", "append", "replace"] = "default"
    file: Path | None = None


@dataclass(frozen=True)
class Subtest:
    """A tier's subtest: what a run of it is given. After `resolve()`, `extends` is applied."""

    tier: str
    name: str  # e.g. "02-core"
    description: str
    file: Path
    line: int
    extends: tuple[str, ...] = ()
    system_prompt: SystemPrompt | None = None  # None: not set here (default after resolve)
    claude_md: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    tools_allow: tuple[str, ...] | None = None  # None: the CLI's default tool set
    tools_deny: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    project_config: Literal["keep", "remove"] = "keep"  # the workspace's own configuration
    keep_files: tuple[str, ...] = ()  # with remove: the project's files that stay
    claude_md_file: str | None = None  # where the claude_md blocks go (None: CLAUDE.md)

    @property
    def number(self) -> str:
        return self.name[:2]

    @property
    def ref(self) -> str:
        """How items and `extends` name it: `T5-02`."""
        return f"{self.tier}-{self.number}"


@dataclass(frozen=True)
class Tier:
    name: str
    title: str
    description: str
    file: Path
    subtests: tuple[Subtest, ...]


def tier_files(tiers_dir: Path | Sequence[Path]) -> dict[str, Path]:
    """The tier files of a folder (or of layered folders, the first winning by name), keyed and
    sorted by tier name (T0, T1, ..., T10)."""
    found: dict[str, Path] = {}
    for folder in reversed([tiers_dir] if isinstance(tiers_dir, Path) else list(tiers_dir)):
        if folder.is_dir():
            found.update({p.stem: p for p in folder.glob("T*.yaml") if TIER_NAME.match(p.stem)})
    return dict(sorted(found.items(), key=lambda kv: tier_key(kv[0])))


def tier_sources(dirs: Sequence[Path]) -> dict[str, str]:
    """Where each tier comes from: the package (with its version) or a project's file."""
    from pytest_scylla import __version__

    return {
        name: f"packaged (pytest-scylla {__version__})"
        if path.resolve().is_relative_to(PACKAGED.resolve())
        else str(path)
        for name, path in tier_files(dirs).items()
    }


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` laid onto `base`; nested mappings are merged, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _union(*lists: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for seq in lists for x in seq))


class TierSet:
    """Every tier file of a `tiers/` folder; broken tiers keep their errors, the rest work."""

    def __init__(self, tiers_dir: Path | Sequence[Path]) -> None:
        self.dirs = (tiers_dir,) if isinstance(tiers_dir, Path) else tuple(tiers_dir)
        self.dir = self.dirs[0]
        self.tiers: dict[str, Tier] = {}
        self.errors: dict[str, SpecError] = {}
        self._resource_problems: dict[tuple[str, str], list[Problem]] = {}
        for name, path in tier_files(self.dirs).items():
            try:
                self.tiers[name] = self._load_tier(name, path)
            except SpecError as exc:
                self.errors[name] = exc
        self._resolved: dict[str, Subtest] = {}

    @property
    def names(self) -> list[str]:
        return sorted({*self.tiers, *self.errors}, key=tier_key)

    # -- loading --------------------------------------------------------------------------

    def _load_tier(self, name: str, path: Path) -> Tier:
        doc = load_yaml(path)
        validate(doc, "tier")
        data = doc.data
        problems: list[Problem] = []
        if data["tier"] != name:
            problems.append(
                doc.problem(
                    ("tier",),
                    f"tier '{data['tier']}' differs from the file "
                    f"name '{path.name}'; make them equal",
                )
            )
        numbers: dict[str, str] = {}
        subtests = []
        for sub_name, raw in data["subtests"].items():
            where = ("subtests", sub_name)
            if sub_name[:2] in numbers:
                problems.append(
                    doc.problem(
                        where,
                        f"subtests '{numbers[sub_name[:2]]}' and "
                        f"'{sub_name}' share the number {sub_name[:2]}; "
                        "each subtest needs its own two-digit prefix",
                    )
                )
            numbers.setdefault(sub_name[:2], sub_name)
            subtests.append(self._subtest(doc, name, sub_name, raw, where, problems))
        if problems:
            raise SpecError(problems)
        return Tier(
            name=name,
            title=data["name"],
            description=data.get("description", ""),
            file=path,
            subtests=tuple(sorted(subtests, key=lambda s: s.name)),
        )

    def _subtest(
        self,
        doc: Document,
        tier: str,
        name: str,
        raw: dict[str, Any],
        where: tuple[str, ...],
        problems: list[Problem],
    ) -> Subtest:
        prompt = None
        raw_prompt = raw.get("system_prompt")
        if isinstance(raw_prompt, str):
            prompt = SystemPrompt(mode=raw_prompt)  # type: ignore[arg-type]
        elif isinstance(raw_prompt, dict):
            mode, rel = next(iter(raw_prompt.items()))
            file = inside(
                doc, (*where, "system_prompt", mode), rel, doc.path.parent, "file", problems
            )
            prompt = SystemPrompt(mode=mode, file=file)
        kinds: tuple[ResourceKind, ...] = ("claude_md", "skills", "agents", "mcp_servers")
        for kind in kinds:
            for i, res in enumerate(raw.get(kind, [])):
                for problem in self._resource(kind, res):
                    if problem.path == doc.path or problem.line is not None:
                        problems.append(problem)
                    else:
                        problems.append(doc.problem((*where, kind, i), problem.message))
        tools = raw.get("tools", {})
        return Subtest(
            tier=tier,
            name=name,
            description=raw["description"],
            file=doc.path,
            line=doc.line(where),
            extends=tuple(raw.get("extends", [])),
            system_prompt=prompt,
            claude_md=tuple(raw.get("claude_md", [])),
            skills=tuple(raw.get("skills", [])),
            agents=tuple(raw.get("agents", [])),
            mcp_servers=tuple(raw.get("mcp_servers", [])),
            tools_allow=tuple(tools["allow"]) if "allow" in tools else None,
            tools_deny=tuple(tools.get("deny", [])),
            settings=raw.get("settings", {}),
            model=raw.get("model"),
            project_config=raw.get("project_config", "keep"),
            keep_files=tuple(raw.get("keep_files", [])),
            claude_md_file=raw.get("claude_md_file"),
        )

    def resource_path(self, kind: ResourceKind, name: str) -> Path:
        """Where a named resource is: in the first layer that has it (else the first layer's
        place, for the error message)."""
        rel = {
            "claude_md": f"blocks/{name}.md",
            "skills": f"skills/{name}/SKILL.md",
            "agents": f"agents/{name}.md",
            "mcp_servers": f"mcp/{name}.json",
        }[kind]
        return next((d / rel for d in self.dirs if (d / rel).exists()), self.dir / rel)

    def layer_of(self, path: Path) -> Path:
        """The layer (tiers folder) a file of this set lies in."""
        resolved = path.resolve()
        return next((d for d in self.dirs if resolved.is_relative_to(d.resolve())), self.dir)

    def _resource(self, kind: ResourceKind, name: str) -> list[Problem]:
        """Problems with one named resource (checked once). A problem without a line means the
        resource is missing and is reported where it is named."""
        key = (kind, name)
        if key not in self._resource_problems:
            self._resource_problems[key] = check_resource(
                kind, name, self.resource_path(kind, name)
            )
        return self._resource_problems[key]

    # -- composition ----------------------------------------------------------------------

    def subtest(self, ref: str) -> Subtest:
        """A declared (not yet composed) subtest by reference `T1-02`."""
        tier_name, _, number = ref.partition("-")
        if tier_name in self.errors:
            raise self.errors[tier_name]
        tier = self.tiers.get(tier_name)
        for sub in tier.subtests if tier else ():
            if sub.number == number:
                return sub
        raise KeyError(ref)

    def resolve(self, ref: str) -> Subtest:
        """The composed subtest: `extends` applied in order, then the subtest's own keys."""
        if ref not in self._resolved:
            self._resolved[ref] = self._compose(ref, ())
        return self._resolved[ref]

    def _compose(self, ref: str, stack: tuple[str, ...]) -> Subtest:
        own = self.subtest(ref)
        parents: list[Subtest] = []
        doc_problem = _problem_at(own, "extends")
        for parent_ref in own.extends:
            if parent_ref in (*stack, ref):
                cycle = " -> ".join((*stack, ref, parent_ref))
                raise SpecError([doc_problem(f"'extends' makes a cycle: {cycle}; remove one link")])
            try:
                parents.append(self._compose(parent_ref, (*stack, ref)))
            except KeyError:
                raise SpecError(
                    [
                        doc_problem(
                            f"{ref} extends '{parent_ref}', which does not exist; known subtests: "
                            f"{', '.join(self.known_refs())}"
                        )
                    ]
                ) from None
        if not parents:
            return replace(own, system_prompt=own.system_prompt or SystemPrompt())
        problems, settled = [], {}
        for attr in ("system_prompt", "model"):
            # the values the parents set (a default system prompt sets nothing), one parent each
            given = {
                repr(getattr(p, attr)): p
                for p in parents
                if getattr(p, attr) not in (None, SystemPrompt())
            }
            settled[attr] = getattr(own, attr)
            if settled[attr] is None and len(given) > 1:
                problems.append(
                    doc_problem(
                        f"{ref} extends {', '.join(p.ref for p in given.values())}, which set "
                        f"different '{attr}' values; set '{attr}' in {ref} itself to settle it"
                    )
                )
            elif settled[attr] is None and given:
                settled[attr] = getattr(next(iter(given.values())), attr)
        if problems:
            raise SpecError(problems)
        chain = [*parents, own]
        allows = [p.tools_allow for p in parents if p.tools_allow is not None]
        return replace(
            own,
            system_prompt=settled["system_prompt"] or SystemPrompt(),
            model=settled["model"],
            claude_md=_union(*(s.claude_md for s in chain)),
            skills=_union(*(s.skills for s in chain)),
            agents=_union(*(s.agents for s in chain)),
            mcp_servers=_union(*(s.mcp_servers for s in chain)),
            tools_allow=own.tools_allow
            if own.tools_allow is not None
            else (_union(*allows) if allows else None),
            tools_deny=_union(*(s.tools_deny for s in chain)),
            settings=functools.reduce(deep_merge, (s.settings for s in chain), {}),
            project_config="remove" if any(s.project_config == "remove" for s in chain) else "keep",
            keep_files=_union(*(s.keep_files for s in chain)),
            claude_md_file=next((s.claude_md_file for s in chain[::-1] if s.claude_md_file), None),
        )

    def known_refs(self) -> list[str]:
        return [s.ref for t in self.tiers.values() for s in t.subtests]


def _problem_at(sub: Subtest, key: str) -> Any:
    """A factory of problems located at a subtest key (line looked up lazily)."""

    def make(message: str) -> Problem:
        doc = load_yaml(sub.file)
        return doc.problem(("subtests", sub.name, key), message)

    return make


def agent_tools(tiers: TierSet, name: str) -> tuple[str, ...] | None:
    """The Claude Code tools a tier's sub-agent lists (`tools:` of its front matter; None: it
    lists none and has every tool)."""
    meta, _, _ = front_matter(tiers.resource_path("agents", name))
    raw = (meta or {}).get("tools")
    if raw is None:
        return None
    names = raw if isinstance(raw, list) else str(raw).split(",")
    return tuple(str(t).strip() for t in names if str(t).strip())


def lead_agents(tiers: TierSet, names: Sequence[str]) -> list[str]:
    """Of the sub-agents `names`, the orchestrators: those whose tools include Agent (they
    call sub-agents of their own)."""
    return [a for a in names if "Agent" in (agent_tools(tiers, a) or ())]
