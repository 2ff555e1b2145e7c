"""High-level solvers: IK, trajectory optimization, motion generation, model-predictive control,
collision checks."""

from curobo_lite.wrap.ik_solver import IKResult, IKSolver, IKSolverConfig
from curobo_lite.wrap.motion_gen import (
    MotionGen,
    MotionGenConfig,
    MotionGenResult,
    MotionGenStatus,
)
from curobo_lite.wrap.mpc_solver import MpcResult, MpcSolver, MpcSolverConfig
from curobo_lite.wrap.offenders import Offender
from curobo_lite.wrap.reactive import ReactivePlanner, ReactivePlannerConfig, ReactiveStepResult
from curobo_lite.wrap.robot_world import RobotWorld
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
    "ReactivePlanner",
    "ReactivePlannerConfig",
    "ReactiveStepResult",
    "RobotWorld",
    "TrajOptResult",
    "TrajOptSolver",
    "TrajOptSolverConfig",
]
