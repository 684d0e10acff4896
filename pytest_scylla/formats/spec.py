"""Cases: frozen dataclasses, loaded from YAML and validated (schema, then meaning); their
rubrics are `formats.rubric`'s.

Loading is pure: it reads files and nothing else (no git, no network, no processes).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pytest_scylla.formats import PACKAGED_RUBRICS
from pytest_scylla.formats.rubric import Rubric, load_rubric
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
# The paper's workflow categories (Table 15); each is also a pytest marker.
CATEGORIES = (
    "build-system",
    "ci-cd",
    "bug-fixing",
    "new-feature",
    "refactoring",
    "optimization",
    "review",
    "documentation",
    "issue-filing",
)


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
            problems.append(
                doc.problem(
                    ("source", "repo"),
                    f"repo: self, but no git repository "
                    f"holds {display(root)}; commit the case into one, or "
                    "name the repository's URL",
                )
            )
        return str(top) if top else None
    if REMOTE.match(repo) or Path(repo).is_absolute():
        return repo
    problems.append(
        doc.problem(
            ("source", "repo"),
            f"repo '{repo}' is a relative path, which "
            "would be read from the harness's cache folder; write `self` for "
            "the repository this case lives in, or a URL or absolute path",
        )
    )
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


def inside(
    doc: Document,
    where: tuple[str | int, ...],
    rel: str,
    root: Path,
    want: Literal["file", "dir", "any"],
    problems: list[Problem],
) -> Path | None:
    """Resolve `rel` inside `root`; on any problem, record it and return None."""
    what = {"file": "a file", "dir": "a folder", "any": "a file or folder"}[want]
    if Path(rel).is_absolute():
        problems.append(
            doc.problem(
                where, f"'{rel}' is an absolute path; use a path relative to {display(root)}"
            )
        )
        return None
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        problems.append(
            doc.problem(where, f"'{rel}' points outside {display(root)}; expected {what} inside it")
        )
        return None
    ok = {"file": target.is_file, "dir": target.is_dir, "any": target.exists}[want]()
    if not ok:
        problems.append(
            doc.problem(where, f"'{rel}' not found: expected {what} at {display(root / rel)}")
        )
        return None
    return target


def _check(raw: dict[str, Any]) -> Check:
    run = raw["run"]
    stdout = raw.get("expect_stdout")
    return Check(
        name=raw["name"],
        run=run if isinstance(run, str) else tuple(run),
        expect_exit=raw.get("expect_exit", 0),
        expect_stdout=next(iter(stdout.items())) if stdout else None,
        timeout_seconds=raw.get("timeout_seconds", DEFAULT_CHECK_TIMEOUT_SECONDS),
        description=raw.get("description", ""),
    )


def _rubric_for(
    doc: Document, ref: str, root: Path, rubrics_dir: Path, problems: list[Problem]
) -> Rubric | None:
    """A rubric file inside the case, or a shared rubric named under `rubrics_dir`."""
    if "/" not in ref and "\\" not in ref and not ref.endswith((".yaml", ".yml")):
        shared = rubrics_dir / f"{ref}.yaml"
        if not shared.is_file() and (PACKAGED_RUBRICS / f"{ref}.yaml").is_file():
            shared = PACKAGED_RUBRICS / f"{ref}.yaml"  # the package's shared rubrics
        if not shared.is_file():
            problems.append(
                doc.problem(
                    ("rubric",),
                    f"rubric '{ref}' not found: expected "
                    f"{display(shared)} (a shared rubric) or a .yaml file "
                    "in the case",
                )
            )
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
        problems.append(
            doc.problem(
                ("id",),
                f"id '{data['id']}' differs from the case folder "
                f"name '{root.name}'; make them equal",
            )
        )
    source = _source(doc, root, problems)
    prompt = _prompt(doc, root, problems)
    hidden = _optional_path(doc, "hidden", root, "dir", problems)
    solution = _optional_path(doc, "solution", root, "any", problems)
    checks = tuple(_check(raw) for raw in data["checks"])
    names = _check_names(doc, checks, problems)
    if source.path is not None:
        _validate_source_folder(doc, source.path, hidden, solution, problems)
    _validate_milestones(doc, names, problems)
    if known_tiers is not None:
        _validate_tiers(doc, known_tiers, problems)
    rubric = _rubric_for(doc, data["rubric"], root, rubrics_dir, problems)
    if rubric is not None:
        _validate_item_checks(rubric, file, names, problems)
    if problems:
        raise SpecError(problems)
    assert prompt is not None
    assert rubric is not None
    return Case(
        id=data["id"],
        name=data["name"],
        category=data["category"],
        root=root,
        file=file,
        line=doc.line(("id",)),
        source=source,
        prompt=prompt,
        rubric=rubric,
        checks=checks,
        description=data.get("description", ""),
        tags=tuple(data.get("tags", [])),
        size=data.get("size"),
        timeout_seconds=data.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS),
        max_cost_usd=float(data.get("max_cost_usd", DEFAULT_MAX_COST_USD)),
        max_turns=data.get("max_turns", DEFAULT_MAX_TURNS),
        hidden=hidden,
        solution=solution,
        tiers=tuple(data["tiers"]) if "tiers" in data else None,
        protected=tuple(data.get("protected", ())),
        image=data.get("image"),
        milestones=tuple(data.get("milestones", ())),
    )


def _source(doc: Document, root: Path, problems: list[Problem]) -> Source:
    """Where the agent starts from: a repository at a commit, or a folder inside the case."""
    raw = doc.data["source"]
    source = Source(repo=raw.get("repo"), commit=raw.get("commit"))
    if source.repo is not None:
        source = replace(source, url=source_url(doc, source.repo, root, problems))
    if "path" in raw:
        source = Source(path=inside(doc, ("source", "path"), raw["path"], root, "dir", problems))
    return source


def _prompt(doc: Document, root: Path, problems: list[Problem]) -> Path | None:
    """The prompt file: inside the case, readable as text and not empty."""
    prompt = inside(doc, ("prompt",), doc.data["prompt"], root, "file", problems)
    try:
        if prompt is not None and not read_text(prompt).strip():
            problems.append(
                doc.problem(
                    ("prompt",),
                    f"prompt file {display(prompt)} is empty; write the task the agent is given",
                )
            )
    except SpecError as exc:  # not UTF-8, or a control character: named where it is
        problems.extend(exc.problems)
    return prompt


def _optional_path(
    doc: Document,
    key: str,
    root: Path,
    want: Literal["file", "dir", "any"],
    problems: list[Problem],
) -> Path | None:
    """The path under `key` resolved inside the case, when the case gives one."""
    return inside(doc, (key,), doc.data[key], root, want, problems) if key in doc.data else None


def _check_names(
    doc: Document, checks: tuple[Check, ...], problems: list[Problem]
) -> dict[str, int]:
    """Each check's name and line; a name used twice or a regex that does not compile is a
    problem."""
    names: dict[str, int] = {}
    for i, check in enumerate(checks):
        if check.name in names:
            problems.append(
                doc.problem(
                    ("checks", i),
                    f"duplicate check name '{check.name}' (first at line {names[check.name]})",
                )
            )
        names.setdefault(check.name, doc.line(("checks", i)))
        if check.expect_stdout and check.expect_stdout[0] == "regex":
            try:
                re.compile(check.expect_stdout[1], re.MULTILINE)
            except re.error as exc:  # found now, not after the agent has run
                problems.append(
                    doc.problem(
                        ("checks", i, "expect_stdout", "regex"),
                        f"the regex does not compile: {exc.msg} at "
                        f"position {exc.pos}; fix the pattern",
                    )
                )
    return names


def _validate_source_folder(
    doc: Document, folder: Path, hidden: Path | None, solution: Path | None, problems: list[Problem]
) -> None:
    """The agent gets a copy of the source folder: it must hold nothing the agent must not see."""
    for what, path in (
        ("the hidden tests", hidden),
        ("the solution", solution),
        ("the case file", doc.path),
    ):
        if path is not None and path.resolve().is_relative_to(folder.resolve()):
            problems.append(
                doc.problem(
                    ("source", "path"),
                    f"source.path "
                    f"'{doc.data['source']['path']}' contains {what} "
                    f"({display(path)}), which the agent must not "
                    "see; point it at a folder with the code only",
                )
            )


def _validate_milestones(doc: Document, names: dict[str, int], problems: list[Problem]) -> None:
    """Every milestone must name one of the case's checks."""
    for i, name in enumerate(doc.data.get("milestones", [])):
        if name not in names:
            problems.append(
                doc.problem(
                    ("milestones", i),
                    f"milestone '{name}' is not one of the case's checks: {', '.join(names)}",
                )
            )


def _validate_tiers(doc: Document, known_tiers: Collection[str], problems: list[Problem]) -> None:
    """Every tier the case lists must be a known one."""
    for i, tier in enumerate(doc.data.get("tiers", [])):
        if tier not in known_tiers:
            problems.append(
                doc.problem(
                    ("tiers", i),
                    f"unknown tier '{tier}'; known tiers: {', '.join(known_tiers) or 'none'}",
                )
            )


def _validate_item_checks(
    rubric: Rubric, file: Path, names: dict[str, int], problems: list[Problem]
) -> None:
    """Every check a rubric item names must be one the case defines."""
    for item in rubric.items:
        if item.check is not None and item.check not in names:
            problems.append(
                Problem(
                    rubric.path,
                    item.line,
                    f"item '{item.id}' names check "
                    f"'{item.check}', which {display(file)} does not define;"
                    f" its checks: {', '.join(names)}",
                )
            )
