"""MotionBenchMaker-style scenes and grasp problems (curobo_lite.scenes) and the judge of
benchmarks/mbm.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot.joints import link_poses
from curobo_lite.scenes import FAMILIES, ProblemGenerator, family_rng, sample_scene
from curobo_lite.scenes.families import STAND_DIMS, STAND_POSE, TIP_OFFSET, matrix_from_quat
from curobo_lite.wrap import RobotWorld

pytest.importorskip("coal")  # the exact (mesh) checks

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def generator() -> ProblemGenerator:
    return ProblemGenerator()


@pytest.mark.parametrize("family", list(FAMILIES))
def test_scene_is_deterministic_and_well_formed(family: str) -> None:
    a = sample_scene(family, family_rng(family, 3, 7))
    b = sample_scene(family, family_rng(family, 3, 7))
    c = sample_scene(family, family_rng(family, 3, 8))
    assert a.world.to_dict() == b.world.to_dict() and a.grasps == b.grasps
    assert a.world.to_dict() != c.world.to_dict()
    # round trip through the cuRobo world layout; unique names; obstacle kinds used
    loaded = WorldConfig.from_dict(a.world.to_dict())
    assert loaded.names == a.world.names and len(set(loaded.names)) == len(loaded.names)
    assert set(a.world.to_dict()) <= {"cuboid", "cylinder"}
    # the stand under the robot: top face at z = 0, the base origin inside its footprint
    stand = a.world.get("stand")
    assert stand.dims == list(STAND_DIMS) and stand.pose == list(STAND_POSE)
    top = stand.pose[2] + 0.5 * stand.dims[2]
    assert top == pytest.approx(0.0)
    assert abs(stand.pose[0]) < 0.5 * stand.dims[0] and abs(stand.pose[1]) < 0.5 * stand.dims[1]
    # nothing else reaches into the column above the stand near the base
    for obstacle in a.world:
        if obstacle.name != "stand":
            centre = np.asarray(obstacle.pose[:3])
            assert np.hypot(*centre[:2]) > 0.3, obstacle.name
    # grasp candidates: of objects in the world, unit quaternions, pads' centre near the object
    assert a.grasps
    for name, poses in a.grasps.items():
        centre = np.asarray(a.world.get(name).pose[:3])
        assert len(poses) >= 4
        for pose in poses:
            assert np.linalg.norm(pose[3:]) == pytest.approx(1.0)
            tip = np.asarray(pose[:3]) + TIP_OFFSET * matrix_from_quat(pose[3:])[:, 2]
            assert np.linalg.norm(tip - centre) < 0.05


def test_generator_is_deterministic(generator: ProblemGenerator) -> None:
    a = generator.make("cage", 0, 0)
    b = generator.make("cage", 0, 0)
    assert a.to_dict() == b.to_dict()


def _finger_tips(generator: ProblemGenerator, q: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Pad centres of panda_leftfinger and panda_rightfinger (base frame) at ``q [D]``, from the
    robot file's joint tree (the fingers at their locked opening)."""
    config = generator.robot_config
    values = dict(zip(config.joint_names, q.tolist(), strict=True)) | dict(config.lock_joints)
    frames = link_poses(config.joints, config.base_link, values)
    tips = []
    for link in ("panda_leftfinger", "panda_rightfinger"):
        t = frames[link]
        # the pads' centre: TIP_OFFSET along the hand's z from the hand, i.e. 0.045 m along the
        # finger's z from its frame (0.0584 m along the hand's z)
        tips.append(t[:3, 3] + (TIP_OFFSET - 0.0584) * t[:3, 2])
    return tips[0], tips[1]


@pytest.mark.parametrize(("family", "index"), [("cage", 0), ("bookshelf_small", 3)])
def test_grasp_goal_straddles_the_target_on_meshes(
    generator: ProblemGenerator, family: str, index: int
) -> None:
    problem = generator.make(family, 0, index)
    assert problem.check == "mesh"
    q = torch.tensor(problem.goal_config, dtype=torch.float32)
    # the goal configuration reaches the goal pose
    state = generator.checker.kinematics.forward(q[None])
    assert torch.allclose(state.ee_position[0], torch.tensor(problem.goal_pose[:3]), atol=5e-3)
    # exact check in the full world (the target included)
    full = RobotWorld.from_config("franka", problem.world)
    assert bool(full.validate_mesh(q[None])[0])
    assert bool(full.validate_mesh(torch.tensor([problem.start]))[0])
    # the target object sits between the fingers ...
    target = problem.world.get(problem.target)
    centre = np.asarray(target.pose[:3])
    left, right = _finger_tips(generator, q)
    axis = right - left
    gap = np.linalg.norm(axis)
    t = float(np.dot(centre - left, axis) / gap**2)
    lateral = np.linalg.norm(centre - (left + t * axis))
    width = 2 * target.radius if hasattr(target, "radius") else target.dims[0]
    height = target.height if hasattr(target, "height") else target.dims[2]
    assert gap > width + 0.006, (gap, width)
    assert 0.0 < t < 1.0 and abs(t - 0.5) * gap < 0.5 * (gap - width)
    assert lateral <= 0.5 * height
    # ... and the robot's meshes keep >= 3 mm from it
    only_target = WorldConfig.from_dict({target.kind: {target.name: target.to_dict()}})
    alone = RobotWorld.from_config("franka", only_target)
    assert float(alone.mesh_distance(q[None])[0]) >= 3e-3


