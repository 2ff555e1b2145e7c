"""The options (task ``mpc:`` section, :class:`MpcSolverConfig`) and the per-step result
(:class:`MpcResult`) of :class:`~curobo_lite.wrap.MpcSolver`; what each option does is in
:mod:`curobo_lite.wrap.mpc.solver`'s docstring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.opt.options import (
    CheckedOptions,
    as_bool,
    as_float,
    as_int,
    options_from_dict,
)
from curobo_lite.types import JointState
from curobo_lite.types.checks import received
from curobo_lite.types.errors import InputTypeError

_SECTION = "mpc"


@dataclass
class MpcSolverConfig(CheckedOptions):
    """Options of :class:`~curobo_lite.wrap.MpcSolver` (task section ``mpc:``)."""

    section = _SECTION

    shift_steps: int = 1
    control_dt: float | None = None
    use_cuda_graph: bool = False
    limit_tolerance: float = 0.05
    clamp_to_limits: bool = False
    follow_activation_distance: float | None = None
    cpu_overlap: bool | str = "auto"
    fused_rollout: bool = True
    cpu_torch_threads: int | None = 1

    def __post_init__(self) -> None:
        self.shift_steps = as_int(_SECTION, "shift_steps", self.shift_steps, minimum=1)
        if self.control_dt is not None:
            self.control_dt = as_float(
                _SECTION, "control_dt", self.control_dt, low=0.0, low_open=True
            )
        self.use_cuda_graph = as_bool(_SECTION, "use_cuda_graph", self.use_cuda_graph)
        self.limit_tolerance = as_float(_SECTION, "limit_tolerance", self.limit_tolerance, low=0.0)
        self.clamp_to_limits = as_bool(_SECTION, "clamp_to_limits", self.clamp_to_limits)
        if self.follow_activation_distance is not None:
            self.follow_activation_distance = as_float(
                _SECTION, "follow_activation_distance", self.follow_activation_distance, low=0.0
            )
        if not (isinstance(self.cpu_overlap, bool) or self.cpu_overlap == "auto"):
            raise InputTypeError(
                f"{_SECTION}.cpu_overlap: expected true, false or auto, "
                f"{received(self.cpu_overlap)}"
            )
        self.fused_rollout = as_bool(_SECTION, "fused_rollout", self.fused_rollout)
        self.cpu_torch_threads = as_int(
            _SECTION, "cpu_torch_threads", self.cpu_torch_threads, minimum=1, allow_none=True
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> MpcSolverConfig:
        return options_from_dict(cls, data)


@dataclass
class MpcResult:
    """One control step.

    Attributes:
        action: the next commanded :class:`JointState` ``[1, D]`` (position, velocity,
            acceleration), within the joint limits.
        solve_time: seconds spent in :meth:`MpcSolver.step`.
        metrics: ``position_error`` (m) and ``rotation_error`` (rad) of the *measured* state's end
            effector to the goal (``nan`` for a joint goal), ``cspace_error`` (rad, joint goals),
            ``cost`` (best sampled total), ``limit_clamped`` (the command had to be clamped),
            ``limit_violation`` (largest excess of the command over the position, velocity or
            acceleration limits, 0 when within; see :meth:`MpcSolver.enforce_limits`),
            ``world_distance`` and ``self_distance`` (m, signed, negative in collision: the
            measured state's clearance; robots with collision spheres only).
        plan: the optimized action sequence ``[1, H, D]`` (the MPPI mean), a copy.
    """

    action: JointState
    solve_time: float
    metrics: dict[str, float]
    plan: torch.Tensor = field(repr=False)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items())
        return (
            f"MpcResult(action position={[round(x, 4) for x in self.action.position[0].tolist()]},"
            f" solve_time={self.solve_time * 1e3:.2f} ms, {shown})"
        )
