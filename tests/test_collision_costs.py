"""Collision cost terms and the world-aware rollout, against dense torch references."""

from __future__ import annotations

import pytest
import torch
from collision_reference import box_sdf, sphere_sdf

from curobo_lite.geom import SelfCollisionModel, WorldCollision, WorldConfig
from curobo_lite.kernels.collision_common import smooth_hinge_torch
from curobo_lite.rollout import ArmReacher, ArmReacherConfig, Goal
from curobo_lite.rollout.cost import (
    PrimitiveCollisionCost,
    SelfCollisionCost,
    build_costs,
)
from curobo_lite.types import JointState, Pose, TensorDeviceType

BOX = {"pose": [0.4, 0.1, 0.2, 0.9238795, 0.0, 0.3826834, 0.0], "dims": [0.3, 0.2, 0.1]}
BALL = {"pose": [-0.2, 0.3, 0.5, 1.0, 0.0, 0.0, 0.0], "radius": 0.15}
WORLD = {"cuboid": {"box": BOX}, "sphere": {"ball": BALL}}


def _spheres(batch: int, horizon: int, n: int, dtype, device, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    centers = torch.rand(batch, horizon, n, 3, generator=gen, dtype=dtype) * 1.2 - 0.4
    centers[..., 2] += 0.3
    radii = 0.02 + 0.08 * torch.rand(batch, horizon, n, 1, generator=gen, dtype=dtype)
    return torch.cat((centers, radii), -1).to(device)


def _reference_world_cost(spheres: torch.Tensor, eta: float) -> torch.Tensor:
    """``[B, H]``: sum over spheres and both obstacles of the smooth hinge."""
    centers, radii = spheres[..., :3], spheres[..., 3]
    d_box = box_sdf(centers, BOX["pose"], BOX["dims"]) - radii
    d_ball = sphere_sdf(centers, BALL["pose"][:3], BALL["radius"]) - radii
    penalty = smooth_hinge_torch(eta - d_box, eta) + smooth_hinge_torch(eta - d_ball, eta)
    return penalty.sum(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_primitive_collision_cost_matches_dense_reference(device, dtype):
    ta = TensorDeviceType(device=device, dtype=dtype)
    world = WorldCollision(WorldConfig.from_dict(WORLD), ta)
    cost = PrimitiveCollisionCost.from_dict({"weight": 7.0, "activation_distance": 0.05}, ta)
    cost.attach_world(world)
    spheres = _spheres(3, 5, 11, dtype, device).requires_grad_(True)
    value = cost.forward(spheres)
    assert value.shape == (3, 5)
    reference_input = spheres.detach().clone().requires_grad_(True)
    reference = 7.0 * _reference_world_cost(reference_input, 0.05)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(value, reference, rtol=tol, atol=tol)
    assert float(reference.detach().abs().sum()) > 0.1, "the sample must touch the obstacles"
    weights = torch.rand(3, 5, dtype=dtype, device=device)
    (value * weights).sum().backward()
    (reference * weights).sum().backward()
    torch.testing.assert_close(spheres.grad, reference_input.grad, rtol=1e-4, atol=1e-4)


def test_collision_costs_are_zero_without_world_or_pairs():
    ta = TensorDeviceType()
    spheres = _spheres(2, 3, 4, torch.float32, "cpu")
    world_cost = PrimitiveCollisionCost.from_dict({}, ta)
    self_cost = SelfCollisionCost.from_dict({}, ta)
    assert torch.equal(world_cost.forward(spheres), torch.zeros(2, 3))
    assert torch.equal(self_cost.forward(spheres), torch.zeros(2, 3))


def test_self_collision_cost_matches_brute_force(device):
    ta = TensorDeviceType(device=device, dtype=torch.float64)
    spheres = _spheres(2, 3, 6, torch.float64, device, seed=3) * 0.3
    spheres[..., 3] = 0.05
    pairs = torch.tensor([[0, 1], [0, 5], [2, 3], [1, 4], [3, 5]], device=device)
    buffer = torch.tensor([0.0, 0.01, 0.02, 0.0, 0.005], dtype=torch.float64, device=device)
    cost = SelfCollisionCost.from_dict({"weight": 3.0, "activation_distance": 0.02}, ta)
    cost.attach_robot(SelfCollisionModel(pairs, buffer, num_spheres=6))
    value = cost.forward(spheres)
    centers, radii = spheres[..., :3], spheres[..., 3]
    expected = torch.zeros(2, 3, dtype=torch.float64, device=device)
    for (i, j), extra in zip(pairs.tolist(), buffer.tolist()):
        d = (centers[..., i, :] - centers[..., j, :]).norm(dim=-1) - radii[..., i]
        d = d - radii[..., j] - extra
        expected += smooth_hinge_torch(0.02 - d, 0.02)
    torch.testing.assert_close(value, 3.0 * expected, rtol=1e-10, atol=1e-10)
    assert float(expected.sum()) > 0.0, "the sample must contain touching pairs"


@pytest.mark.parametrize(
    "section, message",
    [
        ({"activation_distance": -0.1}, "activation_distance"),
        ({"sweep_spacing": 0.0}, "sweep_spacing"),
        ({"max_sweep_samples": 0}, "max_sweep_samples"),
        ({"use_sweep": "yes"}, "use_sweep"),
        ({"radius": 1.0}, "unknown key"),
    ],
)
def test_primitive_collision_cost_rejects_bad_options(section, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build_costs({"primitive_collision_cost": section})


def test_cost_rejects_bad_sphere_tensor():
    cost = PrimitiveCollisionCost.from_dict({}, TensorDeviceType())
    with pytest.raises(ValueError, match=r"\[B, H, N, 4\]"):
        cost.forward(torch.zeros(2, 3, 4))
    with pytest.raises(TypeError, match="dtype"):
        cost.forward(torch.zeros(2, 3, 4, 4, dtype=torch.float64))


def _reacher(world) -> ArmReacher:
    task = {
        "model": {"horizon": 8, "control_space": "POSITION"},
        "cost": {
            "pose_cost": {"terminal_weight": [1.0, 1.0]},
            "primitive_collision_cost": {"weight": 100.0, "activation_distance": 0.02},
            "self_collision_cost": {"weight": 100.0},
        },
    }
    from curobo_lite.rollout import TaskConfig

    config = ArmReacherConfig.from_task(TaskConfig.from_dict(task), "franka")
    return ArmReacher(config, world)


def test_arm_reacher_collision_terms_follow_the_world():
    table = {"cuboid": {"table": {"dims": [1.2, 1.2, 0.05], "pose": [0.85, 0, 0.2, 1, 0, 0, 0]}}}
    reacher = _reacher(WorldConfig.from_dict(table))
    start = JointState.from_position(reacher.robot_config.retract_config[None].clone())
    goal = Goal(goal_pose=Pose.from_list([0.4, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0]))
    reacher.update_params(goal, start)
    retract = reacher.robot_config.retract_config
    down = retract.clone()
    down[1] += 0.9  # shoulder forward: the hand goes down into the table top at z = 0.2
    act = torch.stack((retract.expand(8, -1), down.expand(8, -1)))
    result = reacher.rollout_fn(act)
    terms = reacher.cost_terms
    assert float(terms["primitive_collision_cost"][0].sum()) == 0.0
    assert float(terms["primitive_collision_cost"][1].sum()) > 0.0
    metrics = reacher.convergence(result.state)
    assert bool(metrics.collision_free[0]) and not bool(metrics.collision_free[1])
    assert float(metrics.world_distance[1]) < 0.0
    # moving the table away in place (shared WorldCollision) clears the collision
    reacher.world_collision.update_obstacle_pose("table", [0.85, 0.0, -0.5, 1, 0, 0, 0])
    reacher.rollout_fn(act)
    assert float(reacher.cost_terms["primitive_collision_cost"].sum()) == 0.0
    # update_world replaces the obstacles
    reacher.update_world(WorldConfig.from_dict(table))
    reacher.rollout_fn(act)
    assert float(reacher.cost_terms["primitive_collision_cost"][1].sum()) > 0.0


@pytest.mark.parametrize("swept", [False, True])
def test_collision_distances_with_a_check_range_are_exact_below_it(swept):
    table = {"cuboid": {"table": {"dims": [1.2, 1.2, 0.05], "pose": [0.85, 0, 0.2, 1, 0, 0, 0]}}}
    reacher = _reacher(WorldConfig.from_dict(table))
    robot = reacher.robot_config
    gen = torch.Generator().manual_seed(3)
    ends = robot.retract_config + 0.6 * torch.randn(2, 32, 7, generator=gen)
    t = torch.linspace(0, 1, 8)[None, :, None]
    q = ends[0][:, None] + t * (ends[1] - ends[0])[:, None]  # [32, 8, 7]
    spheres = reacher.dynamics_model.kinematics.forward(q.reshape(-1, 7)).link_spheres
    spheres = spheres.reshape(32, 8, -1, 4)
    world_full, self_full = reacher.collision_distances(spheres, swept)
    check_range = 0.02
    world, self_distance = reacher.collision_distances(spheres, swept, check_range)
    assert bool((world_full < check_range).any()) and bool((world_full > check_range).any())
    assert bool((self_full < check_range).any()) and bool((self_full > check_range).any())
    torch.testing.assert_close(world, world_full.clamp(max=check_range))
    near = self_full < check_range
    torch.testing.assert_close(self_distance[near], self_full[near])
    assert bool((self_distance[~near] >= check_range).all())
