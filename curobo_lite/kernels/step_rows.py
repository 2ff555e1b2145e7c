"""CPU step kernels over whole joint vectors, forward and adjoint: one thread per trajectory,
each step's ``D`` joints one Warp vector.

The kernels of :mod:`curobo_lite.kernels.step_kernels` walk one joint at a time and index every
load and store as ``[b, h, d]``; on a CPU that indexing (stride products and the negative-index
wrap of each of the three indices) is most of their work: a 10 000 x 32 x 7 forward took 4.4x a
copy of its output bytes on one core. Here a trajectory's ``[H, D]`` block is read and written a
row of ``D`` joints at a time (one index per row, contiguous ``D``-wide loads and stores), with
the same rules applied to the whole row (:data:`~curobo_lite.kernels.step_kernels.STEP_RULES`
forward, :data:`~curobo_lite.kernels.step_kernels.ADJOINT_RULES` for the reverse sweep): on one
core the same forward takes about a copy's time.

Used for the control spaces whose step ``h`` reads only ``u_{h-1}`` (POSITION with backward
differences, VELOCITY, ACCELERATION, JERK) when the tensors are on the CPU and their joint axis
is contiguous (what :func:`rows_fit` checks); the central-difference and teleport modes,
strided layouts and every CUDA launch stay with the per-joint kernels (on a GPU a thread per
joint is the parallelism). The kernels are generic over the joint vector: each (kind, mode,
``D``, dtype) compiles its kernel on first use, in a module of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.step_kernels import ADJOINT_RULES, STEP_RULES, _start_row
from curobo_lite.kernels.warp_types import Array1

wp.config.log_level = 30  # WARNING

#: ``[B, H]`` (trajectories) or ``[S]`` (start states) of joint vectors
Rows = wp.array2d(dtype=Any)
Row = wp.array(dtype=Any)

_SCALAR = {torch.float32: wp.float32, torch.float64: wp.float64}


def _rows_forward(rule: wp.Function):
    """The row forward of one step rule, generic over the joint vector (a Python function)."""

    def forward_rows(
        act: Rows,
        start_position: Row,
        start_velocity: Row,
        start_acceleration: Row,
        start_idx: wp.array(dtype=wp.int64),
        use_idx: int,
        traj_dt: Array1,
        out_position: Rows,
        out_velocity: Rows,
        out_acceleration: Rows,
        out_jerk: Rows,
    ):
        b = wp.tid()
        s = _start_row(start_idx, use_idx, b)
        x = start_position[s]
        v = start_velocity[s]
        a = start_acceleration[s]
        out_position[b, 0] = x
        out_velocity[b, 0] = v
        out_acceleration[b, 0] = a
        out_jerk[b, 0] = act.dtype(0.0)
        for h in range(1, act.shape[1]):
            dt = traj_dt[h]
            x, v, a, j = rule(act[b, h - 1], dt, traj_dt.dtype(1.0) / dt, x, v, a)
            out_position[b, h] = x
            out_velocity[b, h] = v
            out_acceleration[b, h] = a
            out_jerk[b, h] = j

    return forward_rows


@wp.func
def _row_grad(grad: Rows, flag: int, b: int, h: int):
    value = grad.dtype(0.0)
    if flag != 0:
        value = grad[b, h]
    return value


@wp.func
def _row_grads(
    grad_position: Rows,
    grad_velocity: Rows,
    grad_acceleration: Rows,
    grad_jerk: Rows,
    has_grad: wp.vec4i,
    b: int,
    h: int,
):
    # rows gx, gv, ga, gj of the output gradients at step h (zero where the flag is zero)
    return wp.matrix_from_rows(
        _row_grad(grad_position, has_grad[0], b, h),
        _row_grad(grad_velocity, has_grad[1], b, h),
        _row_grad(grad_acceleration, has_grad[2], b, h),
        _row_grad(grad_jerk, has_grad[3], b, h),
    )


def _rows_adjoint(step: wp.Function, start_grads: wp.Function):
    """The row adjoint of one control space: the reverse sweep of the per-joint adjoint kernels
    with whole joint rows for scalars (a Python function, generic over the joint vector)."""

    def adjoint_rows(
        grad_position: Rows,
        grad_velocity: Rows,
        grad_acceleration: Rows,
        grad_jerk: Rows,
        has_grad_position: int,
        has_grad_velocity: int,
        has_grad_acceleration: int,
        has_grad_jerk: int,
        traj_dt: Array1,
        grad_act: Rows,
        grad_start_position: Row,
        grad_start_velocity: Row,
        grad_start_acceleration: Row,
    ):
        # the sweep walks each trajectory's rows backwards: taking the trajectories backwards
        # too makes one descending stream of addresses, which the CPU's prefetcher follows
        # (4x faster at 10 000 x 32 x 7 than ascending trajectories with descending rows)
        b = grad_act.shape[0] - 1 - wp.tid()
        has_grad = wp.vec4i(
            has_grad_position, has_grad_velocity, has_grad_acceleration, has_grad_jerk
        )
        zero = grad_act.dtype(0.0)
        grad_act[b, grad_act.shape[1] - 1] = zero  # the last action drives no step
        # four distinct zeros: carries bound to one variable would be one register in the loop
        c0 = grad_act.dtype(0.0)
        c1 = grad_act.dtype(0.0)
        c2 = grad_act.dtype(0.0)
        c3 = grad_act.dtype(0.0)
        for h in range(grad_act.shape[1] - 1, 0, -1):
            g = _row_grads(
                grad_position, grad_velocity, grad_acceleration, grad_jerk, has_grad, b, h
            )
            c0, c1, c2, c3, row, value = step(traj_dt, h, zero, g, c0, c1, c2, c3)
            if row >= 0:
                grad_act[b, row] = value
        g = _row_grads(grad_position, grad_velocity, grad_acceleration, grad_jerk, has_grad, b, 0)
        x, v, a = start_grads(g, c0, c1, c2)
        grad_start_position[b] = x
        grad_start_velocity[b] = v
        grad_start_acceleration[b] = a

    return adjoint_rows


ROW_FORWARDS = {mode: _rows_forward(rule) for mode, rule in STEP_RULES.items()}
ROW_ADJOINTS = {mode: _rows_adjoint(*rules) for mode, rules in ADJOINT_RULES.items()}

_kernels: dict[tuple[str, str, int, torch.dtype], wp.Kernel] = {}
_vector_types: dict[tuple[int, torch.dtype], type] = {}


def joint_vector(dof: int, dtype: torch.dtype) -> type:
    """The Warp vector type of ``dof`` joints of ``dtype`` (one type per pair, reused)."""
    key = (dof, dtype)
    vector = _vector_types.get(key)
    if vector is None:
        vector = wp.types.vector(length=dof, dtype=_SCALAR[dtype])
        _vector_types[key] = vector
    return vector


def rows_kernel(kind: str, mode: str, dof: int, dtype: torch.dtype) -> wp.Kernel:
    """The row ``kind`` (``"forward"`` or ``"adjoint"``) of control space ``mode`` for ``dof``
    joints of ``dtype``: a kernel in a module of its own, so that each one compiles once, alone
    (overloads of one shared kernel would recompile all the others with each new one)."""
    key = (kind, mode, dof, dtype)
    kernel = _kernels.get(key)
    if kernel is None:
        vector = joint_vector(dof, dtype)
        rows, row = wp.array2d(dtype=vector), wp.array(dtype=vector)
        scalars = wp.array(dtype=_SCALAR[dtype])
        if kind == "forward":
            function = ROW_FORWARDS[mode]
            arg_types = [rows, row, row, row, wp.array(dtype=wp.int64), int, scalars] + [rows] * 4
        else:
            function = ROW_ADJOINTS[mode]
            arg_types = [rows] * 4 + [int] * 4 + [scalars, rows, row, row, row]
        name = f"{mode.lower()}_{kind}_rows_{dof}_{str(dtype).removeprefix('torch.')}"
        generic = wp.kernel(function, name=name, enable_backward=False, module="unique")
        kernel = generic.add_overload(arg_types)
        _kernels[key] = kernel
    return kernel


def rows_fit(mode: str, device: torch.device, tensors: Sequence[torch.Tensor]) -> bool:
    """Whether the row kernels serve ``mode`` on ``device`` for ``tensors`` (trajectories
    ``[B, H, D]`` and start states ``[S, D]``): a CPU device, a control space with a row rule
    and a contiguous joint axis in every tensor."""
    return device.type == "cpu" and mode in ROW_FORWARDS and all(t.stride(-1) == 1 for t in tensors)