def _load_benchmark():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(
            "mbm_benchmark", REPO / "benchmarks" / "mbm.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def test_judge_rejects_a_path_through_a_wall_between_waypoints() -> None:
    bench = _load_benchmark()
    # a thin wall in the plane y = 0 in front of the robot; joint 1 swings the arm across it
    wall = {"cuboid": {"wall": {"dims": [0.3, 0.02, 0.4], "pose": [0.45, 0.0, 0.45, 1, 0, 0, 0]}}}
    checker = RobotWorld.from_config("franka", wall)
    a = checker.robot_config.retract_config.clone()
    b = a.clone()
    a[0], b[0] = -1.0, 1.0
    path = torch.stack([a, b])
    assert bool(checker.validate_mesh(path).all())  # both waypoints are clear ...
    goal = checker.kinematics.forward(b[None])
    goal_pose = goal.ee_position[0].tolist() + goal.ee_quaternion[0].tolist()
    verdict = bench.judge(checker, path, goal_pose)
    assert verdict["reached"] and not verdict["mesh_valid"] and not verdict["success"]
    # ... and the same swing with the wall out of the way passes
    checker.update_world(
        {"cuboid": {"wall": {"dims": [0.3, 0.02, 0.4], "pose": [0.45, 0.0, 1.6, 1, 0, 0, 0]}}}
    )
    assert bench.judge(checker, path, goal_pose)["success"]


def _transform(position, quaternion_xyzw) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(quaternion_xyzw).as_matrix()
    m[:3, 3] = position
    return m


def test_cage_grasp_is_motion_bench_makers_query_and_its_world_shift_is_uniform() -> None:
    """The cage's first grasp is MBM's cage goal, composed here from their files' numbers with
    scipy: cube pose * query offset (``queries_cage.yaml``) * inverse ee_offset
    (``cage_panda.yaml``, to panda_link8) * panda_hand_joint (robowflex's URDF: -pi/4 about
    z), moved by half the cube's size difference from MBM's 0.07 m (the pads stay 9 mm below
    the top). The world shift is uniform within +-0.1 m (MBM's released problems), so no draw
    leaves that box, unlike the truncated Gaussian of the other families."""
    from scipy.spatial.transform import Rotation

    offset = _transform([0.0, 0.0, 0.21], [0.0, 0.707, 0.0, 0.707])
    ee_offset = _transform([0.13, -0.13, 0.11], [0.0, 0.0, 0.924, 0.383])
    hand_joint = _transform([0.0, 0.0, 0.0], Rotation.from_euler("z", -np.pi / 4).as_quat())
    shifts = []
    for index in range(40):
        scene = sample_scene("cage", family_rng("cage", 0, index))
        cube = scene.world.get("cube_1")
        w, x, y, z = cube.pose[3:]
        hand = _transform(cube.pose[:3], [x, y, z, w]) @ offset @ np.linalg.inv(ee_offset)
        hand = hand @ hand_joint
        hand[2, 3] += 0.5 * (cube.dims[2] - 0.07)
        grasp = np.asarray(scene.grasps["cube_1"][0])
        assert np.linalg.norm(grasp[:3] - hand[:3, 3]) < 1e-3
        gw, gx, gy, gz = grasp[3:]
        turn = Rotation.from_quat([gx, gy, gz, gw]).inv() * Rotation.from_matrix(hand[:3, :3])
        assert turn.magnitude() < 2e-3
        # the world shift: where the cage's floor is against where the yaw alone puts it
        yaw = Rotation.from_quat([x, y, z, w]).as_matrix()
        nominal = yaw @ (np.array([0.8, 0.0, 0.44]) + np.array([0.0, 0.0, -0.18]))
        shifts.append(np.asarray(scene.world.get("base").pose[:3]) - nominal)
    shifts = np.abs(np.asarray(shifts))
    assert shifts.max() <= 0.1 + 1e-9
    assert shifts.max() > 0.09  # spread to the bound, not a narrow draw
