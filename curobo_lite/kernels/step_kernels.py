"""Warp step kernels: action sequence + start state -> joint-state trajectory, and the adjoints.

One thread per (batch, dof) walks the horizon; every map is linear (SPEC §2), so each backward
kernel is the exact transpose of its forward, written as a reverse sweep over the horizon.

Array layout: ``[B, H, D]`` views with arbitrary strides (a dof-major ``[B, D, H]`` buffer is passed
as its transposed view, so one kernel serves both layouts). Start states are ``[S, D]`` and are read
through ``start_idx[b]`` when ``use_idx != 0`` (otherwise ``S == B`` and row ``b`` is used).
Backward kernels write start-state gradients per batch row (``[B, D]``); the caller reduces them
onto ``[S, D]`` when an index is used.

Threads are ``(b, dof group)``: a thread walks the horizon for ``dof_chunk`` consecutive dofs.
The launcher uses one dof per thread on CUDA (parallelism) and all dofs of a trajectory per thread
on CPU (fewer, longer-lived threads measured ~30 % faster there).

Optional incoming gradients (``ctx.set_materialize_grads(False)``) are passed as a flag plus any
array of the right type; a zero flag means "this gradient is zero" and the array is never read.

Every kernel of a kind shares one signature (:func:`forward_signature`,
:func:`adjoint_signature`). The four outputs and the four gradients with their flags are plain
arguments rather than ``wp.struct`` groups, on purpose (checked with warp-lang 1.19): a struct
cannot have ``Any``-dtype array fields, so it takes one struct type per dtype (a factory works,
and a generic ``out: Any`` kernel argument accepts either), but filling a struct instance
through Warp's public API needs ``wp.array`` objects, about 15 to 25 µs each to build against
about 4 µs for the ``wp.from_torch(..., return_ctype=True)`` descriptors passed today. Measured
on a two-core CPU, one launch with a four-array struct took 190 µs instead of 80 µs at
``B = 1`` and 240 µs instead of 175 µs at ``B = 100`` (medians of 7 interleaved runs, spread
±40 %): launch overhead is what small MPC and trajopt batches pay, so the grouping would make
them slower. Building the struct's ctypes record directly is as fast but relies on Warp
internals not stable across the supported ``warp-lang >= 1.5``.
"""

from __future__ import annotations

from typing import Any

import warp as wp

# Warp logs a banner and module loads at INFO; keep library users' logs clean.
wp.config.log_level = 30  # WARNING

# autograd is done by our own adjoint kernels; skip generating Warp's tape adjoints
wp.set_module_options({"enable_backward": False})

# --------------------------------------------------------------------------------------------------
# helpers


@wp.func
def _start_row(start_idx: wp.array(dtype=wp.int64), use_idx: int, b: int):
    row = b
    if use_idx != 0:
        row = int(start_idx[b])
    return row


@wp.func
def _grad_at(g: wp.array3d(dtype=Any), flag: int, b: int, h: int, d: int):
    value = g.dtype(0.0)
    if flag != 0:
        value = g[b, h, d]
    return value


@wp.func
def _write_start(
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    b: int,
    d: int,
    p: Any,
    v: Any,
    a: Any,
):
    out_position[b, 0, d] = p
    out_velocity[b, 0, d] = v
    out_acceleration[b, 0, d] = a
    out_jerk[b, 0, d] = out_jerk.dtype(0.0)


# --------------------------------------------------------------------------------------------------
# POSITION, backward difference


@wp.kernel
def position_backward_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        s = _start_row(start_idx, use_idx, b)
        x_prev = start_position[s, d]
        v_prev = start_velocity[s, d]
        a_prev = start_acceleration[s, d]
        _write_start(
            out_position, out_velocity, out_acceleration, out_jerk, b, d, x_prev, v_prev, a_prev
        )
        horizon = act.shape[1]
        for h in range(1, horizon):
            inv_dt = act.dtype(1.0) / traj_dt[h]
            x = act[b, h - 1, d]
            v = (x - x_prev) * inv_dt
            a = (v - v_prev) * inv_dt
            out_position[b, h, d] = x
            out_velocity[b, h, d] = v
            out_acceleration[b, h, d] = a
            out_jerk[b, h, d] = (a - a_prev) * inv_dt
            x_prev = x
            v_prev = v
            a_prev = a


