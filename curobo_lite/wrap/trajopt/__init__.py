"""Trajectory optimization: :class:`TrajOptSolver` (goal configurations from the
:class:`~curobo_lite.wrap.IKSolver`, straight-line and approach seeds, batched L-BFGS over the
rollout, time scaling, final checks). Imports ``wrap.ik`` and ``wrap.base``."""

from curobo_lite.wrap.trajopt.solver import TrajOptResult, TrajOptSolver, TrajOptSolverConfig

__all__ = ["TrajOptResult", "TrajOptSolver", "TrajOptSolverConfig"]
