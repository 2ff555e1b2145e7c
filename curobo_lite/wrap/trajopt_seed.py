"""Seeding of the trajectory optimization (phases 1 and 2 of :mod:`curobo_lite.wrap.trajopt`).

Holds the IK task that turns pose goals into goal configurations (:func:`ik_task`), the uniform
IK seeds inside the joint limits (:func:`uniform_configs`), the ranking of IK solutions
(:func:`rank_ik_solutions`), and the minimum-jerk straight-line trajectory seeds
(:func:`min_jerk_profile`, :func:`straight_line_seeds`, :func:`knots_to_actions`).
"""

from __future__ import annotations

import math

import torch

from curobo_lite.rollout import TaskConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap.trajopt_config import IkConfig

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
                "activation_distance": [0.01, 0.0, 0.0, 0.0],
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


def uniform_configs(
    position_limits: torch.Tensor,
    shape: tuple[int, ...],
    margin: float,
    generator: torch.Generator,
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """Uniform draws ``[*shape, D]`` inside ``position_limits [2, D]`` shrunk by ``margin`` of
    the range at both ends."""
    low, high = position_limits
    span = high - low
    dof = position_limits.shape[-1]
    u = torch.rand(*shape, dof, generator=generator, **tensor_args.as_kwargs())
    return low + span * (margin + (1.0 - 2.0 * margin) * u)


def rank_ik_solutions(
    q: torch.Tensor,
    reached: torch.Tensor,
    cost: torch.Tensor,
    start_position: torch.Tensor,
    cspace_weights: torch.Tensor,
    n_select: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The best ``n_select`` of ``n_ik`` IK solutions per problem.

    Args:
        q: ``[S, n_ik, D]`` solutions.
        reached: ``[S, n_ik]`` bool, within the pose thresholds.
        cost: ``[S, n_ik]`` final cost of each solution.
        start_position: ``[S, D]``.
        cspace_weights: ``[D]`` weights of the joint-space distance to the start.
        n_select: solutions to return (cycled when more than ``n_ik``).

    Returns:
        ``(configs [S, n_select, D], reached [S, n_select])``: reached solutions first (nearest
        the start first), the others after them by cost.
    """
    n_ik, dof = q.shape[1], q.shape[2]
    distance = ((q - start_position[:, None]).square() * cspace_weights).sum(-1)
    order_key = torch.where(reached, distance, distance.new_full((), 1e6) + cost.clamp(max=1e12))
    order = order_key.argsort(dim=1)
    picks = order[:, torch.arange(n_select, device=order.device) % n_ik]
    configs = q.gather(1, picks[..., None].expand(-1, -1, dof))
    return configs, reached.gather(1, picks)


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
    [S, n, D]`` along ``profile [H]`` (phase 2 of :mod:`curobo_lite.wrap.trajopt`), perturbed by
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
