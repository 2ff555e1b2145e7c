"""Retiming and interpolation of optimized knot trajectories (phases 4 and 5 of
:mod:`curobo_lite.wrap.trajopt.solver`): backward differences from rest, the limit ratios that scale
time (cuRobo's rule), limit excess checks, and the clamped cubic spline (or linear)
interpolation to the controller rate."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from curobo_lite.robot import JointLimits
from curobo_lite.types import JointState, TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.trajopt.config import INTERPOLATIONS, TrajOptSolverConfig

# --------------------------------------------------------------------------------------------------
# finite differences, limit ratios, interpolation


def backward_differences(
    position: torch.Tensor, dt: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Velocity, acceleration and jerk of ``position [B, N, D]`` from rest (SPEC §2 BACKWARD).

    ``dt [B]`` is each trajectory's uniform step. Index 0 is the resting start:
    ``v_0 = a_0 = j_0 = 0``; ``v_n = (x_n - x_{n-1}) / dt`` and likewise down the chain.
    """
    inv = (1.0 / dt)[:, None, None]

    def diff(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        out[:, 1:] = (x[:, 1:] - x[:, :-1]) * inv
        return out

    velocity = diff(position)
    acceleration = diff(velocity)
    return velocity, acceleration, diff(acceleration)


def limit_ratio(x: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """``[B]`` largest ``x / upper`` (``x > 0``) or ``x / lower`` (``x < 0``) over the trailing
    dimensions of ``x [B, ..., D]``; ``limits [2, D]`` (lower < 0 < upper; infinite: ratio 0)."""
    tiny = torch.finfo(x.dtype).tiny
    upper = limits[1].clamp(min=tiny)
    lower = (-limits[0]).clamp(min=tiny)
    ratio = torch.relu(x) / upper + torch.relu(-x) / lower
    return ratio.flatten(1).amax(dim=1)


def limit_excess(x: torch.Tensor, limits: torch.Tensor) -> torch.Tensor:
    """``[B]`` largest excess of ``x [B, ..., D]`` beyond ``[lower, upper]`` (0 when within)."""
    excess = torch.relu(x - limits[1]) + torch.relu(limits[0] - x)
    return excess.flatten(1).amax(dim=1)


def time_scale(
    velocity: torch.Tensor | None,
    acceleration: torch.Tensor | None,
    jerk: torch.Tensor | None,
    limits: JointLimits,
) -> torch.Tensor:
    """``[B]`` time-scale factor ``max(r_v, sqrt(r_a), cbrt(r_j))`` (``r`` from
    :func:`limit_ratio`, each quantity ``[B, ..., D]``) that would bring the worst quantity
    exactly to its limit (cuRobo's retiming rule); ``None`` quantities are skipped."""
    scale = None
    for power, x, lim in (
        (1.0, velocity, limits.velocity),
        (0.5, acceleration, limits.acceleration),
        (1.0 / 3.0, jerk, limits.jerk),
    ):
        if x is None:
            continue
        r = limit_ratio(x, lim).pow(power)
        scale = r if scale is None else torch.maximum(scale, r)
    return scale


def cubic_spline_matrix(horizon: int, tensor_args: TensorDeviceType) -> torch.Tensor:
    """``[H, H]`` map from knot values to the second derivatives ``M`` of the clamped cubic spline
    through them (unit knot spacing, zero first derivative at both ends).

    With unit spacing the spline's second derivatives solve the tridiagonal system
    ``M_{i-1} + 4 M_i + M_{i+1} = 6 (P_{i+1} - 2 P_i + P_{i-1})`` inside, and
    ``2 M_0 + M_1 = 6 (P_1 - P_0)``, ``M_{H-2} + 2 M_{H-1} = -6 (P_{H-1} - P_{H-2})`` at the
    clamped ends. Solved once in float64.
    """
    if horizon < 2:
        raise InputValueError(f"horizon: the spline needs at least 2 knots, received {horizon}")
    h = horizon
    a = torch.zeros(h, h, dtype=torch.float64)
    c = torch.zeros(h, h, dtype=torch.float64)
    idx = torch.arange(h)
    a[idx, idx] = 4.0
    a[idx[1:], idx[:-1]] = 1.0
    a[idx[:-1], idx[1:]] = 1.0
    a[0, 0] = a[-1, -1] = 2.0
    for i in range(1, h - 1):
        c[i, i - 1], c[i, i], c[i, i + 1] = 6.0, -12.0, 6.0
    c[0, 0], c[0, 1] = -6.0, 6.0
    c[-1, -2], c[-1, -1] = 6.0, -6.0
    return torch.linalg.solve(a, c).to(**tensor_args.as_kwargs())


@dataclass
class Interpolated:
    """A batch of interpolated trajectories (see :func:`interpolate`)."""

    state: JointState
    last_index: torch.Tensor
    knot_acceleration: torch.Tensor | None


#: a plan resampled into more samples than this is refused (1 000 s at 10 ms): it comes from a
#: configuration error (a huge time_margin or min_dt) and would exhaust memory
MAX_INTERPOLATED_SAMPLES = 100_000


def interpolate(
    knots: torch.Tensor,
    dt: torch.Tensor,
    interpolation_dt: float,
    mode: str = "CUBIC",
    spline_matrix: torch.Tensor | None = None,
) -> Interpolated:
    """Resample knot trajectories ``[B, H, D]`` (uniform step ``dt [B]``) every
    ``interpolation_dt`` seconds.

    Problem ``b`` has ``last_index[b] = round((H-1) dt_b / interpolation_dt)`` samples after the
    start (``dt`` should make that a whole number, see :func:`retime`); the output
    has ``T = max(last_index) + 1`` samples and holds each problem's final knot at rest after its
    end. ``CUBIC``: the clamped cubic spline (``spline_matrix`` from :func:`cubic_spline_matrix`),
    velocity/acceleration/jerk its derivatives; ``LINEAR``: straight segments, velocity the
    segment slope, acceleration and jerk backward differences of the sampled velocity.

    Returns:
        :class:`Interpolated` with ``state [B, T, D]``, ``last_index [B]`` and, for ``CUBIC``,
        the spline's accelerations at the knots ``[B, H, D]`` (where its peaks lie).
    """
    if mode not in INTERPOLATIONS:
        raise InputValueError(f"mode: expected one of {list(INTERPOLATIONS)}, received {mode!r}")
    B, H, D = knots.shape
    segments = H - 1
    last = torch.round(segments * dt / interpolation_dt).long().clamp(min=1)
    n_samples = int(last.max()) + 1
    if n_samples > MAX_INTERPOLATED_SAMPLES:
        duration = float(segments * dt.max())
        raise InputValueError(
            f"interpolation_dt: {interpolation_dt:g} s over a plan of {duration:g} s needs "
            f"{n_samples} samples, more than {MAX_INTERPOLATED_SAMPLES}; check "
            "trajopt.time_margin, min_dt and interpolation_dt"
        )
    k = torch.arange(n_samples, device=knots.device, dtype=knots.dtype)
    tau = k[None, :] * (interpolation_dt / dt)[:, None]  # knot coordinate of every sample
    after = torch.arange(n_samples, device=knots.device)[None, :] >= last[:, None]
    tau = torch.where(after, torch.full_like(tau, float(segments)), tau.clamp(max=segments))
    seg = tau.floor().long().clamp(max=segments - 1)
    t = (tau - seg.to(tau.dtype))[..., None]
    index = seg[..., None].expand(B, n_samples, D)
    p0, p1 = knots.gather(1, index), knots.gather(1, index + 1)
    inv_dt = (1.0 / dt)[:, None, None]
    moving = (~after)[..., None].to(knots.dtype)
    if mode == "CUBIC":
        if spline_matrix is None:
            spline_matrix = cubic_spline_matrix(H, TensorDeviceType(knots.device, knots.dtype))
        m = torch.einsum("ij,bjd->bid", spline_matrix, knots)
        m0, m1 = m.gather(1, index), m.gather(1, index + 1)
        u = 1.0 - t
        position = u * p0 + t * p1 + ((u**3 - u) * m0 + (t**3 - t) * m1) / 6.0
        velocity = p1 - p0 - (3.0 * u**2 - 1.0) * m0 / 6.0 + (3.0 * t**2 - 1.0) * m1 / 6.0
        acceleration = u * m0 + t * m1
        jerk = m1 - m0
        # the final sample keeps the spline's end acceleration; the held tail is at rest
        keep = (torch.arange(n_samples, device=knots.device)[None] <= last[:, None])[..., None]
        keep = keep.to(knots.dtype)
        velocity = velocity * inv_dt * moving
        acceleration = acceleration * inv_dt**2 * keep
        jerk = jerk * inv_dt**3 * moving
        knot_acceleration = m * inv_dt**2
    else:  # LINEAR
        position = p0 + t * (p1 - p0)
        velocity = (p1 - p0) * inv_dt * moving
        h = 1.0 / interpolation_dt
        acceleration = torch.zeros_like(velocity)
        acceleration[:, 1:] = (velocity[:, 1:] - velocity[:, :-1]) * h
        jerk = torch.zeros_like(velocity)
        jerk[:, 1:] = (acceleration[:, 1:] - acceleration[:, :-1]) * h
        knot_acceleration = None
    state = JointState(position, velocity, acceleration, jerk)
    return Interpolated(state, last, knot_acceleration)


# --------------------------------------------------------------------------------------------------
# retiming (phase 4) and the limit-respecting interpolation (phase 5)


def round_dt(dt: torch.Tensor, interpolation_dt: float, horizon: int) -> torch.Tensor:
    """``dt [B]`` rounded up so that the ``horizon - 1`` segments last a whole number (at least
    one) of ``interpolation_dt`` steps."""
    segments = horizon - 1
    n = torch.ceil(segments * dt / interpolation_dt - 1e-6).clamp(min=1)
    return n * interpolation_dt / segments


def retime(
    knots: torch.Tensor,
    plan_dt: float,
    limits: JointLimits,
    config: TrajOptSolverConfig,
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """``[B]`` retimed step for knot trajectories ``[B, H, D]`` optimized at ``plan_dt``:
    cuRobo's scale factor with ``config.time_margin``, at least ``config.min_dt``, the duration
    rounded up to whole ``config.interpolation_dt`` steps."""
    plan = torch.full((knots.shape[0],), plan_dt, **tensor_args.as_kwargs())
    v, a, j = backward_differences(knots, plan)
    scale = time_scale(v, a, j, limits) * (1.0 + config.time_margin)
    dt = torch.clamp(plan * scale, min=config.min_dt)
    return round_dt(dt, config.interpolation_dt, knots.shape[1])


def interpolated_scale(
    interp: Interpolated,
    limits: JointLimits,
    interpolation_dt: float,
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """``[B]`` time-scale factor of an interpolated batch (spline derivatives, knot
    accelerations and backward differences of the samples)."""
    state = interp.state
    scale = time_scale(state.velocity, state.acceleration, state.jerk, limits)
    idt = torch.full((state.position.shape[0],), interpolation_dt, **tensor_args.as_kwargs())
    v, a, _ = backward_differences(state.position, idt)
    scale = torch.maximum(scale, time_scale(v, a, None, limits))
    if interp.knot_acceleration is not None:
        scale = torch.maximum(scale, time_scale(None, interp.knot_acceleration, None, limits))
    return scale


def interpolate_within_limits(
    knots: torch.Tensor,
    dt: torch.Tensor,
    limits: JointLimits,
    config: TrajOptSolverConfig,
    spline_matrix: torch.Tensor | None,
    tensor_args: TensorDeviceType,
) -> tuple[Interpolated, torch.Tensor, int]:
    """Interpolate ``knots [B, H, D]`` at step ``dt [B]`` and grow ``dt`` until the samples
    respect ``limits`` with ``config.time_margin`` (at most ``config.max_retime_iters`` times).

    Returns ``(interpolated, dt [B], corrections made)``.
    """
    target = 1.0 / (1.0 + config.time_margin)
    horizon = knots.shape[1]
    iterations = 0
    while True:
        interp = interpolate(
            knots, dt, config.interpolation_dt, config.interpolation, spline_matrix
        )
        scale = interpolated_scale(interp, limits, config.interpolation_dt, tensor_args)
        over = scale > target * (1.0 + 1e-6)
        if iterations >= config.max_retime_iters or not bool(over.any()):
            return interp, dt, iterations
        grown = round_dt(dt * scale / target, config.interpolation_dt, horizon)
        dt = torch.where(over, torch.maximum(grown, dt), dt)
        iterations += 1
