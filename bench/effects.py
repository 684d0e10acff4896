"""Simulate `scylla ablate report`'s component effects: family error with no effect, bias with one.

    python bench/effects.py [--quick] [--reps 2000] [--seed 2026] [--only pb-5]

Each replication draws synthetic run rows (pass or fail, a cost, a case) for the arms of a
design and calls the report's own code, `component_effects.effects(runs, design)`, on them: no
CLI, no session. A null scenario plants no effect on any factor; its family error is the share
of replications in which any factor is called "helps" or "hurts" (nominal 0.05), printed with
its binomial standard error. A power scenario plants one effect and prints the share of
replications that call it "helps". A planted scenario draws 1,000 runs per arm and prints each
planted factor's bias: the mean reported effect on pass minus the true main effect (pass-rate
points, the mean with the factor minus the mean without it, averaged over cases).

Designs: leave-one-out with five factors (the full arm, one arm without each factor, the empty
arm); Plackett-Burman with 12 arms and nine factors. Scenarios: both at 3, 5 and 10 runs per arm
(30 with the full run); two cases of different difficulty whose arms hold different numbers of
runs per case ("unequal", and the two-case Simpson example of issue 47); a Plackett-Burman run
that lost an arm to errors ("lost-arm"); a design whose tenth factor's column repeats the first's
("confounded", which must be reported as aliased, with no verdict); leave-one-out under
`--scylla-stop=decided` ("sequential": each arm stops when `sequential.decide_all` decides its
comparison with the full arm, at most 60 runs; its bias lines are at that n). `--quick` runs fewer
replications (about 80 s of CPU, three minutes on a busy two-core machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_scylla.results import component_effects as ce  # noqa: E402

Rows = list[dict[str, object]]
Rates = Callable[[frozenset[str], str], float]  # (kept factors, case) -> pass probability


def pb12(factors: int = 9) -> ce.Design:
    """Plackett-Burman's 12-run design (its generator row, cycled), the first `factors`
    columns."""
    first = [+1, +1, -1, +1, +1, +1, -1, -1, -1, +1, -1]
    rows = [first[-i:] + first[:-i] for i in range(11)] + [[-1] * 11]
    names = tuple(f"f{i}" for i in range(1, factors + 1))
    arms = {
        f"{i:02d}": frozenset(n for n, v in zip(names, row, strict=False) if v > 0)
        for i, row in enumerate(rows, 1)
    }
    return ce.Design("plackett-burman", "bench", names, arms)


def confounded() -> ce.Design:
    """PB-12's nine factors and a tenth kept exactly where the first is."""
    base = pb12()
    names = (*base.factors, "f10")
    arms = {a: kept | ({"f10"} if "f1" in kept else set()) for a, kept in base.arms.items()}
    return ce.Design("plackett-burman", "bench", names, arms)


def loo(factors: int = 5) -> ce.Design:
    names = tuple(f"f{i}" for i in range(1, factors + 1))
    every = frozenset(names)
    arms = {"01": every, "02": frozenset()}
    arms |= {f"{i:02d}": every - {n} for i, n in enumerate(names, 3)}
    return ce.Design("leave-one-out", "bench", names, arms)


def draw(
    rng: numpy.random.Generator,
    design: ce.Design,
    runs: Callable[[str, str], int],
    rate: Rates,
    cases: tuple[str, ...] = ("c1",),
    lost: frozenset[str] = frozenset(),
) -> Rows:
    """Run rows as `runs.csv` holds them: `runs(arm, case)` runs of each arm and case (none of
    an arm in `lost`), each passing with `rate(kept, case)`."""
    rows: Rows = []
    for arm, kept in design.arms.items():
        if arm in lost:
            continue
        for case in cases:
            n = runs(arm, case)
            passed = rng.random(n) < rate(kept, case)
            cost = 0.10 + 0.02 * rng.random(n)
            rows += [
                {
                    "tier": "T0",
                    "subtest": arm,
                    "case_id": case,
                    "run_number": i + 1,
                    "outcome": "pass" if p else "fail",
                    "cost_usd": float(c),
                }
                for i, (p, c) in enumerate(zip(passed, cost, strict=True))
            ]
    return rows


def flat(p: float) -> Rates:
    return lambda kept, case: p


def simpson_runs(arm: str, case: str) -> int:
    """The full arm ran mostly the hard case, the arm without f1 mostly the easy one."""
    heavy = {("01", "hard"), ("03", "easy")}
    return 18 if (arm, case) in heavy else (2 if arm in ("01", "03") else 10)


