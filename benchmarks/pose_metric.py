"""Partial and constrained poses: ``MotionGen.plan_single`` under a ``PoseCostMetric`` vs without.

Seeded goals above the bundled table, at the start's tilt (the hand down) turned by a random
yaw about its axis. Per goal and per metric (``none``, ``upright``: ``rx, ry`` held over the
whole motion, ``yaw_free``: ``rz`` not reached, ``approach``: ``create_grasp_approach_metric``
0.1 m along the hand's z from 80 % of the motion): status, planning time, and the largest tilt
(angle between the hand's z axis and the goal's) over every interpolated waypoint, by this
package's forward kinematics (the tests judge the same with pinocchio). Prints a table and
writes JSON.

Usage::

    python benchmarks/pose_metric.py [--goals 8] [--device cpu]
        [--json benchmarks/results/pose_metric.json]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
from timing import write_json

from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.math import quat_multiply, quat_to_matrix
from curobo_lite.wrap import MotionGen, PoseCostMetric

METRICS = {
    "none": None,
    "upright": PoseCostMetric(hold_partial_pose=True, hold_vec_weight=[1, 1, 0, 0, 0, 0]),
    "yaw_free": PoseCostMetric(reach_partial_pose=True, reach_vec_weight=[1, 1, 0, 1, 1, 1]),
    "approach": PoseCostMetric.create_grasp_approach_metric(0.1, 2, 0.8),
}


def goals(n: int, start_quaternion: torch.Tensor, seed: int = 0) -> list[Pose]:
    """``n`` seeded goals: positions in a box above the table, the start's orientation turned
    by a yaw in ``[-1, 1]`` rad about the hand's axis."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        xy = torch.rand(2, generator=gen) * torch.tensor([0.3, 0.8]) + torch.tensor([0.3, -0.4])
        z = torch.rand(1, generator=gen) * 0.3 + 0.2
        yaw = float(torch.rand(1, generator=gen) * 2 - 1)
        turn = torch.tensor([[math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]])
        quaternion = quat_multiply(start_quaternion.cpu(), turn)
        out.append(Pose(torch.cat((xy, z))[None], quaternion))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default="benchmarks/results/pose_metric.json")
    args = parser.parse_args()
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    motion_gen = MotionGen.from_config(robot="franka", world="table", tensor_args=tensor_args)
    kinematics = motion_gen.checker.kinematics
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    hand = kinematics.forward(start.position, spheres=False)
    motion_gen.plan_single(start, goals(1, hand.ee_quaternion, seed=99)[0])  # warm-up
    rows = []
    for index, goal in enumerate(goals(args.goals, hand.ee_quaternion)):
        goal_z = quat_to_matrix(goal.quaternion.to(**tensor_args.as_kwargs()))[0, :, 2]
        for name, metric in METRICS.items():
            t0 = time.perf_counter()
            result = motion_gen.plan_single(start, goal, pose_cost_metric=metric)
            if tensor_args.device.type == "cuda":
                torch.cuda.synchronize(tensor_args.device)
            seconds = time.perf_counter() - t0
            tilt = math.nan
            if result.success:
                state = kinematics.forward(result.interpolated_plan.position, spheres=False)
                z = quat_to_matrix(state.ee_quaternion)[:, :, 2]
                tilt = float(torch.acos((z @ goal_z).clamp(-1.0, 1.0)).max())
            rows.append(
                {
                    "goal": index,
                    "metric": name,
                    "status": result.status.value,
                    "time": seconds,
                    "max_tilt": tilt,
                }
            )
    summary = {}
    print(f"{'metric':10s} {'success':>8s} {'median s':>9s} {'max tilt rad':>13s}")
    for name in METRICS:
        mine = [r for r in rows if r["metric"] == name]
        ok = [r for r in mine if r["status"] == "SUCCESS"]
        tilts = [r["max_tilt"] for r in ok]
        summary[name] = {
            "success": len(ok) / len(mine),
            "median_time": statistics.median(r["time"] for r in mine),
            "max_tilt": max(tilts) if tilts else math.nan,
        }
        s = summary[name]
        print(
            f"{name:10s} {len(ok):>4d}/{len(mine):<3d} {s['median_time']:9.2f} "
            f"{s['max_tilt']:13.4f}"
        )
    write_json(args.json, {"benchmark": "pose_metric", **vars(args), "summary": summary}, rows)


if __name__ == "__main__":
    main()
