"""Exact collision checks on the robot's collision meshes (coal): closed-form distances of
primitives, an independent coal check of the Franka (yourdfpy forward kinematics, coal objects
built here from the STL files), the swept check between waypoints, MotionGen's exact check and
the robot file's ``collision_geometry`` key."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch

coal = pytest.importorskip("coal")
trimesh = pytest.importorskip("trimesh")
yourdfpy = pytest.importorskip("yourdfpy")

from curobo_lite.config_files import read_config_file  # noqa: E402
from curobo_lite.geom import Cuboid, Sphere, WorldConfig  # noqa: E402
from curobo_lite.geom.exact_collision import ExactCollisionChecker, LinkShape  # noqa: E402
from curobo_lite.robot import RobotConfig  # noqa: E402
from curobo_lite.robot.config import resolve_robot_file  # noqa: E402
from curobo_lite.types import TensorDeviceType  # noqa: E402
from curobo_lite.wrap import RobotWorld  # noqa: E402

F64 = TensorDeviceType(dtype=torch.float64)
FRANKA_URDF = Path(resolve_robot_file("franka")).parent / "franka_collision.urdf"


def _quat_z(angle: float) -> list[float]:
    return [math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]


def _box_sdf(point: np.ndarray, half: np.ndarray) -> float:
    """Exact signed distance from ``point`` to an origin-centred box (negative inside)."""
    q = np.abs(point) - half
    return float(np.linalg.norm(np.maximum(q, 0.0)) + min(q.max(), 0.0))


def _rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# --- closed form -------------------------------------------------------------------------------


def test_box_link_vs_sphere_obstacle_matches_closed_form():
    half = np.array([0.1, 0.15, 0.2])
    angle, origin = 0.5, np.array([0.3, -0.2, 0.4])
    rotation = _rot_z(angle)
    # sphere centres in the link frame: face region, edge, corner, inside (penetrating)
    local = [
        [0.25, 0.0, 0.0],
        [0.0, 0.0, -0.32],
        [0.18, 0.22, 0.0],
        [0.16, 0.2, 0.27],
        [0.07, 0.0, 0.0],
        [0.0, 0.1, 0.05],
    ]
    radius = 0.05
    world = WorldConfig(
        sphere=[
            Sphere(f"ball{i}", radius=radius, pose=[*(rotation @ p + origin), 1.0, 0.0, 0.0, 0.0])
            for i, p in enumerate(local)
        ]
    )
    pose = (np.array([[origin]]), np.array([[_quat_z(angle)]]))
    for i, p in enumerate(local):
        one = WorldConfig(sphere=[world.sphere[i]])
        checker = ExactCollisionChecker({"link": [LinkShape.box(2 * half)]}, one)
        result = checker.distance(*pose)
        expected = _box_sdf(np.array(p), half) - radius
        assert result.distance[0] == pytest.approx(expected, abs=1e-6), (p, expected)
        assert (result.link[0], result.obstacle[0]) == ("link", f"ball{i}")
    # all at once: the minimum and the pair that gives it
    checker = ExactCollisionChecker({"link": [LinkShape.box(2 * half)]}, world)
    result = checker.distance(*pose)
    expected = [_box_sdf(np.array(p), half) - radius for p in local]
    assert result.distance[0] == pytest.approx(min(expected), abs=1e-6)
    assert result.obstacle[0] == f"ball{int(np.argmin(expected))}"


def test_box_vs_box_distance_and_penetration_depth():
    link = {"link": [LinkShape.box([0.2, 0.2, 0.2])]}
    identity = np.array([[[1.0, 0.0, 0.0, 0.0]]])
    zero = np.zeros((1, 1, 3))
    for dx in (0.4, 0.2, 0.16, 0.1, 0.05):
        world = WorldConfig(
            cuboid=[Cuboid("slab", dims=[0.1, 0.4, 0.4], pose=[dx, 0.0, 0.0, 1, 0, 0, 0])]
        )
        d = ExactCollisionChecker(link, world).distance(zero, identity).distance[0]
        # separated: the gap; overlapping: the x overlap (y and z overlap by 0.2 or more)
        assert d == pytest.approx(dx - 0.15, abs=1e-6), dx
    # corner to corner: the gap vector's length; the link box turned by 90 deg is the same box
    world = WorldConfig(cuboid=[Cuboid("cube", dims=[0.1] * 3, pose=[0.3, 0.3, 0.0, 1, 0, 0, 0])])
    for quat in ([1.0, 0.0, 0.0, 0.0], _quat_z(math.pi / 2)):
        d = ExactCollisionChecker(link, world).distance(zero, np.array([[quat]])).distance[0]
        assert d == pytest.approx(math.sqrt(2) * 0.15, abs=1e-6)


def _l_prism() -> trimesh.Trimesh:
    """A watertight L-shaped prism (concave), 0..2 x 0..2 in xy with a 1 x 1 notch at
    x, y > 1, z in [0, 1]."""
    polygon = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], dtype=np.float64)
    n = len(polygon)
    vertices = np.concatenate([np.c_[polygon, np.zeros(n)], np.c_[polygon, np.ones(n)]])
    faces = []
    for i in range(1, n - 1):  # fans from vertex 0 (the L is star-shaped from it)
        faces.append([0, i + 1, i])
        faces.append([n, n + i, n + i + 1])
    for i in range(n):
        j = (i + 1) % n
        faces += [[i, j, n + j], [i, n + j, n + i]]
    mesh = trimesh.Trimesh(vertices, np.array(faces), process=True)
    assert mesh.is_watertight and mesh.volume == pytest.approx(3.0)
    return mesh


def test_concave_mesh_separation_and_a_shape_wholly_inside():
    mesh = _l_prism()
    checker = ExactCollisionChecker({"L": [LinkShape.mesh(mesh.vertices, mesh.faces)]})
    assert checker._link_pieces[0].is_bvh  # concave: kept as triangles, not its hull
    pose = (np.zeros((1, 1, 3)), np.array([[[1.0, 0.0, 0.0, 0.0]]]))
    cases = [
        # in the notch: 0.6 m from both inner faces (its convex hull would read 0.04 m)
        ([1.6, 1.6, 0.5], 0.1, 0.6 - 0.1),
        # in the notch, inside the hull (which would read a penetration)
        ([1.5, 1.2, 0.5], 0.1, 0.2 - 0.1),
        # wholly inside the long arm: a negative distance (depth bounded below by the gap)
        ([0.5, 0.5, 0.5], 0.1, None),
        # outside the prism
        ([-0.5, 0.5, 0.5], 0.2, 0.5 - 0.2),
    ]
    for centre, radius, expected in cases:
        world = WorldConfig(sphere=[Sphere("ball", radius=radius, pose=[*centre, 1, 0, 0, 0])])
        checker.update_world(world)
        d = checker.distance(*pose).distance[0]
        if expected is None:
            # 0.4 m to the nearest face minus the radius: coal's surface distance, sign flipped
            assert d == pytest.approx(-(0.5 - 0.1), abs=1e-6)
        else:
            assert d == pytest.approx(expected, abs=1e-6), centre


# --- the Franka against an independent reference ------------------------------------------------


@pytest.fixture(scope="module")
def franka_world() -> RobotWorld:
    world = {
        "cuboid": {
            "table": {"dims": [1.6, 1.6, 0.04], "pose": [0.4, 0.0, -0.02, 1, 0, 0, 0]},
            "block": {"dims": [0.12, 0.2, 0.25], "pose": [0.45, 0.15, 0.125, 1, 0, 0, 0]},
            "shelf": {"dims": [0.4, 0.3, 0.02], "pose": [0.5, -0.3, 0.45, 1, 0, 0, 0]},
        },
        "sphere": {"ball": {"radius": 0.06, "position": [0.35, -0.25, 0.6]}},
        "cylinder": {"can": {"radius": 0.04, "height": 0.2, "pose": [0.6, 0.3, 0.35, 1, 0, 0, 0]}},
        "capsule": {
            "rod": {
                "radius": 0.02,
                "base": [0, 0, 0],
                "tip": [0.3, 0, 0.1],
                "pose": [0.2, 0.35, 0.5, 1, 0, 0, 0],
            }
        },
    }
    return RobotWorld.from_config("franka", world, F64)


def _reference_links() -> tuple[dict, object]:
    """``{link: [(coal geometry, origin [4, 4])]}`` built here from the URDF's STL files and
    boxes (convex hulls of the meshes, as ``coal.Convex`` from trimesh's hull), and the URDF."""
    urdf = yourdfpy.URDF.load(str(FRANKA_URDF), build_scene_graph=True, load_meshes=False)
    links = {}
    for link in urdf.robot.links:
        for collision in link.collisions:
            origin = np.eye(4) if collision.origin is None else np.asarray(collision.origin)
            if collision.geometry.box is not None:
                geometry = coal.Box(*map(float, collision.geometry.box.size))
            else:
                mesh = trimesh.load(str(FRANKA_URDF.parent / collision.geometry.mesh.filename))
                hull = mesh.convex_hull
                points = coal.StdVec_Vec3s()
                for v in hull.vertices:
                    points.append(np.asarray(v, dtype=np.float64))
                triangles = coal.StdVec_Triangle()
                for a, b, c in hull.faces:
                    triangles.append(coal.Triangle(int(a), int(b), int(c)))
                geometry = coal.Convex(points, triangles)
            links.setdefault(link.name, []).append((geometry, origin))
    return links, urdf


def _reference_obstacles(world: WorldConfig) -> list:
    out = []
    for o in world:
        pose = np.eye(4)
        w, x, y, z = o.pose[3:]
        pose[:3, :3] = trimesh.transformations.quaternion_matrix([w, x, y, z])[:3, :3]
        pose[:3, 3] = o.pose[:3]
        if o.kind == "cuboid":
            out.append((o.name, coal.Box(*o.dims), pose))
        elif o.kind == "sphere":
            out.append((o.name, coal.Sphere(o.radius), pose))
        elif o.kind == "cylinder":
            out.append((o.name, coal.Cylinder(o.radius, o.height), pose))
        elif o.kind == "capsule":
            base, tip = np.array(o.base), np.array(o.tip)
            axis = tip - base
            length = float(np.linalg.norm(axis))
            local = np.eye(4)
            local[:3, :3] = trimesh.geometry.align_vectors([0, 0, 1], axis / length)[:3, :3]
            local[:3, 3] = (base + tip) / 2
            out.append((o.name, coal.Capsule(o.radius, length), pose @ local))
    return out


def _reference_distance(links, urdf, obstacles, q: np.ndarray, skip=("panda_link0",)) -> float:
    cfg = {f"panda_joint{i + 1}": float(v) for i, v in enumerate(q)}
    cfg.update({"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04})
    urdf.update_cfg(cfg)
    request = coal.DistanceRequest()
    best = math.inf
    for link, pieces in links.items():
        if link in skip:
            continue
        frame = urdf.get_transform(link, "panda_link0")
        for geometry, origin in pieces:
            placed = frame @ origin
            for _, obstacle, where in obstacles:
                result = coal.DistanceResult()
                d = coal.distance(
                    geometry,
                    coal.Transform3s(placed[:3, :3], placed[:3, 3]),
                    obstacle,
                    coal.Transform3s(where[:3, :3], where[:3, 3]),
                    request,
                    result,
                )
                best = min(best, d)
    return best


def test_collision_urdf_frames_match_the_robot_file(franka_world):
    """franka_collision.urdf's joint origins are franka.yml's: every checked link's frame from
    yourdfpy agrees with ours at random configurations."""
    mesh = franka_world.mesh_check()
    urdf = yourdfpy.URDF.load(str(FRANKA_URDF), build_scene_graph=True, load_meshes=False)
    low, high = (t.double() for t in franka_world.robot_config.joint_limits.position)
    g = torch.Generator().manual_seed(3)
    q = low + (high - low) * torch.rand(20, 7, generator=g, dtype=torch.float64)
    ours = mesh.link_frames(q)
    for b in range(q.shape[0]):
        cfg = {f"panda_joint{i + 1}": float(v) for i, v in enumerate(q[b])}
        cfg.update({"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04})
        urdf.update_cfg(cfg)
        for k, link in enumerate(mesh.link_names):
            np.testing.assert_allclose(
                ours[b, k], urdf.get_transform(link, "panda_link0"), atol=1e-9
            )
    assert mesh.fixed_links == ["panda_link0"]


def _random_trajectory(rw: RobotWorld, seed: int, steps: int = 12) -> torch.Tensor:
    """A joint-space path through random waypoints near the retract pose: ``[steps, 7]``."""
    g = torch.Generator().manual_seed(seed)
    low, high = (t.double() for t in rw.robot_config.joint_limits.position)
    centre = rw.robot_config.retract_config.double()
    ends = (centre + 0.9 * (torch.rand(3, 7, generator=g, dtype=torch.float64) - 0.5) * 2).clamp(
        low, high
    )
    t = torch.linspace(0, 1, steps // 2, dtype=torch.float64)[:, None]
    first = ends[0] + t * (ends[1] - ends[0])
    second = ends[1] + t[1:] * (ends[2] - ends[1])
    return torch.cat((first, second))


def test_franka_mesh_distance_agrees_with_independent_coal(franka_world):
    links, urdf = _reference_links()
    world = franka_world.world_collision.world
    obstacles = _reference_obstacles(world)
    assert len(obstacles) == len(world)
    q = torch.cat([_random_trajectory(franka_world, seed) for seed in range(8)])
    ours = franka_world.mesh_distance(q).numpy()
    report = franka_world.mesh_report(q)
    reference = np.array([_reference_distance(links, urdf, obstacles, row) for row in q.numpy()])
    np.testing.assert_allclose(ours, reference, atol=1e-6)
    assert (reference < 0).any() and (reference > 0).any()  # both sides were exercised
    assert set(report.link) <= set(links) - {"panda_link0"}
    # validate_mesh is the sign (all these are within limits; self-collision on spheres)
    valid = franka_world.validate_mesh(q).numpy()
    own = (franka_world.self_collision_distance(q) >= 0).numpy()
    np.testing.assert_array_equal(valid, (reference >= 0) & own)


def test_franka_swept_check_agrees_with_dense_reference(franka_world):
    links, urdf = _reference_links()
    obstacles = _reference_obstacles(franka_world.world_collision.world)
    trajectories = torch.stack([_random_trajectory(franka_world, seed, 8) for seed in range(6)])
    ok, low = franka_world.trajectory_mesh_report(trajectories)
    outcomes = set()
    for b in range(trajectories.shape[0]):
        q = trajectories[b]
        # the reference: 50 samples per segment
        t = torch.linspace(0, 1, 51, dtype=torch.float64)[:-1, None, None]
        dense = (q[:-1] + t * (q[1:] - q[:-1])).transpose(0, 1).reshape(-1, 7)
        dense = torch.cat((dense, q[-1:]))
        reference = min(_reference_distance(links, urdf, obstacles, row) for row in dense.numpy())
        own = bool((franka_world.self_collision_distance(q) >= 0).all())
        if bool(ok[b]):
            # passed: the whole motion keeps margin - resolution / 2 = -0.5 mm
            assert own and reference >= -0.5e-3 - 1e-9, b
            outcomes.add("clear")
        elif own:
            # failed on the meshes: a sample in contact, which the reference sees too (its
            # own samples are at most ~1 cm of motion apart)
            assert float(low[b]) < 0.0, b
            assert reference < 1e-2, b
            outcomes.add("contact")
        if reference < -1e-4:
            assert not bool(ok[b]), b
        # the smallest sampled clearance is never far above the dense one
        assert float(low[b]) <= max(reference, 0.0) + 1e-2, b
    assert outcomes == {"clear", "contact"}


def test_fixed_links_stay_out_of_the_mesh_check():
    """Links that no active joint moves are not in the exact check: their clearance is a
    constant of the scene that no plan changes (cuRobo's own franka.yml on cuRobo's example
    table, top at z = 0, has panda_link0's mesh 32 um into it: every plan was refused).
    ``world_collision_fixed_links`` includes their spheres, as cuRobo checks them."""
    # a table top 5 mm into panda_link0's mesh (it reaches z = 0 at the base)
    world = {"cuboid": {"table": {"dims": [1.0, 1.0, 0.1], "pose": [0, 0, -0.045, 1, 0, 0, 0]}}}
    links, urdf = _reference_links()
    obstacles = _reference_obstacles(WorldConfig.load(world))
    q = RobotConfig.load("franka", F64).retract_config[None]
    others = tuple(link for link in links if link != "panda_link0")
    base = _reference_distance(links, urdf, obstacles, q[0].numpy(), skip=others)
    moving = _reference_distance(links, urdf, obstacles, q[0].numpy())
    assert base == pytest.approx(-0.005, abs=1e-4) and moving > 0.1
    robot = RobotConfig.load("franka", F64)
    robot.collision = copy.deepcopy(robot.collision)
    robot.collision.world_collision_fixed_links = True
    for rw in (
        RobotWorld.from_config("franka", world, F64),
        RobotWorld.from_config(robot, world, F64),
    ):
        assert rw.mesh_check().link_names == list(others)
        assert float(rw.mesh_distance(q)[0]) == pytest.approx(moving, abs=1e-6)
    # the option's spheres: panda_link0's reach below the table top
    assert float(rw.collision_distance(q)[0]) < 0


def test_links_without_spheres_are_left_out_of_the_mesh_check():
    """The exact check judges the links the robot file gives collision spheres
    (``collision_link_names``), as the spheres do: cuRobo's ur10e.yml gives its base mesh
    ``base_link_inertia`` none. Here the fingers lose their spheres, and a ball that coal finds
    inside the left finger no longer counts."""
    links, urdf = _reference_links()
    q = RobotConfig.load("franka", F64).retract_config[None]
    cfg = {f"panda_joint{i + 1}": float(v) for i, v in enumerate(q[0])}
    cfg.update({"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04})
    urdf.update_cfg(cfg)
    finger = urdf.get_transform("panda_leftfinger", "panda_link0")
    centre = finger[:3, :3] @ np.array([0.0, 0.01, 0.03]) + finger[:3, 3]
    world = {"sphere": {"ball": {"radius": 0.01, "position": centre.tolist()}}}
    obstacles = _reference_obstacles(WorldConfig.load(world))
    fingers = ("panda_leftfinger", "panda_rightfinger")
    rest = ("panda_link0", *fingers)
    assert _reference_distance(links, urdf, obstacles, q[0].numpy()) < 0  # in the finger
    kept = _reference_distance(links, urdf, obstacles, q[0].numpy(), skip=rest)
    assert kept > 0
    robot = RobotConfig.load("franka", F64)
    robot.collision = copy.deepcopy(robot.collision)
    robot.collision.link_names = [n for n in robot.collision.link_names if n not in fingers]
    for link in fingers:
        robot.collision.spheres.pop(link)
    rw = RobotWorld.from_config(robot, world, F64)
    assert not set(fingers) & set(rw.mesh_check().link_names)
    assert float(rw.mesh_distance(q)[0]) == pytest.approx(kept, abs=1e-6)


def test_non_finite_configurations_fail_the_checks(franka_world):
    q = franka_world.robot_config.retract_config.double().repeat(2, 1)
    q[1, 2] = float("nan")
    assert math.isnan(float(franka_world.mesh_distance(q)[1]))
    assert not math.isnan(float(franka_world.mesh_distance(q)[0]))
    np.testing.assert_array_equal(franka_world.validate_mesh(q).numpy(), [True, False])
    assert not bool(franka_world.validate_trajectory_mesh(q))


def test_update_world_refreshes_the_mesh_obstacles():
    rw = RobotWorld.from_config("franka", None, F64)
    q = rw.robot_config.retract_config[None]
    assert math.isinf(float(rw.mesh_distance(q)[0]))
    rw.update_world({"sphere": {"ball": {"radius": 0.05, "position": [2.0, 0.0, 0.5]}}})
    far = float(rw.mesh_distance(q)[0])
    assert 1.0 < far < 2.0
    rw.world_collision.update_obstacle_pose("ball", [2.5, 0.0, 0.5, 1, 0, 0, 0])
    assert float(rw.mesh_distance(q)[0]) == pytest.approx(far + 0.5, abs=0.05)


# --- the swept check ------------------------------------------------------------------------------


def test_swept_check_catches_a_thin_plate_between_clear_waypoints():
    """planar3 swings from -0.3 to 0.3 rad about joint 1 (arm straight): a 2 mm plate on the
    x axis lies between the two clear waypoints."""
    plate = {"dims": [0.2, 0.002, 0.2], "pose": [0.9, 0.0, 0.0, 1, 0, 0, 0]}
    rw = RobotWorld.from_config("planar3", {"cuboid": {"plate": plate}}, F64)
    trajectory = torch.tensor([[-0.3, 0.0, 0.0], [0.3, 0.0, 0.0]], dtype=torch.float64)
    assert bool(rw.validate_mesh(trajectory).all())  # both waypoints are clear
    assert float(rw.mesh_distance(trajectory).min()) > 0.1
    assert not bool(rw.validate_trajectory_mesh(trajectory))
    ok, low = rw.trajectory_mesh_report(trajectory)
    assert not bool(ok) and float(low) < 0
    # the same swing stopping short of the plate passes; batched [B, T, D] too
    short = torch.tensor([[-0.3, 0.0, 0.0], [-0.2, 0.0, 0.0]], dtype=torch.float64)
    both = torch.stack((trajectory, short))
    np.testing.assert_array_equal(rw.validate_trajectory_mesh(both).numpy(), [False, True])
    # and with the plate gone the swing is fine
    rw.update_world(WorldConfig())
    assert bool(rw.validate_trajectory_mesh(trajectory))


def test_swept_samples_respect_the_resolution_bound():
    """Between two samples no point of the meshes moves more than the lever-arm bound says:
    check the bound against the actual motion of every mesh vertex of the Franka."""
    rw = RobotWorld.from_config("franka", None, F64)
    mesh = rw.mesh_check()
    g = torch.Generator().manual_seed(0)
    low, high = (t.double() for t in rw.robot_config.joint_limits.position)
    q = low + (high - low) * torch.rand(50, 7, generator=g, dtype=torch.float64)
    dq = 0.01 * (torch.rand(50, 7, generator=g, dtype=torch.float64) - 0.5)
    shapes = {k: v for k, v in _urdf_vertices().items() if k in mesh.link_names}
    a, b = mesh.link_frames(q), mesh.link_frames(q + dq)
    bound = (dq.abs().numpy() * mesh.lever).sum(-1)
    for k, link in enumerate(mesh.link_names):
        points = np.c_[shapes[link], np.ones(len(shapes[link]))]
        moved = np.linalg.norm((a[:, k] @ points.T - b[:, k] @ points.T)[:, :3], axis=1)
        assert (moved.max(-1) <= bound + 1e-12).all(), link


def _urdf_vertices() -> dict[str, np.ndarray]:
    from curobo_lite.robot.link_geometry import load_urdf_shapes

    out = {}
    for link, shapes in load_urdf_shapes(FRANKA_URDF).items():
        points = []
        for s in shapes:
            if s["kind"] == "mesh":
                v = s["vertices"]
            else:  # box corners
                h = np.asarray(s["size"]) / 2
                v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
            points.append(v @ s["origin"][:3, :3].T + s["origin"][:3, 3])
        out[link] = np.concatenate(points)
    return out


# --- robot file and errors ------------------------------------------------------------------------


def test_robot_without_collision_geometry_names_the_key():
    rw = RobotWorld.from_config("iiwa")
    assert not rw.has_collision_geometry
    q = rw.robot_config.retract_config[None]
    for call in (rw.mesh_distance, rw.validate_mesh, rw.validate_trajectory_mesh):
        with pytest.raises(ValueError, match="collision_geometry"):
            call(q if call is not rw.validate_trajectory_mesh else q.expand(2, -1))


def _franka_dict() -> tuple[dict, Path]:
    path = Path(resolve_robot_file("franka"))
    return read_config_file(path, "robot"), path.parent


def test_collision_geometry_key_is_read_relative_to_the_robot_file():
    robot = RobotConfig.load("franka")
    assert robot.collision_geometry_path == str(FRANKA_URDF.absolute())
    assert RobotConfig.load("planar3").collision_geometry_path.endswith("planar3_collision.urdf")
    data, base = _franka_dict()
    data.pop("collision_geometry")
    assert RobotConfig.from_dict(data, base_dir=base).collision_geometry_path is None
    # written out and read back
    again = RobotConfig.from_dict(robot.to_dict(), source="again")
    assert again.collision_geometry_path == robot.collision_geometry_path


def test_collision_geometry_loader_errors():
    data, base = _franka_dict()
    data["collision_geometry"] = "missing_collision.urdf"
    with pytest.raises(ValueError, match=r"collision_geometry.*missing_collision\.urdf"):
        RobotConfig.from_dict(data, source="franka.yml", base_dir=base)
    data["collision_geometry"] = 3
    with pytest.raises(ValueError, match=r"collision_geometry.*expected a non-empty string"):
        RobotConfig.from_dict(data, source="franka.yml", base_dir=base)


def bar_urdf(directory: Path) -> Path:
    """A one-joint robot: a 0.5 x 0.1 x 0.1 m box bar turning about z at the base origin,
    written to ``directory/bar.urdf`` (its collision element is the only geometry)."""
    urdf = directory / "bar.urdf"
    urdf.write_text(
        """<robot name="bar">
  <link name="base"/>
  <link name="arm"><collision><origin xyz="0.25 0 0"/>
    <geometry><box size="0.5 0.1 0.1"/></geometry></collision></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" velocity="1" effort="1"/></joint>
</robot>"""
    )
    return urdf


def test_urdf_robot_uses_its_urdf_collision_elements(tmp_path):
    """A robot file with urdf_path and no collision_geometry checks the URDF's own shapes."""
    urdf = bar_urdf(tmp_path)
    robot = RobotConfig.from_urdf(urdf, "base", "arm", tensor_args=F64)
    assert robot.collision_geometry_path == str(urdf.absolute())
    robot.collision = None
    world = {"sphere": {"ball": {"radius": 0.1, "position": [0.0, 0.8, 0.0]}}}
    # no spheres: RobotWorld needs them, so measure with the mesh check directly
    from curobo_lite.robot import Kinematics
    from curobo_lite.wrap.base.mesh_check import MeshCheck

    check = MeshCheck(robot, Kinematics(robot, F64), WorldConfig.load(world))
    q = torch.tensor([[0.0], [math.pi / 2]], dtype=torch.float64)
    d = check.distance(q).distance
    # at 0 the bar lies along x: closest point (0.05, 0.05, 0) to the ball centre (0, 0.8, 0)
    assert d[0] == pytest.approx(math.hypot(0.0, 0.8 - 0.05) - 0.1, abs=1e-6)
    # at pi/2 it points at the ball: tip at y = 0.5
    assert d[1] == pytest.approx(0.8 - 0.5 - 0.1, abs=1e-6)


# --- MotionGen -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["roadmap", "trajopt"])
def test_motion_gen_checks_the_final_plan_on_meshes(stage):
    from curobo_lite.types import JointState, Pose
    from curobo_lite.wrap import MotionGen, MotionGenStatus

    wall = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
    goal = Pose.from_list([0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0])
    motion_gen = MotionGen.from_config(
        "franka", {"cuboid": {"wall": wall}}, enable_graph=False, enable_roadmap=stage == "roadmap"
    )
    assert motion_gen.exact_check  # franka.yml names its collision meshes and coal imports
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    result = motion_gen.plan_single(start, goal)
    assert result.status is MotionGenStatus.SUCCESS, result
    assert result.used_graph == (stage == "roadmap")
    assert "exact_check" in result.timings
    # the reported clearance is the checker's on the same plan (the roadmap's: on the same
    # segments, sampled elsewhere along them: within the sweep's resolution, 1 mm)
    ok, low = motion_gen.checker.trajectory_mesh_report(result.interpolated_plan.position)
    tolerance = 1e-3 if stage == "roadmap" else 1e-6
    assert bool(ok) and result.mesh_min_distance == pytest.approx(float(low), abs=tolerance)
    # the spheres cover each link below 7 mm of its surface (franka.yml's fit: --inside
    # 0.007): a mesh reaches at most that far past them, so its clearance is at least the
    # spheres' less 7 mm
    assert result.mesh_min_distance >= result.min_distance - 7e-3
    if stage == "roadmap":
        return
    # a margin the plan cannot meet turns SUCCESS into FINAL_PLAN_MESH_COLLISION
    motion_gen.config.exact_check_margin = result.mesh_min_distance + 0.05
    again = motion_gen.plan_single(start, goal)
    assert again.status is MotionGenStatus.FINAL_PLAN_MESH_COLLISION and not again.success
    assert again.interpolated_plan is not None


def test_motion_gen_exact_check_option_parsing():
    from curobo_lite.wrap import MotionGenConfig

    assert MotionGenConfig.from_dict({}).exact_check is None  # decided from the robot
    assert MotionGenConfig.from_dict({"exact_check": False}).exact_check is False
    with pytest.raises(TypeError, match="exact_check"):
        MotionGenConfig.from_dict({"exact_check": "yes"})
    with pytest.raises(ValueError, match="exact_check_resolution"):
        MotionGenConfig.from_dict({"exact_check_resolution": 0.0})


def test_quaternion_matrices_match_trimesh():
    """The batched wxyz -> rotation conversion the mesh checks place links with, against
    trimesh's (independent) quaternion_matrix, for non-unit quaternions and batch shapes."""
    from curobo_lite.geom.exact_collision import quaternion_matrices

    rng = np.random.default_rng(3)
    q = rng.normal(size=(5, 3, 4)) * rng.uniform(0.2, 3.0, size=(5, 3, 1))
    got = quaternion_matrices(q)
    assert got.shape == (5, 3, 3, 3)
    for index in np.ndindex(5, 3):
        unit = q[index] / np.linalg.norm(q[index])
        expected = trimesh.transformations.quaternion_matrix(unit)[:3, :3]
        np.testing.assert_allclose(got[index], expected, atol=1e-12)
    np.testing.assert_allclose(quaternion_matrices(np.array([1.0, 0, 0, 0])), np.eye(3))
