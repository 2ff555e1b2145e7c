"""Warp kernels for an MPC step's command: one launch instead of ~45 small torch ops.

An MPC step commands the state ``steps`` plan steps ahead of the measured one, made to respect
the position, velocity and acceleration limits (:meth:`curobo_lite.wrap.MpcSolver.enforce_limits`
states the rule). In torch that was the step kernel over the whole ``[1, H, D]`` plan, a copy of
one of its rows and ~35 ops on ``[1, D]`` tensors (0.5-0.6 ms of CPU time per step at 5-10 us
an op); one thread per row does it here:

1. the command: the plan integrated ``steps`` steps from the start state with the control
   space's step rule (:data:`~curobo_lite.kernels.step_kernels.STEP_RULES`, the very rules of the
   step kernels, so the same numbers), or a given command (:func:`limited_command`);
2. the limit: per joint the acceleration is clamped into ``[a_low, a_high]`` intersected with
   the accelerations whose velocity after one step of ``dt`` lies within the velocity limits and
   still lets the joint stop before its position limit braking at the acceleration limit
   (``v <= A (sqrt(dt^2 + 2 room / A) - dt)``); velocity and position follow by semi-implicit
   Euler, jerk by a backward difference;
3. ``clamped``: whether the limited state differs from the command (``isclose`` with rtol 1e-5 /
   atol 1e-6 on the position, 1e-4 / 1e-5 on the velocity, over every joint of the row); if not,
   the row keeps the command's own numbers;
4. a position past a limit by no more than that rounding is put on the limit;
5. ``violation``: the largest excess of the written state over the limits (0 when within).

Outputs: the state ``out_* [B, D]`` and ``flags [B, 2] = (clamped as 0/1, violation)``. Generic
over float32 and float64; any device (CUDA: torch's current stream, so a captured CUDA graph
replays it).
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.step_kernels import STEP_RULES
from curobo_lite.kernels.warp_types import Array1, Array2, Array3, scalar_overloads

# the step kernels' rules (the same numbers), as names a Warp function can call
_position_backward_rule = STEP_RULES["POSITION_BACKWARD"]
_velocity_rule = STEP_RULES["VELOCITY"]
_acceleration_rule = STEP_RULES["ACCELERATION"]
_jerk_rule = STEP_RULES["JERK"]

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: the kernel key of a command given as a state (no integration)
GIVEN = "GIVEN"


@wp.func
def _stop_speed(room: Any, brake: Any, dt: Any, unbounded: Any):
    # the largest speed after one step of dt from which braking at ``brake`` stops within
    # ``room`` (``unbounded`` for an infinite brake)
    speed = unbounded
    if wp.isfinite(brake):
        speed = brake * (wp.sqrt(dt * dt + (room + room) / brake) - dt)
    return speed


@wp.func
def _close(value: Any, reference: Any, rtol: Any, atol: Any):
    # torch.isclose(value, reference, rtol, atol)
    return value == reference or wp.abs(value - reference) <= atol + rtol * wp.abs(reference)


@wp.func
def _excess(value: Any, low: Any, high: Any):
    return wp.max(value - high, low - value)


@wp.func
def _limit(x0: Any, v0: Any, x: Any, v: Any, a: Any, bounds: Array3, d: int, dt: Any):
    # (position, velocity, acceleration) limited for one step of dt from (x0, v0) with the
    # acceleration ``a`` commanded, and whether it is close to the command's (x, v)
    zero = dt - dt
    unbounded = bounds.dtype(wp.inf)
    x_low, x_high = bounds[0, 0, d], bounds[0, 1, d]
    v_low, v_high = bounds[1, 0, d], bounds[1, 1, d]
    a_low, a_high = bounds[2, 0, d], bounds[2, 1, d]
    # braking-distance bounds on the velocity after this step: towards x_high at -a_low,
    # towards x_low at a_high
    v_max = wp.min(v_high, _stop_speed(wp.max(x_high - x0, zero), -a_low, dt, unbounded))
    v_min = wp.max(v_low, -_stop_speed(wp.max(x0 - x_low, zero), a_high, dt, unbounded))
    a_max = wp.min(a_high, (v_max - v0) / dt)
    a_min = wp.max(a_low, (v_min - v0) / dt)
    # a_min > a_max only from a state that cannot stop in time: brake at the limit
    acceleration = wp.min(wp.max(a, a_min), a_max)
    acceleration = wp.min(wp.max(acceleration, a_low), a_high)
    velocity = v0 + acceleration * dt
    position = x0 + velocity * dt
    close = _close(position, x, bounds.dtype(1.0e-5), bounds.dtype(1.0e-6)) and _close(
        velocity, v, bounds.dtype(1.0e-4), bounds.dtype(1.0e-5)
    )
    return position, velocity, acceleration, close


@wp.func
def _onto_limits(x: Any, low: Any, high: Any):
    # a position past a limit by rounding only (isclose, as ``clamped`` compares) is put on it:
    # the command's own numbers, or the braking step, 1-2 ulp past a joint held at its limit
    # (a grasp at joint 5's -2.8973) fail a strict limit check; a real overshoot stays
    tolerance_r, tolerance_a = x.dtype(1.0e-5), x.dtype(1.0e-6)
    out = x
    if x > high and _close(x, high, tolerance_r, tolerance_a):
        out = high
    if x < low and _close(x, low, tolerance_r, tolerance_a):
        out = low
    return out


#: ``mode`` codes of the kernel: a given command, then the step rules of the control spaces
MODE_CODES = {GIVEN: 0, "POSITION_BACKWARD": 1, "VELOCITY": 2, "ACCELERATION": 3, "JERK": 4}


@wp.func
def _command_at(
    mode: int,
    x0: Any,
    v0: Any,
    a0: Any,
    act: Array3,
    traj_dt: Array1,
    steps: int,
    command_position: Array2,
    command_velocity: Array2,
    command_acceleration: Array2,
    command_jerk: Array2,
    has_jerk: int,
    b: int,
    d: int,
):
    # joint d of row b's command: read (mode 0) or the plan integrated by a step rule
    x = x0
    v = v0
    a = a0
    j = x0 - x0
    if mode == 0:
        x = command_position[b, d]
        v = command_velocity[b, d]
        a = command_acceleration[b, d]
        if has_jerk != 0:
            j = command_jerk[b, d]
    for h in range(1, steps + 1):
        dt = traj_dt[h]
        u = act[b, h - 1, d]
        inv_dt = act.dtype(1.0) / dt
        if mode == 1:
            x, v, a, j = _position_backward_rule(u, dt, inv_dt, x, v, a)
        elif mode == 2:
            x, v, a, j = _velocity_rule(u, dt, inv_dt, x, v, a)
        elif mode == 3:
            x, v, a, j = _acceleration_rule(u, dt, inv_dt, x, v, a)
        else:
            x, v, a, j = _jerk_rule(u, dt, inv_dt, x, v, a)
    return x, v, a, j


@wp.kernel
def command_limit(
    mode: int,
    start_position: Array2,
    start_velocity: Array2,
    start_acceleration: Array2,
    act: Array3,
    traj_dt: Array1,
    steps: int,
    command_position: Array2,
    command_velocity: Array2,
    command_acceleration: Array2,
    command_jerk: Array2,
    has_jerk: int,
    bounds: Array3,
    dt: Any,
    out_position: Array2,
    out_velocity: Array2,
    out_acceleration: Array2,
    out_jerk: Array2,
    flags: Array2,
):
    """One thread per row ``b``: the command (``mode``: :data:`MODE_CODES`; ``steps`` plan steps
    integrated, 0 for a given command), limited; two passes over the joints: the first decides
    ``clamped`` for the row, the second writes the limited state or the command's own numbers."""
    b = wp.tid()
    zero = dt - dt
    clamped = int(0)  # noqa: UP018 (a Warp int variable)
    for d in range(out_position.shape[1]):
        x0 = start_position[b, d]
        v0 = start_velocity[b, d]
        x, v, a, j = _command_at(
            mode, x0, v0, start_acceleration[b, d], act, traj_dt, steps, command_position,
            command_velocity, command_acceleration, command_jerk, has_jerk, b, d,
        )  # fmt: skip
        position, velocity, acceleration, close = _limit(x0, v0, x, v, a, bounds, d, dt)
        if not close:
            clamped = 1
    violation = zero
    for d in range(out_position.shape[1]):
        x0 = start_position[b, d]
        v0 = start_velocity[b, d]
        a0 = start_acceleration[b, d]
        cx, cv, ca, cj = _command_at(
            mode, x0, v0, a0, act, traj_dt, steps, command_position, command_velocity,
            command_acceleration, command_jerk, has_jerk, b, d,
        )  # fmt: skip
        lx, lv, la, lclose = _limit(x0, v0, cx, cv, ca, bounds, d, dt)
        lj = (la - a0) / dt
        if clamped == 0:  # keep the command's own numbers (equal up to rounding)
            lx = cx
            lv = cv
            la = ca
            if mode != 0 or has_jerk != 0:
                lj = cj
        lx = _onto_limits(lx, bounds[0, 0, d], bounds[0, 1, d])
        out_position[b, d] = lx
        out_velocity[b, d] = lv
        out_acceleration[b, d] = la
        out_jerk[b, d] = lj
        violation = wp.max(violation, _excess(lx, bounds[0, 0, d], bounds[0, 1, d]))
        violation = wp.max(violation, _excess(lv, bounds[1, 0, d], bounds[1, 1, d]))
        violation = wp.max(violation, _excess(la, bounds[2, 0, d], bounds[2, 1, d]))
    flags[b, 0] = flags.dtype(clamped)
    flags[b, 1] = violation


