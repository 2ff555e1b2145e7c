"""CPU forward step kernels over whole joint vectors: one thread per trajectory, each step's
``D`` joints one Warp vector.

The kernels of :mod:`curobo_lite.kernels.step_kernels` walk one joint at a time and index every
load and store as ``[b, h, d]``; on a CPU that indexing (stride products and the negative-index
wrap of each of the three indices) is most of their work: a 10 000 x 32 x 7 forward took 4.4x a
copy of its output bytes on one core. Here a trajectory's ``[H, D]`` block is read and written a
row of ``D`` joints at a time (one index per row, contiguous ``D``-wide loads and stores), with
the same step rules (:data:`~curobo_lite.kernels.step_kernels.STEP_RULES`) applied to the whole
row: on one core the same forward takes about a copy's time.

Used for the control spaces whose step ``h`` reads only ``u_{h-1}`` (POSITION with backward
differences, VELOCITY, ACCELERATION, JERK) when the tensors are on the CPU and their joint axis
is contiguous (what :func:`rows_fit` checks); the central-difference and teleport forwards, the
adjoints and every CUDA launch stay with the per-joint kernels (on a GPU a thread per joint is
the parallelism). The kernels are generic over the joint vector: each (``D``, dtype) pair
compiles its kernel on first use, in a module of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.step_kernels import STEP_RULES, _start_row
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


ROW_FORWARDS = {mode: _rows_forward(rule) for mode, rule in STEP_RULES.items()}

_kernels: dict[tuple[str, int, torch.dtype], wp.Kernel] = {}
_vector_types: dict[tuple[int, torch.dtype], type] = {}


def joint_vector(dof: int, dtype: torch.dtype) -> type:
    """The Warp vector type of ``dof`` joints of ``dtype`` (one type per pair, reused)."""
    key = (dof, dtype)
    vector = _vector_types.get(key)
    if vector is None:
        vector = wp.types.vector(length=dof, dtype=_SCALAR[dtype])
        _vector_types[key] = vector
    return vector


def rows_kernel(mode: str, dof: int, dtype: torch.dtype) -> wp.Kernel:
    """The row forward of control space ``mode`` for ``dof`` joints of ``dtype``: a kernel in
    a module of its own, so that each (mode, ``dof``, dtype) compiles once, alone (overloads
    of one shared kernel would recompile all the others with each new one)."""
    key = (mode, dof, dtype)
    kernel = _kernels.get(key)
    if kernel is None:
        vector = joint_vector(dof, dtype)
        rows, row = wp.array2d(dtype=vector), wp.array(dtype=vector)
        scalars = wp.array(dtype=_SCALAR[dtype])
        arg_types = [rows, row, row, row, wp.array(dtype=wp.int64), int, scalars] + [rows] * 4
        name = f"{mode.lower()}_forward_rows_{dof}_{str(dtype).removeprefix('torch.')}"
        generic = wp.kernel(ROW_FORWARDS[mode], name=name, enable_backward=False, module="unique")
        kernel = generic.add_overload(arg_types)
        _kernels[key] = kernel
    return kernel


def rows_fit(mode: str, device: torch.device, tensors: Sequence[torch.Tensor]) -> bool:
    """Whether the row kernels serve ``mode`` on ``device`` for ``tensors`` (trajectories
    ``[B, H, D]`` and start states ``[S, D]``): a CPU device, a control space with a row rule
    and a contiguous joint axis in every tensor."""
    return device.type == "cpu" and mode in ROW_FORWARDS and all(t.stride(-1) == 1 for t in tensors)
