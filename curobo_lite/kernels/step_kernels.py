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
on CPU (fewer, longer-lived threads measured ~30 % faster there). On a CPU the four modes whose
step reads one action (:data:`STEP_RULES`, :data:`ADJOINT_RULES`) run instead through
:mod:`curobo_lite.kernels.step_rows`, the same rules over whole joint rows, when the joint axis is
contiguous.

Optional incoming gradients (``ctx.set_materialize_grads(False)``) are passed as a flag plus any
array of the right type; a zero flag means "this gradient is zero" and the array is never read.

The twelve kernels come from two factories, :func:`_forward_kernel` and :func:`_adjoint_kernel`:
each owns the one kernel signature of its kind (:func:`forward_signature`,
:func:`adjoint_signature`), the thread layout and the walk over the horizon, and closes over the
``wp.func`` rules of one control space, which see one step at a time through small vectors:

* forward: ``begin(act, traj_dt, b, d, start) -> (context, x, v, a, j)`` gives the step-0 state
  from the start state ``start = (x, v, a)``, and
  ``step(act, traj_dt, b, h, d, context, x, v, a) -> (x, v, a, j)`` the state at step ``h``
  from that at step ``h - 1`` (scalars, not a vector: the recurrence then stays in registers);
  the four modes of :data:`STEP_RULES` give instead their ``rule(u, dt, 1 / dt, x, v, a)``,
  which the kernel feeds the joint's previous action ``u = act[b, h - 1, d]``;
* adjoint: ``begin(grad_act, traj_dt, b, d) -> (context, c0, c1, c2, c3)`` gives four carries,
  then for ``h = H-1 .. 1`` ``step(traj_dt, h, context, g, c0, c1, c2, c3) -> (c0, c1, c2, c3,
  row, value)`` takes the output gradients ``g = (gx, gv, ga, gj)`` at step ``h`` and completes
  the action gradient ``grad_act[b, row, d] = value`` (none when ``row < 0``), and
  ``finish(grad_act, traj_dt, b, d, g, carries)`` with ``g`` at step 0 returns the start-state
  gradients ``(x, v, a)``; the modes of :data:`ADJOINT_RULES` give instead
  ``start_grads(g, c0, c1, c2)``, which writes no action gradient. A mode uses the carries it
  needs and passes the others on. Which of the two a kernel calls is settled when it is compiled
  (``wp.static``), so the rules are written once for these kernels and the CPU row kernels.