def _signature(scalar: type) -> list:
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    return [int, a2, a2, a2, a3, a1, int, a2, a2, a2, a2, int, a3, scalar, a2, a2, a2, a2, a2]


_kernel = scalar_overloads(command_limit, _signature)


def integrates(mode: str) -> bool:
    """Whether :func:`integrated_command` serves step mode ``mode`` (a
    :class:`~curobo_lite.kernels.StepMode` value): the modes whose step reads one action."""
    return mode in MODE_CODES and mode != GIVEN


def _launch(
    key: str,
    start: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    act: torch.Tensor,
    traj_dt: torch.Tensor,
    steps: int,
    command: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None],
    bounds: torch.Tensor,
    dt: float,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    flags: torch.Tensor,
) -> None:
    wp.init()
    position = start[0]
    kernel = _kernel(position.dtype)
    has_jerk = int(command[3] is not None)
    given = [as_warp(t if t is not None else position) for t in command]
    inputs = [
        MODE_CODES[key],
        *(as_warp(t) for t in start),
        as_warp(act),
        as_warp(traj_dt),
        steps,
        *given,
        has_jerk,
        as_warp(bounds),
        dt,
        *(as_warp(t) for t in out),
        as_warp(flags),
    ]
    rows = position.shape[0]
    launch_rows(kernel, rows, position.device, lambda b0, b1: (rows, inputs), rows)


