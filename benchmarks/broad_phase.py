"""The world query's broad phase where it costs: a whole ``MpcSolver.step`` (particle_mpc: 400
particles x 30 steps, collision on) in the bundled scenes and in MotionBenchMaker's, with the
loop, the BVH and the static grid side by side in one run, and what building the grid costs.

Per scene the MPC first runs 40 steps from the start toward the goal on an ideal tracker (so
the particles explore near the obstacles, where the cost is), then each broad phase is timed
on the same state, in turn, twice (the median of both rounds). MBM scenes: the first problem
of each family, the Franka on its stand, the problem's start and grasp goal.

Usage: ``python benchmarks/broad_phase.py [--device cuda] [--out results/broad_phase.json]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from mbm import DATA, load_problems  # noqa: E402
from timing import timeit, write_json  # noqa: E402

from curobo_lite.geom import WorldCollision, WorldConfig  # noqa: E402
from curobo_lite.robot import Kinematics, RobotConfig  # noqa: E402
from curobo_lite.scenes import FAMILIES  # noqa: E402
from curobo_lite.sim import IdealTracker  # noqa: E402
from curobo_lite.types import JointState, Pose, TensorDeviceType  # noqa: E402
from curobo_lite.wrap import MpcSolver  # noqa: E402

BUNDLED = ["table", "narrow_gap", "mixed", "bookshelf", "cubbies"]
PHASES = ["loop", "bvh", "grid"]


def scenes(tensor_args: TensorDeviceType) -> list[tuple[str, WorldConfig, torch.Tensor, Pose]]:
    """``(name, world, start [D], goal)`` of every scene."""
    robot = RobotConfig.load("franka")
    retract = tensor_args.to_device(robot.retract_config)
    fk = Kinematics(robot, tensor_args).forward(retract[None] + 0.3)
    bundled_goal = Pose(fk.ee_position, fk.ee_quaternion)
    out = [(name, WorldConfig.load(name), retract, bundled_goal) for name in BUNDLED]
    for family in FAMILIES:
        problem = load_problems(family, 1, DATA)[0]
        start = tensor_args.to_device(problem.start)
        goal = Pose.from_list(problem.goal_pose, tensor_args)
        out.append((problem.name, problem.world, start, goal))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "broad_phase.json")
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    rows = []
    print(f"{'scene':>26} {'obst':>4} " + " ".join(f"{p + ' ms':>9}" for p in PHASES)
          + f" {'auto':>5} {'build ms':>8} {'cells':>14}")  # fmt: skip
    for name, world, start, goal in scenes(tensor_args):
        solver = MpcSolver.from_config(
            robot="franka", task="particle_mpc", tensor_args=tensor_args, world=world
        )
        solver.update_goal(goal)
        tracker = IdealTracker(JointState.from_position(start[None].clone()))
        for _ in range(40):
            tracker.step(solver.step(tracker.state).action)
        state = tracker.state
        collision = solver.world_collision
        times = {phase: [] for phase in PHASES}

        def step(solver=solver, state=state):
            solver.step(state)

        for _ in range(2):
            for phase in PHASES:
                collision.broad_phase = phase
                times[phase].append(timeit(step, tensor_args.device, 0.3))
        step_ms = {phase: statistics.median(t) * 1e3 for phase, t in times.items()}
        collision.broad_phase = "auto"
        auto = {0: "loop", 1: "bvh", 2: "grid"}[collision.query_tables(0.04)[2]]
        # a fresh build, timed alone
        fresh = WorldCollision(world, tensor_args, broad_phase="grid")
        t0 = time.perf_counter()
        fresh.query_tables(0.04)
        if tensor_args.device.type == "cuda":
            torch.cuda.synchronize()
        build_ms = (time.perf_counter() - t0) * 1e3
        dims = fresh._grid.dims
        row = {
            "scene": name,
            "obstacles": collision.num_enabled,
            "step_ms": step_ms,
            "auto": auto,
            "grid_build_ms": build_ms,
            "grid_dims": list(dims),
            "grid_cell_m": fresh._grid.cell_size,
        }
        rows.append(row)
        print(f"{name:>26} {row['obstacles']:>4} "
              + " ".join(f"{step_ms[p]:9.2f}" for p in PHASES)
              + f" {auto:>5} {build_ms:8.1f} {str(tuple(dims)):>14}", flush=True)  # fmt: skip
    write_json(args.out, {"device": args.device, "task": "particle_mpc"}, rows)


if __name__ == "__main__":
    main()
