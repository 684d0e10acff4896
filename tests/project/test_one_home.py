"""One home for each statistic the results share: the family α and Holm's adjustment live in
`results/stats.py`, the Cost-of-Pass bootstrap in `results/cop_interval.py`; a second copy
elsewhere in the package fails here (the copies drift: three `ALPHA = 0.05` and three Holm
calls once lived in `compare`, `stats` and `component_effects`)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "pytest_scylla"

HOMES = {  # what is defined or called, and the one module allowed to
    r"^ALPHA\s*=": "results/stats.py",
    r"\bmultipletests\(": "results/stats.py",
}


def homes_broken(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(package).as_posix()
        for pattern, home in HOMES.items():
            if rel != home and re.search(pattern, text, re.M):
                found.append(f"{rel}: {pattern} belongs in {home} only")
    return found


def test_each_shared_statistic_has_one_home() -> None:
    assert homes_broken(PACKAGE) == []


def test_a_second_copy_is_found(tmp_path: Path) -> None:
    """Positive control: a module of its own with a second α and a Holm call."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "stats.py").write_text("ALPHA = 0.05\nmultipletests([])\n")
    (tmp_path / "results" / "other.py").write_text("ALPHA = 0.05\nmultipletests([0.1])\n")
    assert homes_broken(tmp_path) == [
        r"results/other.py: ^ALPHA\s*= belongs in results/stats.py only",
        r"results/other.py: \bmultipletests\( belongs in results/stats.py only",
    ]
