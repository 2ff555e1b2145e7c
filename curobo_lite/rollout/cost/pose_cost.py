"""End-effector pose cost: position and orientation error to a (batched) goal pose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from curobo_lite.kernels.pose_cost_kernels import pose_cost
from curobo_lite.rollout.cost.base import (
    CostBase,
    CostConfig,
    as_bool,
    as_choice,
    as_vector,
    check_pose,
    check_tensor,
    select_goal,
    step_schedule,
)
from curobo_lite.rollout.cost.pose_metric import (
    ActiveMetric,
    PoseCostMetric,
    goal_frame_errors,
    judged_errors,
    weighted_terms,
)
from curobo_lite.types import Pose, quat_angle_error
from curobo_lite.types.errors import InputTypeError, InputValueError

POSITION_NORMS = ("L2", "SQUARED_L2")
ROTATION_ERRORS = ("GEODESIC", "ONE_MINUS_DOT")

# Smooths the geodesic angle's square root so that its gradient is finite (zero) at zero error;
# it shifts the angle at zero error by 2*sqrt(eps) = 2e-6 rad.
_GEODESIC_EPS = 1e-12


@dataclass
class PoseCostConfig(CostConfig):
    """Options of :class:`PoseCost` (YAML section ``pose_cost``).

    Attributes:
        terminal_weight: ``[pos, rot]`` weights at the last step ``h = H-1``.
        run_weight: ``[pos, rot]`` weights at the running steps ``h < H-1`` (default zero).
        run_weight_ramp: scale the running weights by ``h / (H-1)``, a linear ramp from 0 at the
            start state to (almost) the full running weight at ``h = H-2``.
        position_norm: ``"L2"``: Euclidean distance (metres, constant gradient magnitude, exact
            convergence); ``"SQUARED_L2"``: squared distance (m², smooth at zero).
        rotation_error: ``"GEODESIC"``: the rotation angle between the two orientations in
            radians, ``2 atan2(|vec(q1* q2)|, |<q1, q2>|)`` (the atan2 form stays accurate and
            has a finite gradient near zero, unlike ``acos``); ``"ONE_MINUS_DOT"``:
            ``1 - |<q1, q2>|`` = ``1 - cos(angle/2)``, about ``angle² / 8`` near zero (smooth,
            like a squared error). Both are invariant to the sign of either quaternion.
    """

    section: ClassVar[str] = "pose_cost"

    terminal_weight: Any = (1.0, 1.0)
    run_weight: Any = (0.0, 0.0)
    run_weight_ramp: bool = False
    position_norm: str = "L2"
    rotation_error: str = "GEODESIC"

    def _validate(self) -> None:
        s, ta = self.section, self.tensor_args
        self.terminal_weight = as_vector(s, "terminal_weight", self.terminal_weight, ta, 2, True)
        self.run_weight = as_vector(s, "run_weight", self.run_weight, ta, 2, True)
        self.run_weight_ramp = as_bool(s, "run_weight_ramp", self.run_weight_ramp)
        self.position_norm = as_choice(s, "position_norm", self.position_norm, POSITION_NORMS)
        self.rotation_error = as_choice(s, "rotation_error", self.rotation_error, ROTATION_ERRORS)


class PoseCost(CostBase[PoseCostConfig]):
    """End-effector pose cost ``[B, H]``.

    ``cost[b, h] = weight * (w_pos[h] * e_pos[b, h] + w_rot[h] * e_rot[b, h])`` where
    ``w[h] = run_weight`` (optionally ramped) for ``h < H-1`` and ``terminal_weight`` at
    ``h = H-1``; ``e_pos`` and ``e_rot`` follow ``position_norm`` and ``rotation_error``.
    Quaternions are ``wxyz`` and assumed unit length.
    """

    config_cls = PoseCostConfig
    weight_fields = ("weight", "terminal_weight", "run_weight")

    def _setup(self) -> None:
        super()._setup()
        c = self.config
        weights = torch.stack((c.terminal_weight, c.run_weight)) * c.weight
        self._uses = [bool((weights[:, i] != 0).any()) for i in range(2)]
        self._running = bool((c.run_weight != 0).any()) and c.weight != 0
        # kept over a weight update (which runs _setup again)
        self.metric: ActiveMetric | None = getattr(self, "metric", None)
        # counts metric changes: part of the rollout's graph key (a captured graph of another
        # metric must not replay)
        self.metric_revision = getattr(self, "metric_revision", 0)

    def update_metric(self, metric: PoseCostMetric | None) -> None:
        """Reach and hold the goal as ``metric`` says (:class:`PoseCostMetric`); ``None``: the
        plain pose cost. Replaces any earlier metric (one metric describes one solve)."""
        if metric is not None and not isinstance(metric, PoseCostMetric):
            raise InputTypeError(
                f"pose_cost_metric: expected a PoseCostMetric or None, received "
                f"{type(metric).__name__}"
            )
        active = None if metric is None else metric.resolve(self.tensor_args)
        if active is not None and active.full_reach and not active.constrains_path:
            if active.project:  # nothing to change: keep the plain (faster) path
                active = None
        if active is None and self.metric is None:
            return
        self.metric = active
        self.metric_revision += 1
        self._cache = {k: v for k, v in self._cache.items() if not isinstance(k, tuple)}

    def _metric_schedule(self, horizon: int) -> tuple[torch.Tensor, ...]:
        """Per-step tensors of the metric's cost: ``(weights [2, H], axis weights [H, 6],
        offsets [H, 6], hold weights [2, H])`` (see :meth:`_metric_forward`)."""
        key = (horizon, self.metric_revision)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        c, metric = self.config, self.metric
        weights = self._schedule(horizon).clone()
        axes = metric.reach.expand(horizon, 6).clone()
        offsets = torch.zeros_like(axes)
        hold = torch.zeros_like(weights)
        terminal = c.terminal_weight * c.weight
        first = metric.first_step(horizon)
        if horizon > 1 and metric.hold is not None:
            hold[:, first : horizon - 1] = terminal[:, None]
        if horizon > 1 and metric.offset is not None and first < horizon - 1:
            weights[:, first] = terminal
            offsets[first] = metric.offset
        cached = (weights, axes, offsets, hold)
        self._cache[key] = cached
        return cached

    def _metric_forward(
        self,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        goal_position: torch.Tensor,
        goal_quaternion: torch.Tensor,
    ) -> torch.Tensor:
        """``[B, H]`` cost under the metric: at each step ``weights[:, h]`` times the errors
        weighted by ``axes[h]`` (the reach weights) and shifted by ``offsets[h]`` (the
        waypoint), plus ``hold[:, h]`` times the errors along the held axes (reach times hold
        weights), all in the goal frame."""
        metric = self.metric
        weights, axes, offsets, hold = self._metric_schedule(ee_position.shape[1])
        e_p, v = goal_frame_errors(
            ee_position, ee_quaternion, goal_position, goal_quaternion, metric.project
        )
        c = self.config
        norms = (c.position_norm, c.rotation_error, _GEODESIC_EPS)
        position, rotation = weighted_terms(e_p + offsets[:, 3:], v + offsets[:, :3], axes, *norms)
        cost = weights[0] * position + weights[1] * rotation
        if metric.hold is not None:
            position, rotation = weighted_terms(e_p, v, metric.reach * metric.hold, *norms)
            cost = cost + hold[0] * position + hold[1] * rotation
        return cost

    def _schedule(self, horizon: int) -> torch.Tensor:
        """``[2, H]`` per-step weights (position row, rotation row), including ``weight``."""
        schedule = self._cache.get(horizon)
        if schedule is None:
            c = self.config
            schedule = step_schedule(c.run_weight, c.terminal_weight, horizon, c.run_weight_ramp)
            schedule = schedule * c.weight
            self._cache[horizon] = schedule
        return schedule

    def _check(
        self, ee_position: Any, ee_quaternion: Any, goal: Any, goal_idx: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        name = type(self).__name__
        check_tensor(name, "ee_position", ee_position, 3, self.tensor_args, last_dim=3)
        check_tensor(name, "ee_quaternion", ee_quaternion, 3, self.tensor_args, last_dim=4)
        if ee_quaternion.shape[:2] != ee_position.shape[:2]:
            raise InputValueError(
                f"{name}: ee_quaternion [B, H, 4] and ee_position [B, H, 3] disagree on [B, H]: "
                f"{tuple(ee_quaternion.shape)} vs {tuple(ee_position.shape)}"
            )
        check_pose(name, goal, self.tensor_args)
        batch = ee_position.shape[0]
        goal_position = select_goal(name, "goal", goal.position, goal_idx, batch)
        goal_quaternion = select_goal(name, "goal", goal.quaternion, goal_idx, batch)
        return goal_position[:, None, :], goal_quaternion[:, None, :]

    def _position_error(self, position: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        diff = position - goal
        if self.config.position_norm == "L2":
            return torch.linalg.vector_norm(diff, dim=-1)
        return diff.square().sum(-1)

    def _rotation_error(self, quaternion: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        if self.config.rotation_error == "GEODESIC":
            return quat_angle_error(quaternion, goal, eps=_GEODESIC_EPS)
        # normalised: FK quaternions are unit only to rounding, and an unnormalised dot product
        # lets the cost go (slightly) negative, a floor on the reachable rotation precision
        dot = (quaternion * goal).sum(-1).abs()
        norms = (quaternion.square().sum(-1) * goal.square().sum(-1)).rsqrt()
        return 1.0 - dot * norms

    def _metric_errors(
        self,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        goal_position: torch.Tensor,
        goal_quaternion: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`errors` under the metric: the last step's along the goal's judged axes and,
        under a hold, the largest held-axis error of the steps it covers (so that the
        solvers' stop and success checks wait for the hold too)."""
        metric = self.metric
        e_p, v = goal_frame_errors(
            ee_position[:, -1],
            ee_quaternion[:, -1],
            goal_position[:, 0],
            goal_quaternion[:, 0],
            metric.project,
        )
        position_error, rotation_error = judged_errors(e_p, v, metric.reach_mask)
        first = metric.first_step(ee_position.shape[1])
        if metric.hold is None or first >= ee_position.shape[1] - 1:
            return position_error, rotation_error
        e_p, v = goal_frame_errors(
            ee_position[:, first:-1],
            ee_quaternion[:, first:-1],
            goal_position,
            goal_quaternion,
            metric.project,
        )
        held_position, held_rotation = judged_errors(e_p, v, metric.hold_mask)
        position_error = torch.maximum(position_error, held_position.amax(dim=1))
        rotation_error = torch.maximum(rotation_error, held_rotation.amax(dim=1))
        return position_error, rotation_error

    def forward(
        self,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        goal: Pose,
        goal_idx: torch.Tensor | None = None,
        fused: bool = False,
    ) -> torch.Tensor:
        """Per-step pose cost.

        Args:
            ee_position: ``[B, H, 3]`` end-effector positions.
            ee_quaternion: ``[B, H, 4]`` end-effector orientations (``wxyz``).
            goal: goal poses of batch ``G``.
            goal_idx: optional ``[B]`` integer index of each trajectory's goal; without it
                ``G`` must be 1 or ``B``.
            fused: without a gradient to take and without a metric, compute the cost in one
                Warp kernel (:mod:`curobo_lite.kernels.pose_cost_kernels`: the same formulas,
                equal to rounding; an MPPI rollout's pose cost in a fraction of the time).

        Returns:
            ``[B, H]`` cost.
        """
        goal_position, goal_quaternion = self._check(ee_position, ee_quaternion, goal, goal_idx)
        batch, horizon = ee_position.shape[:2]
        if not self.enabled:
            return self._disabled(batch, horizon)
        if self.metric is not None:
            return self._metric_forward(ee_position, ee_quaternion, goal_position, goal_quaternion)
        schedule = self._schedule(horizon)
        if fused and not (torch.is_grad_enabled() and ee_position.requires_grad):
            return self._fused_forward(
                ee_position, ee_quaternion, goal_position, goal_quaternion, schedule
            )
        if not self._running:
            # Only the terminal step carries weight: skip the running steps' errors entirely.
            ee_position, ee_quaternion = ee_position[:, -1:], ee_quaternion[:, -1:]
            schedule = schedule[:, -1:]
        cost = None
        if self._uses[0]:
            cost = schedule[0] * self._position_error(ee_position, goal_position)
        if self._uses[1]:
            rotation = schedule[1] * self._rotation_error(ee_quaternion, goal_quaternion)
            cost = rotation if cost is None else cost + rotation
        if cost is None:
            cost = ee_position.new_zeros(ee_position.shape[:2])
        if not self._running:
            cost = F.pad(cost, (horizon - 1, 0))
        return cost

    def _fused_forward(
        self,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        goal_position: torch.Tensor,
        goal_quaternion: torch.Tensor,
        schedule: torch.Tensor,
    ) -> torch.Tensor:
        """:meth:`forward` without a metric or a gradient, in one kernel (``goal_*``: ``[B | 1,
        1, k]`` as :meth:`_check` gives them; ``schedule``: :meth:`_schedule`'s ``[2, H]``)."""
        _, first_step, position_norm, rotation_error, eps = self.kernel_constants(
            ee_position.shape[1]
        )
        return pose_cost(
            ee_position,
            ee_quaternion,
            goal_position[:, 0],
            goal_quaternion[:, 0],
            schedule,
            first_step,
            position_norm,
            rotation_error,
            eps,
        )

    def kernel_constants(
        self, horizon: int
    ) -> tuple[torch.Tensor, int, str | None, str | None, torch.Tensor]:
        """What :func:`~curobo_lite.kernels.pose_cost_kernels.pose_cost` takes besides the
        poses, for ``horizon`` steps without a metric: ``(schedule [2, H], first_step,
        position_norm, rotation_error, eps [1])`` (a term of zero weight is ``None``)."""
        c = self.config
        eps = self._cache.get("eps")
        if eps is None:
            eps = self._cache["eps"] = self._schedule(horizon).new_full((1,), _GEODESIC_EPS)
        return (
            self._schedule(horizon),
            0 if self._running else horizon - 1,
            c.position_norm if self._uses[0] else None,
            c.rotation_error if self._uses[1] else None,
            eps,
        )

    def errors(
        self,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        goal: Pose,
        goal_idx: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Terminal-step errors for convergence metrics (no gradient).

        Returns:
            ``(position_error [B]`` Euclidean distance in metres, ``rotation_error [B]``
            geodesic angle in radians, in ``[0, pi]``), whatever the cost's norms; under a
            metric, along the goal's weighted axes only (free axes are not judged, see
            :func:`~curobo_lite.rollout.cost.pose_metric.judged_errors`), and under a hold
            the largest of those and the held axes' errors over the steps it covers.
        """
        goal_position, goal_quaternion = self._check(ee_position, ee_quaternion, goal, goal_idx)
        if self.metric is not None:
            with torch.no_grad():
                return self._metric_errors(
                    ee_position, ee_quaternion, goal_position, goal_quaternion
                )
        with torch.no_grad():
            position_error = torch.linalg.vector_norm(
                ee_position[:, -1] - goal_position[:, 0], dim=-1
            )
            rotation_error = quat_angle_error(ee_quaternion[:, -1], goal_quaternion[:, 0], eps=0.0)
        return position_error, rotation_error
