"""Warp kernel for the end-effector pose cost without a gradient (an MPPI rollout's).

:class:`~curobo_lite.rollout.cost.PoseCost` in torch makes about twenty passes over ``[B, H]``
tensors (a norm, a quaternion product, an arctangent, the weights): at MPC's 400 x 30 on a CPU
that was 1.3-2 ms of a 15 ms control step, for about 40 floating-point operations per step.
One thread per trajectory walks its steps here and writes ``cost[b, h]`` once, with the same
formulas (see :class:`~curobo_lite.rollout.cost.PoseCost`):

- position: ``|p - g|`` (``L2``) or ``|p - g|^2`` (``SQUARED_L2``);
- rotation: ``2 atan2(sqrt(|vec(conj(q) g)|^2 + eps), |<q, g>|)`` (``GEODESIC``) or
  ``1 - |<q, g>| / (|q| |g|)`` (``ONE_MINUS_DOT``);
- ``cost[b, h] = schedule[0, h] * position + schedule[1, h] * rotation`` for ``h >=
  first_step`` and 0 before it (the terminal-only cost); a term whose flag is off is left out.

The gradient paths keep the torch formulas (autograd). Generic over float32 and float64.
"""

from __future__ import annotations

import torch
import warp as wp

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.warp_types import Array1, Array2, Array3, scalar_overloads

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: ``position_norm`` codes of :func:`pose_cost`
POSITION_NORM_CODES = {"L2": 0, "SQUARED_L2": 1}
#: ``rotation_error`` codes of :func:`pose_cost`
ROTATION_ERROR_CODES = {"GEODESIC": 0, "ONE_MINUS_DOT": 1}


@wp.kernel
def pose_cost_forward(
    position: Array3,
    quaternion: Array3,
    goal_position: Array2,
    goal_quaternion: Array2,
    schedule: Array2,
    first_step: int,
    position_norm: int,
    rotation_error: int,
    eps: Array1,
    cost: Array2,
):
    """``cost [B, H]`` of ``position [B, H, 3]`` and ``quaternion [B, H, 4]`` (``wxyz``, any
    strides) to the goal row ``b`` (or row 0 when the goal has one row) of ``goal_position
    [G, 3]`` and ``goal_quaternion [G, 4]``; ``position_norm`` / ``rotation_error`` are the
    codes above, ``-1`` to leave the term out; ``eps[0]``: the geodesic's smoothing."""
    # one thread per trajectory: a Warp CPU thread costs ~0.1 us to start
    b = wp.tid()
    g = b
    if goal_position.shape[0] == 1:
        g = 0
    gx = goal_position[g, 0]
    gy = goal_position[g, 1]
    gz = goal_position[g, 2]
    gw = goal_quaternion[g, 0]
    gqx = goal_quaternion[g, 1]
    gqy = goal_quaternion[g, 2]
    gqz = goal_quaternion[g, 3]
    zero = gx - gx
    for h in range(cost.shape[1]):
        value = zero
        if h >= first_step:
            if position_norm >= 0:
                dx = position[b, h, 0] - gx
                dy = position[b, h, 1] - gy
                dz = position[b, h, 2] - gz
                squared = dx * dx + dy * dy + dz * dz
                error = squared
                if position_norm == 0:
                    error = wp.sqrt(squared)
                value = schedule[0, h] * error
            if rotation_error >= 0:
                w = quaternion[b, h, 0]
                x = quaternion[b, h, 1]
                y = quaternion[b, h, 2]
                z = quaternion[b, h, 3]
                dot = w * gw + x * gqx + y * gqy + z * gqz
                error = zero
                if rotation_error == 0:
                    # vector part of conj(q) g
                    vx = w * gqx - x * gw - y * gqz + z * gqy
                    vy = w * gqy + x * gqz - y * gw - z * gqx
                    vz = w * gqz - x * gqy + y * gqx - z * gw
                    sine = wp.sqrt(vx * vx + vy * vy + vz * vz + eps[0])
                    error = cost.dtype(2.0) * wp.atan2(sine, wp.abs(dot))
                else:
                    norms = (w * w + x * x + y * y + z * z) * (
                        gw * gw + gqx * gqx + gqy * gqy + gqz * gqz
                    )
                    error = cost.dtype(1.0) - wp.abs(dot) / wp.sqrt(norms)
                if position_norm >= 0:
                    value = value + schedule[1, h] * error
                else:
                    value = schedule[1, h] * error
        cost[b, h] = value


def _signature(scalar) -> list:
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    return [a3, a3, a2, a2, a2, int, int, int, a1, a2]


_kernel = scalar_overloads(pose_cost_forward, _signature)


def pose_cost(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    goal_position: torch.Tensor,
    goal_quaternion: torch.Tensor,
    schedule: torch.Tensor,
    first_step: int,
    position_norm: str | None,
    rotation_error: str | None,
    eps: torch.Tensor,
) -> torch.Tensor:
    """Per-step pose cost ``[B, H]`` without a gradient (module docstring).

    Args:
        position: ``[B, H, 3]`` end-effector positions (a strided view of the link frames is
            read in place).
        quaternion: ``[B, H, 4]`` end-effector orientations, ``wxyz``.
        goal_position: ``[B, 3]`` or ``[1, 3]`` (one goal for every trajectory).
        goal_quaternion: ``[B, 4]`` or ``[1, 4]``, ``wxyz``.
        schedule: ``[2, H]`` per-step weights (position row, rotation row).
        first_step: steps before it cost 0.
        position_norm: ``"L2"``, ``"SQUARED_L2"`` or ``None`` (no position term).
        rotation_error: ``"GEODESIC"``, ``"ONE_MINUS_DOT"`` or ``None`` (no rotation term).
        eps: ``[1]`` the geodesic's smoothing under the square root.

    Inputs are trusted (checked by :class:`~curobo_lite.rollout.cost.PoseCost`).
    """
    wp.init()
    batch, horizon = position.shape[:2]
    cost = position.new_empty(batch, horizon)
    position_code = -1 if position_norm is None else POSITION_NORM_CODES[position_norm]
    rotation_code = -1 if rotation_error is None else ROTATION_ERROR_CODES[rotation_error]
    goals = [as_warp(goal_position.contiguous()), as_warp(goal_quaternion.contiguous())]
    if goal_position.shape[0] == batch and batch > 1:

        def rows_of_goals(rows: slice) -> list:
            return [as_warp(goal_position[rows]), as_warp(goal_quaternion[rows])]
    else:

        def rows_of_goals(rows: slice) -> list:
            return goals

    shared = [as_warp(schedule), first_step, position_code, rotation_code, as_warp(eps)]

    def make_launch(b0: int, b1: int):
        rows = slice(b0, b1)
        inputs = [as_warp(position[rows]), as_warp(quaternion[rows]), *rows_of_goals(rows)]
        return b1 - b0, [*inputs, *shared, as_warp(cost[rows])]

    launch_rows(_kernel(position.dtype), batch, position.device, make_launch, cost.numel() * 8)
    return cost
