"""Reactive control benchmark: ReactivePlanner (MotionGen plan tracked by MPC, replanned when the
world moves) beside MPC alone (``use_plan=False``), over the bundled scenes with moving
obstacles, side by side in one run.

Scenarios (Franka on an ideal tracker, 20 ms control period):

- ``wall``: a goal behind a box wall (test_motion_gen's), nothing moves;
- ``cubby``: a side-facing goal 6 cm inside the middle cubby of ``cubbies``;
- ``moving_post``: the post of ``moving_post`` moved at step 10 onto the way to the goal;
- ``table_block``: the block of ``table`` moved at step 20 between the hand and a goal.

Modes: ``plan+mpc`` (replans inside the step), ``plan+mpc bg`` (``background_planning``: on a
worker thread while the MPC goes on), ``mpc`` (MPC alone).

Per scenario and mode: success (goal held within 1 cm / 0.05 rad, no contact), time to goal
(s of control, not wall clock), replans, the smallest clearance of the robot's spheres to the
obstacles along the run (coal's exact sphere-box distance when coal is installed, else the
solver's own), the median wall-clock step time and the slowest step (a replan's planning
included).

``--realtime``: the plant runs on the wall clock. A step that takes longer than the 20 ms
period misses deadlines: the robot holds the last command, at rest, for every period missed
(``missed``: periods without a fresh command; ``stall ms``: the longest), obstacles move at
their period of simulated time, and time to goal counts the periods that passed. Time it on an
otherwise idle machine.

Usage: ``python benchmarks/reactive.py [--device cuda] [--steps 400] [--particles 400]
[--scenarios wall cubby ...] [--realtime]``; writes ``benchmarks/results/reactive.json``
(``reactive_realtime.json`` with ``--realtime``).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

import torch
from timing import write_json

from curobo_lite.geom import WorldConfig
from curobo_lite.sim import IdealTracker
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import ReactivePlanner

C = math.sqrt(0.5)
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
SCENARIOS = {
    "wall": {"world": {"cuboid": {"wall": WALL}}, "goal": [0.42, -0.35, 0.40, 0, 1, 0, 0]},
    "cubby": {"world": "cubbies", "goal": [0.66, 0.0, 0.55, C, 0.0, C, 0.0]},
    "moving_post": {
        "world": "moving_post",
        "goal": [0.4, -0.3, 0.45, 0, 1, 0, 0],
        "moves": {10: ("post", [0.42, -0.08, 0.33, 1, 0, 0, 0])},
    },
    "table_block": {
        "world": "table",
        "goal": [0.5, 0.25, 0.25, 0, 1, 0, 0],
        "moves": {20: ("block", [0.42, 0.14, 0.2, 1, 0, 0, 0])},
    },
}


MODES = ("plan+mpc", "plan+mpc bg", "mpc")


def _boxes(world_collision) -> list[tuple[list, list]]:
    world: WorldConfig = world_collision.world
    return [(list(box.pose), list(box.dims)) for box in world.cuboid]


def _clearance(planner: ReactivePlanner, positions: torch.Tensor, boxes_per_step) -> float:
    """Smallest sphere-box distance along ``positions [T, D]`` (coal when installed)."""
    spheres = planner.motion_gen.checker.get_world_spheres(positions).detach().cpu()
    try:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
        from collision_reference import coal_sphere_box_distance
    except ImportError:
        return float("nan")
    best = math.inf
    for t, boxes in enumerate(boxes_per_step):
        d = coal_sphere_box_distance(spheres[t].reshape(-1, 4).double().numpy(), boxes)
        best = min(best, float(d.min()))
    return best


def run(
    name: str, mode: str, steps: int, particles: int, tensor_args, realtime: bool = False
) -> dict:
    scenario = SCENARIOS[name]
    planner = ReactivePlanner.from_config(
        "franka",
        scenario["world"],
        tensor_args=tensor_args,
        use_plan=mode != "mpc",
        background_planning=mode == "plan+mpc bg",
        mpc={"num_particles": particles},
    )
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    tracker = IdealTracker(start)
    goal = Pose.from_list(scenario["goal"], tensor_args)
    # the first MPC step loads its Warp modules (~0.2 s): once, before the clock starts
    planner.mpc.update_goal(goal)
    planner.mpc.step(tracker.state)
    planner.mpc.reset()
    planner.set_goal(goal)
    moves = sorted(scenario.get("moves", {}).items())
    positions, boxes, times = [], [], []
    reached_at, missed, stall = None, 0, 0.0
    period = 0  # periods of simulated time passed
    dt = planner.control_dt
    while period < steps:
        while moves and moves[0][0] <= period:
            planner.move_obstacle(*moves.pop(0)[1])
        result = planner.step(tracker.state)
        late = max(math.ceil(result.solve_time / dt - 1e-9), 1) - 1 if realtime else 0
        if late:  # the robot held the last command, at rest, until this one came
            held_state = JointState.from_position(tracker.state.position.clone())
            tracker.reset(held_state)
            for _ in range(late):
                positions.append(held_state.position[0].cpu())
                boxes.append(_boxes(planner.world_collision))
            missed += late
            stall = max(stall, late * dt)
            period += late
        state = tracker.step(result.action)
        period += 1
        positions.append(state.position[0].cpu())
        boxes.append(_boxes(planner.world_collision))
        times.append(result.solve_time)
        held = result.position_error <= 0.01 and result.rotation_error <= 0.05
        if held and float(state.velocity.abs().max()) < 0.05:
            reached_at = period
            break
    planner.close()
    clearance = _clearance(planner, torch.stack(positions).to(tensor_args.device), boxes)
    return {
        "success": reached_at is not None and clearance >= 0.0,
        "reached": reached_at is not None,
        "time_to_goal_s": None if reached_at is None else reached_at * dt,
        "replans": planner.replans,
        "min_clearance_m": clearance,
        "final_position_error_m": result.position_error,
        "final_rotation_error_rad": result.rotation_error,
        "median_step_ms": statistics.median(times) * 1e3,
        "max_step_ms": max(times) * 1e3,
        "steps": len(times),
        "periods": period,
        "missed_periods": missed,
        "longest_stall_ms": stall * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--particles", type=int, default=400)
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--realtime", action="store_true", help="the plant runs on the wall clock")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    name = "reactive_realtime.json" if args.realtime else "reactive.json"
    args.out = args.out or os.path.join(os.path.dirname(__file__), "results", name)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    rows = {}
    print(
        f"ReactivePlanner vs MPC alone, Franka, {args.particles} particles, device "
        f"{args.device}, at most {args.steps} periods of 20 ms"
        f"{', plant on the wall clock' if args.realtime else ''}"
    )
    header = (
        f"{'scenario':<12} {'mode':<12} {'success':>7} {'t_goal s':>8} {'replans':>7} "
        f"{'clear mm':>8} {'pos cm':>7} {'rot rad':>7} {'step ms':>8} {'max ms':>8} "
        f"{'missed':>6} {'stall ms':>8}"
    )
    print(header)
    for name in args.scenarios:
        for mode in args.modes:
            row = run(name, mode, args.steps, args.particles, tensor_args, args.realtime)
            rows[f"{name}/{mode}"] = row
            t_goal = "-" if row["time_to_goal_s"] is None else f"{row['time_to_goal_s']:.2f}"
            print(
                f"{name:<12} {mode:<12} {str(row['success']):>7} {t_goal:>8} "
                f"{row['replans']:>7} {row['min_clearance_m'] * 1e3:8.1f} "
                f"{row['final_position_error_m'] * 100:7.2f} "
                f"{row['final_rotation_error_rad']:7.3f} {row['median_step_ms']:8.1f} "
                f"{row['max_step_ms']:8.0f} {row['missed_periods']:>6} "
                f"{row['longest_stall_ms']:8.0f}",
                flush=True,
            )
    meta = {
        "device": args.device,
        "particles": args.particles,
        "max_periods": args.steps,
        "realtime": args.realtime,
        "load_average": os.getloadavg(),
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
