"""Inverse kinematics: :class:`IKSolver` (damped least squares, then a collision-aware
batched L-BFGS over many seeds; single goals, batches and goal sets). Imports ``wrap.base``."""

from curobo_lite.wrap.ik.config import IKSolverConfig
from curobo_lite.wrap.ik.result import IKResult
from curobo_lite.wrap.ik.solver import IKSolver

__all__ = ["IKResult", "IKSolver", "IKSolverConfig"]
