"""A :class:`~curobo_lite.rollout.cost.PoseCostMetric` for the length of one solve.

Every solver takes ``pose_cost_metric=`` per call: :func:`applied_pose_metric` puts the metric
on the solver's rollouts (checked first, so a bad metric changes nothing) and puts back what
was there before when the call ends, however it ends, so a metric never leaks into the next
call. :func:`start_off_constraint` is cuRobo's check that a whole-motion hold can hold at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from curobo_lite.rollout import ArmReacher
from curobo_lite.rollout.cost.pose_metric import ActiveMetric, PoseCostMetric, masked_pose_errors
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputTypeError

#: cuRobo's tolerances of a start on a whole-motion hold (rad of the held rotation axes,
#: metres of each held position axis); the plans' hold checks use the solver's thresholds
HOLD_START_TOLERANCE = (0.05, 0.005)


def check_pose_metric(metric: Any) -> PoseCostMetric | None:
    """``metric`` if it is a :class:`PoseCostMetric` or ``None``, else an ``InputTypeError``."""
    if metric is not None and not isinstance(metric, PoseCostMetric):
        raise InputTypeError(
            "pose_cost_metric: expected a PoseCostMetric (curobo_lite.wrap.PoseCostMetric) or "
            f"None, received {type(metric).__name__}"
        )
    return metric


@contextmanager
def applied_pose_metric(
    rollouts: Sequence[ArmReacher], metric: PoseCostMetric | None
) -> Iterator[None]:
    """Within the block the rollouts' pose costs follow ``metric``; afterwards they follow
    what they did before. ``None`` changes nothing (a persistent metric, e.g. an MPC's, stays)."""
    metric = check_pose_metric(metric)
    if metric is None:
        yield
        return
    previous = [rollout.pose_cost_metric for rollout in rollouts]
    try:
        for rollout in rollouts:
            rollout.update_pose_cost_metric(metric)
        yield
    finally:
        for rollout, before in zip(rollouts, previous, strict=True):
            rollout.update_pose_cost_metric(before)


def active_metric(
    metric: PoseCostMetric | None, tensor_args: TensorDeviceType
) -> ActiveMetric | None:
    """``metric`` resolved on ``tensor_args`` (``None`` stays ``None``)."""
    return None if metric is None else metric.resolve(tensor_args)


def start_off_constraint(
    metric: ActiveMetric | None,
    start_position: torch.Tensor,
    start_quaternion: torch.Tensor,
    goal: Pose,
) -> torch.Tensor | None:
    """``[S]`` bool: starts (end-effector poses ``[S, 3]``, ``[S, 4]``) that a whole-motion hold
    cannot hold, being off the goal's held axes by more than :data:`HOLD_START_TOLERANCE`
    (cuRobo refuses such a query); ``None`` when the metric holds nothing from the start."""
    if metric is None or metric.hold is None or metric.fraction >= 0.0:
        return None
    mask = metric.hold_mask
    rotation_mask = torch.cat((mask[:3], torch.zeros_like(mask[3:])))
    _, radians = masked_pose_errors(
        start_position,
        start_quaternion,
        goal.position,
        goal.quaternion,
        rotation_mask,
        metric.project,
    )
    off = radians > HOLD_START_TOLERANCE[0]
    for axis in range(3):
        if float(mask[3 + axis]) > 0.0:
            axis_mask = torch.zeros_like(mask)
            axis_mask[3 + axis] = 1.0
            metres, _ = masked_pose_errors(
                start_position,
                start_quaternion,
                goal.position,
                goal.quaternion,
                axis_mask,
                metric.project,
            )
            off |= metres > HOLD_START_TOLERANCE[1]
    return off
