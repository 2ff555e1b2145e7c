"""cuRobo's ``curobo.rollout.rollout_base.Goal``: :class:`curobo_lite.rollout.Goal` with the
fields cuRobo's scripts pass (``current_state``, ``retract_state``, ``name``). Fields that
address batches of goals, goal sets or several links are refused by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curobo_lite.rollout.goal import Goal as _Goal
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError

__all__ = ["Goal"]

_UNSUPPORTED = (
    "links_goal_pose",
    "batch_pose_idx",
    "batch_goal_state_idx",
    "batch_retract_state_idx",
    "batch_current_state_idx",
    "batch_enable_idx",
    "batch_world_idx",
)


@dataclass
class Goal(_Goal):
    """What to reach: ``goal_pose`` and/or ``goal_state``, as :class:`curobo_lite.rollout.Goal`;
    ``current_state`` and ``retract_state`` are kept for the caller (the solvers take the
    current state at each step, and the robot file's retract configuration)."""

    current_state: JointState | None = None
    retract_state: JointState | None = None
    name: str = "goal"
    links_goal_pose: Any = None
    batch_pose_idx: Any = None
    batch_goal_state_idx: Any = None
    batch_retract_state_idx: Any = None
    batch_current_state_idx: Any = None
    batch_enable_idx: Any = None
    batch_world_idx: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        given = [name for name in _UNSUPPORTED if getattr(self, name) is not None]
        if given:
            raise InputValueError(
                f"Goal: {given} not supported by curobo_lite (one goal pose or joint state per "
                "problem)"
            )
