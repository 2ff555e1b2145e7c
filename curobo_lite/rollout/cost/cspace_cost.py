"""Joint-space (c-space) costs: distance to a goal configuration and to the retract pose."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from curobo_lite.rollout.cost.base import (
    CostBase,
    CostConfig,
    as_bool,
    as_scalar,
    as_vector,
    check_dof,
    check_tensor,
    select_goal,
    step_schedule,
    trajectory_position,
)
from curobo_lite.types import JointState


def _weighted_sq_distance(
    position: torch.Tensor, target: torch.Tensor, joint_weights: torch.Tensor | None
) -> torch.Tensor:
    """``sum_d w_d (position - target)²`` over the last dim (``w = 1`` when ``None``)."""
    sq = (position - target).square()
    if joint_weights is not None:
        sq = sq * joint_weights
    return sq.sum(-1)


@dataclass
class CSpaceGoalCostConfig(CostConfig):
    """Options of :class:`CSpaceGoalCost` (YAML section ``cspace_cost``).

    Attributes:
        terminal_weight: weight at the last step ``h = H-1``.
        run_weight: weight at the running steps ``h < H-1`` (default zero).
        run_weight_ramp: scale the running weight by ``h / (H-1)``.
        cspace_weights: optional per-joint weights ``[D]`` (``>= 0``); ``None`` means all ones.
    """

    section: ClassVar[str] = "cspace_cost"

    terminal_weight: float = 1.0
    run_weight: float = 0.0
    run_weight_ramp: bool = False
    cspace_weights: Any = None

    def _validate(self) -> None:
        s = self.section
        self.terminal_weight = as_scalar(s, "terminal_weight", self.terminal_weight)
        self.run_weight = as_scalar(s, "run_weight", self.run_weight)
        self.run_weight_ramp = as_bool(s, "run_weight_ramp", self.run_weight_ramp)
        self.cspace_weights = self._joint_weights("cspace_weights")


class CSpaceGoalCost(CostBase[CSpaceGoalCostConfig]):
    """Weighted squared joint-space distance to a goal configuration ``[B, H]``.

    ``cost[b, h] = weight * w[h] * sum_d c_d (q[b, h, d] - g[b, d])²`` with ``w[h] = run_weight``
    (optionally ramped) for ``h < H-1`` and ``terminal_weight`` at ``h = H-1``.
    """

    config_cls = CSpaceGoalCostConfig
    weight_fields = ("weight", "terminal_weight", "run_weight", "cspace_weights")

    def _setup(self) -> None:
        super()._setup()
        c = self.config
        self._running = c.run_weight != 0 and c.weight != 0

    def _schedule(self, horizon: int) -> torch.Tensor:
        schedule = self._cache.get(horizon)
        if schedule is None:
            c = self.config
            run = self.tensor_args.to_device([c.run_weight])
            terminal = self.tensor_args.to_device([c.terminal_weight])
            schedule = step_schedule(run, terminal, horizon, c.run_weight_ramp)[0] * c.weight
            self._cache[horizon] = schedule
        return schedule

    def forward(
        self,
        state: JointState | torch.Tensor,
        goal: JointState | torch.Tensor,
        goal_idx: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Per-step c-space goal cost.

        Args:
            state: trajectory, a ``JointState`` or joint positions, ``[B, H, D]``.
            goal: goal configurations ``[G, D]`` (a ``JointState`` or a tensor; ``[D]`` is read
                as ``G = 1``).
            goal_idx: optional ``[B]`` integer index of each trajectory's goal.

        Returns:
            ``[B, H]`` cost.
        """
        name = type(self).__name__
        position = trajectory_position(name, state, self.tensor_args)
        goal_position = goal.position if isinstance(goal, JointState) else goal
        if isinstance(goal_position, torch.Tensor) and goal_position.ndim == 1:
            goal_position = goal_position.unsqueeze(0)
        batch, horizon, dof = position.shape
        check_tensor(name, "goal", goal_position, 2, self.tensor_args, last_dim=dof)
        check_dof(name, "cspace_weights", dof, self.config.cspace_weights)
        target = select_goal(name, "goal", goal_position, goal_idx, batch)[:, None, :]
        if not self.enabled:
            return self._disabled(batch, horizon)
        schedule = self._schedule(horizon)
        if not self._running:
            distance = _weighted_sq_distance(position[:, -1:], target, self.config.cspace_weights)
            return torch.nn.functional.pad(distance * schedule[-1], (horizon - 1, 0))
        return schedule * _weighted_sq_distance(position, target, self.config.cspace_weights)


@dataclass
class NullSpaceCostConfig(CostConfig):
    """Options of :class:`NullSpaceCost` (YAML section ``null_space_cost``).

    Attributes:
        retract_config: ``[D]`` configuration to stay near (default: the robot's).
        cspace_weights: optional per-joint weights ``[D]`` (``>= 0``); ``None`` means all ones.
    """

    section: ClassVar[str] = "null_space_cost"

    retract_config: Any = None
    cspace_weights: Any = None

    def _validate(self) -> None:
        self._require(
            "retract_config",
            "[D] joint positions",
            "give it in the section or through the robot's retract configuration",
        )
        self.retract_config = as_vector(
            self.section, "retract_config", self.retract_config, self.tensor_args
        )
        self.cspace_weights = self._joint_weights("cspace_weights", self.retract_config.numel())


class NullSpaceCost(CostBase[NullSpaceCostConfig]):
    """Running cost to stay near the retract configuration ``[B, H]``.

    ``cost[b, h] = weight * sum_d c_d (q[b, h, d] - retract[d])²`` at every step.
    """

    config_cls = NullSpaceCostConfig
    weight_fields = ("weight", "cspace_weights")

    def forward(self, state: JointState | torch.Tensor) -> torch.Tensor:
        """Per-step cost of a ``JointState`` or joint positions ``[B, H, D]`` -> ``[B, H]``."""
        name = type(self).__name__
        position = trajectory_position(name, state, self.tensor_args)
        batch, horizon, dof = position.shape
        check_dof(name, "retract_config", dof, self.config.retract_config)
        if not self.enabled:
            return self._disabled(batch, horizon)
        c = self.config
        return c.weight * _weighted_sq_distance(position, c.retract_config, c.cspace_weights)
