"""The options of :class:`~curobo_lite.wrap.reactive.planner.ReactivePlanner` (its module
docstring describes each) and what one of its control steps returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from curobo_lite.opt.options import (
    CheckedOptions,
    as_bool,
    as_choice,
    as_float,
    as_int,
    options_from_dict,
)
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputTypeError
from curobo_lite.wrap.motion.config import MotionGenStatus
from curobo_lite.wrap.mpc.solver import MpcResult

_SECTION = "reactive"


@dataclass
class ReactivePlannerConfig(CheckedOptions):
    """Options of :class:`ReactivePlanner` (see the module docstring)."""

    section = _SECTION

    max_deviation: float = 0.3
    stall_deviation: float = 0.05
    rest_speed: float = 0.05
    max_brake_steps: int = 50
    check_resolution: float = 0.02
    retry_interval: int = 10
    plan_speed: float = 0.7
    use_plan: bool = True
    background_planning: bool = False
    background_worker: str = "auto"
    motion_gen: dict[str, Any] = field(default_factory=dict)
    mpc: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.max_deviation = as_float(
            _SECTION, "max_deviation", self.max_deviation, low=0.0, low_open=True
        )
        for name in ("stall_deviation", "rest_speed"):
            value = as_float(_SECTION, name, getattr(self, name), low=0.0, low_open=True)
            setattr(self, name, value)
        self.check_resolution = as_float(
            _SECTION, "check_resolution", self.check_resolution, low=0.0, low_open=True
        )
        self.retry_interval = as_int(_SECTION, "retry_interval", self.retry_interval, minimum=1)
        self.max_brake_steps = as_int(_SECTION, "max_brake_steps", self.max_brake_steps, minimum=0)
        self.plan_speed = as_float(
            _SECTION, "plan_speed", self.plan_speed, low=0.0, low_open=True, high=1.0
        )
        self.use_plan = as_bool(_SECTION, "use_plan", self.use_plan)
        self.background_planning = as_bool(
            _SECTION, "background_planning", self.background_planning
        )
        self.background_worker = as_choice(  # (as_choice compares upper case)
            _SECTION, "background_worker", self.background_worker, ("AUTO", "PROCESS", "THREAD")
        ).lower()
        for name in ("motion_gen", "mpc"):
            value = getattr(self, name)
            if value is None:
                value = {}
            if not isinstance(value, Mapping):
                raise InputTypeError(
                    f"{_SECTION}.{name}: expected a mapping of options, received "
                    f"{type(value).__name__}"
                )
            setattr(self, name, dict(value))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ReactivePlannerConfig:
        return options_from_dict(cls, data)


@dataclass
class ReactiveStepResult:
    """One control step of :class:`ReactivePlanner`.

    Attributes:
        action: the next commanded :class:`JointState` ``[1, D]`` (the MPC's, within limits).
        position_error, rotation_error: metres and radians of the measured state's end
            effector to the goal.
        clearance: signed distance (m) of the measured state to the obstacles and between the
            robot's own links, the smaller (negative in contact; ``nan`` without spheres).
        replanned: this step made a new plan (successful or not: see ``plan_status``).
        replan_reason: why it planned (``"goal"``, ``"blocked"``, ``"deviation"``,
            ``"stalled"``, ``"retry"``), ``""`` when it did not.
        plan_status: the last planning attempt's :class:`MotionGenStatus` (``None`` before
            any, or with ``use_plan`` off).
        following: a plan is being tracked (``False``: MPC alone, a replan pending).
        plan_pending: a background plan is being made (``background_planning``; MPC alone
            holds meanwhile).
        tracking_error: joint-space distance (rad) of the measured state to the plan's sample
            at this step's time (``nan`` while not following).
        plan_time: seconds of the tracked plan elapsed (``nan`` while not following).
        solve_time: seconds in :meth:`ReactivePlanner.step` (planning included).
        mpc: the MPC step's :class:`MpcResult` (its plan ``[1, H, D]`` and metrics).
        guarded: the MPC's command failed the exact check that guards a plan made with the
            exact band (its meshes would touch): ``action`` is a stop where the robot is.
    """

    action: JointState
    position_error: float
    rotation_error: float
    clearance: float
    replanned: bool
    replan_reason: str
    plan_status: MotionGenStatus | None
    following: bool
    tracking_error: float
    plan_time: float
    solve_time: float
    mpc: MpcResult = field(repr=False)
    plan_pending: bool = False
    guarded: bool = False

    @property
    def metrics(self) -> dict[str, float]:
        """The MPC step's metrics (:class:`MpcResult`) and ``replanned`` (0 or 1)."""
        return {**self.mpc.metrics, "replanned": float(self.replanned)}

    def __repr__(self) -> str:
        status = None if self.plan_status is None else self.plan_status.value
        return (
            f"ReactiveStepResult(position_error={self.position_error:.4g} m, rotation_error="
            f"{self.rotation_error:.4g} rad, clearance={self.clearance:.4g} m, replanned="
            f"{self.replanned}{f' ({self.replan_reason})' if self.replanned else ''}, "
            f"plan_status={status}, following={self.following}"
            f"{', plan_pending' if self.plan_pending else ''}, solve_time="
            f"{self.solve_time * 1e3:.1f} ms)"
        )
