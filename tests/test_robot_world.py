"""RobotWorld: the user-facing collision checker, against coal and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap import RobotWorld

# A table in front of the robot and a post beside it (boxes only, so coal can measure them).
BOXES = {
    "table": ([0.75, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0], [0.8, 1.2, 0.04]),
    "post": ([0.35, -0.45, 0.4, 0.9659258, 0.0, 0.0, 0.2588190], [0.1, 0.1, 0.8]),
}
WORLD = {"cuboid": {name: {"pose": pose, "dims": dims} for name, (pose, dims) in BOXES.items()}}


@pytest.fixture(scope="module")
def checker() -> RobotWorld:
    return RobotWorld.from_config(
        "franka", WORLD, tensor_args=TensorDeviceType(dtype=torch.float64)
    )


def _random_q(robot: RobotConfig, n: int, seed: int = 0) -> torch.Tensor:
    low, high = robot.joint_limits.position.to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(n, robot.dof, generator=gen, dtype=torch.float64)


def test_collision_distance_matches_coal(checker):
    q = _random_q(checker.robot_config, 24)
    ours = checker.collision_distance(q)
    spheres = checker.get_link_spheres(q).detach()
    reference = coal_sphere_box_distance(
        spheres.reshape(-1, 4).numpy(), list(BOXES.values())
    ).reshape(spheres.shape[:2])
    # the base (panda_link0, moved by no joint) is left out of world checks by default
    moving = np.array([n != "panda_link0" for n in checker.kinematics.sphere_link_names])
    reference = reference[:, moving]
    np.testing.assert_allclose(ours.detach().numpy(), reference.min(-1), atol=1e-5)
    assert (reference.min(-1) < 0).any() and (reference.min(-1) > 0).any()


def test_collision_distance_gradient_matches_finite_differences(checker):
    q = _random_q(checker.robot_config, 6, seed=1).requires_grad_(True)
    checker.collision_distance(q).sum().backward()
    step = 1e-6
    numeric = torch.zeros_like(q)
    with torch.no_grad():
        for j in range(q.shape[1]):
            offset = torch.zeros_like(q)
            offset[:, j] = step
            plus = checker.collision_distance(q + offset)
            minus = checker.collision_distance(q - offset)
            numeric[:, j] = (plus - minus) / (2 * step)
    torch.testing.assert_close(q.grad, numeric, rtol=1e-4, atol=1e-6)


def test_validate_retract_free_and_hand_in_table_caught(checker):
    robot = checker.robot_config
    retract = robot.retract_config.to(torch.float64)[None]
    assert bool(checker.validate(retract)[0])
    assert float(checker.self_collision_distance(retract)[0]) > 0.0
    # lean forward until the hand is inside the table top (z = 0.08 .. 0.12)
    leaning = retract.clone()
    leaning[0, 1] = 1.2
    spheres = checker.get_link_spheres(leaning)
    assert float(spheres[0, :, 2].min()) < 0.12
    assert not bool(checker.validate(leaning)[0])
    assert float(checker.collision_distance(leaning)[0]) < 0.0
    outside = retract.clone()
    outside[0, 0] = float(robot.joint_limits.position[1, 0]) + 0.1
    assert not bool(checker.validate(outside)[0])


def test_validate_trajectory_sweeps_through_thin_wall():
    # a 4 mm plate in the vertical plane at 45 degrees of yaw, where the hand passes when joint 1
    # turns from 0 to 90 degrees in one step; both end poses are 45 degrees away from it
    c, s = math.cos(math.pi / 8), math.sin(math.pi / 8)
    r_mid = 0.36
    plate = {
        "dims": [0.2, 0.004, 0.3],
        "pose": [r_mid / math.sqrt(2), r_mid / math.sqrt(2), 0.5, c, 0.0, 0.0, s],
    }
    checker = RobotWorld.from_config("franka", {"cuboid": {"plate": plate}})
    start = checker.robot_config.retract_config.clone()
    end = start.clone()
    end[0] = math.pi / 2
    trajectory = torch.stack((start, end))[None]
    assert bool(checker.validate(trajectory[0]).all()), "both end points must be clear"
    assert bool(checker.validate_trajectory(trajectory, swept=False)[0])
    assert not bool(checker.validate_trajectory(trajectory, swept=True)[0])
    # the same motion in 30 small steps is caught by the discrete check as well
    fine = start + torch.linspace(0, 1, 30)[:, None] * (end - start)
    assert not bool(checker.validate(fine).all())


def test_update_world_equals_fresh_checker(checker):
    moved = {"cuboid": {"table": {"pose": [0.75, 0.0, 0.3, 1, 0, 0, 0], "dims": [0.8, 1.2, 0.04]}}}
    q = _random_q(checker.robot_config, 16, seed=2)
    edited = RobotWorld.from_config("franka", WORLD, tensor_args=checker.tensor_args)
    edited.update_world(WorldConfig.from_dict(moved))
    fresh = RobotWorld.from_config("franka", moved, tensor_args=checker.tensor_args)
    torch.testing.assert_close(edited.collision_distance(q), fresh.collision_distance(q))


def test_robot_world_rejects_robot_without_spheres(tmp_path):
    robot = RobotConfig.load("franka")
    robot.collision = None
    with pytest.raises(ValueError, match="collision_spheres"):
        RobotWorld(robot, RobotWorld.from_config("franka").world_collision)
