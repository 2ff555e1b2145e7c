"""Stop-at-end cost: the velocity must ramp down to zero over the horizon's last steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from curobo_lite.rollout.cost.base import (
    CostBase,
    CostConfig,
    as_scalar,
    as_vector,
    check_dof,
    parse_joint_limits,
    trajectory_state,
)
from curobo_lite.types import JointState
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputValueError


@dataclass
class StopCostConfig(CostConfig):
    """Options of :class:`StopCost` (YAML section ``stop_cost``).

    Attributes:
        n_steps: length of the stopping window (the last ``n_steps`` steps), ``>= 1``.
        velocity_weight: weight of the squared excess speed over the shrinking limit.
        terminal_velocity_weight: weight of the last step's squared velocity.
        terminal_acceleration_weight: weight of the last step's squared acceleration.
        max_velocity: speed limit at the start of the window, a number or ``[D]`` (rad/s);
            default: ``max(|lower|, |upper|)`` of ``joint_limits.velocity``.
        joint_limits: the robot's limits, used only when ``max_velocity`` is not given.
    """

    section: ClassVar[str] = "stop_cost"

    n_steps: int = 10
    velocity_weight: float = 1.0
    terminal_velocity_weight: float = 1.0
    terminal_acceleration_weight: float = 0.0
    max_velocity: Any = None
    joint_limits: Any = None

    def _validate(self) -> None:
        s, ta = self.section, self.tensor_args
        if isinstance(self.n_steps, bool) or not isinstance(self.n_steps, int) or self.n_steps < 1:
            raise InputValueError(
                f"{s}.n_steps: expected an integer >= 1, received {excerpt(self.n_steps)}"
            )
        self.velocity_weight = as_scalar(s, "velocity_weight", self.velocity_weight)
        self.terminal_velocity_weight = as_scalar(
            s, "terminal_velocity_weight", self.terminal_velocity_weight
        )
        self.terminal_acceleration_weight = as_scalar(
            s, "terminal_acceleration_weight", self.terminal_acceleration_weight
        )
        if self.joint_limits is not None:
            self.joint_limits = parse_joint_limits(s, self.joint_limits, ta)
        if self.max_velocity is None:
            if self.joint_limits is None:
                raise InputValueError(
                    f"{s}.max_velocity: required (a number or [D] rad/s) when no joint_limits "
                    "are given"
                )
            velocity = self.joint_limits["velocity"]
            self.max_velocity = torch.maximum(velocity[0].abs(), velocity[1].abs())
            if not bool(torch.isfinite(self.max_velocity).all()):
                raise InputValueError(
                    f"{s}.max_velocity: joint_limits.velocity is infinite "
                    f"({velocity.tolist()}); give a finite max_velocity"
                )
        elif isinstance(self.max_velocity, (int, float)) and not isinstance(
            self.max_velocity, bool
        ):
            self.max_velocity = as_vector(s, "max_velocity", [self.max_velocity], ta, 1, True)
        else:
            self.max_velocity = as_vector(
                s, "max_velocity", self.max_velocity, ta, nonnegative=True
            )


class StopCost(CostBase[StopCostConfig]):
    """Stop-at-end cost ``[B, H]``.

    Over the last ``n = min(n_steps, H)`` steps the allowed speed shrinks linearly to zero:
    ``v_max[h, d] = max_velocity[d] * (H-1-h) / n_steps`` for ``h >= H-n`` (so 0 at ``h = H-1``),
    and ``cost[b, h] = weight * velocity_weight * sum_d max(|v[b,h,d]| - v_max[h,d], 0)²`` there;
    earlier steps cost nothing (the bound cost polices the velocity limit itself). The last
    step adds ``weight * (terminal_velocity_weight |v_{H-1}|² +
    terminal_acceleration_weight |a_{H-1}|²)``.
    """

    config_cls = StopCostConfig
    weight_fields = (
        "weight",
        "velocity_weight",
        "terminal_velocity_weight",
        "terminal_acceleration_weight",
    )

    def _window_limits(self, horizon: int) -> torch.Tensor:
        """``[n, D]`` (or ``[n, 1]``) allowed speed over the last ``n`` steps."""
        limits = self._cache.get(horizon)
        if limits is None:
            n = min(self.config.n_steps, horizon)
            steps_left = torch.arange(n - 1, -1, -1, **self.tensor_args.as_kwargs())
            limits = (steps_left / self.config.n_steps)[:, None] * self.config.max_velocity
            self._cache[horizon] = limits
        return limits

    def forward(self, state: JointState) -> torch.Tensor:
        """Per-step cost of a ``JointState`` with ``[B, H, D]`` fields -> ``[B, H]``."""
        name = type(self).__name__
        state = trajectory_state(name, state, self.tensor_args)
        if self.config.max_velocity.numel() != 1:
            check_dof(name, "max_velocity", state.dof, self.config.max_velocity)
        batch, horizon = state.position.shape[:2]
        c = self.config
        if not self.enabled or c.weight == 0:
            return self._disabled(batch, horizon)
        limits = self._window_limits(horizon)
        n = limits.shape[0]
        velocity = state.velocity[:, horizon - n :]
        excess = torch.relu(velocity.abs() - limits)
        window = (c.weight * c.velocity_weight) * excess.square().sum(-1)
        terminal = (c.weight * c.terminal_velocity_weight) * state.velocity[:, -1].square().sum(-1)
        if c.terminal_acceleration_weight != 0:
            terminal = terminal + (c.weight * c.terminal_acceleration_weight) * state.acceleration[
                :, -1
            ].square().sum(-1)
        window = torch.cat((window[:, :-1], (window[:, -1] + terminal)[:, None]), dim=1)
        return F.pad(window, (horizon - n, 0))
