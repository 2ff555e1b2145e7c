"""MPC's world-collision cost read from the link frames (``PrimitiveCollisionCost.forward_frames``,
the path MPPI's rollouts take) against a dense torch reference: the robot's spheres from forward
kinematics, each obstacle's exact signed distance (``tests/collision_reference.py``, plain
torch) and the smooth hinge summed over spheres and obstacles."""

from __future__ import annotations

import pytest
import torch
from collision_reference import box_sdf, sphere_sdf

from curobo_lite.geom import WorldCollision
from curobo_lite.geom.world import WorldConfig
from curobo_lite.kernels.collision_common import smooth_hinge_torch
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.rollout.cost import PrimitiveCollisionCost
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError

ETA, WEIGHT = 0.04, 5000.0
# the bundled table and block, a ball and a post in the arm's way
WORLD = {
    "cuboid": {
        "table": {"dims": [1.26, 1.4, 0.04], "pose": [0.47, 0.0, -0.02, 1, 0, 0, 0]},
        "block": {
            "dims": [0.06, 0.06, 0.12],
            "pose": [0.55, 0.25, 0.06, 0.9238795, 0.0, 0.0, 0.3826834],
        },
        "post": {"dims": [0.05, 0.05, 0.6], "pose": [0.4, -0.2, 0.3, 0.96, 0.0, 0.28, 0.0]},
    },
    "sphere": {"ball": {"radius": 0.08, "position": [0.35, 0.1, 0.45]}},
}


@pytest.fixture(scope="module")
def setup():
    tensor_args = TensorDeviceType()
    robot = RobotConfig.load("franka")
    kinematics = Kinematics(robot, tensor_args)
    generator = torch.Generator().manual_seed(3)
    lo, hi = robot.joint_limits.position
    near = robot.retract_config + 0.6 * torch.randn(30, 4, robot.dof, generator=generator)
    spread = lo + (hi - lo) * torch.rand(30, 4, robot.dof, generator=generator)
    q = torch.cat((near.clamp(lo, hi), spread)).to(tensor_args.dtype)
    return tensor_args, kinematics, q


def _reference(kinematics: Kinematics, q: torch.Tensor, world: WorldConfig) -> torch.Tensor:
    """``[B, H]``: weight x the smooth hinge of ETA - d summed over obstacles and spheres, ``d``
    each sphere's exact signed distance to each obstacle (dense torch)."""
    spheres = kinematics.forward(q).link_spheres.double()
    centres, radii = spheres[..., :3], spheres[..., 3]
    checked = kinematics.sphere_world_mask & (radii >= 0)
    cost = torch.zeros(radii.shape, dtype=torch.float64)
    for obstacle in world:
        if not obstacle.enabled:
            continue
        if obstacle.kind == "cuboid":
            sdf = box_sdf(centres, list(obstacle.pose), list(obstacle.dims))
        else:
            sdf = sphere_sdf(centres, list(obstacle.pose[:3]), obstacle.radius)
        cost += smooth_hinge_torch(ETA - (sdf - radii), ETA)
    return WEIGHT * torch.where(checked, cost, 0.0).sum(-1)


def _cost(tensor_args, world: WorldConfig, broad_phase: str = "auto") -> PrimitiveCollisionCost:
    cost = PrimitiveCollisionCost.from_dict(
        {"weight": WEIGHT, "activation_distance": ETA}, tensor_args
    )
    cost.attach_world(WorldCollision(world, tensor_args=tensor_args, broad_phase=broad_phase))
    return cost


