"""MotionGen as a user meets it: every bundled robot in every bundled user scene, random goals.

Per robot (franka, ur5e, iiwa) and world (table, bookshelf, cubbies, mixed), seeded per pair:
one random start and ``--goals`` random goal configurations, each drawn uniformly within the
joint limits and kept when :meth:`RobotWorld.validate` passes (spheres: limits, world,
self-collision); the goal is the end-effector pose there. ``MotionGen.plan_single(start,
goal_pose)`` plans each (IK included), in the order drawn, on one MotionGen per robot whose
world is swapped per scene.

Judged independently of the planner: the final waypoint's forward kinematics within 5 mm and
0.05 rad of the goal pose; every waypoint within the limits; for a robot with collision meshes
(the Franka), the exact mesh check of every waypoint and of the motion between them
(:meth:`RobotWorld.trajectory_mesh_report`; its planner lets spheres graze where the meshes are
clear); for one without, the world and self clearance of the spheres along the plan, densely
resampled, not below -1 mm (reported for both).

``--home-side``: the start is drawn instead (after the same goals) within the part of the joint
space that the robot's retract configuration can reach (:meth:`JointBarriers.piece`: a UR5e's
elbow within ``+-pi``, its shoulder lift above the base, as a real arm is); the uniform draw
puts most UR5e starts past such a self-collision barrier, where some goal poses have no
collision-free configuration within reach (MotionGen: ``IK_FAIL``, offenders of kind
``"barrier"``). Robots without full-turn joints: the same draws.

Reported per robot and world: success, plan time (median, p95, max), the motion's duration
(median, max). Usage::

    python benchmarks/user_sweep.py [--robots franka ur5e iiwa] [--worlds table ...]
        [--goals 20] [--seed 0] [--threads 2] [--home-side]
        [--json benchmarks/results/user_sweep.json]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from mbm import _p95
from mbm import judge as mbm_judge
from timing import write_json

from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.joint_barriers import JointBarriers

ROBOTS = ("franka", "ur5e", "iiwa")
WORLDS = ("table", "bookshelf", "cubbies", "mixed")


def valid_configs(
    checker: RobotWorld,
    count: int,
    generator: torch.Generator,
    box: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """``[count, D]`` configurations drawn uniformly within the limits (or ``box = (low [D],
    high [D])`` within them) that pass :meth:`RobotWorld.validate`, in the order drawn."""
    low, high = box or checker.kinematics.robot_config.joint_limits.position
    found: list[torch.Tensor] = []
    while len(found) < count:
        unit = torch.rand(256, low.shape[0], generator=generator, dtype=low.dtype)
        q = low + (high - low) * unit.to(low.device)
        found += list(q[checker.validate(q)])
    return torch.stack(found[:count])


def judge(checker: RobotWorld, path: torch.Tensor, goal: Pose, meshes: bool) -> dict:
    """:func:`mbm.judge` of the plan ``path [K, D]`` for ``goal`` (on the meshes when the robot
    has them, else on its spheres), and every waypoint within the limits."""
    goal_pose = [*goal.position[0].tolist(), *goal.quaternion[0].tolist()]
    verdict = mbm_judge(checker, path, goal_pose, meshes)
    verdict["success"] = verdict["success"] and bool(checker.in_limits(path).all())
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=ROBOTS)
    parser.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=WORLDS)
    parser.add_argument("--goals", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--home-side", action="store_true", help="starts the retract reaches")
    parser.add_argument("--json", default="benchmarks/results/user_sweep.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType()
    rows: list[dict] = []
    summary: dict = {}
    print(
        f"{'robot':>7} {'world':>10} {'success':>8} {'median s':>9} {'p95 s':>7} {'max s':>7}"
        f" {'motion s':>9} {'max motion s':>12}"
    )
    for robot in args.robots:
        motion_gen = MotionGen.from_config(robot, args.worlds[0], tensor_args=tensor_args)
        checker = RobotWorld.from_config(robot, args.worlds[0], tensor_args=tensor_args)
        meshes = checker.has_collision_geometry
        home = JointBarriers(checker).piece(checker.robot_config.retract_config)
        for world in args.worlds:
            motion_gen.update_world(world)
            checker.update_world(world)
            # a start and goals of their own per robot and world
            generator = torch.Generator().manual_seed(
                args.seed + 100 * ROBOTS.index(robot) + WORLDS.index(world)
            )
            configs = valid_configs(checker, args.goals + 1, generator)
            if args.home_side and home is not None:
                configs[0] = valid_configs(checker, 1, generator, home)[0]
            start = JointState.from_position(configs[:1])
            goals = checker.kinematics.forward(configs[1:], spheres=False)
            if not rows:  # warm-up: the first plan of a process loads the kernels
                motion_gen.plan_single(start, Pose(goals.ee_position[:1], goals.ee_quaternion[:1]))
            cell = []
            for k in range(args.goals):
                goal = Pose(goals.ee_position[k : k + 1], goals.ee_quaternion[k : k + 1])
                t0 = time.perf_counter()
                result = motion_gen.plan_single(start, goal)
                seconds = time.perf_counter() - t0
                row = {
                    "robot": robot,
                    "world": world,
                    "goal": k,
                    "time": seconds,
                    "status": result.status.value,
                    "motion_time": result.motion_time if result.success else None,
                    "start": configs[0].tolist(),
                    "goal_config": configs[k + 1].tolist(),
                    "success": False,
                }
                if result.success and result.interpolated_plan is not None:
                    row.update(judge(checker, result.interpolated_plan.position, goal, meshes))
                rows.append(row)
                cell.append(row)
            times = [r["time"] for r in cell]
            motions = [r["motion_time"] for r in cell if r["motion_time"] is not None]
            entry = {
                "problems": len(cell),
                "success_rate": sum(r["success"] for r in cell) / len(cell),
                "time_median_s": statistics.median(times),
                "time_p95_s": _p95(times),
                "time_max_s": max(times),
                "motion_time_median_s": statistics.median(motions) if motions else None,
                "motion_time_max_s": max(motions) if motions else None,
            }
            summary[f"{robot}/{world}"] = entry
            print(
                f"{robot:>7} {world:>10} {100 * entry['success_rate']:7.0f}% "
                f"{entry['time_median_s']:9.3f} {entry['time_p95_s']:7.3f} "
                f"{entry['time_max_s']:7.3f} {entry['motion_time_median_s'] or float('nan'):9.2f}"
                f" {entry['motion_time_max_s'] or float('nan'):12.2f}",
                flush=True,
            )
    write_json(
        args.json,
        {
            "goals": args.goals,
            "seed": args.seed,
            "threads": args.threads,
            "home_side": args.home_side,
            "summary": summary,
        },
        rows,
    )


if __name__ == "__main__":
    main()
