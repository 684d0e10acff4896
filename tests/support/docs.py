"""The project's documentation as the tests read it: the README (a short front page) and the
pages under docs/ (the MkDocs site, mkdocs.yml), where the promises the tests check are written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def docs_page(name: str) -> str:
    """The text of docs/<name>.md (`docs_page("shards")`)."""
    return (DOCS / f"{name}.md").read_text(encoding="utf-8")


def all_docs() -> dict[str, str]:
    """Every page under docs/, by its name without `.md`."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md"))}


def example(page: str, name: str) -> str:
    """The code block marked `<!-- example: NAME -->` on a page, as a plugin author copies it."""
    block = docs_page(page).split(f"<!-- example: {name} -->\n```python\n", 1)[1]
    return block.split("```\n", 1)[0]


def python_blocks(text: str) -> list[str]:
    """The ```python code blocks of a page."""
    return re.findall(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
