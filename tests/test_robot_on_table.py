"""Robots standing on things: a table or stand under the base leaves the retract pose valid.

The links that no active joint moves (the base and what is fixed to it) are left out of world
checks by default. References here are independent of that code: which links are fixed is read
off the robot file's joint tree in the test, and the distances to the support are the analytic
box distances of the moving links' spheres (tests/collision_reference.py, plain torch).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import yaml
from collision_reference import box_sdf

from curobo_lite.config_files import resolve_config_file
from curobo_lite.robot import RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import ConfigError
from curobo_lite.wrap import RobotWorld

TA = TensorDeviceType(dtype=torch.float64)
# cuRobo's example table and the MotionBenchMaker / robometrics stand: tops at z = 0
SUPPORTS = {
    "table": ([0.50165, 0.0, -0.01, 1.0, 0.0, 0.0, 0.0], [1.3208, 1.8288, 0.02]),
    "stand": ([-0.05, 0.0, -0.4, 1.0, 0.0, 0.0, 0.0], [0.3, 0.25, 0.8]),
}
ARMS = ("franka", "ur5e", "iiwa")


def _world(name: str) -> dict:
    pose, dims = SUPPORTS[name]
    return {"cuboid": {name: {"pose": pose, "dims": dims}}}


def _fixed_links(robot: RobotConfig) -> set[str]:
    """Links reached from the base through joints that are not among the active joints."""
    active = set(robot.joint_names)
    fixed, grew = {robot.base_link}, True
    while grew:
        grew = False
        for joint in robot.joints:
            if joint.parent in fixed and joint.child not in fixed and joint.name not in active:
                fixed.add(joint.child)
                grew = True
    return fixed


def _random_q(robot: RobotConfig, n: int, seed: int) -> torch.Tensor:
    low, high = robot.joint_limits.position.to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(n, robot.dof, generator=gen, dtype=torch.float64)


def _robot_data(name: str) -> tuple[dict, str]:
    path = resolve_config_file("robot", name)
    return yaml.safe_load(path.read_text()), str(path.parent)


@pytest.mark.parametrize("robot_name", ARMS)
@pytest.mark.parametrize("support", list(SUPPORTS))
def test_retract_is_valid_on_a_support(robot_name, support):
    checker = RobotWorld.from_config(robot_name, _world(support), tensor_args=TA)
    q = checker.robot_config.retract_config.to(torch.float64)[None]
    assert bool(checker.validate(q)[0])
    # the base really touches the support: with its spheres it would be "in collision"
    spheres = checker.get_link_spheres(q)[0]
    pose, dims = SUPPORTS[support]
    depth = box_sdf(spheres[:, :3], pose, dims) - spheres[:, 3]
    assert depth.min() < 0.0


@pytest.mark.parametrize("robot_name", ARMS)
def test_world_distance_is_that_of_the_moving_links(robot_name):
    checker = RobotWorld.from_config(robot_name, _world("table"), tensor_args=TA)
    robot = checker.robot_config
    fixed = _fixed_links(robot)
    assert robot.base_link in fixed
    moving = torch.tensor([link not in fixed for link in checker.kinematics.sphere_link_names])
    assert 0 < int(moving.sum()) < len(moving)
    q = _random_q(robot, 400, seed=3)
    spheres = checker.get_link_spheres(q)
    pose, dims = SUPPORTS["table"]
    reference = (box_sdf(spheres[..., :3], pose, dims) - spheres[..., 3])[:, moving].amin(-1)
    ours = checker.collision_distance(q)
    np.testing.assert_allclose(ours.numpy(), reference.numpy(), atol=1e-6)
    # both outcomes occur: arms reach below the table top in some samples
    assert (reference < 0).any() and (reference > 0).any()
    clear = reference >= 0
    own_ok = checker.self_collision_distance(q) >= 0
    limits_ok = checker.in_limits(q)
    np.testing.assert_array_equal(checker.validate(q).numpy(), (clear & own_ok & limits_ok).numpy())


@pytest.mark.parametrize("robot_name", ARMS)
def test_robot_file_option_includes_the_fixed_links(robot_name):
    data, base_dir = _robot_data(robot_name)
    data = copy.deepcopy(data)
    data["world_collision_fixed_links"] = True
    robot = RobotConfig.from_dict(data, base_dir=base_dir, tensor_args=TA)
    checker = RobotWorld.from_config(robot, _world("table"), tensor_args=TA)
    default = RobotWorld.from_config(robot_name, _world("table"), tensor_args=TA)
    q = _random_q(robot, 50, seed=4)
    spheres = checker.get_link_spheres(q)
    pose, dims = SUPPORTS["table"]
    reference = (box_sdf(spheres[..., :3], pose, dims) - spheres[..., 3]).amin(-1)
    np.testing.assert_allclose(checker.collision_distance(q).numpy(), reference.numpy(), atol=1e-6)
    retract = robot.retract_config.to(torch.float64)[None]
    assert not bool(checker.validate(retract)[0])
    # self-collision keeps the base's spheres either way
    np.testing.assert_allclose(
        checker.self_collision_distance(q).numpy(), default.self_collision_distance(q).numpy()
    )
    assert RobotConfig.from_dict(
        robot.to_dict(), base_dir=base_dir, tensor_args=TA
    ).collision.world_collision_fixed_links


def test_self_collision_still_sees_the_base():
    checker = RobotWorld.from_config("franka", None, tensor_args=TA)
    names = checker.kinematics.sphere_link_names
    pairs = checker.kinematics.self_collision_pairs
    base_rows = {i for i, n in enumerate(names) if n == "panda_link0"}
    assert any(int(i) in base_rows or int(j) in base_rows for i, j in pairs)


def test_option_must_be_a_boolean():
    data, base_dir = _robot_data("franka")
    data = dict(data, world_collision_fixed_links="yes")
    with pytest.raises(ConfigError, match="world_collision_fixed_links.*true or false.*'yes'"):
        RobotConfig.from_dict(data, base_dir=base_dir)


def test_world_cost_ignores_the_base_in_the_rollout():
    """The rollout's collision metrics and world cost see the table only through moving links."""
    from curobo_lite.wrap import TrajOptSolver

    solver = TrajOptSolver.from_config(robot="franka", world=_world("table"), num_seeds=2)
    rollout = solver.rollout
    q = solver.robot_config.retract_config[None, None].expand(2, 3, -1).contiguous()
    spheres = rollout.dynamics_model.kinematics.forward(q).link_spheres
    world_distance, _ = rollout.collision_distances(spheres)
    assert (world_distance > 0).all()
    checker = RobotWorld.from_config("franka", _world("table"))
    np.testing.assert_allclose(
        world_distance.numpy(),
        checker.collision_distance(q[:, 0]).numpy(),
        atol=1e-6,
    )
