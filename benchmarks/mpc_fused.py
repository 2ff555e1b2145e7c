"""The fused forward-only MPPI rollout against the modular one, interleaved in one process.

Times ``MpcSolver.step`` of the bundled ``particle_mpc`` task (the Franka, 400 particles x 30
steps, ACCELERATION control, one MPPI iteration per step) in free space and among the bundled
``table`` world, and the rollout alone (``ArmReacher.rollout_fn`` of 400 sampled action
sequences), with ``ArmReacher.fused_rollout`` on and off in alternating rounds, so that a drift
of the machine's speed weighs on both alike. Reports per configuration the median and minimum
wall time and per-process CPU time per call, and the fused/modular ratio of the medians; the
load average before and after (compare numbers only within one run or on a quiet machine).

Usage: ``python benchmarks/mpc_fused.py [--rounds 5] [--reps 15] [--pieces N | --shares
0.45,0.3,0.25]``; writes ``benchmarks/results/mpc_fused.json``. ``--pieces``/``--shares``: the
row chunks of the fused rollout that the two threads share, ``N`` equal ones or these fractions
of the rows (:data:`curobo_lite.rollout.fused_rollout.SHARES`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from timing import write_json

from curobo_lite.kernels.launch import torch_cpu_threads
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import fused_rollout
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver


def _solver(world: str | None, tensor_args: TensorDeviceType) -> tuple[MpcSolver, JointState]:
    solver = MpcSolver.from_config(
        robot="franka", task="particle_mpc", tensor_args=tensor_args, world=world
    )
    robot = solver.robot_config
    fk = Kinematics(robot, tensor_args).forward(robot.retract_config[None] + 0.3)
    solver.update_goal(Pose(fk.ee_position, fk.ee_quaternion))
    state = JointState.from_position(robot.retract_config[None].clone())
    for _ in range(5):  # compile, warm caches, let the plan leave its initial zeros
        solver.step(state)
    return solver, state


def _rollout_call(solver: MpcSolver):
    """One rollout of MPPI's current samples (what the step's iteration rolls out), with
    torch's threads held as the step holds them (``mpc.cpu_torch_threads``)."""
    actions = solver.mppi._sample().reshape(-1, *solver.mppi.mean_action.shape[1:]).clone()
    threads = solver.config.cpu_torch_threads

    def call() -> None:
        with torch.no_grad(), torch_cpu_threads(threads, actions.device):
            solver.rollout.rollout_fn(actions)

    return call


def _stats(wall: list[float], cpu: list[float]) -> dict:
    return {
        "median_ms": statistics.median(wall) * 1e3,
        "min_ms": min(wall) * 1e3,
        "cpu_median_ms": statistics.median(cpu) * 1e3,
        "cpu_min_ms": min(cpu) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=15, help="calls per side per round")
    parser.add_argument("--pieces", type=int, default=None, help="equal row chunks")
    parser.add_argument(
        "--shares", default=None, help="row chunks as fractions, e.g. 0.45,0.3,0.25"
    )
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "mpc_fused.json")
    )
    args = parser.parse_args()
    if args.pieces:
        fused_rollout.PIECES, fused_rollout.SHARES = args.pieces, None
    if args.shares:
        fused_rollout.SHARES = tuple(float(share) for share in args.shares.split(","))
    tensor_args = TensorDeviceType()
    load_before = os.getloadavg()
    print(
        f"MpcSolver.step (particle_mpc, 400 x 30) and its rollout, fused vs modular rollout, "
        f"{args.rounds} interleaved rounds of {args.reps} calls; load {load_before[0]:.2f}; "
        f"fused row chunks {fused_rollout.SHARES or fused_rollout.PIECES}"
    )
    rows: dict = {}
    for world in (None, "table"):
        solver, state = _solver(world, tensor_args)
        reacher = solver.rollout
        calls = {
            "step": lambda solver=solver, state=state: solver.step(state),
            "rollout": _rollout_call(solver),
        }
        for what, call in calls.items():
            samples = {mode: ([], []) for mode in ("modular", "fused")}
            for _ in range(args.rounds):
                for mode in samples:
                    reacher.fused_rollout = mode == "fused"
                    call()
                    wall, cpu = samples[mode]
                    for _ in range(args.reps):
                        t0, c0 = time.perf_counter(), time.process_time()
                        call()
                        wall.append(time.perf_counter() - t0)
                        cpu.append(time.process_time() - c0)
            label = f"{what}_{world or 'free'}"
            rows[label] = {mode: _stats(*samples[mode]) for mode in samples}
            modular, fused = rows[label]["modular"], rows[label]["fused"]
            rows[label]["fused_over_modular"] = fused["median_ms"] / modular["median_ms"]
            print(
                f"  {label:14s} "
                + "   ".join(
                    f"{mode} {row['median_ms']:6.2f} ms (min {row['min_ms']:.2f}, cpu "
                    f"{row['cpu_median_ms']:.2f})"
                    for mode, row in (("modular", modular), ("fused", fused))
                )
                + f"   fused/modular {rows[label]['fused_over_modular']:.2f}"
            )
        reacher.fused_rollout = True
    load_after = os.getloadavg()
    print(f"load average before {load_before}, after {load_after}")
    meta = {
        "load_before": load_before,
        "load_after": load_after,
        "rounds": args.rounds,
        "reps": args.reps,
        "chunks": fused_rollout.SHARES or fused_rollout.PIECES,
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
