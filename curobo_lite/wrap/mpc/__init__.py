"""Model-predictive control: :class:`MpcSolver` (batched MPPI over the rollout, one control
step per call, optionally tracking a joint plan). Imports ``wrap.base``."""

from curobo_lite.wrap.mpc.solver import MpcResult, MpcSolver, MpcSolverConfig

__all__ = ["MpcResult", "MpcSolver", "MpcSolverConfig"]
