from __future__ import annotations

import json

from textstats.core import Summary


def format_text(summary: Summary, *, title: str | None = None) -> str:
    lines = []
    if title:
        lines.append(f"== {title}")
    lines.append(f"words:           {summary.words}")
    lines.append(f"unique words:    {summary.unique_words}")
    lines.append(f"sentences:       {summary.sentences}")
    lines.append(f"reading time:    {summary.reading_minutes} min")
    if summary.top:
        lines.append("top words:")
        width = max(len(word) for word, _ in summary.top)
        for word, count in summary.top:
            lines.append(f"  {word:<{width}}  {count}")
    return "\n".join(lines) + "\n"


def format_json(summary: Summary, *, title: str | None = None) -> str:
    data = summary.as_dict()
    if title is not None:
        data = {"file": title, **data}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
