"""Goal sets and joint goals (issue 31): ``IKSolver.solve_goalset``, ``MotionGen.plan_goalset``
and ``MotionGen.plan_joint``, judged by an independent forward kinematics (numpy, from the
collision URDF's joints) and coal on the plan's spheres."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance
from curobo_reference import UrdfFK, matrix_to_quat_wxyz, rotation_angle

from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError
from curobo_lite.wrap import IKSolver, MotionGen, MotionGenStatus

URDF = Path(__file__).resolve().parents[1] / "configs" / "robot" / "franka_collision.urdf"
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
WORLD = {"cuboid": {"wall": WALL}}
#: two poses out of reach (0, 3) around two reachable ones (1: behind the wall, 2: left)
GOAL_SET = [
    [2.5, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0],
    [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0],
    [0.45, 0.25, 0.45, 0.0, 1.0, 0.0, 0.0],
    [-2.0, 0.5, 0.4, 0.0, 1.0, 0.0, 0.0],
]
REACHABLE = [False, True, True, False]


def _poses(rows: list[list[float]]) -> Pose:
    values = torch.tensor(rows)
    return Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())


def _hand(q: torch.Tensor, names: list[str]) -> np.ndarray:
    """``panda_hand`` in the base frame by the numpy URDF reference (fingers open)."""
    values = dict(zip(names, q.tolist()))
    values.update({"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04})
    return UrdfFK(URDF).link_transforms("panda_link0", values)["panda_hand"]


def _reaches(q: torch.Tensor, names: list[str], pose: list[float]) -> bool:
    hand = _hand(q, names)
    position = np.linalg.norm(hand[:3, 3] - np.asarray(pose[:3]))
    rotation = rotation_angle(matrix_to_quat_wxyz(hand), np.asarray(pose[3:]))
    return position <= 0.005 and rotation <= 0.05


@pytest.fixture(scope="module")
def motion_gen() -> MotionGen:
    return MotionGen.from_config("franka", WORLD)


def _start(motion_gen: MotionGen) -> JointState:
    return JointState.from_position(motion_gen.robot_config.retract_config[None].clone())


def test_ik_goalset_index_points_at_a_pose_it_reaches(motion_gen):
    ik = IKSolver.from_config("franka", motion_gen.world_collision, dls_iterations=16)
    result = ik.solve_goalset(_poses(GOAL_SET))
    names = motion_gen.robot_config.joint_names
    assert bool(result.success[0])
    assert result.goalset_success[0].tolist() == REACHABLE
    index = int(result.goalset_index[0])
    assert REACHABLE[index]
    assert _reaches(result.solution[0], names, GOAL_SET[index])
    # nearest the retract configuration among the reachable poses' solutions
    single = [ik.solve_single(_poses([GOAL_SET[g]])) for g in (1, 2)]
    retract = motion_gen.robot_config.retract_config
    distances = [float((s.solution[0] - retract).norm()) for s in single]
    assert index == 1 + int(np.argmin(distances))


def test_plan_goalset_ends_at_the_pose_it_names_and_says_why_not_the_others(motion_gen):
    result = motion_gen.plan_goalset(_start(motion_gen), _poses(GOAL_SET))
    assert result.success, result
    index = result.goalset_index
    assert REACHABLE[index]
    plan = result.interpolated_plan.position
    assert _reaches(plan[-1], motion_gen.robot_config.joint_names, GOAL_SET[index])
    reasons = result.goalset_reasons
    assert len(reasons) == len(GOAL_SET) and reasons[index] == ""
    for g in (0, 3):
        assert reasons[g].startswith("IK_FAIL") and "from the goal position" in reasons[g]
    other = 3 - index  # the other reachable pose (1 <-> 2)
    assert reasons[other].startswith("reachable")
    # clear of the wall: coal on the plan's spheres, resampled between the samples; the meshes
    # judge contacts shallower than the exact band (15 mm)
    t = torch.linspace(0.0, 1.0, 5)[:-1]
    dense = (plan[:-1, None] + t[None, :, None] * (plan[1:] - plan[:-1])[:, None]).reshape(-1, 7)
    spheres = motion_gen.checker.get_world_spheres(dense).detach().reshape(-1, 4)
    spheres = spheres[spheres[:, 3] > 0]
    clearance = coal_sphere_box_distance(spheres.double().numpy(), [(WALL["pose"], WALL["dims"])])
    assert float(clearance.min()) >= -0.015
    assert bool(motion_gen.checker.validate_trajectory_mesh(plan))


def test_plan_goalset_with_no_reachable_pose_is_ik_fail_with_every_reason(motion_gen):
    result = motion_gen.plan_goalset(_start(motion_gen), _poses([GOAL_SET[0], GOAL_SET[3]]))
    assert result.status is MotionGenStatus.IK_FAIL and result.goalset_index is None
    assert all(r.startswith("IK_FAIL") for r in result.goalset_reasons)
    assert result.offenders  # the best pose's reasons, as for plan_single


def test_plan_goalset_names_its_argument(motion_gen):
    with pytest.raises(InputTypeError, match="goal_poses"):
        motion_gen.plan_goalset(_start(motion_gen), GOAL_SET)


@pytest.mark.parametrize("enable_roadmap", [True, False])
def test_plan_joint_ends_at_the_goal_state_at_rest(enable_roadmap):
    """A joint goal is met to 1e-3 rad, at rest (velocity by finite differences of the last
    samples), on the roadmap's plan and on the optimized one."""
    motion_gen = MotionGen.from_config("franka", WORLD, enable_roadmap=enable_roadmap)
    start = _start(motion_gen)
    goal = start.position.clone()
    goal[0, 0] += 0.8
    goal[0, 3] += 0.3
    result = motion_gen.plan_joint(start, JointState.from_position(goal))
    assert result.success, result
    plan = result.interpolated_plan.position
    assert float((plan[-1] - goal[0]).abs().max()) <= 1e-3
    assert float((plan[0] - start.position[0]).abs().max()) <= 1e-6
    final_speed = (plan[-1] - plan[-2]).abs().max() / result.interpolation_dt
    assert float(final_speed) <= 0.02
    assert float(result.interpolated_plan.velocity[-1].abs().max()) <= 1e-3