def difficulty(kept: frozenset[str], case: str) -> float:
    return 0.8 if case == "easy" else 0.2


NULLS: dict[str, Callable[[numpy.random.Generator], tuple[Rows, ce.Design]]] = {
    **{
        f"loo-{n}": (lambda rng, n=n: (draw(rng, loo(), lambda a, c: n, flat(0.5)), loo()))
        for n in (3, 5, 10, 30)
    },
    **{
        f"pb-{n}": (lambda rng, n=n: (draw(rng, pb12(), lambda a, c: n, flat(0.5)), pb12()))
        for n in (3, 5, 10, 30)
    },
    "unequal": lambda rng: (
        draw(
            rng,
            pb12(),
            lambda a, c: int(rng.integers(1, 11)),
            difficulty,
            ("easy", "hard"),
        ),
        pb12(),
    ),
    "simpson": lambda rng: (
        draw(rng, loo(2), simpson_runs, difficulty, ("easy", "hard")),
        loo(2),
    ),
    "lost-arm": lambda rng: (
        draw(
            rng,
            pb12(),
            lambda a, c: 5,
            flat(0.5),
            lost=frozenset({f"{int(rng.integers(1, 13)):02d}"}),
        ),
        pb12(),
    ),
    "confounded": lambda rng: (draw(rng, confounded(), lambda a, c: 5, flat(0.5)), confounded()),
}
QUICK_NULLS = ("loo-3", "loo-5", "loo-10", "pb-3", "pb-5", "pb-10")


def additive(base: float, planted: dict[str, float], easier: float = 0.0) -> Rates:
    """Pass probability `base` plus each kept factor's planted effect (the main effect on the
    difference scale is then exactly the planted one); `easier` added in the easy case."""
    return lambda kept, case: (
        base + sum(planted.get(f, 0.0) for f in kept) + (easier if case == "easy" else 0.0)
    )


PLANTS: dict[str, tuple[ce.Design, dict[str, float], Callable[[str, str], int], Rates, tuple]] = {
    "loo f1 +0.30": (loo(), {"f1": 0.30}, lambda a, c: 1000, additive(0.4, {"f1": 0.3}), ("c1",)),
    "pb f1 +0.45, f2 -0.35": (
        pb12(),
        {"f1": 0.45, "f2": -0.35},
        lambda a, c: 1000,
        additive(0.45, {"f1": 0.45, "f2": -0.35}),
        ("c1",),
    ),
    "pb two cases, unequal runs, f3 +0.20": (
        pb12(),
        {"f3": 0.20},
        lambda a, c: 1000 if (int(a) + (c == "easy")) % 2 else 300,
        additive(0.2, {"f3": 0.2}, easier=0.5),
        ("easy", "hard"),
    ),
}


POWERS: dict[str, tuple[ce.Design, str, int, Rates]] = {  # name: design, factor, runs, rates
    "loo-10 f1 +0.40": (loo(), "f1", 10, additive(0.3, {"f1": 0.4})),
    "loo-30 f1 +0.20": (loo(), "f1", 30, additive(0.4, {"f1": 0.2})),
    "pb-5 f1 +0.30": (pb12(), "f1", 5, additive(0.35, {"f1": 0.3})),
    "pb-10 f1 +0.20": (pb12(), "f1", 10, additive(0.4, {"f1": 0.2})),
}


def power(name: str, reps: int, seed: int) -> None:
    """The share of replications that call the planted factor by its sign."""
    design, factor, n, rate = POWERS[name]
    rng = numpy.random.default_rng(seed)
    start = time.perf_counter()
    found = 0
    for _ in range(reps):
        effects = ce.effects(draw(rng, design, lambda a, c: n, rate), design, needed=False)
        found += any(e.factor == factor and e.verdict == "helps" for e in effects)
    x = found / reps
    print(
        f"power {name}: {x:.3f} ± {(x * (1 - x) / reps) ** 0.5:.3f}"
        f"   ({reps} reps, {time.perf_counter() - start:.0f} s)",
        flush=True,
    )


