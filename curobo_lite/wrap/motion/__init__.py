"""Motion generation: :class:`MotionGen` (IK, then trajectory optimization from straight-line,
approach and roadmap seeds, with a graph-planner fallback; single goals, batches, goal sets and
joint goals). Imports ``wrap.trajopt``, ``wrap.ik`` and ``wrap.base``."""

from curobo_lite.wrap.motion.motion_gen import (
    MotionGen,
    MotionGenConfig,
    MotionGenResult,
    MotionGenStatus,
)

__all__ = ["MotionGen", "MotionGenConfig", "MotionGenResult", "MotionGenStatus"]
