"""The design of an ablation of a team's own configuration, written as ordinary tier files.

Each ablated component (or group of them, `--group skills`) is a factor. With at most
`factorial_above` factors the arms are `full`, `none` and one leave-one-out arm per factor
(and, on request, one add-one arm per factor). With more, a two-level Plackett-Burman design
(pyDOE3) estimates every main effect from N arms, N the multiple of four above the number of
factors (16 arms for 12 factors), instead of 2^k. The tiers folder it writes holds one tier,
T0, whose subtests are the arms, and the components as resources (blocks, skills, agents, mcp)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_scylla.formats.agent_config import Component, Configuration
from pytest_scylla.formats.resources import front_matter

FACTORIAL_ABOVE = 8
SHORT = {"section": "md", "skill": "skill", "agent": "agent", "mcp": "mcp", "hook": "hook"}
FOLDER = {"section": "blocks", "skill": "skills", "agent": "agents", "mcp": "mcp"}


@dataclass(frozen=True)
class Factor:
    """What one arm keeps or removes: a component, or a group of them ablated as one."""

    name: str  # a component's id, or `group:<kind>`
    components: tuple[Component, ...]


@dataclass(frozen=True)
class Arm:
    name: str  # the subtest's name: `03-no-skill-deploy`
    description: str
    kept: frozenset[str]  # the factors' names it keeps


def factors(config: Configuration, groups: Sequence[str] = ()) -> list[Factor]:
    """The ablated components, those of a grouped kind (`skill`, `section`, ...) as one factor."""
    found: list[Factor] = []
    grouped: dict[str, list[Component]] = {}
    for comp in config.ablated:
        if comp.kind in groups:
            grouped.setdefault(comp.kind, []).append(comp)
        else:
            found.append(Factor(comp.id, (comp,)))
    return found + [Factor(f"group:{kind}", tuple(comps)) for kind, comps in grouped.items()]


def _label(factor: Factor) -> str:
    kind, _, name = factor.name.partition(":")
    return f"group-{name}" if kind == "group" else f"{SHORT[kind]}-{name}"


def design(
    units: Sequence[Factor], *, add_one: bool = False, factorial_above: int = FACTORIAL_ABOVE
) -> list[Arm]:
    """The arms: leave-one-out (and add-one) up to `factorial_above` factors, else a
    Plackett-Burman design."""
    every = frozenset(f.name for f in units)
    if len(units) > factorial_above:
        return _plackett_burman(units)
    arms = [
        Arm("full", "everything of the configuration", every),
        Arm("none", "nothing of the configuration", frozenset()),
    ]
    arms += [Arm(f"no-{_label(f)}", f"all but {f.name}", every - {f.name}) for f in units]
    if add_one:
        arms += [Arm(f"only-{_label(f)}", f"{f.name} alone", frozenset({f.name})) for f in units]
    return [Arm(f"{i:02d}-{a.name}", a.description, a.kept) for i, a in enumerate(arms, 1)]


def _plackett_burman(units: Sequence[Factor]) -> list[Arm]:
    from pyDOE3 import pbdesign

    rows = pbdesign(len(units))
    arms = []
    for i, row in enumerate(rows, 1):
        kept = frozenset(f.name for f, level in zip(units, row, strict=False) if level > 0)
        removed = [_label(f) for f in units if f.name not in kept]
        what = f"all but {', '.join(removed)}" if removed else "everything"
        arms.append(Arm(f"{i:02d}-design-{i:02d}", f"Plackett-Burman row {i}: {what}", kept))
    return arms


def write_tiers(
    config: Configuration, units: Sequence[Factor], arms: Sequence[Arm], out: Path
) -> Path:
    """Write `out/T0.yaml` (the arms) and the components as the resources it names; return the
    tier file. `out` is replaced wholesale: it is generated, not edited in place."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for comp in (c for f in units for c in f.components):
        _write_resource(comp, out)
    by_factor = {f.name: f.components for f in units}
    subtests = {arm.name: _subtest(config, arm, by_factor) for arm in arms}
    tier = {
        "tier": "T0",
        "name": "Ablation",
        "description": f"Arms of the {config.cli} configuration {config.digest}.",
        "subtests": subtests,
    }
    path = out / "T0.yaml"
    path.write_text(_header(config, units) + yaml.safe_dump(tier, sort_keys=False, width=96))
    design = {  # what `scylla ablate report` reads the arms by
        "design": "plackett-burman" if arms and "-design-" in arms[0].name else "leave-one-out",
        "configuration": config.digest,
        "factors": [f.name for f in units],
        "components": {f.name: [c.id for c in f.components] for f in units},
        "arms": {arm.name: sorted(arm.kept) for arm in arms},
    }
    (out / "design.json").write_text(json.dumps(design, indent=1) + "\n", encoding="utf-8")
    return path


