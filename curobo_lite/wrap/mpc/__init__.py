"""Model-predictive control: :class:`MpcSolver` (batched MPPI over the rollout, one control
step per call, optionally tracking a joint plan). Imports ``wrap.base``."""

from curobo_lite.wrap.mpc.config import MpcResult, MpcSolverConfig
from curobo_lite.wrap.mpc.solver import MpcSolver

__all__ = ["MpcResult", "MpcSolver", "MpcSolverConfig"]
