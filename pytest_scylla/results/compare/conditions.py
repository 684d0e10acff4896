"""What differs between two experiments' manifests (`scylla compare`'s conditions): models, CLI
versions, sandboxes, images, oracle modes, options, and the inputs by content hash."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Manifests = Sequence[dict[str, Any]]
MANIFEST_KEYS = (
    "agents",
    "agent_models",
    "judge_models",
    "cli_versions",
    "sandboxes",
    "images",
    "oracle_modes",
    "plugin_version",
)


def conditions(base: Manifests, cand: Manifests) -> list[dict[str, Any]]:
    """What differs between the two sides' manifests: models, CLI versions, sandboxes, images,
    oracle modes, and the inputs (cases, tiers, rubrics) by content hash."""
    changed = []
    for key in MANIFEST_KEYS:
        b, c = _merged(base, key), _merged(cand, key)
        if b != c:
            changed.append({"what": key, "base": b, "candidate": c})
    b_options, c_options = _merged(base, "options"), _merged(cand, "options")
    if isinstance(b_options, dict) and isinstance(c_options, dict):
        changed += _changed_options(b_options, c_options)
    b_inputs, c_inputs = _merged(base, "inputs"), _merged(cand, "inputs")
    if isinstance(b_inputs, dict) and isinstance(c_inputs, dict):
        changed += _changed_inputs(b_inputs, c_inputs)
    return changed


def _merged(manifests: Manifests, key: str) -> Any:
    """A key's values over one side's manifests: the dicts merged into one, else a list of the
    distinct values."""
    values: list[Any] = []
    for manifest in manifests:
        value = manifest.get(key)
        if isinstance(value, dict):
            values.append(value)
        elif isinstance(value, list):
            values.extend(v for v in value if v not in values)
        elif value is not None and value not in values:
            values.append(value)
    if values and all(isinstance(v, dict) for v in values):
        out: dict[str, Any] = {}
        for v in values:
            out.update(v)
        return out
    return values


def _changed_options(base: dict[str, Any], cand: dict[str, Any]) -> list[dict[str, Any]]:
    """The session options that differ (the label and the reports asked for aside)."""
    return [
        {"what": f"option {name}", "base": base.get(name), "candidate": cand.get(name)}
        for name in sorted((set(base) | set(cand)) - {"label", "report"})
        if base.get(name) != cand.get(name)
    ]


def _changed_inputs(base: dict[str, Any], cand: dict[str, Any]) -> list[dict[str, Any]]:
    """The inputs whose content differs (a file on one side only: absent on the other)."""
    return [
        {"what": f"input {name}", "base": _content(base, name), "candidate": _content(cand, name)}
        for name in sorted(set(base) | set(cand))
        if base.get(name) != cand.get(name)
    ]


def _content(inputs: dict[str, Any], name: str) -> str:
    """An input as the conditions list shows it: its content hash's first digits, or absent."""
    value = inputs.get(name)
    if value is None:
        return "absent"
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return f"content {text[:12]}"
