"""Write MotionBenchMaker-style grasp problems for the Franka: ``benchmarks/data/mbm/<family>.yml``.

Each file: ``{family, seed, check, problems: [...]}``; a problem has its world (cuRobo's world
layout: ``cuboid: {name: {dims, pose}}``, ``cylinder: {name: {radius, height, pose}}``), the
start configuration, the goal pose (``panda_hand``, ``[x y z qw qx qy qz]``), the goal
configuration found by IK (checked on the collision meshes), the target object's name; values
rounded to 1e-5. The generator is :mod:`curobo_lite.scenes` (deterministic per family, seed and
index: ``--problems 5`` writes the first five of what ``--problems 100`` writes; an index
whose draws yield no valid problem within ``max_scenes`` scenes is skipped, printed).

Usage::

    python tools/make_mbm_problems.py [--families box cage] [--problems 100] [--seed 0]
        [--threads 1] [--jobs 1] [--out benchmarks/data/mbm]

``--jobs N`` draws indices in N processes (one generator each, one torch thread each): a
problem depends only on its family, seed and index (the IK's quasi-random seeds restart on
every solve), so the file is the same as with one process, in index order.

Time (CPU, one thread, two generators and other work sharing a 2-core machine, with the quick
pose-only IK, 2026-11-26): per problem about 9 s (cage before its MBM front grasp; since,
with ``--jobs 2`` under load 5-10: 2 147 s for 100, 3.3 scenes drawn per problem), 13 s
(table_under_pick), 26 s (bookshelf_thin, table_pick), 20-40 s (box: most draws are rejected); with
``--dls-iterations 0`` (L-BFGS IK alone) bookshelf_small took about 6 s and bookshelf_tall
9 s on a quieter machine. Families can run in parallel processes (``--families``).
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import time
from pathlib import Path

import torch
import yaml

from curobo_lite.config_files import FlowListDumper
from curobo_lite.scenes import FAMILIES, ProblemGenerator
from curobo_lite.types.errors import CuroboLiteError

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--problems", type=int, default=100, help="problems per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--dls-iterations",
        type=int,
        default=16,
        help="the IK's quick pose-only phase (0: L-BFGS alone, as bookshelf_small/tall were made)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes drawing indices in parallel")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "data" / "mbm"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pool = None
    if args.jobs > 1:
        pool = multiprocessing.get_context("spawn").Pool(
            args.jobs, _start_worker, (args.dls_iterations, args.threads)
        )
    else:
        _start_worker(args.dls_iterations, args.threads)
    try:
        for family in args.families:
            _make_family(family, args, out, pool)
    finally:
        if pool is not None:
            pool.terminate()


_GENERATOR: ProblemGenerator | None = None


def _start_worker(dls_iterations: int, threads: int) -> None:
    global _GENERATOR
    torch.set_num_threads(threads)
    _GENERATOR = ProblemGenerator(dls_iterations=dls_iterations)


def _draw(task: tuple[str, int, int]) -> tuple[int, dict | None, str, float]:
    """Problem ``index`` as a dict (None when the index is skipped), a log line, seconds."""
    family, seed, index = task
    t1 = time.perf_counter()
    try:
        problem = _GENERATOR.make(family, seed, index)
    except CuroboLiteError as err:  # no valid scene within max_scenes: next index
        return index, None, f"skipped ({err})", time.perf_counter() - t1
    line = f"target {problem.target}, {problem.tries} scene(s)"
    return index, problem.to_dict(), line, time.perf_counter() - t1


def _make_family(family: str, args: argparse.Namespace, out: Path, pool) -> None:
    t0 = time.perf_counter()
    problems: list[dict] = []
    tasks = ((family, args.seed, index) for index in itertools.count())
    # imap keeps index order, so the file is the same whatever the number of processes
    drawn = pool.imap(_draw, tasks) if pool is not None else map(_draw, tasks)
    for index, problem, line, seconds in drawn:
        print(f"{family} {index:4d}: {line}, {seconds:.1f} s", flush=True)
        if problem is None:
            continue
        problems.append(problem)
        if len(problems) % 10 == 0:  # a prefix of the final file survives an interruption
            _write(out / f"{family}.yml", family, args, problems)
        if len(problems) == args.problems:
            break
    path = out / f"{family}.yml"
    _write(path, family, args, problems)
    print(f"{path}: {len(problems)} problems in {time.perf_counter() - t0:.0f} s", flush=True)


def _write(path: Path, family: str, args: argparse.Namespace, problems: list[dict]) -> None:
    """The problem file, written to a temporary name and renamed (never half-written)."""
    data = {
        "family": family,
        "seed": args.seed,
        "dls_iterations": args.dls_iterations,
        "check": problems[0]["check"] if problems else "mesh",
        "problems": problems,
    }
    temporary = path.with_suffix(".yml.tmp")
    temporary.write_text(yaml.dump(data, Dumper=FlowListDumper, sort_keys=False, width=120))
    temporary.replace(path)


if __name__ == "__main__":
    main()
