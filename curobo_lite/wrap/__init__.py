"""High-level solvers: trajectory optimization and model-predictive control."""

from curobo_lite.wrap.mpc_solver import MpcResult, MpcSolver, MpcSolverConfig
from curobo_lite.wrap.trajopt import TrajOptResult, TrajOptSolver, TrajOptSolverConfig

__all__ = [
    "MpcResult",
    "MpcSolver",
    "MpcSolverConfig",
    "TrajOptResult",
    "TrajOptSolver",
    "TrajOptSolverConfig",
]
