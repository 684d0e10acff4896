"""Rubrics: weighted categories of scored items and a grade scale, loaded from YAML and validated
(schema, then meaning). Loading is pure: it reads files and nothing else."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pytest_scylla.formats.yamlmarks import Document, Problem, SpecError, load_yaml, validate

DEFAULT_PASS_THRESHOLD = 0.60
# The paper's grade scale (Table 3): the lowest score of each grade.
DEFAULT_GRADE_SCALE: tuple[tuple[str, float], ...] = (
    ("S", 1.0),
    ("A", 0.80),
    ("B", 0.60),
    ("C", 0.40),
    ("D", 0.20),
    ("F", 0.0),
)
WEIGHT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class RubricItem:
    id: str
    category: str
    description: str
    points: float
    kind: Literal["judge", "check"] = "judge"
    check: str | None = None
    required: bool = False
    na_condition: str | None = None
    line: int = 1


@dataclass(frozen=True)
class Category:
    name: str
    weight: float
    items: tuple[RubricItem, ...]
    description: str = ""
    scoring_type: str | None = None


@dataclass(frozen=True)
class Rubric:
    path: Path
    name: str
    categories: tuple[Category, ...]
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    grade_scale: tuple[tuple[str, float], ...] = DEFAULT_GRADE_SCALE

    @property
    def items(self) -> tuple[RubricItem, ...]:
        return tuple(item for cat in self.categories for item in cat.items)

    def grade(self, score: float) -> str:
        """The grade of a score: the first grade whose threshold the score reaches."""
        for grade, threshold in self.grade_scale:
            if score >= threshold - 1e-12:
                return grade
        return self.grade_scale[-1][0]


def load_rubric(path: Path) -> Rubric:
    """Load and validate a rubric file (cached per file version)."""
    stat = path.stat() if path.is_file() else None
    version = (stat.st_mtime_ns, stat.st_size) if stat else (0, 0)
    return _load_rubric(path.resolve(), *version)


@lru_cache(maxsize=256)
def _load_rubric(path: Path, _mtime: int, _size: int) -> Rubric:
    doc = load_yaml(path)
    validate(doc, "rubric")
    data = doc.data
    problems: list[Problem] = []
    categories = _categories(doc, problems)
    _validate_weights(doc, categories, problems)
    grading = data.get("grading", {})
    scale = _grade_scale(doc, grading, problems)
    if problems:
        raise SpecError(problems)
    return Rubric(
        path=path,
        name=data.get("name", path.stem),
        categories=tuple(categories),
        pass_threshold=float(grading.get("pass_threshold", DEFAULT_PASS_THRESHOLD)),
        grade_scale=scale,
    )


def _categories(doc: Document, problems: list[Problem]) -> list[Category]:
    """The rubric's categories with their items; an empty category is a problem."""
    categories: list[Category] = []
    seen: dict[str, int] = {}  # item id -> the line it is first defined at
    for name, cat in doc.data["categories"].items():
        if not cat["items"]:
            problems.append(
                doc.problem(
                    ("categories", name),
                    f"category '{name}' has no items; add at least one item or remove the category",
                )
            )
        items = tuple(
            _item(doc, name, i, raw, seen, problems) for i, raw in enumerate(cat["items"])
        )
        categories.append(
            Category(
                name=name,
                weight=float(cat["weight"]),
                items=items,
                description=cat.get("description", ""),
                scoring_type=cat.get("scoring_type"),
            )
        )
    return categories


def _item(
    doc: Document,
    category: str,
    i: int,
    raw: dict[str, Any],
    seen: dict[str, int],
    problems: list[Problem],
) -> RubricItem:
    """One item of a category: its id unique, `check:` given exactly when it is a check item."""
    where = ("categories", category, "items", i)
    line = doc.line(where)
    if raw["id"] in seen:
        problems.append(
            doc.problem(
                where,
                f"duplicate item id '{raw['id']}' (first at "
                f"line {seen[raw['id']]}); item ids must be unique",
            )
        )
    seen.setdefault(raw["id"], line)
    kind = raw.get("kind", "judge")
    if kind == "check" and "check" not in raw:
        problems.append(
            doc.problem(
                where,
                f"item '{raw['id']}' has kind: check but no "
                "'check:' naming the case check that scores it",
            )
        )
    if kind != "check" and "check" in raw:
        problems.append(
            doc.problem(
                (*where, "check"),
                f"item '{raw['id']}' names a check but is not kind: check; add 'kind: check'",
            )
        )
    return RubricItem(
        id=raw["id"],
        category=category,
        description=raw["description"],
        points=float(raw["points"]),
        kind=kind,
        check=raw.get("check"),
        required=raw.get("required", False),
        na_condition=raw.get("na_condition"),
        line=line,
    )


def _validate_weights(doc: Document, categories: list[Category], problems: list[Problem]) -> None:
    """The category weights must add up to 1."""
    total = sum(c.weight for c in categories)
    if not math.isclose(total, 1.0, abs_tol=WEIGHT_TOLERANCE):
        listing = ", ".join(f"{c.name} {c.weight:g}" for c in categories)
        problems.append(
            doc.problem(
                ("categories",),
                f"category weights sum to {total:g}, not 1 "
                f"({listing}); adjust them so they add up to 1",
            )
        )


def _grade_scale(
    doc: Document, grading: dict[str, Any], problems: list[Problem]
) -> tuple[tuple[str, float], ...]:
    """The rubric's grade scale (else the paper's), which must not increase from S to F."""
    if "grade_scale" not in grading:
        return DEFAULT_GRADE_SCALE
    scale = tuple((g, float(grading["grade_scale"][g])) for g in "SABCDF")
    if any(a[1] < b[1] for a, b in itertools.pairwise(scale)):
        problems.append(
            doc.problem(
                ("grading", "grade_scale"),
                "grade_scale must not increase from S to F (S >= A >= B >= C >= D >= F)",
            )
        )
    return scale
