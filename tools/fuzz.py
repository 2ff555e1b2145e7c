"""Long fuzzing run over the targets of ``tests/fuzz_targets.py`` (``make fuzz``).

``python tools/fuzz.py`` draws ``--cases`` inputs per target (10 000 by default; hypothesis,
derandomized unless ``--seed`` is given) and prints, per target, how many ended in success and in
each documented error class. An input that raises anything else stops the run with the input and
the traceback (exit status 1); ``--keep-going`` records it and goes on, and ``--json`` writes the
counts.

Example: ``python tools/fuzz.py --cases 300 --targets robot_yaml tensor_step``
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

from curobo_lite.config_files import atomic_write_text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_targets import TARGETS  # noqa: E402

# a native crash (a kernel writing out of bounds) prints the Python stack it happened under
faulthandler.enable()


def run_target(name: str, cases: int, seed: int | None, keep_going: bool) -> dict:
    """Counts of the outcomes of ``cases`` draws of target ``name``; failures as text."""
    strategy, runner = TARGETS[name]
    counts: Counter[str] = Counter()
    failures: list[str] = []

    @settings(
        max_examples=cases,
        derandomize=seed is None,
        database=None,
        deadline=None,
        phases=(Phase.generate,),  # no shrinking: a failure is reported as drawn
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(case) -> None:
        try:
            counts[runner(case)] += 1
        except Exception:
            counts["BUG"] += 1
            failures.append(f"{case!r}\n{traceback.format_exc()}")
            if not keep_going:
                raise

    if seed is not None:
        draw = settings(derandomize=False)(draw)
        draw._hypothesis_internal_use_seed = seed
    start = time.perf_counter()
    try:
        draw()
    except Exception as err:
        if not failures:  # the strategy itself failed, not a runner
            failures.append("".join(traceback.format_exception(err)))
    return {
        "cases": sum(counts.values()),
        "seconds": round(time.perf_counter() - start, 2),
        "outcomes": dict(sorted(counts.items())),
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="inputs per target")
    parser.add_argument("--targets", nargs="*", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--seed", type=int, default=None, help="random instead of derandomized")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the first bug")
    parser.add_argument("--json", default=None, help="write the counts here")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error(f"--cases: expected >= 1, received {args.cases}")
    report = {}
    for name in args.targets:
        result = run_target(name, args.cases, args.seed, args.keep_going)
        report[name] = result
        outcomes = ", ".join(f"{k} {v}" for k, v in result["outcomes"].items())
        print(f"{name:20s} {result['cases']:6d} cases in {result['seconds']:8.1f} s: {outcomes}")
        for failure in result["failures"]:
            print(failure, file=sys.stderr)
    if args.json:
        atomic_write_text(args.json, json.dumps(report, indent=2))
    return 1 if any(r["failures"] for r in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
