"""Goal sets: ``MotionGen.plan_goalset`` to every grasp of an object vs ``plan_single`` to one.

On MotionBenchMaker-style problems (``benchmarks/data/mbm``), the problem's scene is sampled
again from its seed, and its target object's grasp candidates (about 10: yaws and the hand
turned about its axis) form the goal set. Side by side per problem: ``plan_single`` to the
problem's goal pose (one of the set) and ``plan_goalset`` to the whole set. Reported: success,
planning time (median, p95) and their ratio (issue 31: a set of 10 costs at most 2x one pose),
and the motion time of the plans. Both are judged by forward kinematics of the plan's last
sample against the pose it claims (``goalset_index``) and by the exact mesh check of the plan
(``RobotWorld.validate_trajectory_mesh``).

Usage::

    python benchmarks/goalset.py [--families bookshelf_small table_pick] [--problems 20]
        [--json benchmarks/results/goalset.json] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from mbm import DATA, judge, load_problems
from timing import write_json

from curobo_lite.scenes import family_rng
from curobo_lite.scenes.problems import draw_scene
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, RobotWorld

REPO = Path(__file__).resolve().parents[1]


def grasp_set(problem, draws: int = 20) -> list[list[float]] | None:
    """The target's grasp candidates of ``problem``'s scene, sampled again from its seed: the
    generator draws scenes (and a target) until one gives a problem, so the draws are replayed
    until the one that holds the problem's goal pose (``None`` when none does)."""
    rng = family_rng(problem.family, problem.seed, problem.index)
    for _ in range(draws):
        scene, target = draw_scene(problem.family, rng)
        if target != problem.target:
            continue
        grasps = [list(map(float, g)) for g in scene.grasps[target]]
        if any(max(abs(a - b) for a, b in zip(g, problem.goal_pose)) < 1e-4 for g in grasps):
            return grasps
    return None


def _measured(key: str, result, seconds: float, checker: RobotWorld, goal) -> dict:
    """The row entries of one plan: time, status, success by :func:`mbm.judge` against the
    pose it claims (``goal``), motion time."""
    verdict = None
    if result.success:
        verdict = judge(checker, result.interpolated_plan.position, goal)
    return {
        f"{key}_time": seconds,
        f"{key}_status": result.status.value,
        f"{key}_success": bool(verdict and verdict["success"]),
        f"{key}_motion_time": result.motion_time if result.success else None,
    }


def _p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]


def summarize(rows: list[dict]) -> dict:
    """Per ``single`` and ``goalset``: problems, success rate, median and p95 planning time, and
    the median time ratio; printed as a short table."""
    summary: dict = {}
    for key in ("single", "goalset"):
        times = [r[f"{key}_time"] for r in rows]
        summary[key] = {
            "problems": len(rows),
            "success_rate": sum(r[f"{key}_success"] for r in rows) / len(rows),
            "time_median_s": statistics.median(times),
            "time_p95_s": _p95(times),
        }
    ratio = summary["goalset"]["time_median_s"] / summary["single"]["time_median_s"]
    summary["median_time_ratio"] = ratio
    print()
    for key in ("single", "goalset"):
        s = summary[key]
        print(
            f"{key:>8}: {s['problems']} problems, success {100 * s['success_rate']:.0f} %, "
            f"median {s['time_median_s']:.3f} s, p95 {s['time_p95_s']:.3f} s"
        )
    print(f"goal set / single, median planning time: {ratio:.2f}x")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=["bookshelf_small", "table_pick"])
    parser.add_argument("--problems", type=int, default=20, help="first N problems per family")
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "goalset.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    problems = [p for f in args.families for p in load_problems(f, args.problems, DATA)]
    motion_gen = MotionGen.from_config("franka", problems[0].world, tensor_args=tensor_args)
    checker = RobotWorld.from_config("franka", problems[0].world, tensor_args)
    rows = []
    warm = False
    print(f"{'problem':>26} {'G':>3} {'single':>8} {'s':>6} {'goalset':>8} {'s':>6} {'index':>5}")
    for problem in problems:
        grasps = grasp_set(problem)
        if grasps is None:
            continue
        motion_gen.update_world(problem.world)
        checker.update_world(problem.world)
        start = JointState.from_position(tensor_args.to_device(problem.start)[None])
        values = tensor_args.to_device(grasps)
        poses = Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())
        single_goal = Pose.from_list(problem.goal_pose, tensor_args)
        if not warm:  # Warp module loads and first allocations are not planning time
            motion_gen.plan_single(start, single_goal)
            motion_gen.plan_goalset(start, poses)
            warm = True
        row = {"name": problem.name, "family": problem.family, "goals": len(grasps)}
        t0 = time.perf_counter()
        single = motion_gen.plan_single(start, single_goal)
        row.update(
            _measured("single", single, time.perf_counter() - t0, checker, problem.goal_pose)
        )
        t0 = time.perf_counter()
        chosen = motion_gen.plan_goalset(start, poses)
        seconds = time.perf_counter() - t0
        claimed = grasps[chosen.goalset_index] if chosen.success else None
        row.update(_measured("goalset", chosen, seconds, checker, claimed))
        row["goalset_index"] = chosen.goalset_index
        rows.append(row)
        print(
            f"{row['name']:>26} {row['goals']:>3} {str(row['single_success']):>8} "
            f"{row['single_time']:>6.2f} {str(row['goalset_success']):>8} "
            f"{row['goalset_time']:>6.2f} {str(row['goalset_index']):>5}",
            flush=True,
        )
    summary = summarize(rows)
    write_json(args.json, {"benchmark": "goalset", **vars(args), "summary": summary}, rows)


if __name__ == "__main__":
    main()
