"""What the live MPC view adds to each control step.

Runs the Franka's closed loop (``particle_mpc``, ``table`` world, ideal tracker) for ``--steps``
steps three times: without a viewer, with :class:`~curobo_lite.viz.MpcView` at its default 10
redraws per second, and redrawing after every step. Prints the median ``MpcSolver.step`` time
and the time spent in the view per step (mean, 95th percentile, max) and per redraw, plus the
cost of one redraw timed on its own. Nothing is connected to the viewer: the numbers are the
loop-side cost (viser sends to browsers from its own thread).

Usage: ``python benchmarks/viewer.py [--steps 100] [--threads N]``; writes
``benchmarks/results/viewer.json``. Needs ``curobo_lite[viz]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from timing import write_json

from curobo_lite.sim import IdealTracker, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.viz import Viewer
from curobo_lite.wrap import MpcSolver

GOAL = [0.45, 0.25, 0.3, 0.0, 1.0, 0.0, 0.0]


def closed_loop(solver: MpcSolver, steps: int, view=None) -> list[float]:
    """Seconds per ``MpcSolver.step`` over one run from the retract pose."""
    solver.reset()
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    goal = Pose.from_list(GOAL, solver.tensor_args)
    record = run_closed_loop(solver, IdealTracker(start), goal, steps, on_step=view)
    return record.solve_time.tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    solver = MpcSolver.from_config("franka", world="table")
    closed_loop(solver, 5)  # warm-up: kernel compilation, allocations
    rows = []
    with Viewer(solver.robot_config, port=0) as viewer:
        for label, rate in (("no viewer", None), ("view, 10 Hz", 10.0), ("view, every step", 1e9)):
            view = None if rate is None else viewer.mpc_callback(solver, max_rate_hz=rate)
            solve = closed_loop(solver, args.steps, view)
            row = {"setting": label, "median_step_ms": statistics.median(solve) * 1e3}
            if view is not None:
                calls = sorted(view.call_seconds)
                row.update(
                    view_mean_ms=statistics.fmean(calls) * 1e3,
                    view_p95_ms=calls[int(0.95 * (len(calls) - 1))] * 1e3,
                    view_max_ms=calls[-1] * 1e3,
                    redraws=view.updates,
                    ms_per_redraw=sum(calls) / max(view.updates, 1) * 1e3,
                )
            rows.append(row)
            print(
                ", ".join(
                    f"{k} {v:.2f}" if isinstance(v, float) else f"{v}" for k, v in row.items()
                )
            )
        redraw = viewer.mpc_callback(solver)
        seconds, cpu_seconds = [], []
        for _ in range(30):
            start, start_cpu = time.perf_counter(), time.thread_time()
            redraw.update()
            seconds.append(time.perf_counter() - start)
            cpu_seconds.append(time.thread_time() - start_cpu)
        one = statistics.median(seconds) * 1e3
        one_cpu = statistics.median(cpu_seconds) * 1e3
        # CPU time of this thread: what a redraw costs the loop when cores are shared
        print(f"one redraw on its own: median {one:.2f} ms wall, {one_cpu:.2f} ms CPU over 30")
        rows.append({"setting": "one redraw", "median_ms": one, "median_cpu_ms": one_cpu})
    write_json(
        os.path.join(os.path.dirname(__file__), "results", "viewer.json"),
        {"steps": args.steps, "goal": GOAL, "world": "table"},
        rows,
    )


if __name__ == "__main__":
    main()
