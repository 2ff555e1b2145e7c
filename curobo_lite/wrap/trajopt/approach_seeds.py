"""Trajectory seeds that approach a goal along the hand's own axis (grasps).

A grasp goal puts an object between the open fingers, a few millimetres from them. A seed that
goes straight in joint space from the start to the goal configuration sweeps the fingers
through the object (and the shelf around it), and the optimizer, which only sees gradients,
rarely untangles that. Motions that grasp instead come in along the approach axis: from a
*retreat* configuration, the goal with the hand backed off along its z axis, straight in.
:func:`retreat_configs` finds those configurations (damped least squares on the Jacobian,
orientation held, obstacles ignored: the optimizer checks them) and
:func:`approach_seed_paths` builds the seed knots start -> retreat -> goal.
"""

from __future__ import annotations

import torch

from curobo_lite.robot import Kinematics
from curobo_lite.types.math import quat_rotate
from curobo_lite.wrap.ik.dls import dls_steps


def retreat_configs(
    kinematics: Kinematics,
    goal_configs: torch.Tensor,
    distance: float | torch.Tensor,
    iterations: int = 8,
    damping: float = 0.01,
    initial: torch.Tensor | None = None,
    max_step: float = 0.2,
    axis: torch.Tensor | None = None,
) -> torch.Tensor:
    """Configurations ``[..., D]`` whose end effector is ``distance`` metres (a number, or one
    per configuration ``[...]``) behind that of
    ``goal_configs [..., D]`` along its own z axis, with the same orientation (up to the
    residual of ``iterations`` damped least-squares steps, each at most ``max_step`` rad per
    joint: near a singularity an unbounded step throws the arm across its range), clamped to
    the position limits. The steps start from ``initial [..., D]`` (default: the goal
    configurations), e.g. the previous configuration of a chain backing off step by step.
    ``axis``: the unit direction ``[3]`` or ``[..., 3]`` in the hand's frame to back off
    against instead of z (``distance * axis`` is subtracted)."""
    shape = goal_configs.shape
    goal_q = goal_configs.reshape(-1, shape[-1]).detach()
    q = (goal_q if initial is None else initial.reshape(-1, shape[-1]).detach()).clone()
    with torch.no_grad():
        goal = kinematics.forward(goal_q, spheres=False)
        if axis is None:
            back = torch.zeros_like(goal.ee_position)
            back[:, 2] = 1.0
        else:
            back = axis.to(goal.ee_position).expand(*shape[:-1], 3).reshape(-1, 3)
        if isinstance(distance, torch.Tensor):  # one per configuration, [...]
            distance = distance.to(goal.ee_position).reshape(-1, 1)
        target_position = goal.ee_position - distance * quat_rotate(goal.ee_quaternion, back)
        q = dls_steps(
            kinematics, q, target_position, goal.ee_quaternion, iterations, damping, max_step
        )
    return q.reshape(shape)


def approach_seed_paths(
    start_position: torch.Tensor,
    goal_configs: torch.Tensor,
    retreat: torch.Tensor,
    profile: torch.Tensor,
    approach_fraction: float = 0.3,
) -> torch.Tensor:
    """Position knots ``[S, n, H, D]`` (index 0 the start) from ``start_position [S, D]`` to
    ``retreat [S, n, D]`` along the first ``1 - approach_fraction`` of ``profile [H]`` (a 0 -> 1
    time law such as :func:`~curobo_lite.wrap.trajopt.seed.min_jerk_profile`), then straight
    to ``goal_configs [S, n, D]`` over the rest."""
    horizon = profile.shape[0]
    split = max(1, min(horizon - 2, round((1.0 - approach_fraction) * (horizon - 1))))
    first = torch.linspace(0.0, 1.0, split + 1, dtype=profile.dtype, device=profile.device)
    second = torch.linspace(0.0, 1.0, horizon - split, dtype=profile.dtype, device=profile.device)
    first = first**2 * (3.0 - 2.0 * first)  # smoothstep: at rest at the start and the turn
    second = second**2 * (3.0 - 2.0 * second)
    start = start_position[:, None, None]
    to_retreat = start + first[None, None, :, None] * (retreat[:, :, None] - start)
    approach = retreat[:, :, None] + second[None, None, 1:, None] * (
        goal_configs[:, :, None] - retreat[:, :, None]
    )
    return torch.cat((to_retreat, approach), dim=2)


def straight_seed_paths(
    start_position: torch.Tensor, goal_configs: torch.Tensor, profile: torch.Tensor
) -> torch.Tensor:
    """Position knots ``[S, n, H, D]`` straight from ``start_position [S, D]`` to
    ``goal_configs [S, n, D]`` along ``profile [H]``."""
    start = start_position[:, None, None]
    return start + profile[None, None, :, None] * (goal_configs[:, :, None] - start)