def integrated_command(
    mode: str,
    start: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    act: torch.Tensor,
    traj_dt: torch.Tensor,
    steps: int,
    bounds: torch.Tensor,
    dt: float,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    flags: torch.Tensor,
) -> None:
    """The state ``steps`` steps ahead along the plan ``act [B, H, D]`` from ``start`` (position,
    velocity, acceleration ``[B, D]``) by ``mode``'s step rule (:func:`integrates`; ``traj_dt
    [H]`` seconds per step, ``1 <= steps < H``), limited for one step of ``dt`` seconds by
    ``bounds [3, 2, D]`` ((position, velocity, acceleration) x (low, high)), written into ``out``
    (four ``[B, D]`` tensors) and ``flags [B, 2]`` (clamped, violation); see the module
    docstring. Inputs are checked by the caller (same dtype and device, contiguous)."""
    _launch(mode, start, act, traj_dt, steps, (start[0],) * 3 + (None,), bounds, dt, out, flags)


def limited_command(
    start: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    command: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None],
    bounds: torch.Tensor,
    dt: float,
    out: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    flags: torch.Tensor,
) -> None:
    """:func:`integrated_command` for a given ``command`` (position, velocity, acceleration
    ``[B, D]`` and jerk ``[B, D]`` or ``None``: then the limited state's backward difference)."""
    empty = start[0][:, None]  # never read: no step is integrated
    _launch(GIVEN, start, empty, bounds[0, 0], 0, command, bounds, dt, out, flags)
