"""The per-run record: one JSON-native dict, written atomically to `<out>/runs/<key>/run.json`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

RECORD_SCHEMA = 1
RECORD_FILE = "run.json"


def write_json(path: Path, data: Any) -> None:
    """Write `data` as JSON so that readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=False, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / RECORD_FILE).read_text(encoding="utf-8"))
    return data


def read_dict(path: Path) -> dict[str, Any]:
    """A JSON object from a file; {} when the file is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
