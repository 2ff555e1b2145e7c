"""High-level solvers: IK, trajectory optimization, motion generation, model-predictive control,
collision checks.

The subpackages are layers, lowest first (each imports only those below it)::

    base      RobotWorld, held objects, offenders, the one-call guard
    ik        IKSolver
    trajopt   TrajOptSolver                 mpc    MpcSolver
    motion    MotionGen, graph planner, roadmap
    reactive  ReactivePlanner (MotionGen + MpcSolver)
    cli       command lines, sharded_solve; model/ and reacher/ (cuRobo's import paths)
"""

from curobo_lite.wrap.base import Offender, PoseCostMetric, RobotWorld
from curobo_lite.wrap.ik import IKResult, IKSolver, IKSolverConfig
from curobo_lite.wrap.motion import MotionGen, MotionGenConfig, MotionGenResult, MotionGenStatus
from curobo_lite.wrap.mpc import MpcResult, MpcSolver, MpcSolverConfig
from curobo_lite.wrap.reactive import ReactivePlanner, ReactivePlannerConfig, ReactiveStepResult
from curobo_lite.wrap.trajopt import TrajOptResult, TrajOptSolver, TrajOptSolverConfig

__all__ = [
    "IKResult",
    "IKSolver",
    "IKSolverConfig",
    "MotionGen",
    "MotionGenConfig",
    "MotionGenResult",
    "MotionGenStatus",
    "MpcResult",
    "MpcSolver",
    "MpcSolverConfig",
    "Offender",
    "PoseCostMetric",
    "ReactivePlanner",
    "ReactivePlannerConfig",
    "ReactiveStepResult",
    "RobotWorld",
    "TrajOptResult",
    "TrajOptSolver",
    "TrajOptSolverConfig",
]