@pytest.mark.parametrize("broad_phase", ["loop", "bvh", "grid"])
def test_frames_cost_matches_dense_reference(setup, broad_phase, device):
    _, host_kinematics, q = setup
    world = WorldConfig.load(WORLD)
    expected = _reference(host_kinematics, q, world)
    tensor_args = TensorDeviceType(device=device)
    kinematics = Kinematics(host_kinematics.robot_config, tensor_args)
    q = q.to(device)
    cost = _cost(tensor_args, world, broad_phase)
    with torch.no_grad():
        assert cost.reads_frames(kinematics)
        got = cost.forward_frames(kinematics.forward(q, spheres=False), kinematics)
        spheres = cost.forward(kinematics.world_spheres(kinematics.forward(q).link_spheres))
    assert got.shape == expected.shape == (60, 4)
    touching = expected > 0
    # both in and out of contact, and some configurations entirely clear
    assert 0.2 < touching.float().mean() < 0.9
    torch.testing.assert_close(got.double().cpu(), expected, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(got, spheres, rtol=1e-5, atol=1e-3)


def test_frames_cost_follows_moved_obstacles_and_held_spheres(setup):
    tensor_args, kinematics, q = setup
    world = WorldConfig.load(WORLD)
    cost = _cost(tensor_args, world)
    world.get("ball").pose = [0.3, -0.05, 0.6, 1.0, 0.0, 0.0, 0.0]
    cost.world_collision.update_obstacle_pose("ball", world.get("ball").pose)
    robot = RobotConfig.load("franka")
    held = Kinematics(robot, tensor_args)
    # a held box's spheres between the fingers: the hand's group bound must grow with them
    held.set_reserved_spheres("attached_object", torch.tensor([[0.0, 0.0, 0.15, 0.05]]))
    expected = _reference(held, q, world)
    with torch.no_grad():
        got = cost.forward_frames(held.forward(q, spheres=False), held)
    torch.testing.assert_close(got.double(), expected, rtol=1e-4, atol=1e-3)
    assert not torch.equal(expected, _reference(kinematics, q, world))


def test_frames_cost_only_without_gradient_sweep_or_grid(setup):
    tensor_args, kinematics, q = setup
    cost = _cost(tensor_args, WorldConfig.load(WORLD))
    state = kinematics.forward(q, spheres=False)
    assert not cost.reads_frames(kinematics)  # grad mode is on here
    with pytest.raises(InputValueError, match="forward_frames"):
        cost.forward_frames(state, kinematics)
    swept = PrimitiveCollisionCost.from_dict({"use_sweep": True}, tensor_args)
    swept.attach_world(cost.world_collision)
    with torch.no_grad():
        assert cost.reads_frames(kinematics)
        assert not swept.reads_frames(kinematics)
        empty = _cost(tensor_args, WorldConfig())
        assert not empty.reads_frames(kinematics)


def test_rollout_costs_equal_with_frames_and_with_spheres(setup):
    """MPPI's no-gradient rollout (frames) and a rollout with grad mode on (spheres) give the
    same per-step costs, and the no-gradient one computed no spheres."""
    tensor_args = setup[0]
    task = TaskConfig.load("particle_mpc")
    reacher = ArmReacher.from_task(task, "franka", tensor_args)
    reacher.attach_world(WorldConfig.load(WORLD))
    robot = reacher.robot_config
    start = JointState.from_position(robot.retract_config[None].clone())
    goal = Pose.from_list([0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0])
    reacher.update_params(Goal(goal_pose=goal), start)
    actions = 2.0 * torch.randn(50, reacher.dynamics_model.horizon, robot.dof)
    with torch.no_grad():
        assert reacher.needs_spheres() and not reacher.needs_spheres(rollout=True)
        frames = reacher.rollout_fn(actions)
        assert frames.state.kinematics.link_spheres is None
        by_frames = frames.costs.clone()
        collision = reacher.cost_terms["primitive_collision_cost"].clone()
    assert reacher.needs_spheres(rollout=True)
    spheres = reacher.rollout_fn(actions)
    assert collision.gt(0).any()
    torch.testing.assert_close(
        reacher.cost_terms["primitive_collision_cost"], collision, rtol=1e-5, atol=1e-3
    )
    torch.testing.assert_close(spheres.costs, by_frames, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("rows", [(7, 3), (60, 3)])
def test_frames_cost_on_batches_not_a_multiple_of_a_thread_s_rows(setup, rows):
    """A CPU thread takes several configurations: a last, partial block (and a batch smaller
    than one block) is computed and nothing is written past the end."""
    tensor_args, kinematics, q = setup
    q = q[: rows[0], : rows[1]].contiguous()
    world = WorldConfig.load(WORLD)
    cost = _cost(tensor_args, world)
    with torch.no_grad():
        got = cost.forward_frames(kinematics.forward(q, spheres=False), kinematics)
    expected = _reference(kinematics, q, world)
    assert got.shape == rows and expected.gt(0).any()
    torch.testing.assert_close(got.double(), expected, rtol=1e-4, atol=1e-3)
