"""Rollouts: a dynamics model composed with forward kinematics and costs."""

from curobo_lite.rollout.arm_reacher import ArmReacher, ArmReacherConfig
from curobo_lite.rollout.convergence import ConvergenceMetrics, ReachCriteria
from curobo_lite.rollout.goal import Goal
from curobo_lite.rollout.task import TaskConfig, available_tasks

__all__ = [
    "ArmReacher",
    "ArmReacherConfig",
    "ConvergenceMetrics",
    "Goal",
    "ReachCriteria",
    "TaskConfig",
    "available_tasks",
]
