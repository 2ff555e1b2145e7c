"""Smoothness cost: squared joint acceleration and jerk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from curobo_lite.rollout.cost.base import (
    CostBase,
    CostConfig,
    as_scalar,
    check_dof,
    trajectory_state,
)
from curobo_lite.types import JointState


@dataclass
class SmoothnessCostConfig(CostConfig):
    """Options of :class:`SmoothnessCost` (YAML section ``smooth_cost``).

    Attributes:
        acceleration_weight: weight of the squared acceleration.
        jerk_weight: weight of the squared jerk (default zero; jerk grows like ``1/dt³``, so
            useful weights are usually orders of magnitude below the acceleration weight).
        joint_weights: optional per-joint weights ``[D]`` (``>= 0``); ``None`` means all ones.
    """

    section: ClassVar[str] = "smooth_cost"

    acceleration_weight: float = 1.0
    jerk_weight: float = 0.0
    joint_weights: Any = None

    def _validate(self) -> None:
        s = self.section
        self.acceleration_weight = as_scalar(s, "acceleration_weight", self.acceleration_weight)
        self.jerk_weight = as_scalar(s, "jerk_weight", self.jerk_weight)
        self.joint_weights = self._joint_weights("joint_weights")


class SmoothnessCost(CostBase[SmoothnessCostConfig]):
    """``cost[b, h] = weight * sum_d c_d (w_acc a[b,h,d]² + w_jerk j[b,h,d]²)`` at every step."""

    config_cls = SmoothnessCostConfig
    weight_fields = ("weight", "acceleration_weight", "jerk_weight", "joint_weights")

    def forward(self, state: JointState) -> torch.Tensor:
        """Per-step cost of a ``JointState`` with ``[B, H, D]`` fields -> ``[B, H]``."""
        name = type(self).__name__
        state = trajectory_state(name, state, self.tensor_args)
        check_dof(name, "joint_weights", state.dof, self.config.joint_weights)
        batch, horizon = state.position.shape[:2]
        c = self.config
        acc_w, jerk_w = c.acceleration_weight * c.weight, c.jerk_weight * c.weight
        if not self.enabled or (acc_w == 0 and jerk_w == 0):
            return self._disabled(batch, horizon)
        per_joint = None
        if acc_w != 0:
            per_joint = acc_w * state.acceleration.square()
        if jerk_w != 0:
            jerk = jerk_w * state.jerk.square()
            per_joint = jerk if per_joint is None else per_joint + jerk
        if c.joint_weights is not None:
            per_joint = per_joint * c.joint_weights
        return per_joint.sum(-1)
