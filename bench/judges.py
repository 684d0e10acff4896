"""Wall time of the judge panel: three judges whose upstream takes `--latency` seconds each,
asked concurrently through the gateway with the real Anthropic SDK (oracle upstream).

    python bench/judges.py [--latency 2] [--repeat 3]

Goal: panel wall time <= 1.2 x the slowest judge (asked one after another it would be 3x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_scylla.formats.spec import load_case  # noqa: E402
from pytest_scylla.judging import prompt  # noqa: E402
from pytest_scylla.judging.judge_run import oracle_verdict  # noqa: E402
from pytest_scylla.judging.judges import DEFAULT_JUDGES, parse  # noqa: E402
from pytest_scylla.judging.panel import run_panel  # noqa: E402
from pytest_scylla.run.gateway import Gateway, Route  # noqa: E402
from pytest_scylla.run.gateway.oracle.model import Script  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["SCYLLA_ORACLE_JUDGE_DELAY"] = str(args.latency)
    case = load_case(ROOT / "cases/test-001/test.yaml", ROOT / "rubrics")
    items = [i for i in case.rubric.items if i.kind == "judge"]
    question = prompt.build(case, items, "Done.", "", ["hello.py"], [])
    specs = [parse(j) for j in DEFAULT_JUDGES]
    gateway = Gateway().start()
    walls, slowest = [], []
    with tempfile.TemporaryDirectory() as tmp:
        script = Script(
            mode="judge", workspace=Path(tmp), files=(), verdict=oracle_verdict(items, [])
        )
        for r in range(args.repeat):

            def url(n: int, _spec: object, r: int = r) -> str:
                key = f"bench{r}-{n}"
                gateway.open(Route(key=key, log_path=Path(tmp) / "calls.jsonl", script=script))
                return gateway.base_url(key)

            start = time.monotonic()
            results = run_panel(specs, question, items, url)
            walls.append(time.monotonic() - start)
            assert all(res.valid for res in results), [res.errors for res in results]
            slowest.append(max(res.seconds for res in results))
    gateway.stop()
    wall, slow = statistics.median(walls), statistics.median(slowest)
    print(
        f"judges: {len(specs)}, upstream latency {args.latency:.1f} s each, {args.repeat} repeats"
    )
    print(f"slowest judge (median)   {slow:6.3f} s")
    print(
        f"panel wall time (median) {wall:6.3f} s = {wall / slow:.2f} x the slowest judge "
        f"(goal <= 1.2; one after another would be about {len(specs)}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
