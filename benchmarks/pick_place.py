"""Pick and place over seeded box places: success and time of every stage, the closed loop in
MuJoCo, and the goal set of 10 grasps against one.

For each seed, :meth:`PickPlaceTask.sampled` puts the box on the bookshelf's low or middle
board (depth 0.60-0.68 m, across -0.3 to 0.3 m) and :func:`plan_pick_place` plans the stages
(``reach`` by ``plan_goalset`` to 10 pre-grasps, the straight ``approach``, ``retreat``,
``carry``, ``place``, ``release``). Reported per stage: success rate and planning time (median,
p95); with ``--sim`` each plan also runs on the MuJoCo plant (largest tilt of the carried box,
stray contacts). The goal-set figure (issue 31: a set of 10 costs at most 2x one pose) is
measured as ``benchmarks/goalset.py`` measures it (its ``_measured`` judge: the pose claimed
reached by FK and the exact mesh check of the plan; its ``summarize``), here on the pick and
place's own pre-grasps: ``plan_single`` to the straight-in pre-grasp against ``plan_goalset``
to all 10.

Usage::

    python benchmarks/pick_place.py [--poses 20] [--sim] [--json benchmarks/results/pick_place.json]
        [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from goalset import _measured, _p95, summarize
from timing import write_json

from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.pick_place import (
    STAGES,
    PickPlaceTask,
    pick_place_motion_gen,
    plan_pick_place,
)
from curobo_lite.wrap.motion.straight_line import pose_rows

REPO = Path(__file__).resolve().parents[1]


def pre_grasps(task: PickPlaceTask) -> torch.Tensor:
    """``[G, 7]`` the pre-grasp poses the reach stage aims at (the grasps backed off)."""
    grasps = task.grasp_matrices()
    grasps[:, :3, 3] -= task.approach_distance * grasps[:, :3, 2]
    position, quaternion = pose_rows(grasps, TensorDeviceType())
    return torch.cat((position, quaternion), dim=1).float()


def goalset_row(motion_gen: MotionGen, checker: RobotWorld, task: PickPlaceTask) -> dict:
    """``plan_single`` to pre-grasp 0 (straight in) and ``plan_goalset`` to all, timed and
    judged as ``benchmarks/goalset.py`` does."""
    tensor_args = motion_gen.tensor_args
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    poses = tensor_args.to_device(pre_grasps(task))
    row: dict = {"goals": int(poses.shape[0])}
    t0 = time.perf_counter()
    single = motion_gen.plan_single(
        start, Pose(poses[:1, :3].contiguous(), poses[:1, 3:].contiguous())
    )
    row.update(_measured("single", single, time.perf_counter() - t0, checker, poses[0].tolist()))
    t0 = time.perf_counter()
    chosen = motion_gen.plan_goalset(
        start, Pose(poses[:, :3].contiguous(), poses[:, 3:].contiguous())
    )
    seconds = time.perf_counter() - t0
    claimed = poses[chosen.goalset_index].tolist() if chosen.success else None
    row.update(_measured("goalset", chosen, seconds, checker, claimed))
    row["goalset_index"] = chosen.goalset_index
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poses", type=int, default=20, help="seeded box places 0..N-1")
    parser.add_argument("--sim", action="store_true", help="run each plan on the MuJoCo plant")
    parser.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "pick_place.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    tasks = [PickPlaceTask.sampled(seed) for seed in range(args.poses)]
    motion_gen = pick_place_motion_gen(tasks[0], tensor_args=tensor_args)
    checker = RobotWorld.from_config("franka", tasks[0].world_config(), tensor_args)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    plan_pick_place(motion_gen, tasks[0], start)  # Warp module loads, first allocations
    rows = []
    print(f"{'seed':>4} {'box':>22} {'ok':>5} {'failed':>8} " + " ".join(f"{s:>8}" for s in STAGES))
    for seed, task in enumerate(tasks):
        motion_gen.update_world(task.world_config())
        checker.update_world(task.world_config())
        row = {
            "seed": seed,
            "box_position": task.box_position,
            **goalset_row(motion_gen, checker, task),
        }
        motion_gen.update_world(task.world_config())
        t0 = time.perf_counter()
        plan = plan_pick_place(motion_gen, task, start)
        row.update(
            success=plan.success,
            failed_stage=plan.failed_stage,
            plan_time=time.perf_counter() - t0,
            stages={
                s.name: {
                    "success": s.success,
                    "status": s.status,
                    "plan_time": s.plan_time,
                    "motion_time": s.motion_time,
                    "mesh_clearance": s.mesh_clearance,
                    "max_tilt": s.max_tilt,
                }
                for s in plan.stages
            },
        )
        if args.sim and plan.success:
            from curobo_lite.wrap.motion.pick_place_run import run_pick_place

            row["run"] = run_pick_place(motion_gen, plan).summary()
        rows.append(row)
        times = " ".join(
            f"{row['stages'][s]['plan_time']:>8.2f}" if s in row["stages"] else f"{'-':>8}"
            for s in STAGES
        )
        box = "(" + ", ".join(f"{v:.2f}" for v in task.box_position) + ")"
        print(
            f"{seed:>4} {box:>22} {str(plan.success):>5} {str(plan.failed_stage or ''):>8} {times}",
            flush=True,
        )
    summary: dict = {
        "poses": len(rows),
        "success_rate": sum(r["success"] for r in rows) / len(rows),
    }
    print()
    print(f"{'stage':>9} {'reached':>8} {'success':>8} {'median s':>9} {'p95 s':>7}")
    for name in STAGES:
        entries = [r["stages"][name] for r in rows if name in r["stages"]]
        times = [e["plan_time"] for e in entries] or [float("nan")]
        summary[name] = {
            "attempted": len(entries),
            "success_rate": sum(e["success"] for e in entries) / max(len(entries), 1),
            "time_median_s": statistics.median(times),
            "time_p95_s": _p95(times),
        }
        s = summary[name]
        print(
            f"{name:>9} {s['attempted']:>8} {100 * s['success_rate']:>7.0f}% "
            f"{s['time_median_s']:>9.2f} {s['time_p95_s']:>7.2f}"
        )
    total = [r["plan_time"] for r in rows if r["success"]] or [float("nan")]
    summary["plan_time_median_s"] = statistics.median(total)
    print(
        f"whole plan: {100 * summary['success_rate']:.0f} % of {len(rows)}, median "
        f"{summary['plan_time_median_s']:.2f} s"
    )
    runs = [r["run"] for r in rows if "run" in r]
    if runs:
        summary["sim"] = {
            "runs": len(runs),
            "max_tilt_carried_rad": max(r["max_tilt_carried_rad"] for r in runs),
            "with_stray_contacts": sum(bool(r["unexpected_contacts"]) for r in runs),
            "max_placed_error_m": max(r["placed_error_m"] for r in runs),
        }
        s = summary["sim"]
        print(
            f"MuJoCo: {s['runs']} runs, largest carried tilt {s['max_tilt_carried_rad']:.4f} rad, "
            f"{s['with_stray_contacts']} with stray contacts, placed within "
            f"{1e3 * s['max_placed_error_m']:.1f} mm"
        )
    print("reach stage: one pre-grasp (straight in) vs the goal set of 10")
    summary["goalset"] = summarize(rows)
    write_json(args.json, {"benchmark": "pick_place", **vars(args), "summary": summary}, rows)


if __name__ == "__main__":
    main()
