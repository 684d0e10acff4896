"""The agent options: which CLI adapter runs (`--scylla-agent`), and its model or model axis
(`--scylla-model`, `--scylla-models`)."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from pytest_scylla.config.options import DEFAULTS
from pytest_scylla.config.values import as_list as _list
from pytest_scylla.config.values import value as _value
from pytest_scylla.core.runspec import model_label


class AgentPart(TypedDict):
    """The `Settings` fields of the agent options."""

    agent: str
    model: str
    models: tuple[str, ...]


def agent_settings(config: pytest.Config) -> AgentPart:
    """The `Settings` fields of the agent options."""
    agent = _agent(config)
    return {
        "agent": agent,
        "model": _model(config, adapters(config)[agent]),
        "models": _models(config),
    }


def _model(config: pytest.Config, adapter: Any) -> str:
    """The session's model; an adapter's own default when none is given (a Claude model id
    means nothing to another vendor's CLI)."""
    raw, origin = _value(config, "scylla_model")
    default = getattr(adapter, "default_model", None)
    if default and config.getoption("scylla_model") is None and raw == DEFAULTS["model"]:
        return str(default)
    model = str(raw).strip()
    if not model or any(c.isspace() for c in model):
        said = f"expected a model id such as {DEFAULTS['model']}"
        raise pytest.UsageError(f"{origin}={raw!r}: {said}")
    return model


def _agent(config: pytest.Config) -> str:
    """The adapter's name, one of those the `pytest_scylla_agents` hook registers."""
    raw, origin = _value(config, "scylla_agent")
    name = str(raw).strip()
    known = sorted(adapters(config))
    if name not in known:
        raise pytest.UsageError(
            f"{origin}={raw!r}: not an agent adapter here; known: "
            f"{', '.join(known)} (a plugin adds one through the "
            "pytest_scylla_agents hook)"
        )
    return name


def adapters(config: pytest.Config) -> dict[str, Any]:
    """The registered adapters (`run.agents.Agent`) by name (see `extensions.agents`)."""
    from pytest_scylla.config.extensions import agents

    return agents(config)


def _models(config: pytest.Config) -> tuple[str, ...]:
    """The model axis: model ids, each once, whose labels (run keys) differ."""
    raw, origin = _value(config, "scylla_models")
    models = tuple(_list(raw) or ())
    labels: dict[str, str] = {}
    for model in models:
        if any(c.isspace() for c in model):
            raise pytest.UsageError(
                f"{origin}={raw!r}: {model!r} is not a model id; expected "
                "ids separated by commas, e.g. claude-sonnet-5,"
                "claude-haiku-4-5"
            )
        twin = labels.setdefault(model_label(model), model)
        if twin != model or models.count(model) > 1:
            raise pytest.UsageError(
                f"{origin}={raw!r}: {model!r} is listed twice or names "
                f"the same runs as {twin!r}; list each model once"
            )
    return models
