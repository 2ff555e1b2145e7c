"""Goal configurations that are clear only within the pose tolerance.

A grasp goal may put the hand so close to the object (or to a shelf beside it) that every
configuration reaching the exact pose touches on the meshes, while a pose a few millimetres
away, still within the IK's ``position_threshold``, is clear: MotionBenchMaker's own goal
configurations sit up to 4.6 mm off their goal poses for that reason. :func:`tolerance_goals`
finds such configurations: it moves the hand's target away from the contact along the
gradient of the mesh clearance (central differences of the exact signed distance over
target offsets of ``delta`` m per base axis, each re-solved by damped least squares), by the
penetration depth plus a margin (a Newton step on the clearance), never farther than a
``fraction`` of ``position_threshold`` from the goal, and keeps the configurations the meshes
find clear. The orientation target stays the goal's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from curobo_lite.robot import Kinematics
from curobo_lite.types import Pose
from curobo_lite.wrap.ik.dls import dls_steps

#: largest share of ``position_threshold`` the hand's target may move off the goal: the
#: damped least-squares residual and the trajectory's own small error need the rest
OFFSET_FRACTION = 0.8
#: metres of clearance aimed at beyond the required threshold (the clearance is not linear
#: in the offset: a step aimed at the threshold itself ends a few micrometres short)
CLEARANCE_MARGIN = 5e-4
#: metres of target offset of the central differences
GRADIENT_STEP = 1e-3
#: goal configurations tried (nearest the start first), Newton rounds, DLS steps per solve
BASE_GOALS = 4
ROUNDS = 3
DLS_STEPS = 4


@dataclass
class ToleranceGoals:
    """Result of :func:`tolerance_goals`.

    Attributes:
        configs: ``[m, D]`` configurations whose meshes are clear (``m`` may be 0).
        offsets: ``[m]`` metres between each one's hand target and the goal position.
    """

    configs: torch.Tensor
    offsets: torch.Tensor


@torch.no_grad()
def tolerance_goals(
    kinematics: Kinematics,
    clearance: Callable[[torch.Tensor], torch.Tensor],
    goals: torch.Tensor,
    goal: Pose,
    threshold: float,
    position_threshold: float,
    rotation_weight: float,
    fraction: float = OFFSET_FRACTION,
) -> ToleranceGoals:
    """Configurations near the first :data:`BASE_GOALS` of ``goals [G, D]`` (which reach
    ``goal``, batch 1, but whose meshes are closer than ``threshold`` m to an obstacle) with
    the hand's target moved off the goal position, at most ``fraction * position_threshold``
    m, until ``clearance(q [B, D]) -> [B]`` (the exact signed distance, m) reaches
    ``threshold``. ``rotation_weight``: the IK's weight (m per rad) of the rotation error in
    the damped least-squares steps. The caller checks the pose errors and the other
    validity conditions of the returned configurations."""
    base = goals[:BASE_GOALS]
    B, D = base.shape
    position = goal.position.expand(B, 3)
    quaternion = goal.quaternion.expand(B, 4)
    reach = fraction * position_threshold
    axes = torch.eye(3, dtype=base.dtype, device=base.device)
    axes = torch.cat((axes, -axes))  # [6, 3]: +x +y +z -x -y -z
    offset = torch.zeros(B, 3, dtype=base.dtype, device=base.device)
    q = base
    kept_q, kept_offset = [], []
    now = clearance(q)
    for _ in range(ROUNDS):
        # the clearance's gradient over the target position (m per m), each probe re-solved
        probes = (position + offset)[:, None] + GRADIENT_STEP * axes[None]
        q_probe = dls_steps(
            kinematics,
            q[:, None].expand(B, 6, D).reshape(-1, D),
            probes.reshape(-1, 3),
            quaternion.repeat_interleave(6, 0),
            DLS_STEPS,
            rotation_weight=rotation_weight,
        )
        probe = clearance(q_probe).view(B, 6)
        gradient = (probe[:, :3] - probe[:, 3:]) / (2.0 * GRADIENT_STEP)
        need = (threshold + CLEARANCE_MARGIN - now).clamp(min=0.0)
        step = gradient * (need / gradient.square().sum(-1).clamp(min=1e-9))[:, None]
        offset = offset + step
        # stay within the share of the tolerance (the direction kept)
        offset = offset * (reach / offset.norm(dim=-1, keepdim=True).clamp(min=1e-12)).clamp(
            max=1.0
        )
        q = dls_steps(
            kinematics, q, position + offset, quaternion, DLS_STEPS, rotation_weight=rotation_weight
        )
        now = clearance(q)
        clear = now >= threshold
        kept_q.append(q[clear])
        kept_offset.append(offset.norm(dim=-1)[clear])
        if bool(clear.all()):
            break
        q, offset, now = q[~clear], offset[~clear], now[~clear]
        position, quaternion = position[~clear], quaternion[~clear]
        B = q.shape[0]
    return ToleranceGoals(torch.cat(kept_q), torch.cat(kept_offset))
