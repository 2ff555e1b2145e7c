"""What a rollout aims at: :class:`Goal`, the end-effector pose and/or joint configuration of
each problem."""

from __future__ import annotations

from dataclasses import dataclass

from curobo_lite.rollout.graph_buffers import JOINT_FIELDS, POSE_FIELDS, write_in_place
from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError, InputValueError


@dataclass
class Goal:
    """What the rollout aims at, per problem.

    Attributes:
        goal_pose: end-effector poses, batch ``G`` (1, or one per problem).
        goal_state: joint-space goals ``[G, D]`` (position used by ``cspace_cost``).
    """

    goal_pose: Pose | None = None
    goal_state: JointState | None = None

    def __post_init__(self) -> None:
        if self.goal_pose is None and self.goal_state is None:
            raise InputValueError("Goal: give goal_pose, goal_state or both; received neither")
        if self.goal_pose is not None and not isinstance(self.goal_pose, Pose):
            raise InputTypeError(
                f"Goal.goal_pose: expected a Pose, received {type(self.goal_pose)}"
            )
        if self.goal_state is not None:
            if not isinstance(self.goal_state, JointState):
                raise InputTypeError(
                    f"Goal.goal_state: expected a JointState, received {type(self.goal_state)}"
                )
            if self.goal_state.position.ndim == 1:
                self.goal_state = self.goal_state.unsqueeze(0)


def owned_goal(current: Goal | None, goal: Goal) -> Goal:
    """``goal`` in tensors a rollout owns: those of its ``current`` goal, written in place,
    when the shapes match (the addresses a captured CUDA graph of the rollout reads), else
    copies. The caller's tensors are never kept, so later edits of them do not reach the
    rollout."""
    pose, state = goal.goal_pose, goal.goal_state
    if pose is not None:
        kept = None if current is None else current.goal_pose
        if write_in_place(kept, pose, POSE_FIELDS):
            pose = kept
        else:
            pose = Pose(pose.position.clone(), pose.quaternion.clone())
    if state is not None:
        kept = None if current is None else current.goal_state
        if write_in_place(kept, state, JOINT_FIELDS):
            kept.joint_names = state.joint_names
            state = kept
        else:
            state = state.clone()
    return Goal(goal_pose=pose, goal_state=state)
