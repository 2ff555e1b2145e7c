"""Warp kernel for an MPPI rollout's joint-space half, forward only: integration and the costs.

An MPPI rollout without a gradient (400 particles x 30 steps on a CPU) spent most of its time
not in arithmetic but in ~900 small torch ops: the step kernel's outputs read back by the
bound, smoothness, stop, null-space, c-space-goal and tracking costs, each a handful of passes
over ``[B, H, D]`` tensors. Here one thread per particle row ``b`` walks the horizon once:

1. integrates the ACCELERATION control space from the start state (the step kernels' own rule,
   :func:`~curobo_lite.kernels.step_kernels._acceleration_rule`, backward differences for the
   jerk) into the model's ``[B, H, D]`` state buffers;
2. at each step, sums over the joints every enabled joint-space cost term with the formulas of
   :mod:`curobo_lite.rollout.cost` and writes term ``k`` into ``terms[slot_k, b, h]``.

Term slots (``slots [6]``, ``-1``: the term is off): bound, smoothness, stop, null space,
c-space goal, tracking. Constants (the cost's ``weight`` folded in):

- ``bound_lower``/``bound_upper [4, D]``: activation bounds per quantity (x, v, a, j);
  ``bound_weights [2, 4]``: quadratic and linear weights (a quantity whose two are 0 is skipped,
  as :func:`~curobo_lite.kernels.bound_cost_kernels.bound_cost_forward` skips it);
- ``joint_vectors [6, D]``: smoothness joint weights, stop max velocity, null-space retract
  pose, null-space joint weights, c-space-goal joint weights, tracking joint weights;
- ``scalars [9]``: smoothness acceleration and jerk weights, stop window, terminal-velocity and
  terminal-acceleration weights, stop ``n_steps``, null-space weight, tracking position and
  velocity weights (the latter 0 without a reference velocity);
- ``schedules [2, H]``: the c-space goal's per-step weight (0 where the cost pads zeros) and the
  tracking cost's (its ``weight`` included);
- ``stop_first``: the first step of the stop window (``H - min(n_steps, H)``).

A step whose weight is 0 writes 0 without reading its terms (the modular path pads zeros
there), so rows with a NaN action differ only in terms that are NaN on both paths.
Generic over float32 and float64.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.bound_cost_kernels import _excess
from curobo_lite.kernels.step_kernels import _acceleration_rule
from curobo_lite.kernels.warp_types import Array1, Array2, Array3

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
def _bound_term(x: Any, q: int, d: int, lower: Array2, upper: Array2, weights: Array2):
    # a quantity whose two weights are 0 adds nothing, as in bound_cost_forward
    zero = x - x
    value = zero
    if weights[0, q] != zero or weights[1, q] != zero:
        e = _excess(x, lower[q, d], upper[q, d])
        value = weights[0, q] * e * e + weights[1, q] * wp.abs(e)
    return value


@wp.kernel
def mppi_joint_rollout(
    act: Array3,
    start_position: Array2,
    start_velocity: Array2,
    start_acceleration: Array2,
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: Array1,
    bound_lower: Array2,
    bound_upper: Array2,
    bound_weights: Array2,
    joint_vectors: Array2,
    scalars: Array1,
    schedules: Array2,
    stop_first: int,
    goal_state: Array2,
    reference_position: Array2,
    reference_velocity: Array2,
    slots: wp.array(dtype=wp.int32),
    out_position: Array3,
    out_velocity: Array3,
    out_acceleration: Array3,
    out_jerk: Array3,
    terms: Array3,
):
    """States ``[B, H, D]`` of ``act [B, H, D]`` from start row ``start_idx[b]`` (``b`` when
    ``use_idx == 0``) and the joint-space cost terms ``terms [K, B, H]`` (module docstring).
    ``goal_state [G, D]``: row ``start_idx[b]`` when ``G > 1``, else row 0."""
    b = wp.tid()
    s = b
    if use_idx != 0:
        s = int(start_idx[b])
    g = s
    if goal_state.shape[0] == 1:
        g = 0
    zero = traj_dt.dtype(0.0)
    horizon = act.shape[1]
    dofs = act.shape[2]
    bound_slot = slots[0]
    smooth_slot = slots[1]
    stop_slot = slots[2]
    null_slot = slots[3]
    cspace_slot = slots[4]
    track_slot = slots[5]
    acc_w = scalars[SMOOTH_ACC]
    jerk_w = scalars[SMOOTH_JERK]
    for h in range(horizon):
        dt = traj_dt[h]
        bound = zero
        smooth = zero
        window = zero
        speed = zero
        accel = zero
        null = zero
        cspace = zero
        track = zero
        in_window = h >= stop_first
        cspace_w = zero
        track_w = zero
        if cspace_slot >= 0:
            cspace_w = schedules[0, h]
        if track_slot >= 0:
            track_w = schedules[1, h]
        limit_scale = zero
        if in_window:
            limit_scale = traj_dt.dtype(horizon - 1 - h) / scalars[STOP_N]
        for d in range(dofs):
            x = zero
            v = zero
            a = zero
            j = zero
            if h == 0:
                x = start_position[s, d]
                v = start_velocity[s, d]
                a = start_acceleration[s, d]
            else:
                x, v, a, j = _acceleration_rule(
                    act[b, h - 1, d],
                    dt,
                    traj_dt.dtype(1.0) / dt,
                    out_position[b, h - 1, d],
                    out_velocity[b, h - 1, d],
                    out_acceleration[b, h - 1, d],
                )
            out_position[b, h, d] = x
            out_velocity[b, h, d] = v
            out_acceleration[b, h, d] = a
            out_jerk[b, h, d] = j
            if bound_slot >= 0:
                bound += _bound_term(x, 0, d, bound_lower, bound_upper, bound_weights)
                bound += _bound_term(v, 1, d, bound_lower, bound_upper, bound_weights)
                bound += _bound_term(a, 2, d, bound_lower, bound_upper, bound_weights)
                bound += _bound_term(j, 3, d, bound_lower, bound_upper, bound_weights)
            if smooth_slot >= 0:
                per_joint = zero
                if acc_w != zero:
                    per_joint = acc_w * a * a
                if jerk_w != zero:
                    per_joint += jerk_w * j * j
                smooth += per_joint * joint_vectors[SMOOTH_WEIGHTS, d]
            if stop_slot >= 0:
                if in_window:
                    excess = wp.max(
                        wp.abs(v) - limit_scale * joint_vectors[STOP_MAX_VELOCITY, d], zero
                    )
                    window += excess * excess
                if h == horizon - 1:
                    speed += v * v
                    accel += a * a
            if null_slot >= 0:
                e = x - joint_vectors[NULL_RETRACT, d]
                null += e * e * joint_vectors[NULL_WEIGHTS, d]
            if cspace_w != zero:
                e = x - goal_state[g, d]
                cspace += e * e * joint_vectors[CSPACE_WEIGHTS, d]
            if track_w != zero:
                e = x - reference_position[h, d]
                err = e * e * scalars[TRACK_P]
                if scalars[TRACK_V] != zero:
                    ev = v - reference_velocity[h, d]
                    err += ev * ev * scalars[TRACK_V]
                track += err * joint_vectors[TRACK_WEIGHTS, d]
        if bound_slot >= 0:
            terms[bound_slot, b, h] = bound
        if smooth_slot >= 0:
            terms[smooth_slot, b, h] = smooth
        if stop_slot >= 0:
            value = scalars[STOP_WINDOW] * window
            if h == horizon - 1:
                value += scalars[STOP_TERMINAL_V] * speed
                if scalars[STOP_TERMINAL_A] != zero:
                    value += scalars[STOP_TERMINAL_A] * accel
            terms[stop_slot, b, h] = value
        if null_slot >= 0:
            terms[null_slot, b, h] = scalars[NULL_W] * null
        if cspace_slot >= 0:
            terms[cspace_slot, b, h] = cspace * cspace_w
        if track_slot >= 0:
            terms[track_slot, b, h] = track_w * track


def _signature(scalar) -> list:
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    index = wp.array(dtype=wp.int32)
    return [
        a3, a2, a2, a2, wp.array(dtype=wp.int64), int, a1,
        a2, a2, a2, a2, a1, a2, int, a2, a2, a2, index,
        a3, a3, a3, a3, a3,
    ]  # fmt: skip


_SCALAR = {torch.float32: wp.float32, torch.float64: wp.float64}
for _scalar in _SCALAR.values():
    wp.overload(mppi_joint_rollout, _signature(_scalar))


@functools.cache
def joint_rollout_kernel(dtype: torch.dtype) -> wp.Kernel:
    """The float32 or float64 instance of :func:`mppi_joint_rollout`."""
    return mppi_joint_rollout.get_overload(_signature(_SCALAR[dtype]))
