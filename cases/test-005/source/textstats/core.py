from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_WORD_RE = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
_SENTENCE_END_RE = re.compile(r"[.!?]+(?=\s|$)")

DEFAULT_WPM = 230


def tokenize(text: str, *, min_length: int = 1, lowercase: bool = True) -> list[str]:
    words = _WORD_RE.findall(text)
    if lowercase:
        words = [word.lower() for word in words]
    return [word for word in words if len(word) >= min_length]


def load_stopwords(path: str | Path) -> frozenset[str]:
    words = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            words.add(line.lower())
    return frozenset(words)


def count_words(tokens: Iterable[str], stopwords: Iterable[str] = ()) -> Counter[str]:
    ignored = {word.lower() for word in stopwords}
    return Counter(token for token in tokens if token.lower() not in ignored)


def top_words(counts: Counter[str], n: int) -> list[tuple[str, int]]:
    if n < 0:
        raise ValueError("n must not be negative")
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def reading_time(word_count: int, wpm: int = DEFAULT_WPM) -> int:
    if wpm <= 0:
        raise ValueError("wpm must be positive")
    return math.ceil(word_count / wpm)


def sentence_count(text: str) -> int:
    count = len(_SENTENCE_END_RE.findall(text))
    if count == 0 and text.strip():
        return 1
    return count


@dataclass(frozen=True)
class Summary:
    words: int
    unique_words: int
    sentences: int
    reading_minutes: int
    top: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "words": self.words,
            "unique_words": self.unique_words,
            "sentences": self.sentences,
            "reading_minutes": self.reading_minutes,
            "top": [{"word": word, "count": count} for word, count in self.top],
        }


def summarize(
    text: str,
    *,
    top: int = 10,
    min_length: int = 1,
    lowercase: bool = True,
    stopwords: Iterable[str] = (),
    wpm: int = DEFAULT_WPM,
) -> Summary:
    tokens = tokenize(text, min_length=min_length, lowercase=lowercase)
    counts = count_words(tokens, stopwords)
    all_words = tokenize(text, lowercase=lowercase)
    return Summary(
        words=len(all_words),
        unique_words=len(set(all_words)),
        sentences=sentence_count(text),
        reading_minutes=reading_time(len(all_words), wpm),
        top=top_words(counts, top),
    )
