"""The metrics that rank an IK batch, measured only where they can matter.

A solution succeeds only when it reaches the pose, so its clearance and limit violation
decide nothing for a seed that does not: after the pose-only phase about half of the seeds
miss the pose, and the world query of the collision spheres (171 for the Franka, against
every obstacle) is most of the ranking's cost and grows with the rows. :func:`ranking_metrics`
measures the pose errors of every row (forward kinematics without spheres) and the rest
(:meth:`ArmReacher.convergence`) only for the rows that reach the pose and each goal's best
other row (the reported solution of a goal none reaches).
"""

from __future__ import annotations

import math

import torch

from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher
from curobo_lite.rollout.convergence import ConvergenceMetrics
from curobo_lite.rollout.cost.pose_cost import PoseCost


@torch.no_grad()
def pose_errors(rollout: ArmReacher, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``([B], [B])`` metres and radians from the end effector at ``q [B, D]`` (``B = S *
    n``, problem-major) to the rollout's goal poses (batch ``S`` or 1), as
    :meth:`ArmReacher.convergence` measures them (the rollout's pose cost, its metric)."""
    state = rollout.dynamics_model.kinematics.forward(q, spheres=False)
    pose_cost = next((c for c in rollout.costs.values() if isinstance(c, PoseCost)), None)
    if pose_cost is None:
        pose_cost = PoseCost.from_dict({}, rollout.tensor_args)
    goal = rollout.goal.goal_pose
    index = None
    if goal.batch > 1:
        index = torch.arange(q.shape[0], device=q.device) // (q.shape[0] // goal.batch)
    return pose_cost.errors(state.ee_position[:, None], state.ee_quaternion[:, None], goal, index)


@torch.no_grad()
def ranking_metrics(
    rollout: ArmReacher,
    q: torch.Tensor,
    S: int,
    n: int,
    thresholds: tuple[float, float],
    cost: torch.Tensor | None,
) -> ConvergenceMetrics:
    """:class:`ConvergenceMetrics` of ``q [S * n, D]`` (``n`` rows per goal of the rollout's
    goal) for ranking: pose errors of every row; limit violations and clearances of the rows
    within ``thresholds`` (m, rad) of the pose and of each goal's best other row (least
    ``cost [S * n]``, else least pose error); the rows left out read an infinite violation
    and clearance ``-inf`` (they cannot succeed)."""
    if rollout.world_collision is None and rollout.self_collision_model is None:
        return rollout.convergence(rollout.rollout_state(q[:, None]))
    position, rotation = pose_errors(rollout, q)
    reach = ((position <= thresholds[0]) & (rotation <= thresholds[1])).view(S, n)
    key = (position + rotation if cost is None else cost).view(S, n)
    best = torch.where(reach, key.new_full((), float("inf")), key).argmin(1)
    take = reach.clone()
    take[torch.arange(S, device=q.device), best] = True
    counts = take.sum(1)
    r = int(counts.max())
    # the rows taken first (stable), each goal padded to r with its best other row
    order = torch.argsort((~take).to(torch.uint8), dim=1, stable=True)[:, :r]
    pad = torch.arange(r, device=q.device)[None] >= counts[:, None]
    rows = torch.where(pad, best[:, None], order) + n * torch.arange(S, device=q.device)[:, None]
    rows = rows.reshape(-1)
    part = rollout.convergence(rollout.rollout_state(q[rows][:, None]))

    def spread(value: torch.Tensor | None, fill: float) -> torch.Tensor | None:
        if value is None:
            return None
        full = value.new_full((S * n,), fill)
        full[rows] = value
        return full

    return ConvergenceMetrics(
        position,
        rotation,
        spread(part.cspace_error, float("inf")),
        {k: spread(v, float("inf")) for k, v in part.limit_violation.items()},
        spread(part.world_distance, -float("inf")),
        spread(part.self_distance, -float("inf")),
    )


def full_turn_joints(kinematics: Kinematics) -> torch.Tensor:
    """``[D]`` bool: the revolute joints whose position range spans at least a full turn and
    that no mimic joint follows: moving one by ``2 pi`` leaves every link where it was."""
    tables = kinematics.tables
    low, high = kinematics.robot_config.joint_limits.position
    jacobian_map = tables.jacobian_map.to(low)  # [M, D]
    own = jacobian_map != 0.0
    single = own.sum(0) == 1  # no mimic follower
    unit = (jacobian_map == 1.0).any(0)
    revolute = (own & tables.revolute_mask.to(own.device)[:, None]).any(0)
    return single & unit & revolute & (high - low >= 2.0 * math.pi)


def nearest_turns(
    q: torch.Tensor,
    reference: torch.Tensor,
    full_turn: torch.Tensor,
    low: torch.Tensor,
    high: torch.Tensor,
) -> torch.Tensor:
    """``q [S, n, D]`` with each ``full_turn [D]`` joint moved by whole turns to the value
    nearest ``reference [S, D]`` within ``[low, high]`` (the same pose, and the same
    collisions): an IK seed drawn anywhere in a ``+-2 pi`` range would otherwise make the
    plan turn a joint once around for nothing."""
    turn = 2.0 * math.pi
    moved = q - turn * torch.round((q - reference[:, None]) / turn)
    # the nearest value may lie past a limit: one turn back is then within (the range >= 2 pi)
    moved = torch.where(moved > high, moved - turn, moved)
    moved = torch.where(moved < low, moved + turn, moved)
    inside = (moved >= low) & (moved <= high)
    return torch.where(full_turn & inside, moved, q)
