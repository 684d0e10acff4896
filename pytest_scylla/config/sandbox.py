"""The sandbox's settings: `--scylla-sandbox`, `--scylla-limits` (docker and bwrap), and for
docker `--scylla-image` and `--scylla-docker-copy` (checked together: an image or a copy needs
the docker sandbox, or `auto`, which may choose it)."""

from __future__ import annotations

import re
from typing import Any, TypedDict

import pytest

from pytest_scylla.config.options import BY_NAME, DEFAULTS
from pytest_scylla.config.values import as_list as _list
from pytest_scylla.config.values import flag
from pytest_scylla.config.values import value as _value

IMAGE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$")


class SandboxPart(TypedDict):
    """The `Settings` fields of the sandbox."""

    sandbox: str
    image: str
    limits: tuple[int, float, int]  # memory bytes, cpus, pids
    docker_copy: bool


def sandbox_settings(config: pytest.Config) -> SandboxPart:
    """The `Settings` fields of the sandbox; a bad value is a `pytest.UsageError`."""
    copy = flag(config, "scylla_docker_copy")
    sandbox = _sandbox(config)
    if copy and sandbox in ("bwrap", "local"):
        raise pytest.UsageError(
            f"--scylla-docker-copy is for --scylla-sandbox=docker (or "
            f"auto); this session uses --scylla-sandbox={sandbox}"
        )
    return {
        "sandbox": sandbox,
        "image": _image(config, sandbox),
        "limits": _container_limits(config),
        "docker_copy": copy,
    }


def plugin_sandboxes(config: pytest.Config) -> dict[str, Any]:
    """Every sandbox by name, the built-in ones and those plugins add (`extensions.sandboxes`):
    subclasses of `run.sandbox.Sandbox`."""
    from pytest_scylla.config.extensions import sandboxes

    return sandboxes(config)


def _sandbox(config: pytest.Config) -> str:
    raw, origin = _value(config, "scylla_sandbox")
    sandbox = str(raw).strip() or DEFAULTS["sandbox"]
    known = ("auto", *plugin_sandboxes(config))
    if sandbox not in known:
        raise pytest.UsageError(
            f"{origin}: unknown sandbox '{sandbox}'; choose from {', '.join(known)}"
        )
    return sandbox


def _image(config: pytest.Config, sandbox: str) -> str:
    raw, origin = _value(config, "scylla_image")
    image = str(raw).strip() or DEFAULTS["image"]
    if not IMAGE_REF.match(image):
        raise pytest.UsageError(
            f"{origin}={raw!r}: expected host or an image reference such "
            "as scylla-agent:2.1.197 or registry.example/team/agent@sha256:..."
        )
    if image != "host" and sandbox in ("bwrap", "local"):
        raise pytest.UsageError(
            f"{origin}={image}: images are for --scylla-sandbox=docker (or "
            f"auto); this session uses --scylla-sandbox={sandbox}"
        )
    return image


LIMIT_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _container_limits(config: pytest.Config) -> tuple[int, float, int]:
    """`memory=4g,cpus=2,pids=1024` (any of them; the others keep their defaults)."""
    raw, origin = _value(config, "scylla_limits")
    memory, cpus, pids = DEFAULTS["limits"]
    hint = f"expected e.g. {BY_NAME['limits'].shown} (memory in bytes or with k, m or g)"
    for part in _list(raw) or ():
        name, _, value = part.partition("=")
        name, value = name.strip().lower(), value.strip().lower()
        try:
            if name == "memory":
                size = re.fullmatch(r"(\d+)([kmg]?)b?", value)
                memory = int(size[1]) * LIMIT_UNITS[size[2]] if size else 0
                ok = memory >= 64 << 20
            elif name == "cpus":
                cpus = float(value)
                ok = 0.01 <= cpus <= 1024
            elif name == "pids":
                pids = int(value)
                ok = 16 <= pids <= 1 << 22
            else:
                raise pytest.UsageError(f"{origin}: unknown limit {name!r}; {hint}")
        except ValueError:
            ok = False
        if not ok:
            raise pytest.UsageError(
                f"{origin}: {part!r} is not a usable limit (memory at least "
                f"64m, cpus from 0.01, pids from 16); {hint}"
            )
    return memory, cpus, pids