def stopped(
    rng: numpy.random.Generator, rates: dict[str, float], limit: int = 60
) -> tuple[Rows, ce.Design]:
    """Leave-one-out under `--scylla-stop=decided`: each arm without a factor against the full
    arm, each comparison stopping when `sequential.decide_all` decides it (the full arm runs
    while any is open); `rates`: arm -> pass rate. The rows are the runs made."""
    from pytest_scylla.results.sequential import decide_all

    design = loo(3)
    drawn = {a: dict(enumerate((rng.random(limit) < p).tolist(), 1)) for a, p in rates.items()}
    found = decide_all(drawn, {a: "01" for a in rates if a != "01"}, limit, intervals=False)
    made = {a: d.at if d.closed else limit for a, d in found.items()}
    made["01"] = max(made.values())
    rows: Rows = [
        {"tier": "T0", "subtest": a, "case_id": "c1", "outcome": "pass" if ok else "fail"}
        for a, runs in drawn.items()
        for i, ok in runs.items()
        if i <= made[a]
    ]
    return rows, design


NULLS["sequential"] = lambda rng: stopped(rng, {"01": 0.5, "03": 0.5, "04": 0.5, "05": 0.5})


def sequential_bias(reps: int, seed: int) -> None:
    """The bias of a leave-one-out effect when the arms stopped by decision: f1 neutral, then
    f1 worth +0.20 (its arm without it at 0.3, the full arm at 0.5)."""
    for truth, without in ((0.0, 0.5), (0.2, 0.3)):
        rng = numpy.random.default_rng(seed)
        start = time.perf_counter()
        got = []
        for _ in range(reps):
            rows, design = stopped(rng, {"01": 0.5, "03": without, "04": 0.5, "05": 0.5})
            effect = ce.effects(rows, design, needed=False)[0]
            if effect.delta_pass is not None:
                got.append(effect.delta_pass)
        x = float(numpy.mean(got)) - truth
        print(
            f"bias sequential stop, f1 {truth:+.2f}: {x:+.3f}"
            f"   ({len(got)} reps, at most 60 runs per arm, {time.perf_counter() - start:.0f} s)",
            flush=True,
        )


def null(name: str, reps: int, seed: int) -> None:
    rng = numpy.random.default_rng(seed)
    start = time.perf_counter()
    wrong = aliased = 0
    for _ in range(reps):
        rows, design = NULLS[name](rng)
        found = ce.effects(rows, design, needed=False)
        wrong += any(e.verdict in ("helps", "hurts") for e in found)
        aliased += any("aliased" in e.verdict for e in found)
    rate = wrong / reps
    se = (rate * (1 - rate) / reps) ** 0.5
    said = f", reported as aliased in {aliased / reps:.0%}" if name == "confounded" else ""
    print(
        f"null {name}: family error {rate:.3f} ± {se:.3f}"
        f"   ({reps} reps{said}, {time.perf_counter() - start:.0f} s)",
        flush=True,
    )


def bias(name: str, reps: int, seed: int) -> None:
    design, planted, runs, rate, cases = PLANTS[name]
    rng = numpy.random.default_rng(seed)
    start = time.perf_counter()
    found: dict[str, list[float]] = {f: [] for f in planted}
    for _ in range(reps):
        for effect in ce.effects(draw(rng, design, runs, rate, cases), design, needed=False):
            if effect.factor in planted and effect.delta_pass is not None:
                found[effect.factor].append(effect.delta_pass)
    for factor, truth in planted.items():
        got = found[factor]
        x = float(numpy.mean(got)) - truth if got else float("nan")
        print(
            f"bias {name} [{factor}]: {x:+.3f}"
            f"   (true {truth:+.2f}, {len(got)} reps, {time.perf_counter() - start:.0f} s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer replications (minutes)")
    parser.add_argument("--reps", type=int, help="replications per null scenario")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--only", help="one scenario by name (null or planted)")
    args = parser.parse_args()
    reps = args.reps or (300 if args.quick else 2000)
    bias_reps = 10 if args.quick else 40
    names = [n for n in NULLS if not args.quick or n in QUICK_NULLS or not n[-1].isdigit()]
    if args.only:
        names = [n for n in NULLS if n == args.only]
    for name in names:
        null(name, reps, args.seed)
    for name in POWERS:
        if not args.only or args.only == name:
            power(name, max(50, reps // 4), args.seed)
    for name in PLANTS:
        if not args.only or args.only == name:
            bias(name, bias_reps, args.seed)
    if not args.only or args.only == "sequential-bias":
        sequential_bias(reps, args.seed)


if __name__ == "__main__":
    main()
