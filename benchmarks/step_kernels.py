"""Step-kernel benchmark: our Warp kernels vs the dense torch reference vs a plain copy.

For each batch x horizon (7 dof, float32) and each control space it times, in one run:

* ``ours fwd``: :func:`curobo_lite.kernels.tensor_step` writing into preallocated buffers
  (how the dynamics model calls it), and ``ours fwd alloc`` with fresh outputs;
* ``ours f+b``: forward + backward of a loss on all four outputs w.r.t. the action;
* ``raw f+b`` / ``autograd f+b``: the two raw kernel launches (forward, adjoint) with given
  output gradients, and the same through ``torch.autograd.backward`` (no loss): their ratio is
  what the autograd wrapper adds;
* ``dense fwd`` / ``dense f+b``: the seed's dense torch reference (``CliqueTensorStep`` for
  POSITION, ``tensor_step_acc`` for ACCELERATION), matrices built once outside the timing;
  ``dense autograd``: its forward + backward through ``torch.autograd.backward`` with the same
  output gradients as ``autograd f+b`` (no loss), and ``dense/ours autograd`` their ratio;
* ``copy``: copying the four output tensors' bytes (the memory-bandwidth floor for the forward).

Prints a table and writes JSON (default ``benchmarks/results/step_kernels.json``).
Usage: ``python benchmarks/step_kernels.py [--device cuda] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import platform
from functools import partial

import torch
from timing import timeit as _timeit
from timing import write_json

from curobo_lite.kernels import StepBuffers, tensor_step
from curobo_lite.kernels.step_inputs import resolve_step_mode, validate_step_inputs
from curobo_lite.kernels.step_launch import launch_adjoint, launch_forward
from curobo_lite.rollout.dynamics_model import integration_utils as iu
from curobo_lite.types import TensorDeviceType

timeit = partial(_timeit, min_time=0.3, max_reps=200)

DOF = 7


def dense_position(act, p, traj_dt, matrices):
    mask, n_mask, fd_1, fd_2, fd_3 = matrices
    return iu.CliqueTensorStep.apply(act, p, mask, n_mask, fd_1, fd_2, fd_3)


def dense_acceleration(act, state, traj_dt, int_matrix, state_seq):
    # cuRobo's dense convention: state [B, 1, 3D], dt inside int_matrix, actions shifted by the
    # caller (the values then equal SPEC §2 ACCELERATION; see tests/test_integration_utils.py)
    shifted = torch.cat((state[..., 2 * DOF :], act[:, :-1]), dim=1)
    return iu.tensor_step_acc(state, shifted, state_seq, traj_dt, DOF, int_matrix)


def graph_time(fn, device: torch.device, reps: int = 20) -> float:
    """Seconds per call of ``fn`` replayed from a CUDA graph ``reps`` times back to back: the
    device time of its kernels without Python's launch overhead."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()

    def replay():
        for _ in range(reps):
            graph.replay()

    return timeit(replay, device) / reps


