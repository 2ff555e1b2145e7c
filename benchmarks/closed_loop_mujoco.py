"""Closed-loop MPC against the MuJoCo plant on the bundled obstacle scenes.

For each scene the Franka starts at its retract pose and MPC (the ``particle_mpc`` task, with
the scene's obstacles) drives it to a reachable goal pose; the plant is MuJoCo at 1 kHz behind
a computed-torque controller (:class:`curobo_lite.sim.MujocoPlant`), nominal and with a 20 %
mass error plus 10 ms command latency (which the loop compensates, see
``run_closed_loop(latency_compensation=...)``). Simulated time, not wall clock: the plant
advances ``control_dt`` per command however long the solve took.

Printed per run: final end-effector error, the first step within 1 cm / 0.05 rad, MuJoCo's
robot-obstacle contacts (count and deepest penetration), the MPC's smallest sphere clearance,
and control-loop timing (median / 95th percentile solve ms, median simulation ms per control
step).

Usage: ``python benchmarks/closed_loop_mujoco.py [--scenes table,mixed] [--steps 250]
[--threads 1]``; writes ``benchmarks/results/closed_loop_mujoco.json``.
"""

from __future__ import annotations

import argparse
import os

import torch
from timing import write_json

from curobo_lite.sim import MujocoPlant, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

# one reachable goal per bundled scene (x y z qw qx qy qz, robot base frame)
SCENES = {
    "table": [0.45, 0.25, 0.35, 0.0, 1.0, 0.0, 0.0],  # above the block
    "bookshelf": [0.4, 0.2, 0.55, 0.0, 1.0, 0.0, 0.0],  # in front of the middle shelf
    "cubbies": [0.45, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0],  # in front of the upper cubbies
    "narrow_gap": [0.45, 0.0, 0.42, 0.0, 1.0, 0.0, 0.0],  # in front of the gap
    "mixed": [0.5, 0.0, 0.3, 0.0, 1.0, 0.0, 0.0],  # above the can
}
CASES = {
    "nominal": {"mass_scale": 1.0, "command_latency": 0.0},
    "mass1.2_latency10ms": {"mass_scale": 1.2, "command_latency": 0.01},
}
POSITION_TOLERANCE, ROTATION_TOLERANCE = 0.01, 0.05


def run_scene(scene: str, goal: list[float], case: dict[str, float], steps: int) -> dict:
    """One closed-loop run; returns its summary row."""
    solver = MpcSolver.from_config(robot="franka", task="particle_mpc", world=scene)
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    plant = MujocoPlant(
        solver.robot_config,
        solver.world_collision.world,
        {"control_dt": solver.control_dt, **case},
        start,
    )
    record = run_closed_loop(
        solver,
        plant,
        Pose.from_list(goal),
        steps,
        latency_compensation=case["command_latency"],
    )
    within = (record.position_error < POSITION_TOLERANCE) & (
        record.rotation_error < ROTATION_TOLERANCE
    )
    solve_ms = record.solve_time * 1e3
    return {
        "scene": scene,
        "goal": goal,
        **case,
        "steps": steps,
        "final_position_error_m": float(record.position_error[-1]),
        "final_rotation_error_rad": float(record.rotation_error[-1]),
        "reached": bool(within[-1]),
        "first_step_within_tolerance": int(within.nonzero()[0]) if within.any() else None,
        "contact_steps": int((record.contact_count > 0).sum()),
        "max_contacts": int(record.contact_count.max()),
        "max_penetration_m": float(record.max_penetration.max()),
        "min_world_clearance_m": float(record.world_distance.min()),
        "solve_ms_median": float(solve_ms.median()),
        "solve_ms_p95": float(solve_ms.quantile(0.95)),
        "sim_ms_median": float(record.step_time.median() * 1e3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", default=",".join(SCENES), help="comma-separated scenes")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--steps", type=int, default=250, help="control steps per run")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(__file__), "results", "closed_loop_mujoco.json"),
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    scenes = [s for s in args.scenes.split(",") if s]
    cases = [c for c in args.cases.split(",") if c]
    for name, known in (("--scenes", SCENES), ("--cases", CASES)):
        unknown = [v for v in (scenes if name == "--scenes" else cases) if v not in known]
        if unknown:
            parser.error(f"{name}: unknown {unknown}; expected a subset of {list(known)}")
    print(
        f"MPC (particle_mpc) vs MuJoCo plant (1 kHz, computed torque), Franka, {args.steps} "
        f"steps of 20 ms, torch threads {torch.get_num_threads()}"
    )
    header = (
        f"{'scene':<11}{'case':<21}{'pos cm':>8}{'rot rad':>9}{'reached@':>9}{'contacts':>9}"
        f"{'pen mm':>8}{'clear mm':>9}{'solve ms':>14}{'sim ms':>8}"
    )
    print(header)
    rows = {}
    for scene in scenes:
        for case in cases:
            row = run_scene(scene, SCENES[scene], CASES[case], args.steps)
            rows[f"{scene}/{case}"] = row
            reached = row["first_step_within_tolerance"]
            print(
                f"{scene:<11}{case:<21}{row['final_position_error_m'] * 100:8.2f}"
                f"{row['final_rotation_error_rad']:9.4f}{'-' if reached is None else reached:>9}"
                f"{row['contact_steps']:9d}{row['max_penetration_m'] * 1000:8.2f}"
                f"{row['min_world_clearance_m'] * 1000:9.1f}"
                f"{row['solve_ms_median']:7.1f}/{row['solve_ms_p95']:<6.1f}"
                f"{row['sim_ms_median']:8.2f}",
                flush=True,
            )
    meta = {
        "robot": "franka",
        "task": "particle_mpc",
        "threads": torch.get_num_threads(),
        "tolerance": {"position_m": POSITION_TOLERANCE, "rotation_rad": ROTATION_TOLERANCE},
        "physics_dt_s": 0.001,
        "note": "contact_steps: control steps with a MuJoCo robot-obstacle contact",
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
