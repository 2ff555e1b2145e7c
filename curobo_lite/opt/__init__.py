"""Solvers generic over a rollout: MPPI, L-BFGS and gradient descent.

See :mod:`curobo_lite.opt.base` for the rollout protocol and the batching convention, and the
module docstrings of :mod:`.mppi` and :mod:`.lbfgs` for the ``mppi:`` and ``lbfgs:`` YAML keys.
"""

from curobo_lite.opt.base import OptResult, Rollout, RolloutResult
from curobo_lite.opt.gradient_descent import GradientDescent, GradientDescentConfig
from curobo_lite.opt.lbfgs import Lbfgs, LbfgsConfig
from curobo_lite.opt.mppi import Mppi, MppiConfig

__all__ = [
    "GradientDescent",
    "GradientDescentConfig",
    "Lbfgs",
    "LbfgsConfig",
    "Mppi",
    "MppiConfig",
    "OptResult",
    "Rollout",
    "RolloutResult",
]
