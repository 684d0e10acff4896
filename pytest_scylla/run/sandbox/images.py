"""`scylla image build`: the docker sandbox's images, made through the docker SDK.

The agent image comes from the Dockerfile shipped in the package (`pytest_scylla/images/`): the
pinned Claude Code CLI, git, Python 3 and Node.js on Debian, or on a base image that brings a
case's toolchain (`--base`). `--host` only sets up the host toolchain image (nothing is
downloaded), which also makes `--scylla-sandbox=auto` choose docker.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_scylla.run.agents.claude_code import PINNED_VERSION
from pytest_scylla.run.sandbox import SandboxError
from pytest_scylla.run.sandbox.docker.engine import HOST, IMAGE, client, ensure_image

DOCKERFILE = Path(__file__).resolve().parents[2] / "images" / "Dockerfile"
DEFAULT_BASE = "debian:bookworm-slim"


def default_tag(cli_version: str = PINNED_VERSION) -> str:
    return f"scylla-agent:{cli_version}"


def build(
    *,
    base: str = DEFAULT_BASE,
    tag: str | None = None,
    cli_version: str = PINNED_VERSION,
    ca_bundle: Path | None = None,
    say: Callable[[str], None] = print,
) -> tuple[str, str]:
    """Build the agent image; returns (tag, image id). The build's containers use the host's
    network (its downloads: Debian packages and the CLI from npm); `ca_bundle` is trusted
    during the build (a TLS-inspecting proxy). Raises SandboxError with the build's last lines
    when it fails."""
    engine = client()
    tag = tag or default_tag(cli_version)
    with tempfile.TemporaryDirectory(prefix="scylla-image-") as folder:
        context = Path(folder)
        shutil.copy(DOCKERFILE, context / "Dockerfile")
        (context / "trust").mkdir()
        if ca_bundle is not None:
            try:
                shutil.copy(ca_bundle, context / "trust" / "ca.crt")
            except OSError as exc:
                raise SandboxError(f"--ca-bundle {ca_bundle}: {exc.strerror or exc}") from None
        else:
            (context / "trust" / "ca.crt").write_text("", encoding="utf-8")
        tail: list[str] = []
        image_id = ""
        try:
            for chunk in engine.api.build(
                path=str(context),
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                network_mode="host",
                buildargs={"BASE": base, "CLAUDE_CODE_VERSION": cli_version},
            ):
                image_id = _follow(chunk, tail, say) or image_id
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"building {tag} on {base} failed: {exc}") from None
    if not image_id:
        image_id = str(engine.images.get(tag).id)
    return tag, image_id


def _follow(chunk: dict[str, Any], tail: list[str], say: Callable[[str], None]) -> str | None:
    """One line of the build's stream: printed; an error ends the build with the last lines."""
    if "error" in chunk:
        raise SandboxError(
            "the image build failed: "
            + str(chunk["error"]).strip()
            + ("\n" + "\n".join(tail[-15:]) if tail else "")
        )
    text = str(chunk.get("stream") or chunk.get("status") or "").rstrip()
    if text:
        say(text)
        tail.append(text)
        del tail[:-40]
    aux = chunk.get("aux") or {}
    return str(aux["ID"]) if "ID" in aux else None


@dataclass(frozen=True)
class Made:
    """An image pytest-scylla made on the engine: an agent image or the host toolchain image."""

    tag: str
    id: str
    size_mb: float
    cli_version: str  # the agent image's Claude Code; the host image's is this machine's


def made() -> list[Made]:
    """The images pytest-scylla made on the engine (by its label, or the host image's name)."""
    engine = client()
    try:
        found = engine.images.list(filters={"label": "io.scylla.image"})
        with contextlib.suppress(Exception):
            found.append(engine.images.get(IMAGE))
        out = []
        for image in found:
            labels = (image.attrs.get("Config") or {}).get("Labels") or {}
            version = labels.get("io.scylla.cli-version") or "(this machine's, bound)"
            for tag in image.tags or [f"<untagged {image.short_id}>"]:
                out.append(Made(tag, str(image.id), image.attrs.get("Size", 0) / 1e6, version))
        return sorted(set(out), key=lambda m: m.tag)
    finally:
        engine.close()


def remove(tag: str) -> None:
    """Remove the tag `tag` (the image too once no tag is left); SandboxError when it fails."""
    engine = client()
    try:
        engine.images.remove(tag)
    except Exception as exc:  # in use by a container, gone meanwhile
        raise SandboxError(f"{tag}: {exc}") from None
    finally:
        engine.close()


def host() -> str:
    """The host toolchain image on the engine (imported from a tar of empty folders)."""
    return str(ensure_image(client()))


__all__ = ["DEFAULT_BASE", "HOST", "Made", "build", "default_tag", "host", "made", "remove"]
