"""MotionGen under a :class:`~curobo_lite.wrap.PoseCostMetric` (cuRobo's partial and constrained
poses): :class:`MetricStages` is mixed into :class:`~curobo_lite.wrap.MotionGen`.

For one ``plan_*`` call the metric is put on the IK's and the trajectory optimizer's rollouts
(:func:`~curobo_lite.wrap.base.pose_metric.applied_pose_metric`) and taken off afterwards.
Then:

- the IK drives and judges only the goal's weighted axes (goal frame), so a free axis ends
  where the motion leaves it;
- a metric that constrains the path (a hold, an approach waypoint) turns the roadmap off for
  the call: its segments are straight in joint space and know nothing of held axes, while the
  trajectory optimizer carries the hold as a running cost and its result check measures the
  held axes at every interpolated sample (``hold_error``, within the position and rotation
  thresholds);
- a whole-motion hold whose start is off the goal's held axes (more than 0.05 rad / 5 mm, as
  cuRobo checks) cannot be held: ``INVALID_PARTIAL_POSE_COST_METRIC``, before any IK.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from curobo_lite.rollout.cost.pose_metric import (
    ActiveMetric,
    PoseCostMetric,
    judged_pose_errors,
    masked_pose_errors,
)
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.base.pose_metric import (
    HOLD_START_TOLERANCE,
    active_metric,
    applied_pose_metric,
    check_pose_metric,
    start_off_constraint,
)
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.ik.solver import IKSolver
from curobo_lite.wrap.motion.config import MotionGenStatus
from curobo_lite.wrap.motion.roadmap import RoadmapPlanner
from curobo_lite.wrap.trajopt.solver import TrajOptSolver


class MetricStages:
    """The pose-cost-metric parts of :class:`~curobo_lite.wrap.MotionGen` (which sets the
    attributes below)."""

    ik_solver: IKSolver
    trajopt: TrajOptSolver
    checker: RobotWorld
    roadmap: RoadmapPlanner | None
    tensor_args: TensorDeviceType
    #: the metric of the call in progress (``None``: the full pose)
    _pose_metric: ActiveMetric | None = None

    @contextmanager
    def _metric_applied(self, metric: PoseCostMetric | None) -> Iterator[None]:
        """Within the block every stage follows ``metric`` (checked first: a bad one raises
        before anything changes); ``None`` changes nothing."""
        metric = check_pose_metric(metric)
        if metric is None:
            yield
            return
        rollouts = [self.ik_solver.rollout, self.trajopt.rollout, self.trajopt.ik_rollout]
        previous = self._pose_metric
        with applied_pose_metric(rollouts, metric):
            self._pose_metric = active_metric(metric, self.tensor_args)
            try:
                yield
            finally:
                self._pose_metric = previous

    @property
    def _roadmap_on(self) -> bool:
        """Whether this call may use the roadmap (not under a metric that constrains the path)."""
        metric = self._pose_metric
        return self.roadmap is not None and (metric is None or not metric.constrains_path)

    def _approach_distance(self, default: float) -> float:
        """How far behind the goal the approach seeds start: the metric's waypoint offset
        when it backs off along the hand's z axis only, else ``default``."""
        metric = self._pose_metric
        if metric is None or metric.offset is None:
            return default
        offset = metric.offset[3:]
        if bool((offset[:2] != 0).any()) or float(offset[2]) <= 0.0:
            return default
        return float(offset[2])

    def _metric_pose_errors(
        self, q: torch.Tensor, goal: Pose
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``[n]`` metres and radians from the end effector at ``q [n, D]`` to ``goal`` along
        the metric's judged axes; ``None`` without a metric."""
        metric = self._pose_metric
        if metric is None:
            return None
        state = self.checker.kinematics.forward(q, spheres=False)
        return judged_pose_errors(
            metric, state.ee_position, state.ee_quaternion, goal.position, goal.quaternion
        )

    def _metric_start_status(
        self, start: JointState, goal: Pose, status: list[MotionGenStatus | None]
    ) -> list[MotionGenStatus | None]:
        """``status`` with ``INVALID_PARTIAL_POSE_COST_METRIC`` for the valid starts that a
        whole-motion hold cannot hold (:func:`start_off_constraint`)."""
        metric = self._pose_metric
        if metric is None or metric.hold is None or metric.fraction >= 0.0:
            return status
        state = self.checker.kinematics.forward(start.position, spheres=False)
        off = start_off_constraint(self._pose_metric, state.ee_position, state.ee_quaternion, goal)
        if off is None:
            return status
        return [
            MotionGenStatus.INVALID_PARTIAL_POSE_COST_METRIC if s is None and bool(off[k]) else s
            for k, s in enumerate(status)
        ]

    def _metric_offenders(self, start: JointState, s: int, goal: Pose) -> list[Offender]:
        """Why start ``s`` is off the held axes of ``goal`` (one offender per kind of axis)."""
        metric = self._pose_metric
        mask = metric.hold_mask
        state = self.checker.kinematics.forward(start.position[s : s + 1], spheres=False)
        link = self.checker.robot_config.ee_link
        found = []
        for kind, axes, limit, unit in (
            ("rotation", slice(0, 3), HOLD_START_TOLERANCE[0], "rad"),
            ("position", slice(3, 6), HOLD_START_TOLERANCE[1], "m"),
        ):
            part = torch.zeros_like(mask)
            part[axes] = mask[axes]
            if not bool(part.any()):
                continue
            metres, radians = masked_pose_errors(
                state.ee_position,
                state.ee_quaternion,
                goal.position[s : s + 1],
                goal.quaternion[s : s + 1],
                part,
                metric.project,
            )
            value = float(radians[0] if kind == "rotation" else metres[0])
            if value > limit:
                message = (
                    f"{link} starts {value:.4g} {unit} off the goal's held {kind} axes "
                    f"(a whole-motion hold needs at most {limit:g} {unit})"
                )
                found.append(Offender("pose", link, kind, value - limit, message, value, limit))
        return found
