"""MotionGen's goal IK on MotionBenchMaker-style problems: which IK phases run, what they
cost, and whether the plan succeeds.

Per problem: ``MotionGen.plan_single(start, goal_pose)`` in the problem's world, judged by
:func:`mbm.judge` (the exact mesh check, 5 mm / 0.05 rad), with the IK stage's wall time
(``result.timings["ik"]``) and its CPU time (this process, ``time.process_time``: on a shared
host with one torch thread it is what the IK costs, whatever the load), the IK solves it ran
(``quick``: the pose-only phase; ``wide``: the second, wider pose-only phase, also the goal
retry's; ``lbfgs``: the collision-aware phase, since 2026-11-27 after ``wide`` and only where it
found nothing) and the goal configurations handed to the roadmap. Problems: the first
``--problems`` of each family, plus ``--extra family:i,j,...`` (indices into
``load_problems(family)``; the defaults are the IK failures of ``benchmarks/results/mbm.json``
as of 2026-11-26).

``--slow``: only the plans whose IK stage took more than 0.3 s in the 700-problem run
(:data:`SLOW_IK`, 19:31 run of 2026-11-26). What they spend it on (1 thread, process CPU time,
load 2-3, 2026-11-26 22:55): the collision-aware L-BFGS phase, which runs because no seed of the
pose-only phase (128 + 128 chunk) is clear on the meshes; it stops at the first precise
collision-free seed, after 32-48 iterations of 32 seeds at ~15-20 ms each (the world sphere
distance and self-collision kernels and the backward pass), 0.5-1.1 s of the 0.5-1.4 s; the goal
screening on the meshes and the contact seeds take < 15 ms. Tried: 16 L-BFGS seeds instead of 32
(IK 0.3-0.5 s less) loses table_under_pick 13 and cage 28 (no goal or no valid plan).

2026-11-27 (1 thread, load ~4): the wide phase now runs before the L-BFGS phase; on this
list it gives the goals of bookshelf_small 30, cage 28 and 38 and table_under_pick 13 (IK
0.18-0.29 -> 0.05-0.07 s), and the L-BFGS still runs for bookshelf_thin 98, box 7, cage 15 and
table_under_pick 18 (+35-60 ms for the wide phase that found nothing).

Usage::

    python benchmarks/mbm_ik.py [--families box cage] [--problems 20] [--no-extra | --slow]
        [--extra cage:2,21 box:7] [--threads 1] [--json out/mbm_ik.json]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import torch
from mbm import judge, load_problems
from timing import write_json

from curobo_lite.scenes import FAMILIES
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MotionGen, RobotWorld

#: the IK failures of the 700-problem run (benchmarks/results/mbm.json, 2026-11-26)
IK_FAILURES = {
    "cage": [2, 21, 22, 28, 40, 43, 50, 52, 62, 92, 96],
    "box": [7, 60, 61],
    "table_under_pick": [76],
}

#: the plans whose IK stage took more than 0.3 s in the 700-problem run (mbm.json, 19:31)
SLOW_IK = {
    "bookshelf_small": [30],
    "bookshelf_thin": [98],
    "box": [7],
    "cage": [10, 15, 28, 38],
    "table_under_pick": [13, 18],
}


def _count_phases(motion_gen: MotionGen, phases: Counter) -> None:
    """Count the IK solves of ``motion_gen`` by phase into ``phases`` (wraps ``solve_batch``)."""
    solver = motion_gen.ik_solver
    solve_batch = solver.solve_batch

    def counted(goal, *args, **kwargs):
        if kwargs.get("lbfgs_fallback") is False:
            wide = (kwargs.get("dls_seeds") or 0) > solver.config.dls_seeds
            phases["wide" if wide else "quick"] += 1
        else:
            phases["lbfgs"] += 1
        return solve_batch(goal, *args, **kwargs)

    solver.solve_batch = counted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--problems", type=int, default=20, help="first N problems per family")
    parser.add_argument("--extra", nargs="*", default=None, metavar="FAMILY:I,J")
    parser.add_argument("--no-extra", action="store_true", help="without the IK failures")
    parser.add_argument("--slow", action="store_true", help="only the slow-IK plans (SLOW_IK)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default="out/mbm_ik.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    extra = {} if args.no_extra else dict(IK_FAILURES)
    if args.slow:
        args.problems, extra = 0, dict(SLOW_IK)
        args.families = [f for f in args.families if f in SLOW_IK]
    if args.extra is not None:
        extra = {}
        for item in args.extra:
            family, _, indices = item.partition(":")
            extra[family] = [int(i) for i in indices.split(",") if i]
    chosen: list[tuple[str, int]] = []
    for family in args.families:
        chosen += [(family, i) for i in range(args.problems)]
        chosen += [(family, i) for i in extra.get(family, []) if i >= args.problems]
    problems = {f: load_problems(f) for f in {f for f, _ in chosen}}
    first = problems[chosen[0][0]][chosen[0][1]]
    motion_gen = MotionGen.from_config("franka", first.world)
    checker = RobotWorld.from_config("franka", first.world)
    phases: Counter = Counter()
    _count_phases(motion_gen, phases)
    start0 = JointState.from_position(torch.tensor(first.start)[None])
    motion_gen.plan_single(start0, Pose.from_list(first.goal_pose))  # warm-up
    print(
        f"{'problem':>22} {'ok':>5} {'plan s':>7} {'ik s':>6} {'ik cpu':>6} {'goals':>5} "
        f"{'phases':>18}  status"
    )
    rows = []
    for family, index in chosen:
        problem = problems[family][index]
        motion_gen.update_world(problem.world)
        checker.update_world(problem.world)
        start = JointState.from_position(torch.tensor(problem.start)[None])
        goal = Pose.from_list(problem.goal_pose)
        phases.clear()
        ik_cpu = [0.0]
        goals = [0]
        ik = motion_gen._ik

        def timed_ik(*a, ik=ik, ik_cpu=ik_cpu, goals=goals, **k):
            t0 = time.process_time()
            out = ik(*a, **k)
            ik_cpu[0] += time.process_time() - t0
            goals[0] = int(out[1][0].shape[0])
            return out

        motion_gen._ik = timed_ik
        t0 = time.perf_counter()
        result = motion_gen.plan_single(start, goal)
        seconds = time.perf_counter() - t0
        del motion_gen._ik
        success = bool(
            result.success
            and judge(checker, result.interpolated_plan.position, problem.goal_pose)["success"]
        )
        row = {
            "family": family,
            "index": index,
            "success": success,
            "status": result.status.value,
            "time": seconds,
            "ik_time": result.timings.get("ik", 0.0),
            "ik_cpu": ik_cpu[0],
            "goal_configs": goals[0],
            "phases": dict(phases),
        }
        rows.append(row)
        print(
            f"{family + '_' + str(index):>22} {str(success):>5} {seconds:7.3f} "
            f"{row['ik_time']:6.3f} {row['ik_cpu']:6.3f} {goals[0]:5d} "
            f"{' '.join(f'{k}{v}' for k, v in sorted(phases.items())):>18}  {row['status']}",
            flush=True,
        )
    print()
    print(
        f"{'family':>17} {'n':>3} {'success':>8} {'plan med':>8} {'ik mean':>8} {'ik cpu':>8}"
        f" {'lbfgs':>6} {'wide':>5}"
    )
    summary = {}
    for family in dict.fromkeys(f for f, _ in chosen):
        rs = [r for r in rows if r["family"] == family]
        s = {
            "problems": len(rs),
            "success_rate": sum(r["success"] for r in rs) / len(rs),
            "time_median_s": statistics.median(r["time"] for r in rs),
            "ik_time_mean_s": statistics.mean(r["ik_time"] for r in rs),
            "ik_cpu_mean_s": statistics.mean(r["ik_cpu"] for r in rs),
            "lbfgs_phase": sum("lbfgs" in r["phases"] for r in rs),
            "wide_phase": sum("wide" in r["phases"] for r in rs),
        }
        summary[family] = s
        print(
            f"{family:>17} {s['problems']:>3} {100 * s['success_rate']:7.0f}% "
            f"{s['time_median_s']:8.3f} {s['ik_time_mean_s']:8.3f} {s['ik_cpu_mean_s']:8.3f}"
            f" {s['lbfgs_phase']:>6} {s['wide_phase']:>5}"
        )
    write_json(args.json, {"threads": args.threads, "summary": summary}, rows)


if __name__ == "__main__":
    main()