@wp.kernel
def position_backward_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        horizon = grad_act.shape[1]
        zero = grad_act.dtype(0.0)
        # carries hold the step-(h+1) adjoints already divided by dt_{h+1}
        carry_j = zero
        carry_a = zero
        carry_v = zero
        grad_act[b, horizon - 1, d] = zero
        for h in range(horizon - 1, 0, -1):
            inv_dt = grad_act.dtype(1.0) / traj_dt[h]
            gj = _grad_at(grad_jerk, has_grad_jerk, b, h, d) * inv_dt
            adj_a = (
                _grad_at(grad_acceleration, has_grad_acceleration, b, h, d) + gj - carry_j
            ) * inv_dt
            adj_v = (_grad_at(grad_velocity, has_grad_velocity, b, h, d) + adj_a - carry_a) * inv_dt
            grad_act[b, h - 1, d] = (
                _grad_at(grad_position, has_grad_position, b, h, d) + adj_v - carry_v
            )
            carry_j = gj
            carry_a = adj_a
            carry_v = adj_v
        grad_start_acceleration[b, d] = (
            _grad_at(grad_acceleration, has_grad_acceleration, b, 0, d) - carry_j
        )
        grad_start_velocity[b, d] = _grad_at(grad_velocity, has_grad_velocity, b, 0, d) - carry_a
        grad_start_position[b, d] = _grad_at(grad_position, has_grad_position, b, 0, d) - carry_v


# --------------------------------------------------------------------------------------------------
# POSITION, central difference (uniform dt): five-point stencils on the padded position sequence


@wp.func
def _padded_position(
    act: wp.array3d(dtype=Any), b: int, d: int, k: int, p: Any, ghost_1: Any, ghost_2: Any
):
    # [g_-2, g_-1, p, u_0, ..., u_{H-2}, u_{H-2}, u_{H-2}] indexed by k = -2 .. H+1
    horizon = act.shape[1]
    value = p
    if k == -2:
        value = ghost_2
    elif k == -1:
        value = ghost_1
    elif k >= 1:
        value = act[b, wp.min(k, horizon - 1) - 1, d]
    return value


@wp.kernel
def position_central_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        s = _start_row(start_idx, use_idx, b)
        p = start_position[s, d]
        v0 = start_velocity[s, d]
        a0 = start_acceleration[s, d]
        _write_start(out_position, out_velocity, out_acceleration, out_jerk, b, d, p, v0, a0)
        dt = traj_dt[1]
        half = act.dtype(0.5)
        ghost_1 = p - dt * v0 + half * dt * dt * a0
        ghost_2 = p - act.dtype(2.0) * dt * v0 + act.dtype(2.0) * dt * dt * a0
        inv_12dt = act.dtype(1.0) / (act.dtype(12.0) * dt)
        inv_12dt2 = inv_12dt / dt
        inv_2dt3 = act.dtype(6.0) * inv_12dt2 / dt
        horizon = act.shape[1]
        for h in range(1, horizon):
            ym2 = _padded_position(act, b, d, h - 2, p, ghost_1, ghost_2)
            ym1 = _padded_position(act, b, d, h - 1, p, ghost_1, ghost_2)
            y0 = _padded_position(act, b, d, h, p, ghost_1, ghost_2)
            yp1 = _padded_position(act, b, d, h + 1, p, ghost_1, ghost_2)
            yp2 = _padded_position(act, b, d, h + 2, p, ghost_1, ghost_2)
            out_position[b, h, d] = y0
            # stencils written on differences so that a held position gives exact zeros
            out_velocity[b, h, d] = ((ym2 - yp2) + act.dtype(8.0) * (yp1 - ym1)) * inv_12dt
            out_acceleration[b, h, d] = (
                act.dtype(16.0) * ((ym1 - y0) + (yp1 - y0)) - (ym2 - y0) - (yp2 - y0)
            ) * inv_12dt2
            out_jerk[b, h, d] = ((yp2 - ym2) + act.dtype(2.0) * (ym1 - yp1)) * inv_2dt3


