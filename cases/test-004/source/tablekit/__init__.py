"""tablekit: render lists of records as tables."""

from tablekit.export import to_csv, to_html, to_markdown, to_text

__all__ = ["to_csv", "to_html", "to_markdown", "to_text"]
__version__ = "0.9.0"
