"""Approach seeds: retreat configurations back the hand off along its own z axis, and the seed
paths go start -> retreat -> goal. References: the hand's axis from the quaternion through an
independent rotation-matrix formula, and the paths' knots checked point by point."""

from __future__ import annotations

import pytest
import torch
from collision_reference import quat_to_matrix

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.motion.motion_gen import MotionGenConfig
from curobo_lite.wrap.trajopt.approach_seeds import (
    approach_seed_paths,
    retreat_configs,
    straight_seed_paths,
)

TA = TensorDeviceType(dtype=torch.float64)


@pytest.fixture(scope="module")
def kinematics() -> Kinematics:
    return Kinematics(RobotConfig.load("franka", TA))


def test_retreat_backs_the_hand_off_along_its_axis(kinematics):
    robot = kinematics.robot_config
    gen = torch.Generator().manual_seed(0)
    # configurations in the middle of the joint ranges, away from the limits
    low, high = robot.joint_limits.position.to(torch.float64)
    goal = low + (high - low) * (
        0.3 + 0.4 * torch.rand(2, 3, robot.dof, generator=gen, dtype=torch.float64)
    )
    retreat = retreat_configs(kinematics, goal, 0.08, iterations=12)
    assert retreat.shape == goal.shape
    at_goal = kinematics.forward(goal.reshape(-1, robot.dof))
    at_retreat = kinematics.forward(retreat.reshape(-1, robot.dof))
    axis = quat_to_matrix(at_goal.ee_quaternion)[..., :, 2]  # the hand's z in the base frame
    expected = at_goal.ee_position - 0.08 * axis
    assert (at_retreat.ee_position - expected).norm(dim=-1).max() < 2e-3
    # orientation held: the hand's axes agree
    rotation = quat_to_matrix(at_retreat.ee_quaternion)
    assert (rotation - quat_to_matrix(at_goal.ee_quaternion)).abs().max() < 0.02
    assert ((retreat >= low) & (retreat <= high)).all()


def test_seed_paths_start_turn_and_end_where_they_should():
    start = torch.tensor([[0.0, 0.0]], dtype=torch.float64)
    goal = torch.tensor([[[1.0, 2.0], [3.0, -1.0]]], dtype=torch.float64)
    retreat = torch.tensor([[[0.5, 1.0], [2.0, 0.0]]], dtype=torch.float64)
    horizon = 11
    profile = torch.linspace(0.0, 1.0, horizon, dtype=torch.float64)
    paths = approach_seed_paths(start, goal, retreat, profile, approach_fraction=0.3)
    assert paths.shape == (1, 2, horizon, 2)
    torch.testing.assert_close(paths[0, :, 0], start.expand(2, 2))
    torch.testing.assert_close(paths[0, :, 7], retreat[0])  # round(0.7 * 10) = 7
    torch.testing.assert_close(paths[0, :, -1], goal[0])
    # the approach is a straight segment retreat -> goal
    segment = paths[0, :, 7:]
    direction = goal[0] - retreat[0]
    offset = segment - retreat[0][:, None]
    cross = offset[..., 0] * direction[:, None, 1] - offset[..., 1] * direction[:, None, 0]
    assert cross.abs().max() < 1e-12
    straight = straight_seed_paths(start, goal, profile)
    torch.testing.assert_close(straight[0, :, 5], 0.5 * goal[0])


def test_approach_distance_option_is_checked():
    assert MotionGenConfig.from_dict({"approach_distance": 0.0}).approach_distance == 0.0
    with pytest.raises(InputValueError, match="approach_distance"):
        MotionGenConfig.from_dict({"approach_distance": -0.1})
