"""Warp kernel for an MPPI rollout's joint-space half, forward only: integration and the costs.

An MPPI rollout without a gradient (400 particles x 30 steps on a CPU) spent most of its time
not in arithmetic but in ~900 small torch ops: the step kernel's outputs read back by the
bound, smoothness, stop, null-space, c-space-goal and tracking costs, each a handful of passes
over ``[B, H, D]`` tensors. Here one thread per particle row ``b`` walks the horizon once, a
step's ``D`` joints one Warp vector (as :mod:`curobo_lite.kernels.step_rows` does: one index
per row instead of per joint, most of a per-joint kernel's work on a CPU):

1. integrates the ACCELERATION control space from the start state (the step kernels' own rule,
   :func:`~curobo_lite.kernels.step_kernels._acceleration_rule`, backward differences for the
   jerk) into the model's ``[B, H, D]`` state buffers;
2. at each step, sums over the joints every enabled joint-space cost term with the formulas of
   :mod:`curobo_lite.rollout.cost` and writes term ``k`` into ``terms[slot_k, b, h]``.

Term slots (``slots [6]``, ``-1``: the term is off): bound, smoothness, stop, null space,
c-space goal, tracking. Constants (the cost's ``weight`` folded in):

- ``bound_lower``/``bound_upper [4]`` joint vectors: activation bounds per quantity (x, v, a,
  j; infinite bounds allowed);
  ``bound_weights [2, 4]``: quadratic and linear weights (a quantity whose two are 0 is skipped,
  as :func:`~curobo_lite.kernels.bound_cost_kernels.bound_cost_forward` skips it);
- ``joint_vectors [6]`` joint vectors: smoothness joint weights, stop max velocity,
  null-space retract pose, null-space joint weights, c-space-goal joint weights, tracking
  joint weights;
- ``scalars [9]``: smoothness acceleration and jerk weights, stop window, terminal-velocity and
  terminal-acceleration weights, stop ``n_steps``, null-space weight, tracking position and
  velocity weights (the tracking cost's ``weight`` is in its schedule);
- ``schedules [2, H]``: the c-space goal's per-step weight (0 where the cost pads zeros) and the
  tracking cost's (its ``weight`` included);
- ``stop_first``: the first step of the stop window (``H - min(n_steps, H)``).

A step whose weight is 0 writes 0 without reading its terms (the modular path pads zeros
there), so rows with a NaN action differ only in terms that are NaN on both paths.
One kernel per joint count and dtype (:func:`joint_rollout_kernel`), each in a module of its
own, as the row step kernels. CPU only, with a contiguous joint axis.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.step_kernels import _acceleration_rule, _start_row
from curobo_lite.kernels.step_rows import joint_vector
from curobo_lite.kernels.warp_types import Array1, Array2, Array3

#: ``[B, H]`` (trajectories) or ``[S]`` (start states, constants) of joint vectors
Rows = wp.array2d(dtype=Any)
Row = wp.array(dtype=Any)

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: term slots of :func:`mppi_joint_rollout` (``slots[k]``)
TERMS = ("bound", "smooth", "stop", "null_space", "cspace", "tracking")

#: rows of ``joint_vectors``
SMOOTH_WEIGHTS, STOP_MAX_VELOCITY, NULL_RETRACT, NULL_WEIGHTS, CSPACE_WEIGHTS, TRACK_WEIGHTS = (
    range(6)
)
#: entries of ``scalars``
(SMOOTH_ACC, SMOOTH_JERK, STOP_WINDOW, STOP_TERMINAL_V, STOP_TERMINAL_A, STOP_N, NULL_W) = range(7)
TRACK_P, TRACK_V = 7, 8
NUM_SCALARS = 9


@wp.func
def _bound_row(x: Any, lower: Any, upper: Any, w2: Any, w1: Any, ones: Any):
    """``sum_d w2 e² + w1 |e|`` of the excess ``e = x - clamp(x, lower, upper)`` (a quantity
    whose two weights are 0 adds nothing, as in ``bound_cost_forward``)."""
    value = w2 - w2
    if w2 != value or w1 != value:
        e = x - wp.min(wp.max(x, lower), upper)
        value = w2 * wp.dot(e, e) + w1 * wp.dot(wp.abs(e), ones)
    return value


def mppi_joint_rollout(
    act: Rows,
    start_position: Row,
    start_velocity: Row,
    start_acceleration: Row,
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: Array1,
    bound_lower: Row,
    bound_upper: Row,
    bound_weights: Array2,
    joint_vectors: Row,
    scalars: Array1,
    schedules: Array2,
    stop_first: int,
    goal_state: Row,
    reference_position: Row,
    reference_velocity: Row,
    slots: wp.array(dtype=wp.int32),
    out_position: Rows,
    out_velocity: Rows,
    out_acceleration: Rows,
    out_jerk: Rows,
    terms: Array3,
):
    """States ``[B, H]`` (joint vectors) of ``act [B, H]`` from start row ``start_idx[b]``
    (``b`` when ``use_idx == 0``) and the joint-space cost terms ``terms [K, B, H]`` (module
    docstring). ``goal_state [G]``: row ``start_idx[b]`` when ``G > 1``, else row 0."""
    b = wp.tid()
    s = _start_row(start_idx, use_idx, b)
    g = s
    if goal_state.shape[0] == 1:
        g = 0
    zero = traj_dt.dtype(0.0)
    ones = act.dtype(1.0)
    horizon = act.shape[1]
    bound_slot = slots[0]
    smooth_slot = slots[1]
    stop_slot = slots[2]
    null_slot = slots[3]
    cspace_slot = slots[4]
    track_slot = slots[5]
    acc_w = scalars[SMOOTH_ACC]
    jerk_w = scalars[SMOOTH_JERK]
    track_p = scalars[TRACK_P]
    track_v = scalars[TRACK_V]
    x = start_position[s]
    v = start_velocity[s]
    a = start_acceleration[s]
    j = act.dtype(0.0)
    for h in range(horizon):
        if h > 0:
            dt = traj_dt[h]
            x, v, a, j = _acceleration_rule(act[b, h - 1], dt, traj_dt.dtype(1.0) / dt, x, v, a)
        out_position[b, h] = x
        out_velocity[b, h] = v
        out_acceleration[b, h] = a
        out_jerk[b, h] = j
        if bound_slot >= 0:
            value = _bound_row(
                x, bound_lower[0], bound_upper[0], bound_weights[0, 0], bound_weights[1, 0], ones
            )
            value += _bound_row(
                v, bound_lower[1], bound_upper[1], bound_weights[0, 1], bound_weights[1, 1], ones
            )
            value += _bound_row(
                a, bound_lower[2], bound_upper[2], bound_weights[0, 2], bound_weights[1, 2], ones
            )
            value += _bound_row(
                j, bound_lower[3], bound_upper[3], bound_weights[0, 3], bound_weights[1, 3], ones
            )
            terms[bound_slot, b, h] = value
        if smooth_slot >= 0:
            per_joint = act.dtype(0.0)
            if acc_w != zero:
                per_joint = acc_w * wp.cw_mul(a, a)
            if jerk_w != zero:
                per_joint += jerk_w * wp.cw_mul(j, j)
            terms[smooth_slot, b, h] = wp.dot(per_joint, joint_vectors[SMOOTH_WEIGHTS])
        if stop_slot >= 0:
            value = zero
            if h >= stop_first:
                limit = traj_dt.dtype(horizon - 1 - h) / scalars[STOP_N]
                excess = wp.max(
                    wp.abs(v) - limit * joint_vectors[STOP_MAX_VELOCITY], act.dtype(0.0)
                )
                value = scalars[STOP_WINDOW] * wp.dot(excess, excess)
            if h == horizon - 1:
                value += scalars[STOP_TERMINAL_V] * wp.dot(v, v)
                if scalars[STOP_TERMINAL_A] != zero:
                    value += scalars[STOP_TERMINAL_A] * wp.dot(a, a)
            terms[stop_slot, b, h] = value
        if null_slot >= 0:
            e = x - joint_vectors[NULL_RETRACT]
            terms[null_slot, b, h] = scalars[NULL_W] * wp.dot(
                wp.cw_mul(e, e), joint_vectors[NULL_WEIGHTS]
            )
        if cspace_slot >= 0:
            value = zero
            weight = schedules[0, h]
            if weight != zero:
                e = x - goal_state[g]
                value = weight * wp.dot(wp.cw_mul(e, e), joint_vectors[CSPACE_WEIGHTS])
            terms[cspace_slot, b, h] = value
        if track_slot >= 0:
            value = zero
            weight = schedules[1, h]
            if weight != zero:
                e = x - reference_position[h]
                error = track_p * wp.cw_mul(e, e)
                if track_v != zero:
                    ev = v - reference_velocity[h]
                    error += track_v * wp.cw_mul(ev, ev)
                value = weight * wp.dot(error, joint_vectors[TRACK_WEIGHTS])
            terms[track_slot, b, h] = value


_SCALAR = {torch.float32: wp.float32, torch.float64: wp.float64}
_kernels: dict[tuple[int, torch.dtype], wp.Kernel] = {}


def joint_rollout_kernel(dof: int, dtype: torch.dtype) -> wp.Kernel:
    """:func:`mppi_joint_rollout` for ``dof`` joints of ``dtype``, compiled on first use in a
    module of its own (as :func:`curobo_lite.kernels.step_rows.rows_kernel`)."""
    key = (dof, dtype)
    kernel = _kernels.get(key)
    if kernel is None:
        vector = joint_vector(dof, dtype)
        rows, row = wp.array2d(dtype=vector), wp.array(dtype=vector)
        a1, a2 = wp.array(dtype=_SCALAR[dtype]), wp.array2d(dtype=_SCALAR[dtype])
        index = wp.array(dtype=wp.int32)
        arg_types = [
            rows, row, row, row, wp.array(dtype=wp.int64), int, a1,
            row, row, a2, row, a1, a2, int, row, row, row, index,
            rows, rows, rows, rows, wp.array3d(dtype=_SCALAR[dtype]),
        ]  # fmt: skip
        name = f"mppi_joint_rollout_{dof}_{str(dtype).removeprefix('torch.')}"
        generic = wp.kernel(mppi_joint_rollout, name=name, enable_backward=False, module="unique")
        kernel = _kernels[key] = generic.add_overload(arg_types)
    return kernel