@wp.func
def _stencil_adjoint(
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    b: int,
    d: int,
    k: int,
    inv_12dt: Any,
    inv_12dt2: Any,
    inv_2dt3: Any,
):
    # adjoint of the padded position y_k: sum over the steps h in [k-2, k+2] n [1, H-1] that
    # read it, with the stencil weight of offset o = k - h
    horizon = grad_velocity.shape[1]
    total = grad_velocity.dtype(0.0)
    for o in range(-2, 3):
        h = k - o
        if h >= 1 and h <= horizon - 1:
            cv = grad_velocity.dtype(0.0)
            ca = grad_velocity.dtype(-1.0)
            cj = grad_velocity.dtype(0.0)
            if o == -2:
                cv = grad_velocity.dtype(1.0)
                cj = grad_velocity.dtype(-1.0)
            elif o == -1:
                cv = grad_velocity.dtype(-8.0)
                ca = grad_velocity.dtype(16.0)
                cj = grad_velocity.dtype(2.0)
            elif o == 0:
                ca = grad_velocity.dtype(-30.0)
            elif o == 1:
                cv = grad_velocity.dtype(8.0)
                ca = grad_velocity.dtype(16.0)
                cj = grad_velocity.dtype(-2.0)
            else:
                cv = grad_velocity.dtype(-1.0)
                cj = grad_velocity.dtype(1.0)
            total += cv * inv_12dt * _grad_at(grad_velocity, has_grad_velocity, b, h, d)
            total += ca * inv_12dt2 * _grad_at(grad_acceleration, has_grad_acceleration, b, h, d)
            total += cj * inv_2dt3 * _grad_at(grad_jerk, has_grad_jerk, b, h, d)
    return total


@wp.kernel
def position_central_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        horizon = grad_act.shape[1]
        dt = traj_dt[1]
        inv_12dt = grad_act.dtype(1.0) / (grad_act.dtype(12.0) * dt)
        inv_12dt2 = inv_12dt / dt
        inv_2dt3 = grad_act.dtype(6.0) * inv_12dt2 / dt
        grad_act[b, horizon - 1, d] = grad_act.dtype(0.0)
        # commanded positions y_1 .. y_{H-2} map one-to-one to u_0 .. u_{H-3}
        for k in range(1, horizon - 1):
            grad_act[b, k - 1, d] = _grad_at(
                grad_position, has_grad_position, b, k, d
            ) + _stencil_adjoint(
                grad_velocity,
                grad_acceleration,
                grad_jerk,
                has_grad_velocity,
                has_grad_acceleration,
                has_grad_jerk,
                b,
                d,
                k,
                inv_12dt,
                inv_12dt2,
                inv_2dt3,
            )
        # u_{H-2} is y_{H-1} and the two held end points y_H, y_{H+1}
        last = _grad_at(grad_position, has_grad_position, b, horizon - 1, d)
        for k in range(horizon - 1, horizon + 2):
            last += _stencil_adjoint(
                grad_velocity,
                grad_acceleration,
                grad_jerk,
                has_grad_velocity,
                has_grad_acceleration,
                has_grad_jerk,
                b,
                d,
                k,
                inv_12dt,
                inv_12dt2,
                inv_2dt3,
            )
        grad_act[b, horizon - 2, d] = last
        # the start state enters through y_0 = p and the ghost points g_-1, g_-2
        adj_y0 = _stencil_adjoint(
            grad_velocity,
            grad_acceleration,
            grad_jerk,
            has_grad_velocity,
            has_grad_acceleration,
            has_grad_jerk,
            b,
            d,
            0,
            inv_12dt,
            inv_12dt2,
            inv_2dt3,
        )
        adj_g1 = _stencil_adjoint(
            grad_velocity,
            grad_acceleration,
            grad_jerk,
            has_grad_velocity,
            has_grad_acceleration,
            has_grad_jerk,
            b,
            d,
            -1,
            inv_12dt,
            inv_12dt2,
            inv_2dt3,
        )
        adj_g2 = _stencil_adjoint(
            grad_velocity,
            grad_acceleration,
            grad_jerk,
            has_grad_velocity,
            has_grad_acceleration,
            has_grad_jerk,
            b,
            d,
            -2,
            inv_12dt,
            inv_12dt2,
            inv_2dt3,
        )
        two = grad_act.dtype(2.0)
        grad_start_position[b, d] = (
            _grad_at(grad_position, has_grad_position, b, 0, d) + adj_y0 + adj_g1 + adj_g2
        )
        grad_start_velocity[b, d] = (
            _grad_at(grad_velocity, has_grad_velocity, b, 0, d) - dt * adj_g1 - two * dt * adj_g2
        )
        grad_start_acceleration[b, d] = (
            _grad_at(grad_acceleration, has_grad_acceleration, b, 0, d)
            + grad_act.dtype(0.5) * dt * dt * adj_g1
            + two * dt * dt * adj_g2
        )


