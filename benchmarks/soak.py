"""Soak test of the MPC loop: many steps with goals and obstacles changing as it runs.

``MpcSolver.step`` drives an ideal tracker (the robot reaches each command by the next step) for
``--steps`` steps; every ``--goal-every`` steps the goal jumps to the pose of another random
reachable configuration, every ``--obstacle-every`` steps a ball obstacle moves to another place.
Reported: resident memory (``/proc/self/statm``, sampled every ``--sample-every`` steps) and its
growth after ``--warmup`` steps, the step time of the first and last windows after the warm-up
(drift), the number of commands holding NaN/inf (must be 0) and how close each goal was reached.

Usage: ``python benchmarks/soak.py [--steps 10000] [--robot planar3|franka] [--json out.json]``
(``make soak``). Exit status 1 when a command was NaN or memory grew by more than
``--max-growth-mb``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch

from curobo_lite.config_files import atomic_write_text
from curobo_lite.geom import Sphere, WorldConfig
from curobo_lite.robot import Kinematics
from curobo_lite.sim import IdealTracker
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
# where the ball may sit: off to the side of each robot's workspace, so goals stay reachable
BALL_PLACES = {
    "planar3": [(0.0, -0.6, 0.0), (-0.6, 0.0, 0.0), (0.0, 0.6, 0.0), (-0.5, -0.5, 0.0)],
    "franka": [(0.6, -0.4, 0.1), (0.5, 0.5, 0.1), (-0.4, 0.4, 0.3), (0.0, -0.6, 0.5)],
}


def resident_mb() -> float:
    """Resident set size of this process in MB (second field of /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE_BYTES / 2**20


def random_goals(solver: MpcSolver, n: int, seed: int) -> list[Pose]:
    """End-effector poses of random configurations near the retract one (reachable)."""
    robot = solver.robot_config
    g = torch.Generator().manual_seed(seed)
    low, high = robot.joint_limits.position
    q = robot.retract_config + 0.6 * (2 * torch.rand(n, robot.dof, generator=g) - 1)
    q = torch.maximum(torch.minimum(q, high - 0.1), low + 0.1)
    fk = Kinematics(robot).forward(q)
    return [Pose(fk.ee_position[i : i + 1], fk.ee_quaternion[i : i + 1]) for i in range(n)]


def run_soak(
    steps: int,
    robot: str = "planar3",
    particles: int | None = None,
    goal_every: int = 300,
    obstacle_every: int = 200,
    sample_every: int = 500,
    warmup: int = 1000,
    seed: int = 0,
) -> dict:
    """Run the loop; returns the report (see the module docstring)."""
    if steps < 1 or warmup >= steps:
        raise ValueError(f"steps: expected > warmup ({warmup}), received {steps}")
    overrides = {"seed": seed} if particles is None else {"seed": seed, "num_particles": particles}
    places = BALL_PLACES[robot]
    world = WorldConfig(sphere=[Sphere(name="ball", radius=0.08, position=list(places[0]))])
    solver = MpcSolver.from_config(robot=robot, world=world, **overrides)
    goals = random_goals(solver, max(1, steps // goal_every + 1), seed)
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    tracker = IdealTracker(state)
    step_time = torch.zeros(steps, dtype=torch.float64)
    memory: list[tuple[int, float]] = [(0, resident_mb())]
    nan_commands, goal_errors = 0, []
    goal = goals[0]
    for i in range(steps):
        if i % goal_every == 0:
            if i > 0:
                goal_errors.append(solver.pose_error(state)[0])
            goal = goals[i // goal_every]
            solver.update_goal(goal)
        if i % obstacle_every == 0 and i > 0:
            x, y, z = places[(i // obstacle_every) % len(places)]
            solver.world_collision.update_obstacle_pose("ball", [x, y, z, 1.0, 0.0, 0.0, 0.0])
        start = time.perf_counter()
        result = solver.step(state)
        step_time[i] = time.perf_counter() - start
        command = result.action
        if not all(bool(torch.isfinite(t).all()) for t in (command.position, command.velocity)):
            nan_commands += 1
            command = state  # hold still rather than feed NaN back
        state = tracker.step(command)
        if (i + 1) % sample_every == 0 or i + 1 == steps:
            memory.append((i + 1, resident_mb()))
    goal_errors.append(solver.pose_error(state)[0])
    after = [mb for step, mb in memory if step >= warmup]
    window = max(1, min(500, (steps - warmup) // 2))
    first = step_time[warmup : warmup + window]
    last = step_time[steps - window :]
    return {
        "robot": robot,
        "steps": steps,
        "particles": solver.mppi.config.num_particles,
        "goal_every": goal_every,
        "obstacle_every": obstacle_every,
        "warmup": warmup,
        "nan_commands": nan_commands,
        "rss_mb": [[step, round(mb, 2)] for step, mb in memory],
        "rss_growth_after_warmup_mb": round(max(after) - after[0], 2),
        "step_ms_first_window": round(1e3 * float(first.mean()), 3),
        "step_ms_last_window": round(1e3 * float(last.mean()), 3),
        "step_time_drift": round(float(last.mean() / first.mean()) - 1.0, 4),
        "step_ms_p99": round(1e3 * float(step_time[warmup:].quantile(0.99)), 3),
        "goal_position_error_m": [round(float(e), 4) for e in goal_errors],
        "total_s": round(float(step_time.sum()), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--robot", choices=sorted(BALL_PLACES), default="planar3")
    parser.add_argument("--particles", type=int, default=None, help="default: the task's")
    parser.add_argument("--goal-every", type=int, default=300)
    parser.add_argument("--obstacle-every", type=int, default=200)
    parser.add_argument("--sample-every", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--max-growth-mb", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the report here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = run_soak(
        args.steps,
        args.robot,
        args.particles,
        args.goal_every,
        args.obstacle_every,
        args.sample_every,
        args.warmup,
    )
    ok = report["nan_commands"] == 0 and report["rss_growth_after_warmup_mb"] < args.max_growth_mb
    report["passed"] = ok
    text = json.dumps(report, indent=2)
    if args.json:
        atomic_write_text(args.json, text)
    print(text)
    worst = max(report["goal_position_error_m"])
    print(
        f"{report['steps']} steps in {report['total_s']} s: NaN commands {report['nan_commands']}, "
        f"RSS growth after warm-up {report['rss_growth_after_warmup_mb']} MB, step time "
        f"{report['step_ms_first_window']} -> {report['step_ms_last_window']} ms, worst goal "
        f"error {worst if math.isfinite(worst) else 'nan'} m",
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
