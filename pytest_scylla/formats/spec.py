"""Cases and rubrics: frozen dataclasses, loaded from YAML and validated (schema, then meaning).

Loading is pure: it reads files and nothing else (no git, no network, no processes).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pytest_scylla.formats import PACKAGED_RUBRICS
from pytest_scylla.formats.yamlmarks import (
    Document,
    Problem,
    SpecError,
    display,
    load_yaml,
    read_text,
    validate,
)

DEFAULT_TIMEOUT_SECONDS = 600
DEFAULT_MAX_COST_USD = 2.0
DEFAULT_MAX_TURNS = 50
DEFAULT_CHECK_TIMEOUT_SECONDS = 60
DEFAULT_PASS_THRESHOLD = 0.60
# The paper's grade scale (Table 3): the lowest score of each grade.
DEFAULT_GRADE_SCALE: tuple[tuple[str, float], ...] = (
    ("S", 1.0), ("A", 0.80), ("B", 0.60), ("C", 0.40), ("D", 0.20), ("F", 0.0))
WEIGHT_TOLERANCE = 1e-6
# The paper's workflow categories (Table 15); each is also a pytest marker.
CATEGORIES = ("build-system", "ci-cd", "bug-fixing", "new-feature", "refactoring",
              "optimization", "review", "documentation", "issue-filing")


@dataclass(frozen=True)
class Check:
    """A deterministic command run in the workspace after the agent finished."""

    name: str
    run: str | tuple[str, ...]
    expect_exit: int = 0
    expect_stdout: tuple[Literal["exact", "contains", "regex"], str] | None = None
    timeout_seconds: int = DEFAULT_CHECK_TIMEOUT_SECONDS
    description: str = ""


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


@dataclass(frozen=True)
class Source:
    path: Path | None = None
    repo: str | None = None  # as written: a URL, an absolute path, or `self`
    commit: str | None = None
    url: str | None = None  # where it is cloned from (`self`: this repository's root)


SELF = "self"  # source.repo: the git repository the case file lives in
REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\\:]+@[^/:]+:")  # scheme://..., user@host:path


def source_url(doc: Document, repo: str, root: Path, problems: list[Problem]) -> str | None:
    """Where `repo` is cloned from: a URL or absolute path as written, `self` resolved to the
    root of the git repository holding the case (found by walking up to its `.git`, without
    running git). A relative path would be read from the harness's cache folder: refused."""
    if repo == SELF:
        top = next((p for p in (root, *root.parents) if (p / ".git").exists()), None)
        if top is None:
            problems.append(doc.problem(("source", "repo"), f"repo: self, but no git repository "
                                        f"holds {display(root)}; commit the case into one, or "
                                        "name the repository's URL"))
        return str(top) if top else None
    if REMOTE.match(repo) or Path(repo).is_absolute():
        return repo
    problems.append(doc.problem(("source", "repo"), f"repo '{repo}' is a relative path, which "
                                "would be read from the harness's cache folder; write `self` for "
                                "the repository this case lives in, or a URL or absolute path"))
    return None


