"""Motion generation on the bundled problems: curobo_lite's MotionGen vs OMPL RRTConnect.

Both run on every problem of ``configs/world/motion_problems.yml`` (Franka, four scenes) with
the same collision model (the robot's spheres against the scene, curobo_lite's kernels):

- ``motion_gen``: ``MotionGen.plan_single(start, goal_pose)``: IK, trajectory optimization,
  OMPL fallback, retimed and interpolated plan, swept re-check. Time: the whole call.
- ``ompl``: OMPL's RRTConnect plus its path simplifier (``OmplPlanner``) from the start to the
  problem's ``goal_config`` (OMPL plans to configurations: it is handed the goal configuration
  the problem was generated from, so its time has no IK in it). Its path is geometric: no
  timing, no velocity or acceleration limits.

Reported per planner: success rate, planning time (median, p95), joint-space path length
(radians) and the smallest clearance along the path (metres, world and self, the path densely
resampled). Usage::

    python benchmarks/motion_gen.py [--threads 2] [--limit N] [--device cuda] [--no-ompl]
        [--cuda-graph]

Results go to ``benchmarks/results/motion_gen.json``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch
import yaml
from timing import write_json

from curobo_lite.kernels.launch import torch_cpu_threads
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen
from curobo_lite.wrap.motion.graph_planner import OmplPlanner, ompl_available, resample_path

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = REPO / "configs" / "world" / "motion_problems.yml"


def clearance(motion_gen: MotionGen, path: torch.Tensor) -> float:
    """Smallest world or self clearance (m) along ``path [K, D]`` resampled at 1 cm-ish steps."""
    dense = resample_path(path, max(2, 20 * path.shape[0]))
    with torch.no_grad():
        world = motion_gen.checker.collision_distance(dense, max_distance=1.0)
        own = motion_gen.checker.self_collision_distance(dense)
    return float(torch.minimum(world, own).min())


def path_length(path: torch.Tensor) -> float:
    return float((path[1:] - path[:-1]).norm(dim=-1).sum())


def summarize(rows: list[dict], key: str) -> dict:
    ok = [r for r in rows if r[f"{key}_success"]]
    times = sorted(r[f"{key}_time"] for r in rows)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return {
        "success_rate": len(ok) / len(rows),
        "time_median_s": statistics.median(times),
        "time_p95_s": p95,
        "path_length_median_rad": statistics.median(r[f"{key}_length"] for r in ok) if ok else None,
        "clearance_min_m": min(r[f"{key}_clearance"] for r in ok) if ok else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="first N problems only")
    parser.add_argument("--ompl-time", type=float, default=5.0, help="OMPL time limit (s)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "motion_gen.json"))
    parser.add_argument("--device", default="cpu", help="where MotionGen runs (cpu, cuda)")
    parser.add_argument("--no-ompl", action="store_true", help="MotionGen only")
    parser.add_argument(
        "--cuda-graph", action="store_true", help="MotionGen with use_cuda_graph (CUDA only)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    problems = yaml.safe_load(PROBLEMS.read_text())["problems"][: args.limit]
    motion_gen = MotionGen.from_config(
        "franka", problems[0]["world"], tensor_args=tensor_args, use_cuda_graph=args.cuda_graph
    )
    planner = None
    if not args.no_ompl and ompl_available():
        planner = OmplPlanner(motion_gen.checker, time_limit=args.ompl_time)
    elif not args.no_ompl:
        print("OMPL not installed (`pip install ompl`): MotionGen only")
    # warm-up: Warp module loads and first-call allocations are not planning time
    start0 = JointState.from_position(tensor_args.to_device(problems[0]["start"])[None])
    motion_gen.plan_single(start0, Pose.from_list(problems[0]["goal_pose"], tensor_args))
    rows = []
    print(
        f"{'problem':>14} {'mg ok':>6} {'mg s':>7} {'mg len':>7} {'mg clr mm':>9} "
        f"{'ompl ok':>7} {'ompl s':>7} {'ompl len':>8} {'ompl clr mm':>11}  status"
    )
    world = problems[0]["world"]
    for problem in problems:
        if problem["world"] != world:
            world = problem["world"]
            motion_gen.update_world(world)
        start = JointState.from_position(tensor_args.to_device(problem["start"])[None])
        goal = Pose.from_list(problem["goal_pose"], tensor_args)
        t0 = time.perf_counter()
        result = motion_gen.plan_single(start, goal)
        mg_time = time.perf_counter() - t0
        row = {"name": problem["name"], "world": world, "motion_gen_success": result.success}
        row["motion_gen_time"] = mg_time
        row["motion_gen_status"] = result.status.value
        if result.success:
            plan = result.interpolated_plan.position
            row["motion_gen_length"] = path_length(plan)
            row["motion_gen_clearance"] = clearance(motion_gen, plan)
        row["ompl_success"], row["ompl_time"] = None, None
        if planner is not None:
            goal_config = tensor_args.to_device(problem["goal_config"])
            t0 = time.perf_counter()
            # OMPL's batched checks on torch's threads as MotionGen's (cpu_torch_threads)
            with torch_cpu_threads(motion_gen.cpu_torch_threads, tensor_args.device):
                graph = planner.plan(start.position[0], goal_config)
            row["ompl_time"] = time.perf_counter() - t0
            row["ompl_success"] = graph.success
            if graph.success:
                row["ompl_length"] = graph.length
                row["ompl_clearance"] = clearance(motion_gen, graph.path)
        rows.append(row)

        def cell(key: str, scale: float = 1.0, fmt: str = ".3f", row=row) -> str:
            value = row.get(key)
            return "-" if value is None else format(value * scale, fmt)

        print(
            f"{row['name']:>14} {str(row['motion_gen_success']):>6} {mg_time:>7.2f} "
            f"{cell('motion_gen_length', fmt='.2f'):>7} "
            f"{cell('motion_gen_clearance', 1000, '.1f'):>9} {str(row['ompl_success']):>7} "
            f"{cell('ompl_time', fmt='.2f'):>7} {cell('ompl_length', fmt='.2f'):>8} "
            f"{cell('ompl_clearance', 1000, '.1f'):>11}  {row['motion_gen_status']}"
        )
    summary = {"motion_gen": summarize(rows, "motion_gen")}
    if planner is not None:
        summary["ompl"] = summarize(rows, "ompl")
    for name, values in summary.items():
        print(name, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in values.items()})
    meta = {
        "machine": platform.machine(),
        "device": str(tensor_args.device),
        "use_cuda_graph": args.cuda_graph,
        "threads": args.threads,
        "problems": len(rows),
        "ompl_time_limit_s": args.ompl_time,
        "summary": summary,
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
