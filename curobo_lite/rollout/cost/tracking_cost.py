"""Tracking cost: stay on a time-indexed joint reference (a global plan followed by MPC)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from curobo_lite.rollout.cost.base import (
    CostBase,
    CostConfig,
    as_scalar,
    check_dof,
    check_tensor,
    step_schedule,
    trajectory_state,
)
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError


@dataclass
class TrackingCostConfig(CostConfig):
    """Options of :class:`TrackingCost` (YAML section ``tracking_cost``).

    Attributes:
        position_weight: weight of the squared joint-position error to the reference.
        velocity_weight: weight of the squared joint-velocity error to the reference (keeps
            the plan's timing; 0: positions only).
        terminal_weight: factor on both at the last step ``h = H-1`` (the running steps get 1).
        run_weight_decay: scale step ``h``'s weight by ``1 - run_weight_decay * h / (H-1)``
            (``0 <= decay <= 1``): the far, coarse steps of the horizon count less.
        cspace_weights: optional per-joint weights ``[D]`` (``>= 0``); ``None`` means all ones.
    """

    section: ClassVar[str] = "tracking_cost"

    position_weight: float = 1.0
    velocity_weight: float = 0.0
    terminal_weight: float = 1.0
    run_weight_decay: float = 0.0
    cspace_weights: Any = None

    def _validate(self) -> None:
        s = self.section
        self.position_weight = as_scalar(s, "position_weight", self.position_weight)
        self.velocity_weight = as_scalar(s, "velocity_weight", self.velocity_weight)
        self.terminal_weight = as_scalar(s, "terminal_weight", self.terminal_weight)
        self.run_weight_decay = as_scalar(s, "run_weight_decay", self.run_weight_decay)
        if self.run_weight_decay > 1.0:
            raise InputValueError(
                f"{s}.run_weight_decay: expected a number in [0, 1], received "
                f"{self.run_weight_decay}"
            )
        self.cspace_weights = self._joint_weights("cspace_weights")


class TrackingCost(CostBase[TrackingCostConfig]):
    """Weighted squared distance of a trajectory to a reference trajectory ``[B, H]``.

    ``cost[b, h] = weight * w[h] * sum_d c_d (p_pos (q[b,h,d] - r[h,d])² + p_vel (qd[b,h,d] -
    rd[h,d])²)`` with ``w[h] = 1 - decay * h / (H-1)`` for ``h < H-1`` and ``terminal_weight``
    at ``h = H-1``. The reference holds one row per step of the horizon: the plan sampled at
    the times of the rollout's steps (see :meth:`MpcSolver.follow
    <curobo_lite.wrap.MpcSolver.follow>`).
    """

    config_cls = TrackingCostConfig
    weight_fields = (
        "weight",
        "position_weight",
        "velocity_weight",
        "terminal_weight",
        "run_weight_decay",
        "cspace_weights",
    )

    def _schedule(self, horizon: int) -> torch.Tensor:
        schedule = self._cache.get(horizon)
        if schedule is None:
            c = self.config
            run = self.tensor_args.to_device([1.0])
            terminal = self.tensor_args.to_device([c.terminal_weight])
            schedule = step_schedule(run, terminal, horizon, False)[0] * c.weight
            if horizon > 1:
                steps = torch.arange(horizon, **self.tensor_args.as_kwargs())
                decay = 1.0 - c.run_weight_decay * steps / (horizon - 1)
                decay[-1] = 1.0
                schedule = schedule * decay
            self._cache[horizon] = schedule
        return schedule

    def forward(self, state: JointState, reference: JointState) -> torch.Tensor:
        """Per-step tracking cost.

        Args:
            state: trajectory ``[B, H, D]`` (position, and velocity when ``velocity_weight``
                is not 0).
            reference: the reference ``[1, H, D]`` (shared) or ``[B, H, D]``; its velocity is
                used when ``velocity_weight`` is not 0.

        Returns:
            ``[B, H]`` cost.
        """
        name = type(self).__name__
        state = trajectory_state(name, state, self.tensor_args)
        batch, horizon, dof = state.position.shape
        if not isinstance(reference, JointState):
            reference = JointState.from_position(reference)
        ref_position = check_tensor(
            name, "reference.position", reference.position, 3, self.tensor_args, last_dim=dof
        )
        if ref_position.shape[0] not in (1, batch) or ref_position.shape[1] != horizon:
            raise InputValueError(
                f"{name}: reference.position expected shape [1 or {batch}, {horizon}, {dof}], "
                f"received {tuple(ref_position.shape)}"
            )
        check_dof(name, "cspace_weights", dof, self.config.cspace_weights)
        if not self.enabled:
            return self._disabled(batch, horizon)
        c = self.config
        error = (state.position - ref_position).square() * c.position_weight
        if c.velocity_weight != 0.0 and reference.velocity is not None:
            error = error + (state.velocity - reference.velocity).square() * c.velocity_weight
        if c.cspace_weights is not None:
            error = error * c.cspace_weights
        return self._schedule(horizon) * error.sum(-1)
