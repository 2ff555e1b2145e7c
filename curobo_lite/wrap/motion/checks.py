"""MotionGen's checks of its inputs and the reasons it gives when they fail.

Functions of a :class:`~curobo_lite.wrap.base.robot_world.RobotWorld` (the planner's checker):
whether start states are valid (:func:`start_status`), and, when a start state or an IK goal
fails, which joints, links and obstacles are at fault (:func:`start_offenders`,
:func:`ik_offenders`), as :class:`~curobo_lite.wrap.base.offenders.Offender` lists.
"""

from __future__ import annotations

import torch

from curobo_lite.types import JointState, Pose, quat_angle_error
from curobo_lite.wrap.base.offenders import Offender, millimetres, reach_pose
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.ik.solver import IKResult
from curobo_lite.wrap.motion.config import MotionGenStatus

#: largest joint velocity or acceleration of a start state "at rest"
REST_TOL = 1e-6


def pose_errors(
    checker: RobotWorld, q: torch.Tensor, goal: Pose
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[n]`` metres and radians from the end effector at ``q [n, D]`` to ``goal``."""
    state = checker.kinematics.forward(q, spheres=False)
    position = (state.ee_position - goal.position).norm(dim=-1)
    quaternion = goal.quaternion.expand_as(state.ee_quaternion)
    return position, quat_angle_error(state.ee_quaternion, quaternion)


@torch.no_grad()
def start_status(
    checker: RobotWorld, start: JointState, exact_band: float = 0.0
) -> list[MotionGenStatus | None]:
    """Per start state of ``start [S, D]``: ``None`` (valid) or the ``INVALID_START_STATE_*``
    reason. ``exact_band`` (m): shallower world contacts are judged on the meshes."""
    q = start.position
    moving = (start.velocity.abs().amax(-1) > REST_TOL) | (
        start.acceleration.abs().amax(-1) > REST_TOL
    )
    in_limits = checker.in_limits(q)
    world = checker.collision_distance(q, max_distance=1e-4) >= 0.0
    own = checker.self_collision_distance(q) >= 0.0
    if exact_band > 0.0 and not bool(world.all()):  # the meshes judge shallow contacts
        world = world | checker.validate(q, exact_band)
    status: list[MotionGenStatus | None] = []
    for s in range(q.shape[0]):
        if bool(moving[s]):
            status.append(MotionGenStatus.INVALID_START_STATE_NOT_AT_REST)
        elif not bool(in_limits[s]):
            status.append(MotionGenStatus.INVALID_START_STATE_JOINT_LIMITS)
        elif not bool(world[s]):
            status.append(MotionGenStatus.INVALID_START_STATE_WORLD_COLLISION)
        elif not bool(own[s]):
            status.append(MotionGenStatus.INVALID_START_STATE_SELF_COLLISION)
        else:
            status.append(None)
    return status


@torch.no_grad()
def start_offenders(
    checker: RobotWorld, start: JointState, s: int, status: MotionGenStatus
) -> list[Offender]:
    """Why start state ``s`` got ``status``: the joints that move (not at rest), else the
    checker's offenders (limits, world, self; the status's kind comes first)."""
    if status is not MotionGenStatus.INVALID_START_STATE_NOT_AT_REST:
        return checker.offenders(start.position[s])
    found = []
    for quantity, unit in (("velocity", "/s"), ("acceleration", "/s²")):
        values = getattr(start, quantity)[s].tolist()
        for name, value in zip(checker.robot_config.joint_names, values, strict=True):
            if abs(value) > REST_TOL:
                message = f"{name} has {quantity} {value:.4g}{unit} (a plan starts at rest)"
                found.append(Offender("moving", name, quantity, abs(value), message))
    return sorted(found, key=lambda o: -o.depth)[:3]


@torch.no_grad()
def ik_offenders(
    checker: RobotWorld,
    ik: IKResult,
    k: int,
    goal: Pose,
    thresholds: tuple[float, float],
) -> tuple[list[Offender], torch.Tensor, str]:
    """Why problem ``k``'s IK found no solution for ``goal`` (batch 1) within ``thresholds``
    (m, rad): ``(offenders, configuration, which)``.

    1. Among its seeds' results (ranked by cost), the first that reaches ``goal`` within
       the IK's thresholds was refused for its limits or contacts: those.
    2. Else the best seed's pose errors beyond the thresholds, then what the robot hits
       at the goal pose: the best seed moved onto it blind to obstacles
       (:func:`~curobo_lite.wrap.base.offenders.reach_pose`; a grasp whose fingers sit inside
       the object: the collision cost held every seed away from the pose).
    3. Else (the pose is out of reach from there) the best seed's pose errors and its own
       limits or contacts."""
    position, rotation = pose_errors(checker, ik.solutions[k], goal)
    reached = ((position <= thresholds[0]) & (rotation <= thresholds[1])).nonzero()
    if reached.numel():
        q = ik.solutions[k, int(reached[0, 0])]
        found = checker.offenders(q)
        if found:
            return found, q, "best IK seed that reaches the goal pose"
    ee = checker.robot_config.ee_link
    found = []
    errors = (float(ik.position_error[k]), float(ik.rotation_error[k]))
    for other, error, tolerance in zip(("position", "rotation"), errors, thresholds, strict=True):
        if error <= tolerance:
            continue
        if other == "position":
            message = (
                f"the best IK seed's {ee} ends {millimetres(error)} from the goal position "
                f"(tolerance {millimetres(tolerance)})"
            )
        else:
            message = (
                f"the best IK seed's {ee} ends {error:.3g} rad from the goal orientation "
                f"(tolerance {tolerance:.3g} rad)"
            )
        found.append(Offender("pose", ee, other, error - tolerance, message, error, tolerance))
    q = reach_pose(checker, ik.solution[k], goal.position[0], goal.quaternion[0])
    position, rotation = pose_errors(checker, q[None], goal)
    if float(position[0]) <= thresholds[0] and float(rotation[0]) <= thresholds[1]:
        at_goal = checker.offenders(q)
        if at_goal:
            return (
                found + at_goal,
                q,
                "goal pose, reached from the best IK seed ignoring obstacles",
            )
    q = ik.solution[k]
    return found + checker.offenders(q), q, "best IK seed"
