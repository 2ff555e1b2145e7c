"""Seeding of the trajectory optimization (phases 1 and 2 of :mod:`~.solver`).

Holds the IK task that turns pose goals into goal configurations (:func:`ik_task`, solved by
the :class:`~curobo_lite.wrap.IKSolver`), and the minimum-jerk straight-line trajectory seeds
(:func:`min_jerk_profile`, :func:`straight_line_seeds`, :func:`knots_to_actions`).
"""

from __future__ import annotations

import math

import torch

from curobo_lite.rollout import TaskConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap.trajopt.config import IkConfig

# Collision terms the IK rollout copies from the task (without sweeping: a horizon-1 rollout
# has no segments).
_IK_COLLISION_TERMS = ("primitive_collision_cost", "self_collision_cost")


def ik_task(task: TaskConfig, ik: IkConfig) -> TaskConfig:
    """The horizon-1 ``teleport_mode`` task of the goal-configuration solve: ``ik.cost`` when
    given, otherwise the task's ``pose_cost``, a position-only ``bound_cost`` and the task's
    collision terms (for collision-free goal configurations)."""
    cost = ik.cost
    if cost is None:
        cost = {
            "pose_cost": task.cost.get("pose_cost") or {},
            "bound_cost": {
                "bound_weight": [1000.0, 0.0, 0.0, 0.0],
                "activation_distance": [0.002, 0.0, 0.0, 0.0],
            },
        }
        for name in _IK_COLLISION_TERMS:
            if task.cost.get(name) is not None:
                section = dict(task.cost[name])
                section.pop("use_sweep", None)
                cost[name] = section
    return TaskConfig(
        name=f"{task.name}.ik",
        model={"horizon": 1, "control_space": "POSITION", "teleport_mode": True},
        cost=cost,
        source=f"{task.source} (trajopt.ik)",
    )


def min_jerk_profile(horizon: int, tensor_args: TensorDeviceType) -> torch.Tensor:
    """``[H]`` fraction of the way at each step (``s = 10t³ - 15t⁴ + 6t⁵``, ``t = h/(H-1)``)."""
    t = torch.linspace(0.0, 1.0, horizon, **tensor_args.as_kwargs())
    return t**3 * (10.0 - 15.0 * t + 6.0 * t * t)


def knots_to_actions(knots: torch.Tensor, position_limits: torch.Tensor) -> torch.Tensor:
    """POSITION-control actions ``[..., H, D]`` of position knots ``[..., H, D]`` (index 0 the
    start): action ``h`` sets knot ``h+1``, the last repeats the final knot; projected into
    ``position_limits [2, D]``."""
    low, high = position_limits
    act = torch.cat((knots[..., 1:, :], knots[..., -1:, :]), dim=-2)
    return torch.maximum(torch.minimum(act, high), low)


def straight_line_seeds(
    start_position: torch.Tensor,
    goal_configs: torch.Tensor,
    profile: torch.Tensor,
    seed_noise: float,
    position_limits: torch.Tensor,
    generator: torch.Generator,
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """Action seeds ``[S * n, H, D]`` from ``start_position [S, D]`` to ``goal_configs
    [S, n, D]`` along ``profile [H]`` (phase 2 of :mod:`~.solver`), perturbed by
    ``seed_noise * n_d * sin(pi t)`` (the first seed of every problem unperturbed)."""
    S, n, D = goal_configs.shape
    horizon = profile.shape[0]
    path = start_position[:, None, None] + profile[None, None, :, None] * (
        goal_configs[:, :, None] - start_position[:, None, None]
    )  # [S, n, H, D], path[..., 0, :] = start
    noise = torch.randn(S, n, 1, D, generator=generator, **tensor_args.as_kwargs())
    noise[:, 0] = 0.0
    bump = torch.sin(math.pi * torch.linspace(0.0, 1.0, horizon, **tensor_args.as_kwargs()))
    path = path + seed_noise * noise * bump[None, None, :, None]
    return knots_to_actions(path, position_limits).reshape(S * n, horizon, D)
