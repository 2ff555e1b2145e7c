"""MotionBenchMaker-style grasp problems: curobo_lite's MotionGen vs OMPL RRTConnect, per family.

Problems: ``benchmarks/data/mbm/<family>.yml`` (``tools/make_mbm_problems.py``; Franka on its
stand, seven scene families, the goal a grasp of one object). On the same problems, side by
side:

- ``motion_gen``: ``MotionGen.plan_single(start, goal_pose)`` in the problem's world (IK,
  the roadmap, trajectory optimization when the roadmap finds nothing, its own checks). Time:
  the whole call. Also reported: the share of its successes that the roadmap made, and the
  plans' execution time (``motion s``).
- ``ompl``: OMPL RRTConnect + path simplification (``OmplPlanner``, the sphere checker, as in
  ``benchmarks/motion_gen.py``) from the start to the problem's ``goal_config`` (no IK in its
  time). Its path is geometric (no timing).

Both are judged the same way (:func:`judge`): success = the final hand pose within 5 mm and
0.05 rad of the goal pose, and the path passes ``RobotWorld.validate_trajectory_mesh`` (the
exact check on the collision meshes: every waypoint within the joint limits, free of self-
collision, and the meshes clear of every obstacle at every waypoint *and between* waypoints,
swept). Reported per family and planner: success rate, planning time (median, p95), joint-space
path length (median over successes), smallest mesh and sphere clearance along the paths.

Usage::

    python benchmarks/mbm.py [--families box cage] [--problems N] [--only NAME ...] [--no-ompl]
        [--json out/mbm.json] [--threads 2] [--ompl-time 5] [--device cpu] [--cuda-graph]
        [--roadmap corridor_fraction=0 max_samples=4096]
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
from pathlib import Path

import torch
import yaml
from timing import write_json

from curobo_lite.kernels.launch import torch_cpu_threads
from curobo_lite.scenes import FAMILIES, MbmProblem
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.math import quat_angle_error
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.graph_planner import OmplPlanner, ompl_available, resample_path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data" / "mbm"
POSITION_TOLERANCE = 0.005
ROTATION_TOLERANCE = 0.05
#: a robot without collision meshes is judged on its spheres: clearance at least this (m)
SPHERE_TOLERANCE = -0.001


def load_problems(family: str, limit: int | None = None, data: Path = DATA) -> list[MbmProblem]:
    raw = yaml.safe_load((data / f"{family}.yml").read_text())
    return [MbmProblem.from_dict(p) for p in raw["problems"][:limit]]


def path_length(path: torch.Tensor) -> float:
    return float((path[1:] - path[:-1]).norm(dim=-1).sum())


@torch.no_grad()
def judge(
    checker: RobotWorld, path: torch.Tensor, goal_pose: list[float], meshes: bool = True
) -> dict:
    """Success of ``path [K, D]`` (waypoints, linear in joint space between them) for the
    end-effector goal ``[x y z qw qx qy qz]`` in ``checker``'s world: final pose within
    tolerance, and the exact mesh check of every waypoint and of the motion between them
    (``meshes``; a robot without collision meshes: the spheres' world and self clearance along
    the densely resampled path at least ``SPHERE_TOLERANCE``)."""
    state = checker.kinematics.forward(path[-1:])
    goal = torch.as_tensor(goal_pose, dtype=path.dtype, device=path.device)
    position_error = float((state.ee_position[0] - goal[:3]).norm())
    rotation_error = float(quat_angle_error(state.ee_quaternion[0:1], goal[None, 3:])[0])
    mesh_ok, mesh_clearance = True, float("nan")
    if meshes:
        mesh_ok, mesh_clearance = checker.trajectory_mesh_report(path)
    dense = resample_path(path, max(2, 20 * path.shape[0]))
    sphere = torch.minimum(
        checker.collision_distance(dense, max_distance=1.0),
        checker.self_collision_distance(dense),
    )
    reached = position_error <= POSITION_TOLERANCE and rotation_error <= ROTATION_TOLERANCE
    clear = bool(mesh_ok) if meshes else float(sphere.min()) >= SPHERE_TOLERANCE
    return {
        "success": bool(reached and clear),
        "reached": reached,
        "mesh_valid": bool(mesh_ok) if meshes else None,
        "position_error": position_error,
        "rotation_error": rotation_error,
        "mesh_clearance": float(mesh_clearance),
        "sphere_clearance": float(sphere.min()),
        "length": path_length(path),
    }


def _p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))]


def summarize(rows: list[dict], key: str) -> dict:
    done = [r for r in rows if r.get(f"{key}_time") is not None]
    ok = [r for r in done if r[f"{key}_success"]]
    times = [r[f"{key}_time"] for r in done]
    judged = [r for r in done if f"{key}_mesh_clearance" in r]

    def smallest(name: str, among: list[dict]) -> float | None:
        return min(r[f"{key}_{name}"] for r in among) if among else None

    return {
        "problems": len(done),
        "success_rate": len(ok) / len(done) if done else None,
        "time_median_s": statistics.median(times) if times else None,
        "time_p95_s": _p95(times) if times else None,
        "path_length_median_rad": statistics.median(r[f"{key}_length"] for r in ok) if ok else None,
        "mesh_clearance_min_m": smallest("mesh_clearance", ok),
        "sphere_clearance_min_m": smallest("sphere_clearance", ok),
        "mesh_clearance_min_all_paths_m": smallest("mesh_clearance", judged),
        # MotionGen only: the share of successes the roadmap made, their execution time
        "by_roadmap": (
            sum(bool(r.get(f"{key}_by_roadmap")) for r in ok) / len(ok)
            if ok and f"{key}_by_roadmap" in ok[0]
            else None
        ),
        "motion_time_median_s": (
            statistics.median(r[f"{key}_motion_time"] for r in ok)
            if ok and f"{key}_motion_time" in ok[0]
            else None
        ),
    }


def _record(row: dict, key: str, verdict: dict | None) -> None:
    row[f"{key}_success"] = bool(verdict and verdict["success"])
    if verdict is not None:
        for name, value in verdict.items():
            if name != "success":
                row[f"{key}_{name}"] = value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--problems", type=int, default=None, help="first N problems per family")
    parser.add_argument(
        "--only", nargs="+", default=None, metavar="NAME", help="only these problems (by name)"
    )
    parser.add_argument("--no-ompl", action="store_true", help="MotionGen only")
    parser.add_argument("--ompl-time", type=float, default=5.0, help="OMPL time limit (s)")
    parser.add_argument("--json", default=str(REPO / "out" / "mbm.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="where MotionGen runs (cpu, cuda)")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument(
        "--cuda-graph", action="store_true", help="MotionGen with use_cuda_graph (CUDA only)"
    )
    parser.add_argument(
        "--roadmap",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="MotionGen roadmap options (RoadmapConfig), e.g. corridor_fraction=0",
    )
    args = parser.parse_args()
    roadmap = {}
    for item in args.roadmap:
        key, _, value = item.partition("=")
        roadmap[key] = yaml.safe_load(value)
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    missing = [f for f in args.families if not (Path(args.data) / f"{f}.yml").is_file()]
    if missing:
        print(f"no problems generated for {missing} (tools/make_mbm_problems.py): skipped")
    families = [f for f in args.families if f not in missing]
    if not families:
        raise SystemExit(f"no problem files in {args.data}")
    problems = {f: load_problems(f, args.problems, Path(args.data)) for f in families}
    if args.only is not None:
        problems = {f: [p for p in ps if p.name in args.only] for f, ps in problems.items()}
        problems = {f: ps for f, ps in problems.items() if ps}
        if not problems:
            raise SystemExit(f"--only: no problem named {args.only}")
    first = next(p for ps in problems.values() for p in ps)
    motion_gen = MotionGen.from_config(
        "franka",
        first.world,
        tensor_args=tensor_args,
        use_cuda_graph=args.cuda_graph,
        roadmap=roadmap,
    )
    # the judge: its own checker (mesh check on), same robot, the problem's world
    checker = RobotWorld.from_config("franka", first.world, tensor_args)
    planner = None
    if not args.no_ompl and ompl_available():
        planner = OmplPlanner(motion_gen.checker, time_limit=args.ompl_time)
    elif not args.no_ompl:
        print("OMPL not installed (`pip install ompl`): MotionGen only")
    # warm-up: Warp module loads and first-call allocations are not planning time
    start0 = JointState.from_position(tensor_args.to_device(first.start)[None])
    motion_gen.plan_single(start0, Pose.from_list(first.goal_pose, tensor_args))
    checker.validate_mesh(start0.position)
    print(
        f"{'problem':>26} {'mg ok':>6} {'mg s':>6} {'mg len':>6} {'mg mesh mm':>10} "
        f"{'ompl ok':>7} {'ompl s':>6} {'ompl len':>8} {'ompl mesh mm':>12}  mg status"
    )
    rows: list[dict] = []
    summary: dict[str, dict] = {}
    for family, family_problems in problems.items():
        family_rows = []
        for problem in family_problems:
            motion_gen.update_world(problem.world)
            checker.update_world(problem.world)
            start = JointState.from_position(tensor_args.to_device(problem.start)[None])
            goal = Pose.from_list(problem.goal_pose, tensor_args)
            row: dict = {"name": problem.name, "family": family, "target": problem.target}
            t0 = time.perf_counter()
            result = motion_gen.plan_single(start, goal)
            row["motion_gen_time"] = time.perf_counter() - t0
            row["motion_gen_status"] = result.status.value
            row["motion_gen_by_roadmap"] = result.waypoints is not None
            row["motion_gen_motion_time"] = result.motion_time
            for stage, seconds in result.timings.items():
                row[f"motion_gen_{stage}_s"] = seconds
            verdict = None
            if result.interpolated_plan is not None and result.success:
                verdict = judge(checker, result.interpolated_plan.position, problem.goal_pose)
            _record(row, "motion_gen", verdict)
            row["ompl_time"] = None
            row["ompl_success"] = None
            if planner is not None:
                goal_config = tensor_args.to_device(problem.goal_config)
                valid = bool(motion_gen.checker.validate(goal_config[None])[0])
                row["ompl_goal_valid_spheres"] = valid
                t0 = time.perf_counter()
                # OMPL's batched checks on torch's threads as MotionGen's (cpu_torch_threads)
                with torch_cpu_threads(motion_gen.cpu_torch_threads, tensor_args.device):
                    graph = planner.plan(start.position[0], goal_config) if valid else None
                row["ompl_time"] = time.perf_counter() - t0
                verdict = None
                if graph is not None and graph.success:
                    verdict = judge(checker, graph.path, problem.goal_pose)
                _record(row, "ompl", verdict)
            rows.append(row)
            family_rows.append(row)

            def cell(key: str, scale: float = 1.0, fmt: str = ".2f", row=row) -> str:
                value = row.get(key)
                if value is None or (isinstance(value, float) and not math.isfinite(value)):
                    return "-"
                return format(value * scale, fmt)

            print(
                f"{row['name']:>26} {str(row['motion_gen_success']):>6} "
                f"{cell('motion_gen_time'):>6} {cell('motion_gen_length'):>6} "
                f"{cell('motion_gen_mesh_clearance', 1000, '.1f'):>10} "
                f"{str(row['ompl_success']):>7} {cell('ompl_time'):>6} {cell('ompl_length'):>8} "
                f"{cell('ompl_mesh_clearance', 1000, '.1f'):>12}  {row['motion_gen_status']}",
                flush=True,
            )
        summary[family] = {"motion_gen": summarize(family_rows, "motion_gen")}
        if planner is not None:
            summary[family]["ompl"] = summarize(family_rows, "ompl")
    print()
    print(
        f"{'family':>17} {'planner':>10} {'n':>4} {'success':>8} {'t med s':>8} {'t p95 s':>8} "
        f"{'len med':>8} {'mesh clr mm':>11} {'sphere clr mm':>13} {'roadmap':>8} {'motion s':>8}"
    )
    for family, planners in summary.items():
        for name, s in planners.items():

            def fmt(value, scale: float = 1.0, spec: str = ".3f") -> str:
                return "-" if value is None else format(value * scale, spec)

            print(
                f"{family:>17} {name:>10} {s['problems']:>4}"
                f" {fmt(s['success_rate'], 100, '.0f'):>7}%"
                f" {fmt(s['time_median_s'], 1, '.2f'):>8} {fmt(s['time_p95_s'], 1, '.2f'):>8}"
                f" {fmt(s['path_length_median_rad'], 1, '.2f'):>8}"
                f" {fmt(s['mesh_clearance_min_m'], 1000, '.1f'):>11}"
                f" {fmt(s['sphere_clearance_min_m'], 1000, '.1f'):>13}"
                f" {fmt(s['by_roadmap'], 100, '.0f'):>7}%"
                f" {fmt(s['motion_time_median_s'], 1, '.2f'):>8}"
            )
    meta = {
        "machine": platform.machine(),
        "device": str(tensor_args.device),
        "threads": args.threads,
        "problems": len(rows),
        "ompl_time_limit_s": args.ompl_time,
        "roadmap": roadmap,
        "position_tolerance_m": POSITION_TOLERANCE,
        "rotation_tolerance_rad": ROTATION_TOLERANCE,
        "summary": summary,
    }
    write_json(args.json, meta, rows)


if __name__ == "__main__":
    main()
