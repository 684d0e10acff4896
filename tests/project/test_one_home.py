"""One home for each statistic the results share: the family α, Holm's adjustment, scipy's
percentile bootstrap and the Cost-of-Pass formula live in `results/stats.py`, the stratified
Cost-of-Pass bootstrap in `results/cop_interval.py`; a second copy
elsewhere in the package fails here (the copies drift: three `ALPHA = 0.05` and three Holm
calls once lived in `compare`, `stats` and `component_effects`, two scipy bootstraps with their
own constants in `ablation` and `compare`)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "pytest_scylla"

HOMES = {  # what is defined or called, and the modules allowed to
    r"^ALPHA\s*=": ("results/stats.py",),
    r"\bmultipletests\(": ("results/stats.py",),
    # scipy's bootstrap: the percentile one of the differences, and the pass rate's BCa
    # interval (metrics.bca_interval: a statistic of its own, not a second copy)
    r"^\s*from scipy\.stats import [^\n]*\bbootstrap\b": (
        "results/stats.py",
        "results/metrics.py",
    ),
    # Cost-of-Pass: mean cost over pass rate, infinite without a pass (`stats.cop`, and its
    # array form for the bootstrap's resamples)
    r"^def cop(_draws)?\(mean": ("results/stats.py",),
    r"inf if [^\n]*<=? ?0 else [^\n]*/": ("results/stats.py",),
    # resampling by hand: the stratified Cost-of-Pass bootstrap, and Cliff's delta's interval
    # (its draws are in the reference export, which stays byte-identical)
    r"\brng\.(choice|integers)\(": ("results/stats.py", "results/cop_interval.py"),
    r"^RESAMPLES\s*=": ("results/stats.py", "results/cop_interval.py"),
}


def homes_broken(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(package).as_posix()
        for pattern, homes in HOMES.items():
            if rel not in homes and re.search(pattern, text, re.M):
                found.append(f"{rel}: {pattern} belongs in {' or '.join(homes)} only")
    return found


def test_each_shared_statistic_has_one_home() -> None:
    assert homes_broken(PACKAGE) == []


def test_a_second_copy_is_found(tmp_path: Path) -> None:
    """Positive control: a module of its own with a second α and a Holm call."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "stats.py").write_text("ALPHA = 0.05\nmultipletests([])\n")
    (tmp_path / "results" / "other.py").write_text(
        "ALPHA = 0.05\nmultipletests([0.1])\nRESAMPLES = 9\n\n\ndef f():\n"
        "    from scipy.stats import bootstrap\n    rng.integers(0, 3)\n\n\n"
        "def cop(mean_cost, rate):\n    return math.inf if rate <= 0 else mean_cost / rate\n"
    )
    assert [line.split(": ", 1)[1].split(" belongs")[0] for line in homes_broken(tmp_path)] == [
        r"^ALPHA\s*=",
        r"\bmultipletests\(",
        r"^\s*from scipy\.stats import [^\n]*\bbootstrap\b",
        r"^def cop(_draws)?\(mean",
        r"inf if [^\n]*<=? ?0 else [^\n]*/",
        r"\brng\.(choice|integers)\(",
        r"^RESAMPLES\s*=",
    ]
