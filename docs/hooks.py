"""MkDocs hooks of this site (registered in mkdocs.yml).

- The options page's table is made from the option declarations at build time, as
  `pytest --help` is: the text between `<!-- options:start -->` and `<!-- options:end -->` in
  docs/options.md is replaced by `pytest_scylla.config.options.markdown_table()`.
  `python docs/hooks.py` writes the same table into the committed page
  (tests/project/test_options_declared.py keeps the two equal).
- CHANGELOG.md, at the repository's root where readers look for it, is also the site's
  changelog page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OPTIONS_PAGE = ROOT / "docs" / "options.md"
MARKERS = re.compile(r"(<!-- options:start -->\n)(.*?)(<!-- options:end -->)", re.DOTALL)


def with_declared_options(markdown: str) -> str:
    """The page with the declared options' table between its markers."""
    from pytest_scylla.config.options import markdown_table

    if not MARKERS.search(markdown):
        raise ValueError("docs/options.md lost its <!-- options:start/end --> markers")
    return MARKERS.sub(lambda m: m[1] + markdown_table() + m[3], markdown, count=1)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "changelog.md", content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "options.md":
        # `\<` keeps a `<` literal on GitHub; Python-Markdown does not know that escape (it would
        # leave the backslash and take `<label>` for an HTML tag), so the site gets `&lt;`
        return with_declared_options(markdown).replace("\\<", "&lt;")
    return markdown


if __name__ == "__main__":
    text = OPTIONS_PAGE.read_text(encoding="utf-8")
    OPTIONS_PAGE.write_text(with_declared_options(text), encoding="utf-8")
    print(f"wrote the declared options into {OPTIONS_PAGE.relative_to(ROOT)}")
