"""Where a CPU MPC step's Python-side time goes: torch ops and Warp launch overhead.

Two tables, to decide what a fused forward-only MPPI rollout (issue #30 item 4) would save:

- the bundled ``particle_mpc`` task's ``MpcSolver.step`` (400 particles x 30 steps, Franka) in
  free space and among the bundled ``table`` world under ``torch.profiler``: aten calls per step
  and self CPU time per step, by op and input shape (the profiler adds a few microseconds per
  op, and its times are wall time inside each op, so a core another process holds inflates
  them: compare shapes and call counts across runs, times only on a quiet host; the calling
  thread's CPU time per step is printed without the profiler beside them);
- the Python cost of one Warp CPU launch of a tiny 10-argument kernel: arguments converted with
  ``wp.from_torch`` each call, with ``curobo_lite.kernels.launch.as_warp`` (the library's cached
  descriptors), with cached ``wp.array``s, and replayed from a recorded launch
  (``wp.launch(..., record_cmd=True)`` -> ``Launch.launch()``), next to one small torch op.

Times are thread CPU time (1 torch thread), minimum and median of 7 rounds. Usage:
``python benchmarks/mpc_ops.py [--top 15] [--out benchmarks/results/mpc_ops.json]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import warp as wp
from mpc import WORLD, mpc_solver, problem
from timing import write_json
from torch.profiler import ProfilerActivity, profile

from curobo_lite.kernels.launch import as_warp
from curobo_lite.types import JointState, TensorDeviceType

STEPS = 10  # profiled steps per world


def thread_us(fn, calls: int = 2000, rounds: int = 7) -> tuple[float, float]:
    """Minimum and median thread CPU microseconds per call of ``fn`` over ``rounds``."""
    for _ in range(200):
        fn()
    per_call = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        per_call.append((time.thread_time() - t0) / calls * 1e6)
    return min(per_call), statistics.median(per_call)


def step_ops(world: str | None, top: int) -> dict:
    """Calling-thread CPU time of a ``particle_mpc`` step and its aten ops by name and shape."""
    tensor_args = TensorDeviceType(device=torch.device("cpu"))
    solver = mpc_solver(tensor_args, problem(tensor_args)[1], cuda_graph=False, world=world)
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    step_ms = [v / 1e3 for v in thread_us(lambda: solver.step(state), calls=30, rounds=3)]
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True):
        solver.step(state)  # the profiler's own start-up, not counted
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(STEPS):
            solver.step(state)
    events = [e for e in prof.key_averages(group_by_input_shape=True) if e.key.startswith("aten::")]
    events.sort(key=lambda e: -e.self_cpu_time_total)
    return {
        "step_thread_cpu_ms_min": step_ms[0],
        "step_thread_cpu_ms_median": step_ms[1],
        "aten_calls_per_step": sum(e.count for e in events) / STEPS,
        "aten_self_ms_per_step": sum(e.self_cpu_time_total for e in events) / STEPS / 1e3,
        "top": [
            {
                "op": e.key,
                "shapes": str(e.input_shapes),
                "calls_per_step": e.count / STEPS,
                "self_ms_per_step": e.self_cpu_time_total / STEPS / 1e3,
            }
            for e in events[:top]
        ],
    }


@wp.kernel
def _tiny(
    a: wp.array(dtype=wp.float32),
    b: wp.array(dtype=wp.float32),
    c: wp.array(dtype=wp.float32),
    d: wp.array(dtype=wp.float32),
    e: wp.array(dtype=wp.float32),
    f: wp.array(dtype=wp.float32),
    g: wp.array(dtype=wp.float32),
    h: wp.array(dtype=wp.float32),
    scale: float,
    n: int,
):
    i = wp.tid()
    a[i] = b[i] + c[i] * scale


def launch_overhead() -> dict:
    """Thread CPU microseconds per launch of ``_tiny`` (one thread of work) by argument form."""
    tensors = [torch.zeros(12_000) for _ in range(8)]
    arrays = [wp.from_torch(t) for t in tensors]
    recorded = wp.launch(_tiny, dim=1, inputs=[*arrays, 1.0, 3], device="cpu", record_cmd=True)
    forms = {
        "wp.from_torch each call": lambda: wp.launch(
            _tiny, dim=1, inputs=[*(wp.from_torch(t) for t in tensors), 1.0, 3], device="cpu"
        ),
        "as_warp (library)": lambda: wp.launch(
            _tiny, dim=1, inputs=[*(as_warp(t) for t in tensors), 1.0, 3], device="cpu"
        ),
        "cached wp.array": lambda: wp.launch(_tiny, dim=1, inputs=[*arrays, 1.0, 3], device="cpu"),
        "recorded Launch.launch()": recorded.launch,
        "one torch add_ (12 000)": lambda: tensors[0].add_(tensors[1]),
    }
    return {name: dict(zip(("min_us", "median_us"), thread_us(fn))) for name, fn in forms.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=15, help="aten rows printed per world")
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "mpc_ops.json")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows: dict = {"load_average": os.getloadavg()}
    print(f"load average {rows['load_average']}")
    for label, world in (("free_space", None), ("table", WORLD)):
        r = rows[label] = step_ops(world, args.top)
        print(
            f"particle_mpc step, {label}: thread CPU {r['step_thread_cpu_ms_min']:.2f} ms min, "
            f"{r['step_thread_cpu_ms_median']:.2f} median; under the profiler "
            f"{r['aten_calls_per_step']:.0f} aten calls, {r['aten_self_ms_per_step']:.2f} ms"
        )
        for op in r["top"]:
            print(
                f"  {op['op']:22s} {op['shapes'][:60]:60s} {op['calls_per_step']:6.1f} calls"
                f"  {op['self_ms_per_step']:.3f} ms"
            )
    rows["launch_overhead"] = launch_overhead()
    print("one Warp CPU launch of a 10-argument kernel, thread CPU us (min, median):")
    for name, r in rows["launch_overhead"].items():
        print(f"  {name:26s} {r['min_us']:7.1f} {r['median_us']:7.1f}")
    write_json(args.out, {"benchmark": "mpc_ops", "load_average": rows.pop("load_average")}, rows)


if __name__ == "__main__":
    main()
