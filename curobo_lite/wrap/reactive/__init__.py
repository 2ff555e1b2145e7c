"""Reactive control: :class:`ReactivePlanner` plans with :class:`~curobo_lite.wrap.MotionGen`,
tracks the plan with :class:`~curobo_lite.wrap.MpcSolver` and replans when the world blocks the
rest of it. Imports ``wrap.motion``, ``wrap.mpc`` and ``wrap.base``."""

from curobo_lite.wrap.reactive.config import ReactivePlannerConfig, ReactiveStepResult
from curobo_lite.wrap.reactive.planner import ReactivePlanner

__all__ = ["ReactivePlanner", "ReactivePlannerConfig", "ReactiveStepResult"]
