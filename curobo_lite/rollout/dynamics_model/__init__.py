"""Dynamics models: integrate action sequences into joint-state trajectories."""

from curobo_lite.rollout.dynamics_model.kinematic_model import (
    FilterCoeff,
    JointStateFilter,
    JointStateFilterConfig,
    KinematicModel,
    KinematicModelConfig,
    KinematicModelState,
    TimeTrajConfig,
)

__all__ = [
    "FilterCoeff",
    "JointStateFilter",
    "JointStateFilterConfig",
    "KinematicModel",
    "KinematicModelConfig",
    "KinematicModelState",
    "TimeTrajConfig",
]