The four outputs and the four gradients with their flags stay plain kernel arguments rather than
``wp.struct`` groups, on purpose (checked with warp-lang 1.19): a struct cannot have
``Any``-dtype array fields, so it takes one struct type per dtype (a factory works, and a generic
``out: Any`` kernel argument accepts either), but filling a struct instance through Warp's public
API needs ``wp.array`` objects, about 15 to 25 µs each to build against about 4 µs for the
``wp.from_torch(..., return_ctype=True)`` descriptors passed today. Measured on a two-core CPU,
one launch with a four-array struct took 190 µs instead of 80 µs at ``B = 1`` and 240 µs instead
of 175 µs at ``B = 100`` (medians of 7 interleaved runs, spread ±40 %): launch overhead is what
small MPC and trajopt batches pay, so the grouping would make them slower. Building the struct's
ctypes record directly is as fast but relies on Warp internals not stable across the supported
``warp-lang >= 1.5``.
"""

from __future__ import annotations

from typing import Any

import warp as wp

# generic (float32 / float64) array annotations shared by every kernel and rule
from curobo_lite.kernels.warp_types import Array1 as _Array1
from curobo_lite.kernels.warp_types import Array2 as _Array2
from curobo_lite.kernels.warp_types import Array3 as _Array3

# Warp logs a banner and module loads at INFO; keep library users' logs clean.
wp.config.log_level = 30  # WARNING

# autograd is done by our own adjoint kernels; skip generating Warp's tape adjoints
wp.set_module_options({"enable_backward": False})

# --------------------------------------------------------------------------------------------------
# the two kernel skeletons


@wp.func
def _start_row(start_idx: wp.array(dtype=wp.int64), use_idx: int, b: int):
    row = b
    if use_idx != 0:
        row = int(start_idx[b])
    return row


@wp.func
def _dof_range(group: int, dof_chunk: int, dofs: int):
    # the dofs [begin, end) that the threads of dof group ``group`` walk
    begin = group * dof_chunk
    return begin, wp.min(begin + dof_chunk, dofs)


@wp.func
def _grad_at(g: _Array3, flag: int, b: int, h: int, d: int):
    value = g.dtype(0.0)
    if flag != 0:
        value = g[b, h, d]
    return value


@wp.func
def _grads_at(
    grad_position: _Array3,
    grad_velocity: _Array3,
    grad_acceleration: _Array3,
    grad_jerk: _Array3,
    has_grad: wp.vec4i,
    b: int,
    h: int,
    d: int,
):
    # (gx, gv, ga, gj) at step h; a gradient whose flag is zero reads as zero
    return wp.vector(
        _grad_at(grad_position, has_grad[0], b, h, d),
        _grad_at(grad_velocity, has_grad[1], b, h, d),
        _grad_at(grad_acceleration, has_grad[2], b, h, d),
        _grad_at(grad_jerk, has_grad[3], b, h, d),
    )


def _forward_kernel(
    name: str,
    begin: wp.Function,
    step: wp.Function | None = None,
    rule: wp.Function | None = None,
) -> wp.Kernel:
    """Forward kernel ``name`` walking steps ``0 .. H-1`` from ``begin``, then either a mode's
    own ``step`` or a :data:`STEP_RULES` ``rule`` fed the joint's previous action (see the module
    docstring); writes ``out_* [B, H, D]``."""

    def forward(
        act: _Array3,
        start_position: _Array2,
        start_velocity: _Array2,
        start_acceleration: _Array2,
        start_idx: wp.array(dtype=wp.int64),
        use_idx: int,
        traj_dt: _Array1,
        out_position: _Array3,
        out_velocity: _Array3,
        out_acceleration: _Array3,
        out_jerk: _Array3,
        dof_chunk: int,
    ):
        b, group = wp.tid()
        d_begin, d_end = _dof_range(group, dof_chunk, act.shape[2])
        for d in range(d_begin, d_end):
            s = _start_row(start_idx, use_idx, b)
            start = wp.vector(start_position[s, d], start_velocity[s, d], start_acceleration[s, d])
            context, x, v, a, j = begin(act, traj_dt, b, d, start)
            out_position[b, 0, d] = x
            out_velocity[b, 0, d] = v
            out_acceleration[b, 0, d] = a
            out_jerk[b, 0, d] = j
            for h in range(1, act.shape[1]):
                if wp.static(rule is None):
                    x, v, a, j = step(act, traj_dt, b, h, d, context, x, v, a)
                else:
                    dt = traj_dt[h]
                    x, v, a, j = rule(act[b, h - 1, d], dt, act.dtype(1.0) / dt, x, v, a)
                out_position[b, h, d] = x
                out_velocity[b, h, d] = v
                out_acceleration[b, h, d] = a
                out_jerk[b, h, d] = j

    return wp.Kernel(forward, key=name)


def _adjoint_kernel(
    name: str,
    begin: wp.Function,
    step: wp.Function,
    finish: wp.Function | None = None,
    start_grads: wp.Function | None = None,
) -> wp.Kernel:
    """Adjoint kernel ``name`` sweeping steps ``H-1 .. 0`` with the rules ``begin`` and ``step``,
    then either a mode's own ``finish`` or an :data:`ADJOINT_RULES` ``start_grads`` (see the
    module docstring); writes ``grad_act [B, H, D]`` and the start-state gradients ``[B, D]``."""

    def adjoint(
        grad_position: _Array3,
        grad_velocity: _Array3,
        grad_acceleration: _Array3,
        grad_jerk: _Array3,
        has_grad_position: int,
        has_grad_velocity: int,
        has_grad_acceleration: int,
        has_grad_jerk: int,
        traj_dt: _Array1,
        grad_act: _Array3,
        grad_start_position: _Array2,
        grad_start_velocity: _Array2,
        grad_start_acceleration: _Array2,
        dof_chunk: int,
    ):
        b, group = wp.tid()
        has_grad = wp.vec4i(
            has_grad_position, has_grad_velocity, has_grad_acceleration, has_grad_jerk
        )
        d_begin, d_end = _dof_range(group, dof_chunk, grad_act.shape[2])
        for d in range(d_begin, d_end):
            context, c0, c1, c2, c3 = begin(grad_act, traj_dt, b, d)
            for h in range(grad_act.shape[1] - 1, 0, -1):
                g = _grads_at(
                    grad_position, grad_velocity, grad_acceleration, grad_jerk, has_grad, b, h, d
                )
                c0, c1, c2, c3, row, value = step(traj_dt, h, context, g, c0, c1, c2, c3)
                if row >= 0:
                    grad_act[b, row, d] = value
            g = _grads_at(
                grad_position, grad_velocity, grad_acceleration, grad_jerk, has_grad, b, 0, d
            )
            if wp.static(start_grads is None):
                start = finish(grad_act, traj_dt, b, d, g, wp.vector(c0, c1, c2, c3))
                grad_start_position[b, d] = start[0]
                grad_start_velocity[b, d] = start[1]
                grad_start_acceleration[b, d] = start[2]
            else:
                sx, sv, sa = start_grads(g, c0, c1, c2)
                grad_start_position[b, d] = sx
                grad_start_velocity[b, d] = sv
                grad_start_acceleration[b, d] = sa

    return wp.Kernel(adjoint, key=name)


# --------------------------------------------------------------------------------------------------
# rules shared by the integrating modes (POSITION backward/central, VELOCITY, ACCELERATION, JERK)


@wp.func
def _begin_at_start(act: _Array3, traj_dt: _Array1, b: int, d: int, start: Any):
    # step 0 is the start state with zero jerk; the start state is the context
    return start, start[0], start[1], start[2], act.dtype(0.0)


@wp.func
def _begin_sweep(grad_act: _Array3, traj_dt: _Array1, b: int, d: int):
    # the last action drives no step; the carries start at zero and no context is needed
    zero = grad_act.dtype(0.0)
    grad_act[b, grad_act.shape[1] - 1, d] = zero
    return zero, zero, zero, zero, zero


# --------------------------------------------------------------------------------------------------
# POSITION, backward difference


@wp.func
def _position_backward_rule(u: Any, dt: Any, inv_dt: Any, x: Any, v: Any, a: Any):
    # x_h = u_{h-1}; v, a, j backward differences
    v_next = (u - x) * inv_dt
    a_next = (v_next - v) * inv_dt
    return u, v_next, a_next, (a_next - a) * inv_dt


@wp.func
def _position_backward_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    # carries: the step-(h+1) adjoints of (v, a, j) already divided by dt_{h+1}
    inv_dt = traj_dt.dtype(1.0) / traj_dt[h]
    gj = g[3] * inv_dt
    adj_a = (g[2] + gj - c2) * inv_dt
    adj_v = (g[1] + adj_a - c1) * inv_dt
    return adj_v, adj_a, gj, c3, h - 1, g[0] + adj_v - c0


@wp.func
def _position_backward_start_grads(g: Any, c0: Any, c1: Any, c2: Any):
    # the start-state gradients (x, v, a) from the step-0 output gradients and the carries
    return g[0] - c0, g[1] - c1, g[2] - c2


# --------------------------------------------------------------------------------------------------
# POSITION, central difference (uniform dt): five-point stencils on the padded position sequence
# [g_-1, p, u_0, ..., u_{H-2}, u_{H-2}, u_{H-2}], indexed by k = -1 .. H+1. Step h >= 1 reads
# k = h-2 .. h+2, so of the two ghost points before p only g_-1 is ever read.


@wp.func
def _central_scales(traj_dt: _Array1):
    # 1 / (12 dt), 1 / (12 dt^2), 1 / (2 dt^3) of the velocity, acceleration and jerk stencils
    dt = traj_dt[1]
    inv_12dt = traj_dt.dtype(1.0) / (traj_dt.dtype(12.0) * dt)
    inv_12dt2 = inv_12dt / dt
    return inv_12dt, inv_12dt2, traj_dt.dtype(6.0) * inv_12dt2 / dt


@wp.func
def _padded_position(act: _Array3, b: int, d: int, k: int, p: Any, ghost: Any):
    value = p
    if k == -1:
        value = ghost
    elif k >= 1:
        value = act[b, wp.min(k, act.shape[1] - 1) - 1, d]
    return value


@wp.func
def _position_central_begin(act: _Array3, traj_dt: _Array1, b: int, d: int, start: Any):
    # context: p, the ghost point g_-1 = p - dt v0 + dt^2 a0 / 2 and the stencil scales
    dt = traj_dt[1]
    ghost = start[0] - dt * start[1] + act.dtype(0.5) * dt * dt * start[2]
    inv_12dt, inv_12dt2, inv_2dt3 = _central_scales(traj_dt)
    context = wp.vector(start[0], ghost, inv_12dt, inv_12dt2, inv_2dt3)
    return context, start[0], start[1], start[2], act.dtype(0.0)


@wp.func
def _position_central_step(
    act: _Array3, traj_dt: _Array1, b: int, h: int, d: int, context: Any, x: Any, v: Any, a: Any
):
    ym2 = _padded_position(act, b, d, h - 2, context[0], context[1])
    ym1 = _padded_position(act, b, d, h - 1, context[0], context[1])
    y0 = _padded_position(act, b, d, h, context[0], context[1])
    yp1 = _padded_position(act, b, d, h + 1, context[0], context[1])
    yp2 = _padded_position(act, b, d, h + 2, context[0], context[1])
    # stencils written on differences so that a held position gives exact zeros
    return (
        y0,
        ((ym2 - yp2) + act.dtype(8.0) * (yp1 - ym1)) * context[2],
        (act.dtype(16.0) * ((ym1 - y0) + (yp1 - y0)) - (ym2 - y0) - (yp2 - y0)) * context[3],
        ((yp2 - ym2) + act.dtype(2.0) * (ym1 - yp1)) * context[4],
    )


@wp.func
def _position_central_adjoint_begin(grad_act: _Array3, traj_dt: _Array1, b: int, d: int):
    # carries: the adjoints of y_{h+2}, y_{h+1}, y_h, y_{h-1} gathered so far; context: the scales
    zero = grad_act.dtype(0.0)
    grad_act[b, grad_act.shape[1] - 1, d] = zero
    inv_12dt, inv_12dt2, inv_2dt3 = _central_scales(traj_dt)
    return wp.vector(inv_12dt, inv_12dt2, inv_2dt3), zero, zero, zero, zero


@wp.func
def _position_central_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    # step h reads y_{h+o}, o = -2 .. 2: scatter its output adjoints with the stencil weights.
    # No earlier step reads y_{h+2}, so its adjoint is complete: it is that of u_{h+1}, except
    # y_H and y_{H+1}, which repeat u_{H-2} = y_{H-1} and are folded into y_{h+1}.
    gv = g[1] * context[0]
    ga = g[2] * context[1]
    gj = g[3] * context[2]
    two = traj_dt.dtype(2.0)
    eight = traj_dt.dtype(8.0)
    sixteen = traj_dt.dtype(16.0)
    y_p2 = c0 - gv - ga + gj
    y_p1 = c1 + eight * gv + sixteen * ga - two * gj
    y_0 = c2 + g[0] - traj_dt.dtype(30.0) * ga
    y_m1 = c3 - eight * gv + sixteen * ga + two * gj
    row = h + 1
    if h + 2 >= traj_dt.shape[0]:
        y_p1 = y_p1 + y_p2
        row = -1
    return y_p1, y_0, y_m1, gv - ga - gj, row, y_p2


@wp.func
def _position_central_finish(
    grad_act: _Array3, traj_dt: _Array1, b: int, d: int, g: Any, carry: Any
):
    # left: the adjoints of y_2 = u_1, y_1 = u_0, and of the start state through y_0 = p and g_-1
    grad_act[b, 1, d] = carry[0]
    grad_act[b, 0, d] = carry[1]
    dt = traj_dt[1]
    return wp.vector(
        g[0] + carry[2] + carry[3],
        g[1] - dt * carry[3],
        g[2] + grad_act.dtype(0.5) * dt * dt * carry[3],
    )


# --------------------------------------------------------------------------------------------------
# POSITION, teleport (IK): position = action, the derivatives are zero


@wp.func
def _held_position(act: _Array3, b: int, h: int, d: int):
    zero = act.dtype(0.0)
    return act[b, h, d], zero, zero, zero


@wp.func
def _position_teleport_begin(act: _Array3, traj_dt: _Array1, b: int, d: int, start: Any):
    x, v, a, j = _held_position(act, b, 0, d)
    return start, x, v, a, j


@wp.func
def _position_teleport_step(
    act: _Array3, traj_dt: _Array1, b: int, h: int, d: int, context: Any, x: Any, v: Any, a: Any
):
    return _held_position(act, b, h, d)


@wp.func
def _position_teleport_adjoint_begin(grad_act: _Array3, traj_dt: _Array1, b: int, d: int):
    # every action drives its own step: nothing is written ahead, nothing is carried
    zero = grad_act.dtype(0.0)
    return zero, zero, zero, zero, zero


@wp.func
def _position_teleport_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    return c0, c1, c2, c3, h, g[0]


@wp.func
def _position_teleport_finish(
    grad_act: _Array3, traj_dt: _Array1, b: int, d: int, g: Any, carry: Any
):
    zero = grad_act.dtype(0.0)
    grad_act[b, 0, d] = g[0]
    return wp.vector(zero, zero, zero)


# --------------------------------------------------------------------------------------------------
# VELOCITY: v_h = u_{h-1}, x integrates v, a and j are backward differences


@wp.func
def _velocity_rule(u: Any, dt: Any, inv_dt: Any, x: Any, v: Any, a: Any):
    a_next = (u - v) * inv_dt
    return x + u * dt, u, a_next, (a_next - a) * inv_dt


@wp.func
def _velocity_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    # carries: the running sum of position adjoints from the end, then the step-(h+1) adjoints
    # of a and j already divided by dt_{h+1}
    dt = traj_dt[h]
    inv_dt = traj_dt.dtype(1.0) / dt
    adj_x = c0 + g[0]
    gj = g[3] * inv_dt
    adj_a = (g[2] + gj - c2) * inv_dt
    return adj_x, adj_a, gj, c3, h - 1, g[1] + adj_a + adj_x * dt - c1


@wp.func
def _velocity_start_grads(g: Any, c0: Any, c1: Any, c2: Any):
    return c0 + g[0], g[1] - c1, g[2] - c2


@wp.func
def _integrate(x: Any, v: Any, a: Any, dt: Any):
    # v_h = v_{h-1} + a_h dt, then x_h = x_{h-1} + v_h dt (ACCELERATION, JERK): (x_h, v_h)
    v_next = v + a * dt
    return x + v_next * dt, v_next


@wp.func
def _integration_adjoint(g: Any, adj_x: Any, adj_v: Any, dt: Any):
    # x_h = x_{h-1} + v_h dt and v_h = v_{h-1} + a_h dt (ACCELERATION, JERK) in reverse: the
    # running adjoints of x and v after adding step h's output gradients
    adj_x_h = adj_x + g[0]
    return adj_x_h, adj_v + g[1] + adj_x_h * dt


# --------------------------------------------------------------------------------------------------
# ACCELERATION (semi-implicit Euler): a_h = u_{h-1}, v then x integrate, j backward difference


@wp.func
def _acceleration_rule(u: Any, dt: Any, inv_dt: Any, x: Any, v: Any, a: Any):
    x_next, v_next = _integrate(x, v, u, dt)
    return x_next, v_next, u, (u - a) / dt


@wp.func
def _acceleration_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    # carries: the running adjoints of x and v, then the step-(h+1) jerk adjoint divided by dt
    dt = traj_dt[h]
    adj_x, adj_v = _integration_adjoint(g, c0, c1, dt)
    gj = g[3] / dt
    return adj_x, adj_v, gj, c3, h - 1, g[2] + adj_v * dt + gj - c2


@wp.func
def _acceleration_start_grads(g: Any, c0: Any, c1: Any, c2: Any):
    return c0 + g[0], c1 + g[1], g[2] - c2


# --------------------------------------------------------------------------------------------------
# JERK: j_h = u_{h-1}, a, v, x integrate in turn


@wp.func
def _jerk_rule(u: Any, dt: Any, inv_dt: Any, x: Any, v: Any, a: Any):
    a_next = a + u * dt
    x_next, v_next = _integrate(x, v, a_next, dt)
    return x_next, v_next, a_next, u


@wp.func
def _jerk_adjoint_step(
    traj_dt: _Array1, h: int, context: Any, g: Any, c0: Any, c1: Any, c2: Any, c3: Any
):
    # carries: the running adjoints of x, v and a
    dt = traj_dt[h]
    adj_x, adj_v = _integration_adjoint(g, c0, c1, dt)
    adj_a = c2 + g[2] + adj_v * dt
    return adj_x, adj_v, adj_a, c3, h - 1, g[3] + adj_a * dt


@wp.func
def _jerk_start_grads(g: Any, c0: Any, c1: Any, c2: Any):
    return c0 + g[0], c1 + g[1], c2 + g[2]


# --------------------------------------------------------------------------------------------------
# the kernels

#: the step rules ``(u, dt, 1 / dt, x, v, a) -> (x, v, a, j)`` of the control spaces whose step 0
#: is the start state and whose step h reads only ``u_{h-1}``: they act on scalars here and on
#: whole joint vectors in the CPU row kernels (:mod:`curobo_lite.kernels.step_rows`)
STEP_RULES = {
    "POSITION_BACKWARD": _position_backward_rule,
    "VELOCITY": _velocity_rule,
    "ACCELERATION": _acceleration_rule,
    "JERK": _jerk_rule,
}

#: the adjoint rules of the same control spaces, ``(step, start_grads)``: ``step`` as the
#: adjoint kernels take it (its context unused) and ``start_grads(g, c0, c1, c2) -> (x, v, a)``
#: the start-state gradients; ``g`` indexes the four output gradients (scalars or joint vectors)
ADJOINT_RULES = {
    "POSITION_BACKWARD": (_position_backward_adjoint_step, _position_backward_start_grads),
    "VELOCITY": (_velocity_adjoint_step, _velocity_start_grads),
    "ACCELERATION": (_acceleration_adjoint_step, _acceleration_start_grads),
    "JERK": (_jerk_adjoint_step, _jerk_start_grads),
}

FORWARD_KERNELS = {
    "POSITION_CENTRAL": _forward_kernel(
        "position_central_forward", _position_central_begin, step=_position_central_step
    ),
    "POSITION_TELEPORT": _forward_kernel(
        "position_teleport_forward", _position_teleport_begin, step=_position_teleport_step
    ),
    **{
        mode: _forward_kernel(f"{mode.lower()}_forward", _begin_at_start, rule=rule)
        for mode, rule in STEP_RULES.items()
    },
}

ADJOINT_KERNELS = {
    "POSITION_CENTRAL": _adjoint_kernel(
        "position_central_adjoint",
        _position_central_adjoint_begin,
        _position_central_adjoint_step,
        finish=_position_central_finish,
    ),
    "POSITION_TELEPORT": _adjoint_kernel(
        "position_teleport_adjoint",
        _position_teleport_adjoint_begin,
        _position_teleport_adjoint_step,
        finish=_position_teleport_finish,
    ),
    **{
        mode: _adjoint_kernel(f"{mode.lower()}_adjoint", _begin_sweep, step, start_grads=grads)
        for mode, (step, grads) in ADJOINT_RULES.items()
    },
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