def _subtest(
    config: Configuration, arm: Arm, by_factor: dict[str, tuple[Component, ...]]
) -> dict[str, Any]:
    kept = {c.id for name in arm.kept for c in by_factor[name]}
    keep = [c for c in config.ablated if c.id in kept]
    entry: dict[str, Any] = {"description": arm.description, "project_config": "remove"}
    for kind, key in (("section", "claude_md"), ("skill", "skills"), ("agent", "agents")):
        entry[key] = [c.name for c in keep if c.kind == kind]
    entry["mcp_servers"] = [c.name for c in keep if c.kind == "mcp"]
    settings: dict[str, Any] = {}
    for comp in config.components:
        if comp.kind == "setting":
            settings.update(comp.data)
    hooks = {k: v for c in keep if c.kind == "hook" for k, v in c.data.items()}
    if hooks:
        settings["hooks"] = hooks
    if settings:
        entry["settings"] = settings
    return {k: v for k, v in entry.items() if v != []}


def _write_resource(comp: Component, out: Path) -> None:
    if comp.kind not in FOLDER:
        return  # hooks ride in each arm's settings
    folder = out / FOLDER[comp.kind]
    folder.mkdir(exist_ok=True)
    if comp.kind == "section":
        (folder / f"{comp.name}.md").write_text(comp.text, encoding="utf-8")
    elif comp.kind == "skill" and comp.source is not None:
        shutil.copytree(comp.source, folder / comp.name, symlinks=False)
        _named(folder / comp.name / "SKILL.md", comp.name)
    elif comp.kind == "agent" and comp.source is not None:
        shutil.copyfile(comp.source, folder / f"{comp.name}.md")
        _named(folder / f"{comp.name}.md", comp.name)
    elif comp.kind == "mcp":
        server = {"description": f"the project's MCP server '{comp.name}' (.mcp.json)"}
        server.update({k: comp.data[k] for k in ("command", "args", "env") if k in comp.data})
        (folder / f"{comp.name}.json").write_text(json.dumps(server, indent=2) + "\n")


def _named(path: Path, name: str) -> None:
    """The copy's front matter names it (the CLI takes a missing name from the folder or file;
    a tier's resource says it)."""
    meta, _, _ = front_matter(path)
    if meta is not None and not meta.get("name"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("---\n", f"---\nname: {name}\n", 1), encoding="utf-8")


def _header(config: Configuration, units: Sequence[Factor]) -> str:
    lines = [
        f"# Generated by `scylla ablate plan` from the {config.cli} configuration {config.digest}.",
        "# Regenerate it after the configuration changes: a changed configuration is a "
        "different experiment.",
        "# Factors (each kept or removed as one):",
        *(f"#   {f.name}: {', '.join(c.where for c in f.components)}" for f in units),
    ]
    kept = [c for c in config.components if not c.ablated]
    if kept:
        lines.append("# Not ablated:")
        lines += [f"#   {c.id} ({c.where}): {c.reason}" for c in kept]
    return "\n".join(lines) + "\n"
