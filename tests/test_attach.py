"""Held objects (issue 31): ``attach_objects_to_robot`` / ``detach_object_from_robot`` on
RobotWorld and MotionGen, judged against the object's true shape: surface samples (trimesh)
inside the fitted spheres, coal distances of the true box to the obstacles, and a numpy URDF
forward kinematics that carries the box along a plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import trimesh
from curobo_reference import UrdfFK, matrix_to_quat_wxyz

from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap import MotionGen, RobotWorld

coal = pytest.importorskip("coal")

URDF = Path(__file__).resolve().parents[1] / "configs" / "robot" / "franka_collision.urdf"
FINGERS = {"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04}
#: a box between the open fingers: 4 x 4 x 10 cm, centred on the finger pads (10.34 cm along
#: the hand's z), long axis along the hand's z
BOX_DIMS = [0.04, 0.04, 0.10]
BOX_IN_HAND = np.eye(4)
BOX_IN_HAND[2, 3] = 0.1034
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}


def _hand(q: torch.Tensor, names: list[str]) -> np.ndarray:
    values = dict(zip(names, q.tolist()))
    values.update(FINGERS)
    return UrdfFK(URDF).link_transforms("panda_link0", values)["panda_hand"]


def _pose_list(matrix: np.ndarray) -> list[float]:
    return [*matrix[:3, 3].tolist(), *matrix_to_quat_wxyz(matrix).tolist()]


def _world(q: torch.Tensor, names: list[str], extra: dict | None = None) -> dict:
    """The box between the fingers at ``q``, and ``extra`` cuboids."""
    box = {"dims": BOX_DIMS, "pose": _pose_list(_hand(q, names) @ BOX_IN_HAND)}
    return {"cuboid": {"box": box, **(extra or {})}}


def _coal_box(dims, matrix: np.ndarray):
    return coal.Box(*map(float, dims)), coal.Transform3s(matrix[:3, :3], matrix[:3, 3])


def _coal_distance(a, b) -> float:
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    result = coal.DistanceResult()
    coal.distance(a[0], a[1], b[0], b[1], request, result)
    return result.min_distance


def _wall_matrix() -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, 3] = WALL["pose"][:3]
    return matrix


@pytest.fixture(scope="module")
def retract() -> tuple[torch.Tensor, list[str]]:
    robot = RobotWorld.from_config("franka", None).robot_config
    return robot.retract_config[None].clone(), list(robot.joint_names)


def test_spheres_cover_the_object_and_the_grasp_becomes_valid(retract):
    q, names = retract
    world = RobotWorld.from_config("franka", _world(q[0], names))
    assert not bool(world.validate(q)[0])  # the box sits between the fingers: "in collision"
    held = world.attach_objects_to_robot(JointState.from_position(q), ["box"])
    assert bool(world.validate(q)[0])
    assert held.spheres.shape[0] <= 12
    # every point of the box's surface (trimesh samples in the base frame) is in some sphere
    spheres = world.get_link_spheres(q)[0].double()
    begin, end = world.kinematics.reserved_spheres("attached_object")
    mine = spheres[begin:end][spheres[begin:end, 3] > 0]
    surface = trimesh.creation.box(extents=BOX_DIMS)
    surface.apply_transform(_hand(q[0], names) @ BOX_IN_HAND)
    points = torch.as_tensor(surface.sample(2000, seed=0))
    gap = ((points[:, None] - mine[None, :, :3]).norm(dim=-1) - mine[None, :, 3]).amin(1)
    assert float(gap.max()) <= 1e-9


def test_world_checks_see_the_held_object_no_closer_than_coal(retract):
    """A plate is raised under the held box: the spheres' clearance never exceeds coal's
    distance from the true box to the plate, and the box touching it makes ``q`` invalid
    while the same robot without the box stays valid."""
    q, names = retract
    hand = _hand(q[0], names)
    box_bottom = (hand @ BOX_IN_HAND)[2, 3] - 0.5 * BOX_DIMS[2]
    for gap in (0.03, 0.005, -0.004):
        top = box_bottom - gap
        plate = {"dims": [0.3, 0.3, 0.02], "pose": [hand[0, 3], hand[1, 3], top - 0.01, 1, 0, 0, 0]}
        world = RobotWorld.from_config("franka", _world(q[0], names, {"plate": plate}))
        alone = bool(world.validate(q)[0]) or float(world.collision_distance(q)[0]) < 0
        world.attach_objects_to_robot(q, ["box"])
        plate_matrix = np.eye(4)
        plate_matrix[:3, 3] = plate["pose"][:3]
        true = _coal_distance(
            _coal_box(BOX_DIMS, hand @ BOX_IN_HAND), _coal_box(plate["dims"], plate_matrix)
        )
        assert true == pytest.approx(gap, abs=1e-6)
        spheres = world.collision_distance(q)
        assert float(spheres[0]) <= true + 1e-6
        if gap < 0:
            assert not bool(world.validate(q)[0])
        world.detach_object_from_robot()
        assert alone or gap >= 0


def test_self_collision_pairs_skip_only_the_grasping_links(retract):
    world = RobotWorld.from_config("franka", None)
    names = world.kinematics.sphere_link_names
    pairs = world.kinematics.self_collision_pairs
    partners = {names[int(j)] for i, j in pairs.tolist() if names[int(i)] == "attached_object"}
    partners |= {names[int(i)] for i, j in pairs.tolist() if names[int(j)] == "attached_object"}
    assert partners.isdisjoint({"panda_hand", "panda_leftfinger", "panda_rightfinger"})
    assert {"panda_link0", "panda_link2", "panda_link4", "panda_link5"} <= partners


def test_detach_restores_the_world_and_errors_change_nothing(retract):
    q, names = retract
    world = RobotWorld.from_config("franka", _world(q[0], names))
    generator = torch.Generator().manual_seed(0)
    low, high = world.robot_config.joint_limits.position
    samples = low + (high - low) * torch.rand(64, 7, generator=generator, dtype=low.dtype)
    before = world.collision_distance(samples)
    world.attach_objects_to_robot(q, ["box"])
    with pytest.raises(InputValueError, match="object_names"):
        world.attach_objects_to_robot(q, ["no such box"])
    with pytest.raises(InputValueError, match="link_name"):
        world.attach_objects_to_robot(q, ["box"], link_name="panda_link3")
    assert "attached_object" in world.attached  # still held after the refused calls
    world.detach_object_from_robot()
    torch.testing.assert_close(world.collision_distance(samples), before)
    assert not world.attached


def test_plan_while_holding_keeps_the_true_box_clear_of_the_wall(retract):
    """MotionGen holds the box and plans behind the wall: along the interpolated plan, the
    true box (carried by the numpy FK of the hand) stays clear of the wall by coal; after
    detaching, the box is an obstacle again."""
    q, names = retract
    motion_gen = MotionGen.from_config("franka", _world(q[0], names, {"wall": WALL}))
    start = JointState.from_position(q)
    motion_gen.attach_objects_to_robot(start, ["box"])
    goal = Pose.from_list([0.42, -0.35, 0.45, 0.0, 1.0, 0.0, 0.0])
    result = motion_gen.plan_single(start, goal)
    assert result.success, result
    plan = result.interpolated_plan.position
    t = torch.linspace(0.0, 1.0, 4)[:-1]
    dense = (plan[:-1, None] + t[None, :, None] * (plan[1:] - plan[:-1])[:, None]).reshape(-1, 7)
    wall = _coal_box(WALL["dims"], _wall_matrix())
    clearance = min(
        _coal_distance(_coal_box(BOX_DIMS, _hand(row, names) @ BOX_IN_HAND), wall)
        for row in dense[::2]
    )
    assert clearance >= -1e-3
    motion_gen.detach_object_from_robot()
    assert not bool(motion_gen.checker.validate(q)[0])  # the box is back between the fingers


def test_mpc_holds_the_object_in_every_copy_of_the_spheres(retract):
    """MpcSolver (no RobotWorld of its own) holds the box in its world and in every Kinematics
    it has (its rollout's among them): the reserved spheres equal the RobotWorld's fit, and
    detaching disables them and returns the box to the world."""
    from curobo_lite.wrap import MpcSolver
    from curobo_lite.wrap.base.attach import solver_kinematics

    q, names = retract
    world = _world(q[0], names)
    mpc = MpcSolver.from_config(robot="franka", world=world)
    checker = RobotWorld.from_config("franka", world)
    expected = checker.attach_objects_to_robot(q, ["box"]).spheres
    held = mpc.attach_objects_to_robot(JointState.from_position(q), ["box"])
    torch.testing.assert_close(held.spheres, expected)
    copies = solver_kinematics(mpc, depth=8)
    assert len(copies) >= 2
    for kin in copies:
        begin, end = kin.reserved_spheres("attached_object")
        rows = kin.forward(q).link_spheres[0, begin:end]
        torch.testing.assert_close(
            rows, checker.get_link_spheres(q)[0, begin:end].to(rows.dtype), atol=1e-5, rtol=0
        )
    assert not mpc.world_collision.world.get("box").enabled
    mpc.detach_object_from_robot()
    assert mpc.world_collision.world.get("box").enabled
    for kin in copies:
        begin, end = kin.reserved_spheres("attached_object")
        assert bool((kin.forward(q).link_spheres[0, begin:end, 3] < 0).all())