# --------------------------------------------------------------------------------------------------
# POSITION, teleport (IK): position = action, the derivatives are zero


@wp.kernel
def position_teleport_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        zero = act.dtype(0.0)
        for h in range(act.shape[1]):
            out_position[b, h, d] = act[b, h, d]
            out_velocity[b, h, d] = zero
            out_acceleration[b, h, d] = zero
            out_jerk[b, h, d] = zero


@wp.kernel
def position_teleport_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        zero = grad_act.dtype(0.0)
        for h in range(grad_act.shape[1]):
            grad_act[b, h, d] = _grad_at(grad_position, has_grad_position, b, h, d)
        grad_start_position[b, d] = zero
        grad_start_velocity[b, d] = zero
        grad_start_acceleration[b, d] = zero


# --------------------------------------------------------------------------------------------------
# VELOCITY: v_h = u_{h-1}, x integrates v, a and j are backward differences


@wp.kernel
def velocity_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        s = _start_row(start_idx, use_idx, b)
        x = start_position[s, d]
        v_prev = start_velocity[s, d]
        a_prev = start_acceleration[s, d]
        _write_start(
            out_position, out_velocity, out_acceleration, out_jerk, b, d, x, v_prev, a_prev
        )
        for h in range(1, act.shape[1]):
            dt = traj_dt[h]
            inv_dt = act.dtype(1.0) / dt
            v = act[b, h - 1, d]
            x = x + v * dt
            a = (v - v_prev) * inv_dt
            out_position[b, h, d] = x
            out_velocity[b, h, d] = v
            out_acceleration[b, h, d] = a
            out_jerk[b, h, d] = (a - a_prev) * inv_dt
            v_prev = v
            a_prev = a


@wp.kernel
def velocity_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        horizon = grad_act.shape[1]
        zero = grad_act.dtype(0.0)
        adj_x = zero  # running sum of position adjoints from the end
        carry_j = zero
        carry_a = zero
        grad_act[b, horizon - 1, d] = zero
        for h in range(horizon - 1, 0, -1):
            dt = traj_dt[h]
            inv_dt = grad_act.dtype(1.0) / dt
            adj_x = adj_x + _grad_at(grad_position, has_grad_position, b, h, d)
            gj = _grad_at(grad_jerk, has_grad_jerk, b, h, d) * inv_dt
            adj_a = (
                _grad_at(grad_acceleration, has_grad_acceleration, b, h, d) + gj - carry_j
            ) * inv_dt
            grad_act[b, h - 1, d] = (
                _grad_at(grad_velocity, has_grad_velocity, b, h, d) + adj_a + adj_x * dt - carry_a
            )
            carry_j = gj
            carry_a = adj_a
        grad_start_position[b, d] = adj_x + _grad_at(grad_position, has_grad_position, b, 0, d)
        grad_start_velocity[b, d] = _grad_at(grad_velocity, has_grad_velocity, b, 0, d) - carry_a
        grad_start_acceleration[b, d] = (
            _grad_at(grad_acceleration, has_grad_acceleration, b, 0, d) - carry_j
        )


