"""Joint-limit cost on position, velocity, acceleration and jerk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from curobo_lite.kernels.bound_cost_kernels import BoundCostParams, bound_cost
from curobo_lite.rollout.cost.base import (
    QUANTITIES,
    CostBase,
    CostConfig,
    as_choice,
    as_vector,
    check_dof,
    parse_joint_limits,
    trajectory_state,
)
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError

ACTIVATION_MODES = ("FRACTION", "ABSOLUTE")


@dataclass
class BoundCostConfig(CostConfig):
    """Options of :class:`BoundCost` (YAML section ``bound_cost``).

    Per-quantity lists are ordered ``[position, velocity, acceleration, jerk]``.

    Attributes:
        joint_limits: ``{quantity: [2, D]}`` lower/upper limits (default: the robot's); a
            mapping or an object with those four attributes. Infinite limits are allowed.
        bound_weight: ``[4]`` weights of the quadratic penalty.
        linear_weight: ``[4]`` weights of an added linear penalty (default zero).
        activation_distance: ``[4]`` margin inside each limit where the penalty starts.
        activation_mode: ``"FRACTION"``: the margin is ``activation_distance`` times the joint's
            range ``upper - lower`` (at most 0.5; an infinite range gets no margin);
            ``"ABSOLUTE"``: the margin is in the quantity's own units (rad, rad/s, ...) and must
            not exceed half of any joint's range.
        free_position: ``[2, D]`` lower/upper joint positions the activation margin leaves
            free (``None``: none): the position activation bounds widen to include this span,
            never past the limits. A followed plan that runs into the margin (a grasp at a
            joint limit) is then not pushed back by the margin it was planned within.
    """

    section: ClassVar[str] = "bound_cost"

    joint_limits: Any = None
    bound_weight: Any = (1.0, 1.0, 1.0, 1.0)
    linear_weight: Any = (0.0, 0.0, 0.0, 0.0)
    activation_distance: Any = (0.05, 0.05, 0.05, 0.05)
    activation_mode: str = "FRACTION"
    free_position: Any = None

    def _validate(self) -> None:
        s, ta = self.section, self.tensor_args
        self._require(
            "joint_limits",
            f"{list(QUANTITIES)}, [2, D] each",
            "give them in the section or through the robot's limits",
        )
        self.joint_limits = parse_joint_limits(s, self.joint_limits, ta)
        self.bound_weight = as_vector(s, "bound_weight", self.bound_weight, ta, 4, True)
        self.linear_weight = as_vector(s, "linear_weight", self.linear_weight, ta, 4, True)
        self.activation_distance = as_vector(
            s, "activation_distance", self.activation_distance, ta, 4, True
        )
        self.activation_mode = as_choice(
            s, "activation_mode", self.activation_mode, ACTIVATION_MODES
        )
        if self.activation_mode == "FRACTION" and bool((self.activation_distance > 0.5).any()):
            raise InputValueError(
                f"{s}.activation_distance: a FRACTION of the range must be <= 0.5, received "
                f"{self.activation_distance.tolist()}"
            )
        if self.activation_mode == "ABSOLUTE":
            for i, quantity in enumerate(QUANTITIES):
                limits = self.joint_limits[quantity]
                half_range = (limits[1] - limits[0]) / 2
                if bool((self.activation_distance[i] > half_range).any()):
                    raise InputValueError(
                        f"{s}.activation_distance: {quantity} margin "
                        f"{self.activation_distance[i].item()} exceeds half the smallest "
                        f"{quantity} range {half_range.min().item()}"
                    )
        if self.free_position is not None:
            self.free_position = self._free_span(self.free_position)

    def _free_span(self, value: Any) -> torch.Tensor:
        """``value`` checked as a ``[2, D]`` finite position span, lower <= upper."""
        s, limits = self.section, self.joint_limits["position"]
        span = torch.as_tensor(value, **self.tensor_args.as_kwargs())
        if span.shape != limits.shape:
            raise InputValueError(
                f"{s}.free_position: expected shape {list(limits.shape)} (lower and upper "
                f"position per joint), received {list(span.shape)}"
            )
        if not bool(torch.isfinite(span).all()) or bool((span[0] > span[1]).any()):
            raise InputValueError(
                f"{s}.free_position: expected finite lower <= upper per joint, received "
                f"{span.tolist()}"
            )
        return span

    def activation_bounds(self) -> dict[str, torch.Tensor]:
        """``{quantity: [2, D]}``: the limits moved inwards by the activation margin."""
        bounds = {}
        for i, quantity in enumerate(QUANTITIES):
            limits = self.joint_limits[quantity]
            if self.activation_mode == "FRACTION":
                span = limits[1] - limits[0]
                margin = torch.where(
                    torch.isfinite(span), span * self.activation_distance[i], torch.zeros_like(span)
                )
            else:
                margin = self.activation_distance[i].expand_as(limits[0])
            bounds[quantity] = torch.stack((limits[0] + margin, limits[1] - margin))
        if self.free_position is not None:
            limits, free = self.joint_limits["position"], self.free_position
            lower, upper = bounds["position"]
            bounds["position"] = torch.stack(
                (
                    torch.maximum(torch.minimum(lower, free[0]), limits[0]),
                    torch.minimum(torch.maximum(upper, free[1]), limits[1]),
                )
            )
        return bounds


class BoundCost(CostBase[BoundCostConfig]):
    """Joint-limit penalty ``[B, H]``.

    For each quantity ``x`` (position, velocity, acceleration, jerk) with activation bounds
    ``[lo', hi']`` (the limits moved inwards by the activation margin) the excess is
    ``e = max(lo' - x, 0) + max(x - hi', 0)`` and
    ``cost[b, h] = weight * sum_q sum_d (bound_weight_q e² + linear_weight_q e)``:
    zero on and inside the activation bounds, growing quadratically (plus linearly) beyond.
    Every step ``h`` counts, including the start state at ``h = 0``.
    """

    config_cls = BoundCostConfig
    weight_fields = ("weight", "bound_weight", "linear_weight")

    def _setup(self) -> None:
        super()._setup()
        c = self.config
        bounds = c.activation_bounds()
        self.dof = c.joint_limits["position"].shape[1]
        # one fused Warp pass for all four quantities (value and gradient); quantities whose
        # weights are all zero are skipped there by host-side flags (no device read)
        quad = [float(c.bound_weight[i]) * c.weight for i in range(len(QUANTITIES))]
        lin = [float(c.linear_weight[i]) * c.weight for i in range(len(QUANTITIES))]
        lower = torch.stack([bounds[q][0] for q in QUANTITIES])
        upper = torch.stack([bounds[q][1] for q in QUANTITIES])
        self._params = BoundCostParams.build(lower, upper, quad, lin)

    def _check(self, state: Any) -> JointState:
        state = trajectory_state(type(self).__name__, state, self.tensor_args)
        check_dof(type(self).__name__, "joint_limits", state.dof, self.config.joint_limits["jerk"])
        return state

    def forward(self, state: JointState) -> torch.Tensor:
        """Per-step bound cost of a ``JointState`` with ``[B, H, D]`` fields -> ``[B, H]``."""
        state = self._check(state)
        batch, horizon = state.position.shape[:2]
        if not self.enabled or not any(self._params.active_flags):
            return self._disabled(batch, horizon)
        return bound_cost(
            state.position, state.velocity, state.acceleration, state.jerk, self._params
        )

    def violation(self, state: JointState) -> dict[str, torch.Tensor]:
        """Largest limit violation per trajectory (metrics, no gradient).

        Measured against the real limits (not the activation bounds), in the quantity's units.

        Returns:
            ``{quantity: [B]}`` for position, velocity, acceleration and jerk; 0 where the whole
            trajectory is within the limits.
        """
        state = self._check(state)
        result = {}
        with torch.no_grad():
            for quantity in QUANTITIES:
                x = getattr(state, quantity)
                limits = self.config.joint_limits[quantity]
                excess = (x - torch.clamp(x, limits[0], limits[1])).abs()
                result[quantity] = excess.amax(dim=(-2, -1))
        return result
