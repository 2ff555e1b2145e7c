"""Timing a geometric path: joint-space waypoints to a trajectory within the joint limits.

A path from :class:`~curobo_lite.wrap.motion.roadmap.RoadmapPlanner` is a polyline whose segments
were checked for collisions, and nothing between them was. :func:`time_polyline` therefore
keeps the motion *on* the polyline: each segment is a minimum-jerk motion (quintic time law
``s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5``) from rest to rest, so the plan never leaves the
checked segments, and its duration is the shortest for which every joint stays within its
velocity, acceleration and jerk limits. The law's peaks are closed form: ``|s'| <= 15/8``,
``|s''| <= 10 / sqrt(3)``, ``|s'''| <= 60``, so a joint that moves ``delta`` in ``T`` seconds
peaks at ``15/8 delta / T``, ``10 / sqrt(3) delta / T^2`` and ``60 delta / T^3``.
"""

from __future__ import annotations

import math

import torch

from curobo_lite.robot import JointLimits
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError

#: peaks of the minimum-jerk law's first three derivatives on [0, 1]
PEAK_VELOCITY = 15.0 / 8.0
PEAK_ACCELERATION = 10.0 / math.sqrt(3.0)
PEAK_JERK = 60.0


def _magnitude_limit(limits: torch.Tensor) -> torch.Tensor:
    """``[D]`` the smaller of ``|lower|`` and ``upper`` of ``limits [2, D]``."""
    return torch.minimum(-limits[0], limits[1]).clamp(min=torch.finfo(limits.dtype).tiny)


def segment_durations(
    path: torch.Tensor, limits: JointLimits, interpolation_dt: float
) -> torch.Tensor:
    """``[K - 1]`` seconds of each segment of ``path [K, D]``: the shortest minimum-jerk
    motion within the velocity, acceleration and jerk limits, rounded up to a whole number of
    ``interpolation_dt`` steps (at least one)."""
    delta = (path[1:] - path[:-1]).abs()
    velocity = _magnitude_limit(limits.velocity.to(path))
    acceleration = _magnitude_limit(limits.acceleration.to(path))
    jerk = _magnitude_limit(limits.jerk.to(path))
    needed = torch.stack(
        (
            PEAK_VELOCITY * delta / velocity,
            (PEAK_ACCELERATION * delta / acceleration).sqrt(),
            (PEAK_JERK * delta / jerk).pow(1.0 / 3.0),
        )
    ).amax(dim=(0, 2))
    # 1e-9: a duration that is a whole number of steps up to rounding stays that number
    steps = (needed / interpolation_dt - 1e-9).ceil().clamp(min=1.0)
    return steps * interpolation_dt


def time_polyline(path: torch.Tensor, limits: JointLimits, interpolation_dt: float) -> JointState:
    """The trajectory ``[T, D]`` sampled every ``interpolation_dt`` seconds that follows
    ``path [K, D]`` segment by segment, at rest at every waypoint (minimum-jerk segments of
    :func:`segment_durations`). Its positions lie on the polyline; velocity, acceleration and
    jerk are the law's exact derivatives."""
    if path.ndim != 2 or path.shape[0] < 1:
        raise InputValueError(f"path: expected waypoints [K, D], received {tuple(path.shape)}")
    if not interpolation_dt > 0.0:
        raise InputValueError(
            f"interpolation_dt: expected seconds > 0, received {interpolation_dt!r}"
        )
    keep = torch.ones(path.shape[0], dtype=torch.bool, device=path.device)
    keep[1:] = (path[1:] - path[:-1]).abs().amax(-1) > 0.0
    path = path[keep]
    if path.shape[0] == 1:
        return JointState.from_position(path.clone())
    durations = segment_durations(path, limits, interpolation_dt)
    steps = torch.round(durations / interpolation_dt).long()
    segment = torch.repeat_interleave(torch.arange(steps.shape[0], device=path.device), steps)
    first = steps.cumsum(0) - steps
    k = torch.arange(segment.shape[0], device=path.device) - first[segment]
    tau = (k.to(path.dtype) / steps[segment].to(path.dtype))[:, None]
    T = durations[segment][:, None]
    delta = (path[1:] - path[:-1])[segment]
    base = path[:-1][segment]
    tau2 = tau * tau
    s = tau2 * tau * (10.0 - 15.0 * tau + 6.0 * tau2)
    ds = 30.0 * tau2 * (1.0 - tau) ** 2
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau)
    ddds = 60.0 - 360.0 * tau + 360.0 * tau2
    end = torch.zeros(1, path.shape[1], dtype=path.dtype, device=path.device)
    return JointState(
        position=torch.cat((base + s * delta, path[-1:])),
        velocity=torch.cat((ds / T * delta, end)),
        acceleration=torch.cat((dds / T**2 * delta, end)),
        jerk=torch.cat((ddds / T**3 * delta, end)),
    )