@dataclass(frozen=True)
class Case:
    """One task: what the agent starts from, what it is asked, and how its work is scored."""

    id: str
    name: str
    category: str
    root: Path
    file: Path
    line: int
    source: Source
    prompt: Path
    rubric: Rubric
    checks: tuple[Check, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    size: str | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    max_cost_usd: float = DEFAULT_MAX_COST_USD
    max_turns: int = DEFAULT_MAX_TURNS
    hidden: Path | None = None
    solution: Path | None = None
    tiers: tuple[str, ...] | None = None
    protected: tuple[str, ...] = ()  # globs restored from the pinned commit before the checks
    image: str | None = None  # the Docker image the case's runs use (docker sandbox)
    milestones: tuple[str, ...] = ()  # check names in the order the task reaches them (R_Prog)


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
    categories: list[Category] = []
    seen: dict[str, int] = {}
    for name, cat in data["categories"].items():
        if not cat["items"]:
            problems.append(doc.problem(("categories", name), f"category '{name}' has no items; "
                                        "add at least one item or remove the category"))
        items = []
        for i, raw in enumerate(cat["items"]):
            where = ("categories", name, "items", i)
            line = doc.line(where)
            if raw["id"] in seen:
                problems.append(doc.problem(where, f"duplicate item id '{raw['id']}' (first at "
                                            f"line {seen[raw['id']]}); item ids must be unique"))
            seen.setdefault(raw["id"], line)
            kind = raw.get("kind", "judge")
            if kind == "check" and "check" not in raw:
                problems.append(doc.problem(where, f"item '{raw['id']}' has kind: check but no "
                                            "'check:' naming the case check that scores it"))
            if kind != "check" and "check" in raw:
                problems.append(doc.problem((*where, "check"), f"item '{raw['id']}' names a "
                                            "check but is not kind: check; add 'kind: check'"))
            items.append(RubricItem(
                id=raw["id"], category=name, description=raw["description"],
                points=float(raw["points"]), kind=kind, check=raw.get("check"),
                required=raw.get("required", False), na_condition=raw.get("na_condition"),
                line=line))
        categories.append(Category(name=name, weight=float(cat["weight"]), items=tuple(items),
                                   description=cat.get("description", ""),
                                   scoring_type=cat.get("scoring_type")))
    total = sum(c.weight for c in categories)
    if not math.isclose(total, 1.0, abs_tol=WEIGHT_TOLERANCE):
        listing = ", ".join(f"{c.name} {c.weight:g}" for c in categories)
        problems.append(doc.problem(("categories",), f"category weights sum to {total:g}, not 1 "
                                    f"({listing}); adjust them so they add up to 1"))
    grading = data.get("grading", {})
    scale = DEFAULT_GRADE_SCALE
    if "grade_scale" in grading:
        scale = tuple((g, float(grading["grade_scale"][g])) for g in "SABCDF")
        if any(a[1] < b[1] for a, b in itertools.pairwise(scale)):
            problems.append(doc.problem(("grading", "grade_scale"), "grade_scale must not "
                                        "increase from S to F (S >= A >= B >= C >= D >= F)"))
    if problems:
        raise SpecError(problems)
    return Rubric(path=path, name=data.get("name", path.stem), categories=tuple(categories),
                  pass_threshold=float(grading.get("pass_threshold", DEFAULT_PASS_THRESHOLD)),
                  grade_scale=scale)


def inside(doc: Document, where: tuple[str | int, ...], rel: str, root: Path,
           want: Literal["file", "dir", "any"], problems: list[Problem]) -> Path | None:
    """Resolve `rel` inside `root`; on any problem, record it and return None."""
    what = {"file": "a file", "dir": "a folder", "any": "a file or folder"}[want]
    if Path(rel).is_absolute():
        problems.append(doc.problem(where, f"'{rel}' is an absolute path; use a path relative "
                                    f"to {display(root)}"))
        return None
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        problems.append(doc.problem(where, f"'{rel}' points outside {display(root)}; "
                                    f"expected {what} inside it"))
        return None
    ok = {"file": target.is_file, "dir": target.is_dir, "any": target.exists}[want]()
    if not ok:
        problems.append(doc.problem(where, f"'{rel}' not found: expected {what} at "
                                    f"{display(root / rel)}"))
        return None
    return target


def _check(raw: dict[str, Any]) -> Check:
    run = raw["run"]
    stdout = raw.get("expect_stdout")
    return Check(name=raw["name"], run=run if isinstance(run, str) else tuple(run),
                 expect_exit=raw.get("expect_exit", 0),
                 expect_stdout=next(iter(stdout.items())) if stdout else None,
                 timeout_seconds=raw.get("timeout_seconds", DEFAULT_CHECK_TIMEOUT_SECONDS),
                 description=raw.get("description", ""))


def _rubric_for(doc: Document, ref: str, root: Path, rubrics_dir: Path,
                problems: list[Problem]) -> Rubric | None:
    """A rubric file inside the case, or a shared rubric named under `rubrics_dir`."""
    if "/" not in ref and "\\" not in ref and not ref.endswith((".yaml", ".yml")):
        shared = rubrics_dir / f"{ref}.yaml"
        if not shared.is_file() and (PACKAGED_RUBRICS / f"{ref}.yaml").is_file():
            shared = PACKAGED_RUBRICS / f"{ref}.yaml"  # the package's shared rubrics
        if not shared.is_file():
            problems.append(doc.problem(("rubric",), f"rubric '{ref}' not found: expected "
                                        f"{display(shared)} (a shared rubric) or a .yaml file "
                                        "in the case"))
            return None
        path: Path | None = shared
    else:
        path = inside(doc, ("rubric",), ref, root, "file", problems)
    if path is None:
        return None
    try:
        return load_rubric(path)
    except SpecError as exc:
        problems.extend(exc.problems)
        return None


def load_case(file: Path, rubrics_dir: Path, known_tiers: Collection[str] | None = None) -> Case:
    """Load `cases/<id>/test.yaml`, its rubric and every file it names; raise SpecError if bad."""
    doc = load_yaml(file)
    validate(doc, "case")
    data, root = doc.data, file.parent
    problems: list[Problem] = []
    if data["id"] != root.name:
        problems.append(doc.problem(("id",), f"id '{data['id']}' differs from the case folder "
                                    f"name '{root.name}'; make them equal"))
    raw_source = data["source"]
    source = Source(repo=raw_source.get("repo"), commit=raw_source.get("commit"))
    if source.repo is not None:
        source = replace(source, url=source_url(doc, source.repo, root, problems))
    if "path" in raw_source:
        source = Source(path=inside(doc, ("source", "path"), raw_source["path"], root, "dir",
                                    problems))
    prompt = inside(doc, ("prompt",), data["prompt"], root, "file", problems)
    try:
        if prompt is not None and not read_text(prompt).strip():
            problems.append(doc.problem(("prompt",), f"prompt file {display(prompt)} is empty; "
                                        "write the task the agent is given"))
    except SpecError as exc:  # not UTF-8, or a control character: named where it is
        problems.extend(exc.problems)
    hidden = (inside(doc, ("hidden",), data["hidden"], root, "dir", problems)
              if "hidden" in data else None)
    solution = (inside(doc, ("solution",), data["solution"], root, "any", problems)
                if "solution" in data else None)
    checks = tuple(_check(raw) for raw in data["checks"])
    names: dict[str, int] = {}
    for i, check in enumerate(checks):
        if check.name in names:
            problems.append(doc.problem(("checks", i), f"duplicate check name '{check.name}' "
                                        f"(first at line {names[check.name]})"))
        names.setdefault(check.name, doc.line(("checks", i)))
        if check.expect_stdout and check.expect_stdout[0] == "regex":
            try:
                re.compile(check.expect_stdout[1], re.MULTILINE)
            except re.error as exc:  # found now, not after the agent has run
                problems.append(doc.problem(("checks", i, "expect_stdout", "regex"),
                                            f"the regex does not compile: {exc.msg} at "
                                            f"position {exc.pos}; fix the pattern"))
    if source.path is not None:  # the agent gets a copy of the source: nothing it must not see
        for what, path in (("the hidden tests", hidden), ("the solution", solution),
                           ("the case file", file)):
            if path is not None and path.resolve().is_relative_to(source.path.resolve()):
                problems.append(doc.problem(("source", "path"), f"source.path "
                                            f"'{raw_source['path']}' contains {what} "
                                            f"({display(path)}), which the agent must not "
                                            "see; point it at a folder with the code only"))
    for i, name in enumerate(data.get("milestones", [])):
        if name not in names:
            problems.append(doc.problem(("milestones", i), f"milestone '{name}' is not one of "
                                        f"the case's checks: {', '.join(names)}"))
    if known_tiers is not None:
        for i, tier in enumerate(data.get("tiers", [])):
            if tier not in known_tiers:
                problems.append(doc.problem(("tiers", i), f"unknown tier '{tier}'; known tiers: "
                                            f"{', '.join(known_tiers) or 'none'}"))
    rubric = _rubric_for(doc, data["rubric"], root, rubrics_dir, problems)
    if rubric is not None:
        for item in rubric.items:
            if item.check is not None and item.check not in names:
                problems.append(Problem(rubric.path, item.line, f"item '{item.id}' names check "
                                        f"'{item.check}', which {display(file)} does not define;"
                                        f" its checks: {', '.join(names)}"))
    if problems:
        raise SpecError(problems)
    assert prompt is not None
    assert rubric is not None
    return Case(
        id=data["id"], name=data["name"], category=data["category"], root=root, file=file,
        line=doc.line(("id",)), source=source, prompt=prompt, rubric=rubric, checks=checks,
        description=data.get("description", ""), tags=tuple(data.get("tags", [])),
        size=data.get("size"),
        timeout_seconds=data.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS),
        max_cost_usd=float(data.get("max_cost_usd", DEFAULT_MAX_COST_USD)),
        max_turns=data.get("max_turns", DEFAULT_MAX_TURNS), hidden=hidden, solution=solution,
        tiers=tuple(data["tiers"]) if "tiers" in data else None,
        protected=tuple(data.get("protected", ())), image=data.get("image"),
        milestones=tuple(data.get("milestones", ())))
