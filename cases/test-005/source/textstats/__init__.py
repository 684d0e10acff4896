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

__all__ = [
    "Summary",
    "count_words",
    "load_stopwords",
    "reading_time",
    "sentence_count",
    "summarize",
    "tokenize",
    "top_words",
]
__version__ = "1.0.3"