def bench_case(batch: int, horizon: int, mode: str, device: torch.device) -> dict:
    dtype = torch.float32
    g = torch.Generator().manual_seed(0)
    act = torch.randn(batch, horizon, DOF, generator=g, dtype=dtype).to(device)
    p = torch.randn(batch, DOF, generator=g, dtype=dtype).to(device)
    v = torch.zeros_like(p)
    a = torch.zeros_like(p)
    traj_dt = torch.full((horizon,), 0.02, dtype=dtype, device=device)
    control_space = "POSITION" if mode == "POSITION" else "ACCELERATION"
    buffers = StepBuffers.empty_like(act)
    weights = [torch.randn(horizon, DOF, generator=g, dtype=dtype).to(device) for _ in range(4)]

    def loss(outputs):
        return sum((o * w).sum() for o, w in zip(outputs, weights))

    act_grad = act.clone().requires_grad_()
    row = {"batch": batch, "horizon": horizon, "mode": mode}
    row["ours_fwd"] = timeit(
        lambda: tensor_step(act, p, v, a, traj_dt, control_space, out=buffers), device
    )
    row["ours_fwd_alloc"] = timeit(
        lambda: tensor_step(act, p, v, a, traj_dt, control_space), device
    )

    def ours_fb():
        outputs = tensor_step(act_grad, p, v, a, traj_dt, control_space, out=buffers)
        loss(outputs).backward()
        act_grad.grad = None

    row["ours_fwd_bwd"] = timeit(ours_fb, device)

    # the wrapper's overhead: the same forward and adjoint launches, raw and through autograd
    step_mode = resolve_step_mode(control_space, "BACKWARD")
    inputs = validate_step_inputs(act, p, v, a, traj_dt, step_mode)
    out_grads = [w.expand(batch, -1, -1).contiguous() for w in weights]
    grad_act = torch.empty_like(act)

    def raw_fb():
        launch_forward(inputs, buffers)
        launch_adjoint(
            out_grads, inputs.traj_dt, step_mode, None, batch, tuple(act.shape), grad_act
        )

    def autograd_fb():
        outputs = tensor_step(act_grad, p, v, a, traj_dt, control_space, out=buffers)
        torch.autograd.backward(outputs, out_grads)
        act_grad.grad = None

    row["raw_fwd_bwd"] = timeit(raw_fb, device)
    row["autograd_fwd_bwd"] = timeit(autograd_fb, device)
    row["autograd_over_raw"] = row["autograd_fwd_bwd"] / row["raw_fwd_bwd"]

    tensor_args = TensorDeviceType(device=device, dtype=dtype)
    if mode == "POSITION":
        # F (block 2 of cuRobo's clique matrix) and its powers: SPEC §2 from a start at rest
        fd_1 = iu.build_clique_matrix(horizon, traj_dt, device=device, dtype=dtype)[
            horizon : 2 * horizon
        ]
        mask, n_mask = iu.build_start_state_mask(horizon, tensor_args)
        matrices = (mask, n_mask, fd_1, fd_1 @ fd_1, fd_1 @ fd_1 @ fd_1)

        def dense_fwd(u):
            return dense_position(u, p, traj_dt, matrices)
    else:
        weights = torch.cat((torch.zeros_like(traj_dt[:1]), traj_dt[1:]))  # index 0: the start
        int_matrix = iu.build_int_matrix(horizon, device=device, dtype=dtype, traj_dt=weights)
        state = torch.cat((p, v, a), dim=-1).unsqueeze(1)

        def dense_fwd(u):
            state_seq = torch.empty(batch, horizon, 4 * DOF, device=device, dtype=dtype)
            seq = dense_acceleration(u, state, traj_dt, int_matrix, state_seq)
            return seq.split(DOF, dim=-1)

    with torch.no_grad():
        row["dense_fwd"] = timeit(lambda: dense_fwd(act), device)

    def dense_fb():
        loss(dense_fwd(act_grad)).backward()
        act_grad.grad = None

    row["dense_fwd_bwd"] = timeit(dense_fb, device)

    def dense_autograd_fb():
        torch.autograd.backward(dense_fwd(act_grad), out_grads)
        act_grad.grad = None

    # the kernels' own comparison: forward + backward through autograd with the same output
    # gradients on both sides, without the loss's element-wise passes that both sides pay
    row["dense_autograd_fwd_bwd"] = timeit(dense_autograd_fb, device)
    row["dense_over_ours_autograd"] = row["dense_autograd_fwd_bwd"] / row["autograd_fwd_bwd"]

    sources = [torch.randn_like(act) for _ in range(4)]
    targets = [torch.empty_like(act) for _ in range(4)]

    def copy():
        for src, dst in zip(sources, targets):
            dst.copy_(src)

    row["copy"] = timeit(copy, device)
    row["fwd_over_copy"] = row["ours_fwd"] / row["copy"]
    if device.type == "cuda":
        # device time alone (replayed from CUDA graphs): the kernels vs the HBM copy bound
        row["ours_fwd_graph"] = graph_time(
            lambda: tensor_step(act, p, v, a, traj_dt, control_space, out=buffers), device
        )
        row["raw_fwd_bwd_graph"] = graph_time(raw_fb, device)
        with torch.no_grad():
            row["dense_fwd_graph"] = graph_time(lambda: dense_fwd(act), device)
        row["copy_graph"] = graph_time(copy, device)
        row["fwd_over_copy_graph"] = row["ours_fwd_graph"] / row["copy_graph"]
        row["copy_graph_bytes_per_s"] = 2 * 4 * act.numel() * 4 / row["copy_graph"]
    row["dense_over_ours_fwd_bwd"] = row["dense_fwd_bwd"] / row["ours_fwd_bwd"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="only batch 1000, horizon 32")
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "step_kernels.json")
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    batches = [1000] if args.quick else [1, 100, 1000, 10000]
    horizons = [32] if args.quick else [32, 128]
    rows = []
    header = (
        f"{'mode':<13}{'B':>6}{'H':>5} | {'ours fwd':>9}{'fwd alloc':>10}{'ours f+b':>9} | "
        f"{'dense fwd':>10}{'dense f+b':>10} | {'copy':>8} | {'fwd/copy':>8}{'dense/ours f+b':>15}"
        f" | {'raw f+b':>8}{'autograd':>9}{'ratio':>6} | {'dense autograd':>14}{'dense/ours':>11}"
    )
    print(
        f"step kernels, {DOF} dof, float32, device {device}, torch threads "
        f"{torch.get_num_threads()} (times in ms, median)"
    )
    print(header)
    print("-" * len(header))
    for mode in ("POSITION", "ACCELERATION"):
        for horizon in horizons:
            for batch in batches:
                row = bench_case(batch, horizon, mode, device)
                rows.append(row)
                ms = {k: v * 1e3 for k, v in row.items() if isinstance(v, float)}
                print(
                    f"{mode:<13}{batch:>6}{horizon:>5} | {ms['ours_fwd']:>9.3f}"
                    f"{ms['ours_fwd_alloc']:>10.3f}{ms['ours_fwd_bwd']:>9.3f} | "
                    f"{ms['dense_fwd']:>10.3f}{ms['dense_fwd_bwd']:>10.3f} | {ms['copy']:>8.3f} | "
                    f"{row['fwd_over_copy']:>8.2f}{row['dense_over_ours_fwd_bwd']:>15.2f}"
                    f" | {ms['raw_fwd_bwd']:>8.3f}{ms['autograd_fwd_bwd']:>9.3f}"
                    f"{row['autograd_over_raw']:>6.2f} | {ms['dense_autograd_fwd_bwd']:>14.3f}"
                    f"{row['dense_over_ours_autograd']:>11.2f}"
                )
    meta = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or platform.machine(),
        "dof": DOF,
        "dtype": "float32",
        "unit": "seconds (median)",
    }
    if device.type == "cuda":
        print("\nreplayed from CUDA graphs (device time, us): fwd, raw fwd+bwd, dense fwd, copy")
        for row in rows:
            us = {k: row[k] * 1e6 for k in row if k.endswith("_graph")}
            tbs = row["copy_graph_bytes_per_s"] / 1e12
            print(
                f"{row['mode']:<13}{row['batch']:>6}{row['horizon']:>5} | "
                f"{us['ours_fwd_graph']:>8.1f}{us['raw_fwd_bwd_graph']:>9.1f}"
                f"{us['dense_fwd_graph']:>9.1f}{us['copy_graph']:>8.1f} | fwd/copy "
                f"{row['fwd_over_copy_graph']:.2f}, copy {tbs:.2f} TB/s"
            )
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
