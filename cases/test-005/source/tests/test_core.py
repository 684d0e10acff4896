from collections import Counter

import pytest

from textstats.core import (
    Summary,
    count_words,
    load_stopwords,
    reading_time,
    sentence_count,
    summarize,
    tokenize,
    top_words,
)


def test_tokenize():
    assert tokenize("It's a well-known FACT: 42 cats.") == [
        "it's",
        "a",
        "well-known",
        "fact",
        "cats",
    ]


def test_tokenize_options():
    assert tokenize("A bb Ccc", min_length=2, lowercase=False) == ["bb", "Ccc"]


def test_load_stopwords(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("# comment\nThe\n\nand  # inline\n", encoding="utf-8")
    assert load_stopwords(path) == frozenset({"the", "and"})


def test_count_words_ignores_stopwords_case_insensitively():
    assert count_words(["A", "b", "a", "The"], stopwords=["the"]) == Counter(
        {"A": 1, "a": 1, "b": 1}
    )


def test_top_words_orders_by_count_then_word():
    counts = Counter({"b": 2, "a": 2, "c": 5, "d": 1})
    assert top_words(counts, 3) == [("c", 5), ("a", 2), ("b", 2)]
    assert top_words(counts, 0) == []
    with pytest.raises(ValueError):
        top_words(counts, -1)


def test_reading_time_rounds_up():
    assert reading_time(0) == 0
    assert reading_time(1) == 1
    assert reading_time(460) == 2
    assert reading_time(461) == 3
    assert reading_time(100, wpm=50) == 2
    with pytest.raises(ValueError):
        reading_time(10, wpm=0)


def test_sentence_count():
    assert sentence_count("One. Two! Three?") == 3
    assert sentence_count("no full stop") == 1
    assert sentence_count("version 1.2 is out.") == 1
    assert sentence_count("   ") == 0


def test_summarize():
    summary = summarize("The cat. The dog!", top=1, stopwords=["the"])
    assert summary == Summary(
        words=4, unique_words=3, sentences=2, reading_minutes=1, top=[("cat", 1)]
    )
    assert summary.as_dict()["top"] == [{"word": "cat", "count": 1}]