# --------------------------------------------------------------------------------------------------
# ACCELERATION (semi-implicit Euler): a_h = u_{h-1}, v then x integrate, j backward difference


@wp.kernel
def acceleration_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        s = _start_row(start_idx, use_idx, b)
        x = start_position[s, d]
        v = start_velocity[s, d]
        a_prev = start_acceleration[s, d]
        _write_start(out_position, out_velocity, out_acceleration, out_jerk, b, d, x, v, a_prev)
        for h in range(1, act.shape[1]):
            dt = traj_dt[h]
            a = act[b, h - 1, d]
            v = v + a * dt
            x = x + v * dt
            out_position[b, h, d] = x
            out_velocity[b, h, d] = v
            out_acceleration[b, h, d] = a
            out_jerk[b, h, d] = (a - a_prev) / dt
            a_prev = a


@wp.kernel
def acceleration_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        horizon = grad_act.shape[1]
        zero = grad_act.dtype(0.0)
        adj_x = zero
        adj_v = zero
        carry_j = zero
        grad_act[b, horizon - 1, d] = zero
        for h in range(horizon - 1, 0, -1):
            dt = traj_dt[h]
            adj_x = adj_x + _grad_at(grad_position, has_grad_position, b, h, d)
            adj_v = adj_v + _grad_at(grad_velocity, has_grad_velocity, b, h, d) + adj_x * dt
            gj = _grad_at(grad_jerk, has_grad_jerk, b, h, d) / dt
            grad_act[b, h - 1, d] = (
                _grad_at(grad_acceleration, has_grad_acceleration, b, h, d)
                + adj_v * dt
                + gj
                - carry_j
            )
            carry_j = gj
        grad_start_position[b, d] = adj_x + _grad_at(grad_position, has_grad_position, b, 0, d)
        grad_start_velocity[b, d] = adj_v + _grad_at(grad_velocity, has_grad_velocity, b, 0, d)
        grad_start_acceleration[b, d] = (
            _grad_at(grad_acceleration, has_grad_acceleration, b, 0, d) - carry_j
        )


# --------------------------------------------------------------------------------------------------
# JERK: j_h = u_{h-1}, a, v, x integrate in turn


@wp.kernel
def jerk_forward(
    act: wp.array3d(dtype=Any),
    start_position: wp.array2d(dtype=Any),
    start_velocity: wp.array2d(dtype=Any),
    start_acceleration: wp.array2d(dtype=Any),
    start_idx: wp.array(dtype=wp.int64),
    use_idx: int,
    traj_dt: wp.array(dtype=Any),
    out_position: wp.array3d(dtype=Any),
    out_velocity: wp.array3d(dtype=Any),
    out_acceleration: wp.array3d(dtype=Any),
    out_jerk: wp.array3d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, act.shape[2])):
        s = _start_row(start_idx, use_idx, b)
        x = start_position[s, d]
        v = start_velocity[s, d]
        a = start_acceleration[s, d]
        _write_start(out_position, out_velocity, out_acceleration, out_jerk, b, d, x, v, a)
        for h in range(1, act.shape[1]):
            dt = traj_dt[h]
            j = act[b, h - 1, d]
            a = a + j * dt
            v = v + a * dt
            x = x + v * dt
            out_position[b, h, d] = x
            out_velocity[b, h, d] = v
            out_acceleration[b, h, d] = a
            out_jerk[b, h, d] = j


