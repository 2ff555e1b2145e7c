"""Trajectory-optimization benchmark: solve time and success on the Franka.

Goals are the forward kinematics of ``--n-goals`` configurations drawn uniformly inside the joint
limits (seeded), planned from the retract configuration. Two modes:

- ``single``: one ``solve_pose`` call per goal (``num_seeds`` seeds, one problem per batch);
  median and 95th percentile of the wall-clock solve time.
- ``batch``: every goal in one ``solve_batch_pose`` call (``n-goals x num_seeds`` seeds); total
  time and time per problem.

Success is re-checked here independently of the solver: position error < 5 mm and rotation error
< 0.05 rad by forward kinematics of the last interpolated sample, and backward finite differences
of the interpolated samples within the position, velocity and acceleration limits.

The load average of the machine (``os.getloadavg``) before and after is recorded: on a shared CPU
the timings scale with the contention, and torch's intra-op threads suffer most from it
(``--threads 1`` is often faster there).

Usage: ``python benchmarks/trajopt.py [--threads N] [--n-goals 50] [--mode single batch]``;
prints a table and writes ``benchmarks/results/trajopt.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from curobo_lite.config_files import atomic_write_text
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap.trajopt.solver import TrajOptResult, TrajOptSolver

RESULTS = Path(__file__).resolve().parent / "results" / "trajopt.json"


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (``q`` in [0, 100])."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def make_goals(robot: RobotConfig, n: int, seed: int, tensor_args: TensorDeviceType) -> Pose:
    low, high = robot.joint_limits.position
    u = torch.rand(n, robot.dof, generator=torch.Generator().manual_seed(seed)).to(low.device)
    q = (low + (high - low) * u).to(**tensor_args.as_kwargs())
    fk = Kinematics(robot, tensor_args).forward(q)
    return Pose(fk.ee_position, fk.ee_quaternion)


def independent_success(robot: RobotConfig, result: TrajOptResult, goal: Pose) -> torch.Tensor:
    """``[B]`` goal within 5 mm / 0.05 rad and finite differences within the limits."""
    r64 = robot.to(TensorDeviceType(dtype=torch.float64))
    p = result.interpolated_solution.position.double().cpu()
    fk = Kinematics(r64, r64.tensor_args).forward(p[:, -1])
    position = (fk.ee_position - goal.position.double().cpu()).norm(dim=-1)
    dot = (fk.ee_quaternion * goal.quaternion.double().cpu()).sum(-1).abs().clamp(max=1.0)
    ok = (position < 0.005) & (2.0 * torch.acos(dot) < 0.05)
    dt = result.interpolation_dt
    v = p.diff(dim=1) / dt
    a = v.diff(dim=1) / dt
    lim = r64.joint_limits
    for x, bounds in ((p, lim.position), (v, lim.velocity), (a, lim.acceleration)):
        slack = 1e-6 * (bounds[1] - bounds[0])
        ok &= ((x >= bounds[0] - slack) & (x <= bounds[1] + slack)).flatten(1).all(dim=1)
    return ok


def run_single(solver, robot, goals: Pose, start: JointState) -> dict:
    times, successes, solver_success, pos_err, rot_err = [], [], [], [], []
    for i in range(goals.batch):
        t0 = time.perf_counter()
        result = solver.solve_pose(start, goals[i : i + 1])
        times.append(time.perf_counter() - t0)
        successes.append(bool(independent_success(robot, result, goals[i : i + 1])[0]))
        solver_success.append(bool(result.success[0]))
        pos_err.append(float(result.position_error[0]))
        rot_err.append(float(result.rotation_error[0]))
    return {
        "n_problems": goals.batch,
        "success_rate": sum(successes) / len(successes),
        "solver_success_rate": sum(solver_success) / len(solver_success),
        "time_median_s": statistics.median(times),
        "time_p95_s": percentile(times, 95),
        "time_mean_s": statistics.fmean(times),
        "position_error_median_mm": 1000 * statistics.median(pos_err),
        "position_error_p95_mm": 1000 * percentile(pos_err, 95),
        "rotation_error_median_rad": statistics.median(rot_err),
        "rotation_error_p95_rad": percentile(rot_err, 95),
        "times_s": times,
    }


def run_batch(solver, robot, goals: Pose, start: JointState) -> dict:
    starts = JointState.from_position(start.position.expand(goals.batch, -1).clone())
    t0 = time.perf_counter()
    result = solver.solve_batch_pose(starts, goals)
    total = time.perf_counter() - t0
    ok = independent_success(robot, result, goals)
    pos = [float(x) for x in result.position_error]
    rot = [float(x) for x in result.rotation_error]
    motion = [float(x) for x in result.motion_time]
    return {
        "n_problems": goals.batch,
        "success_rate": float(ok.double().mean()),
        "solver_success_rate": float(result.success.double().mean()),
        "time_total_s": total,
        "time_per_problem_s": total / goals.batch,
        "timings_s": result.timings,
        "position_error_median_mm": 1000 * statistics.median(pos),
        "position_error_p95_mm": 1000 * percentile(pos, 95),
        "rotation_error_median_rad": statistics.median(rot),
        "rotation_error_p95_rad": percentile(rot, 95),
        "motion_time_median_s": statistics.median(motion),
        "motion_time_p95_s": percentile(motion, 95),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--n-goals", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0, help="seed of the goal draw")
    parser.add_argument("--seeds", type=int, default=4, help="trajectory seeds per problem")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--mode", nargs="+", choices=("single", "batch"), default=["single", "batch"]
    )
    parser.add_argument("--output", default=str(RESULTS), help="JSON file to write")
    parser.add_argument(
        "--cuda-graph",
        action="store_true",
        help="replay the L-BFGS iterations from CUDA graphs (use_cuda_graph: true; CUDA only)",
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType(device=torch.device(args.device))
    load_before = os.getloadavg()
    solver = TrajOptSolver.from_config(
        "franka", num_seeds=args.seeds, tensor_args=tensor_args, use_cuda_graph=args.cuda_graph
    )
    robot = solver.robot_config
    goals = make_goals(robot, args.n_goals, args.seed, tensor_args)
    start = JointState.from_position(robot.retract_config[None].clone())
    solver.solve_pose(start, goals[0:1])  # warm-up: kernel loading, allocations
    report: dict = {
        "benchmark": "trajopt",
        "robot": "franka",
        "device": str(tensor_args.device),
        "use_cuda_graph": args.cuda_graph,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "n_goals": args.n_goals,
        "goal_seed": args.seed,
        "num_seeds": solver.config.num_seeds,
        "ik_num_seeds": solver.config.ik.num_seeds,
        "trajopt_iters": solver.lbfgs_config.n_iters,
        "ik_iters": solver.ik_solver.lbfgs_config.n_iters,
        "load_average_before": list(load_before),
    }
    if "single" in args.mode:
        report["single"] = run_single(solver, robot, goals, start)
    if "batch" in args.mode:
        report["batch"] = run_batch(solver, robot, goals, start)
    report["load_average_after"] = list(os.getloadavg())

    print(
        f"trajopt on {report['device']} ({report['threads']} torch threads, {os.cpu_count()} "
        f"cores, load {load_before[0]:.2f} -> {report['load_average_after'][0]:.2f}): "
        f"{args.n_goals} goals, {report['num_seeds']} seeds, {report['ik_num_seeds']} IK seeds"
    )
    header = (
        f"{'mode':<8}{'success':>9}{'median s':>11}{'p95 s':>9}{'total s':>9}{'pos p95 mm':>12}"
    )
    print(header)
    print("-" * len(header))
    if "single" in report:
        s = report["single"]
        total = sum(s["times_s"])
        print(
            f"{'single':<8}{s['success_rate']:>9.0%}{s['time_median_s']:>11.3f}"
            f"{s['time_p95_s']:>9.3f}{total:>9.2f}{s['position_error_p95_mm']:>12.3f}"
        )
    if "batch" in report:
        b = report["batch"]
        print(
            f"{'batch':<8}{b['success_rate']:>9.0%}{b['time_per_problem_s']:>11.3f}{'':>9}"
            f"{b['time_total_s']:>9.2f}{b['position_error_p95_mm']:>12.3f}"
        )
        print("(batch: one solve of all goals; 'median s' is the total time per problem)")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return report


if __name__ == "__main__":
    main()
