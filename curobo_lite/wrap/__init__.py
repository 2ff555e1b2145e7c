"""High-level solvers: trajectory optimization and model-predictive control."""

from curobo_lite.wrap.trajopt import TrajOptResult, TrajOptSolver, TrajOptSolverConfig

__all__ = ["TrajOptResult", "TrajOptSolver", "TrajOptSolverConfig"]