@wp.kernel
def jerk_adjoint(
    grad_position: wp.array3d(dtype=Any),
    grad_velocity: wp.array3d(dtype=Any),
    grad_acceleration: wp.array3d(dtype=Any),
    grad_jerk: wp.array3d(dtype=Any),
    has_grad_position: int,
    has_grad_velocity: int,
    has_grad_acceleration: int,
    has_grad_jerk: int,
    traj_dt: wp.array(dtype=Any),
    grad_act: wp.array3d(dtype=Any),
    grad_start_position: wp.array2d(dtype=Any),
    grad_start_velocity: wp.array2d(dtype=Any),
    grad_start_acceleration: wp.array2d(dtype=Any),
    dof_chunk: int,
):
    b, group = wp.tid()
    d_begin = group * dof_chunk
    for d in range(d_begin, wp.min(d_begin + dof_chunk, grad_act.shape[2])):
        horizon = grad_act.shape[1]
        zero = grad_act.dtype(0.0)
        adj_x = zero
        adj_v = zero
        adj_a = zero
        grad_act[b, horizon - 1, d] = zero
        for h in range(horizon - 1, 0, -1):
            dt = traj_dt[h]
            adj_x = adj_x + _grad_at(grad_position, has_grad_position, b, h, d)
            adj_v = adj_v + _grad_at(grad_velocity, has_grad_velocity, b, h, d) + adj_x * dt
            adj_a = adj_a + _grad_at(grad_acceleration, has_grad_acceleration, b, h, d) + adj_v * dt
            grad_act[b, h - 1, d] = _grad_at(grad_jerk, has_grad_jerk, b, h, d) + adj_a * dt
        grad_start_position[b, d] = adj_x + _grad_at(grad_position, has_grad_position, b, 0, d)
        grad_start_velocity[b, d] = adj_v + _grad_at(grad_velocity, has_grad_velocity, b, 0, d)
        grad_start_acceleration[b, d] = adj_a + _grad_at(
            grad_acceleration, has_grad_acceleration, b, 0, d
        )


FORWARD_KERNELS = {
    "POSITION_BACKWARD": position_backward_forward,
    "POSITION_CENTRAL": position_central_forward,
    "POSITION_TELEPORT": position_teleport_forward,
    "VELOCITY": velocity_forward,
    "ACCELERATION": acceleration_forward,
    "JERK": jerk_forward,
}

ADJOINT_KERNELS = {
    "POSITION_BACKWARD": position_backward_adjoint,
    "POSITION_CENTRAL": position_central_adjoint,
    "POSITION_TELEPORT": position_teleport_adjoint,
    "VELOCITY": velocity_adjoint,
    "ACCELERATION": acceleration_adjoint,
    "JERK": jerk_adjoint,
}


def forward_signature(scalar: type) -> list:
    """Argument types of every forward kernel for ``scalar`` (``wp.float32``/``wp.float64``):
    ``act [B,H,D]``, three start states ``[S,D]``, ``start_idx [B]``, ``use_idx``,
    ``traj_dt [H]``, four outputs ``[B,H,D]``, ``dof_chunk``."""
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    return [a3, a2, a2, a2, wp.array(dtype=wp.int64), int, a1, a3, a3, a3, a3, int]


def adjoint_signature(scalar: type) -> list:
    """Argument types of every adjoint kernel for ``scalar``: four output gradients
    ``[B,H,D]``, their four flags, ``traj_dt [H]``, ``grad_act [B,H,D]``, three start-state
    gradients ``[B,D]``, ``dof_chunk``."""
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    return [a3, a3, a3, a3, int, int, int, int, a1, a3, a2, a2, a2, int]


def _declare_overloads() -> None:
    """Instantiate every kernel for float32 and float64 so one module build serves both."""
    for scalar in (wp.float32, wp.float64):
        for kernel in FORWARD_KERNELS.values():
            wp.overload(kernel, forward_signature(scalar))
        for kernel in ADJOINT_KERNELS.values():
            wp.overload(kernel, adjoint_signature(scalar))


_declare_overloads()
