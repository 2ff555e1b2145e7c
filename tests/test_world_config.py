"""World model: obstacle validation, world files (cuRobo's layout), bundled scenes."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from curobo_lite.geom import (
    Capsule,
    Cuboid,
    Cylinder,
    Mesh,
    Obstacle,
    Sphere,
    WorldCollision,
    WorldConfig,
    available_worlds,
    resolve_world_file,
)
from curobo_lite.types import quat_rotate

BUNDLED = ("table", "bookshelf", "cubbies", "narrow_gap", "mixed")

# A world in cuRobo's exact file layout, with its rendering keys (our own numbers).
CUROBO_LAYOUT = {
    "cuboid": {
        "table": {
            "dims": [1.0, 1.0, 0.2],
            "pose": [0.5, 0.0, -0.1, 1, 0, 0, 0.0],
            "color": [0.6, 0.6, 0.8, 1.0],
        },
        "box": {"dims": [0.1, 0.2, 0.3], "pose": [0.5, 0.3, 0.2, 1.0, 0.0, 0.0, 0.0]},
    },
    "sphere": {"ball": {"position": [0.4, -0.3, 0.1], "radius": 0.05, "texture": "wood.png"}},
    "capsule": {
        "rod": {
            "radius": 0.02,
            "base": [0.0, 0.0, 0.0],
            "tip": [0.0, 0.0, 0.3],
            "pose": [0.6, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
            "material": {"metallic": 0.5, "roughness": 0.2},
        }
    },
    "cylinder": {
        "can": {"radius": 0.03, "height": 0.1, "pose": [0.3, 0.3, 0.05, 1, 0, 0, 0]},
    },
    "mesh": {
        "tet": {
            "vertices": [[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]],
            "faces": [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
            "pose": [0.2, -0.4, 0.0, 1, 0, 0, 0],
            "vertex_colors": [[1, 0, 0]] * 4,
        }
    },
}


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_scene_loads_and_round_trips(name, tmp_path):
    assert name in available_worlds()
    world = WorldConfig.load(name)
    assert len(world) > 0
    again = WorldConfig.from_dict(world.to_dict())
    assert again.to_dict() == world.to_dict()
    world.save(tmp_path / "w.yml")
    assert WorldConfig.load(tmp_path / "w.yml").to_dict() == world.to_dict()


def test_mixed_uses_every_kind_and_mesh_file_resolves_relative_to_world_file():
    world = WorldConfig.load("mixed")
    for kind in ("cuboid", "sphere", "capsule", "cylinder", "mesh"):
        assert getattr(world, kind), kind
    wedge = world.get("wedge")
    assert Path(wedge.file_path).is_absolute() and Path(wedge.file_path).is_file()
    assert Path(wedge.file_path).parent == resolve_world_file("mixed").parent / "meshes"
    vertices, faces = wedge.mesh_data()
    assert faces.shape[1] == 3 and np.isclose(vertices[:, 2].max(), 0.08 * 1.5)


@pytest.mark.parametrize("name", BUNDLED)
def test_franka_retract_pose_is_clear_and_workspace_is_reachable(name):
    """Spheres of radius 0.08 m along the Panda's moving links at its retract pose (from the
    shoulder on: the base stands on the scene's table or stand) hit nothing, and some obstacle
    surface lies within the arm's reach (0.85 m from the shoulder)."""
    from curobo_lite.robot import Kinematics, RobotConfig

    robot = RobotConfig.load("franka")
    state = Kinematics(robot).forward(robot.retract_config[None])
    hand = state.link_pose("panda_hand")
    fingertips = hand.position + quat_rotate(hand.quaternion, torch.tensor([[0.0, 0.0, 0.11]]))
    chain = torch.cat([state.link_position[0], fingertips])
    t = torch.linspace(0.0, 1.0, 16)[:, None, None]
    centres = (chain[:-1] * (1 - t) + chain[1:] * t).reshape(-1, 3)
    spheres = torch.cat([centres, torch.full((len(centres), 1), 0.08)], 1)
    collision = WorldCollision(WorldConfig.load(name))
    assert collision.sphere_distance(spheres).distance.min() > 0.05
    shoulder = torch.tensor([[0.0, 0.0, 0.333, 0.0]])
    assert collision.sphere_distance(shoulder).distance.item() < 0.85


def test_curobo_layout_with_extra_keys_loads():
    world = WorldConfig.from_dict(copy.deepcopy(CUROBO_LAYOUT), source="curobo.yml")
    assert world.names == ["table", "box", "ball", "rod", "can", "tet"]
    assert world.get("ball").pose == [0.4, -0.3, 0.1, 1.0, 0.0, 0.0, 0.0]
    assert world.get("table").dims == [1.0, 1.0, 0.2]
    assert isinstance(world.get("tet"), Mesh) and len(world.get("tet").faces) == 4
    out = world.to_dict()
    assert "color" not in out["cuboid"]["table"]
    assert WorldConfig.from_dict(out).to_dict() == out


def test_python_construction_api():
    world = WorldConfig(cuboid=[Cuboid("a", [0.1, 0.2, 0.3])], sphere=[Sphere("b", 0.1)])
    world.add(Capsule("c", 0.05, [0, 0, 0], [0, 0, 1], pose=[1, 0, 0, 1, 0, 0, 0]))
    world.add(Cylinder("d", 0.1, 0.2, enabled=False))
    assert world.names == ["a", "b", "c", "d"]
    assert [o.kind for o in world.objects] == ["cuboid", "sphere", "capsule", "cylinder"]
    assert world.get("d").enabled is False and "d" in world
    removed = world.remove("b")
    assert removed.name == "b" and world.names == ["a", "c", "d"]
    assert world.to_dict()["cylinder"]["d"]["enabled"] is False
    with pytest.raises(ValueError, match="'zz'"):
        world.get("zz")
    with pytest.raises(ValueError, match="already exists"):
        world.add(Sphere("a", 0.1))
    with pytest.raises(TypeError, match="obstacle"):
        world.add({"name": "x"})
    # numpy / tensor inputs are accepted and stored as lists
    c = Cuboid("n", np.array([0.1, 0.2, 0.3]), pose=torch.tensor([0, 0, 0, 1.0, 0, 0, 0]))
    assert c.dims == pytest.approx([0.1, 0.2, 0.3]) and isinstance(c.pose, list)


def test_nearly_unit_quaternion_is_normalised():
    s = 1.0 + 5e-4
    c = Cuboid("a", [1, 1, 1], pose=[0, 0, 0, s, 0, 0, 0])
    assert c.pose[3] == 1.0
    q = [0.7071, 0.0, 0.0, 0.7071]
    c = Cuboid("b", [1, 1, 1], pose=[0, 0, 0, *q])
    assert math.isclose(math.sqrt(sum(v * v for v in c.pose[3:])), 1.0, rel_tol=1e-12)


def _with(path: str, value):
    """CUROBO_LAYOUT with ``path`` (dot-separated; ``-`` deletes) replaced by ``value``."""
    data = copy.deepcopy(CUROBO_LAYOUT)
    keys = path.split(".")
    node = data
    for k in keys[:-1]:
        node = node[k]
    if value == "-":
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


BAD_FILES = [
    ("cuboid.table.dims", [1.0, -1.0, 0.2], "cuboid.table.dims[1]", "positive"),
    ("cuboid.table.dims", [1.0, 0.0, 0.2], "cuboid.table.dims[1]", "positive"),
    ("cuboid.table.dims", [1.0, 1.0], "cuboid.table.dims", "expected 3 numbers"),
    ("cuboid.table.dims", [1.0, float("nan"), 0.2], "cuboid.table.dims[1]", "finite"),
    ("cuboid.box.pose", [0, 0, float("inf"), 1, 0, 0, 0], "cuboid.box.pose[2]", "finite"),
    ("cuboid.box.pose", [0, 0, 0, 1, 0, 0], "cuboid.box.pose", "expected 7 numbers"),
    # finite in float64 but inf in the float32 tables (found by `make fuzz`)
    ("cuboid.box.pose", [0.5, -1e300, 0, 1, 0, 0, 0], "cuboid.box.pose[1]", "magnitude <= 10000"),
    ("cuboid.table.dims", [1.0, 2e4, 0.2], "cuboid.table.dims[1]", "at most 10000"),
    ("sphere.ball.radius", 1e39, "sphere.ball.radius", "at most 10000"),
    ("cuboid.box.pose", [0, 0, 0, 2, 0, 0, 0], "cuboid.box.pose[3:7]", "unit quaternion"),
    ("cuboid.box.pose", [0, 0, 0, 1.002, 0, 0, 0], "cuboid.box.pose[3:7]", "unit quaternion"),
    ("cuboid.box.dims", "-", "cuboid.box", "missing key"),
    ("cuboid.box.size", [1, 1, 1], "cuboid.box", "unknown key"),
    ("sphere.ball.radius", 0.0, "sphere.ball.radius", "positive"),
    ("sphere.ball.radius", -0.1, "sphere.ball.radius", "positive"),
    ("sphere.ball.radius", "big", "sphere.ball.radius", "expected a number"),
    ("sphere.ball.pose", [1, 2, 3, 1, 0, 0, 0], "sphere.ball.position", "conflicts"),
    ("capsule.rod.tip", [0, 0], "capsule.rod.tip", "expected 3 numbers"),
    ("capsule.rod.radius", -1, "capsule.rod.radius", "positive"),
    ("cylinder.can.height", 0, "cylinder.can.height", "positive"),
    ("cylinder.can.enabled", "yes", "cylinder.can.enabled", "true/false"),
    ("mesh.tet.faces", [[0, 1, 7]], "mesh.tet.faces[0]", "vertex indices"),
    ("mesh.tet.faces", "-", "mesh.tet.faces", "both vertices and faces"),
    ("mesh.tet.scale", [1, 1, 0], "mesh.tet.scale[2]", "positive"),
    ("mesh.tet.file_path", "nowhere/missing.obj", "mesh.tet", "exactly one"),
    ("voxel", {"v": {}}, "world", "unknown key"),
    ("sphere.table", {"radius": 0.1}, "sphere.table", "duplicate obstacle name"),
]


@pytest.mark.parametrize(("path", "value", "key", "problem"), BAD_FILES)
def test_bad_world_file_names_key(path, value, key, problem):
    with pytest.raises(ValueError) as err:
        WorldConfig.from_dict(_with(path, value), source="bad.yml")
    message = str(err.value)
    assert message.startswith("bad.yml: ") and f"'{key}'" in message and problem in message


def test_missing_mesh_file_and_bad_yaml(tmp_path):
    data = {"mesh": {"part": {"file_path": "missing.obj"}}}
    with pytest.raises(ValueError, match=r"w.yml: 'mesh.part.file_path': mesh file .*missing"):
        WorldConfig.from_dict(data, source="w.yml", base_dir=tmp_path)
    path = tmp_path / "w.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="mesh.part.file_path"):
        WorldConfig.load(path)
    path.write_text("cuboid: [unclosed")
    with pytest.raises(ValueError, match="invalid YAML"):
        WorldConfig.load(path)
    with pytest.raises(ValueError, match="no such bundled world"):
        WorldConfig.load("no_such_world")
    # an empty file is the empty world
    path.write_text("")
    assert len(WorldConfig.load(path)) == 0


def test_python_constructors_validate():
    with pytest.raises(ValueError, match=r"<Cuboid>: 'cuboid.c.dims\[2\]'"):
        Cuboid("c", [1, 1, -1])
    with pytest.raises(ValueError, match="'sphere.name'"):
        Sphere("", 0.1)
    with pytest.raises(ValueError, match=r"'mesh.m'.*exactly one"):
        Mesh("m")
    with pytest.raises(TypeError, match=r"WorldConfig.sphere\[0\]"):
        WorldConfig(sphere=[Cuboid("c", [1, 1, 1])])
    with pytest.raises(ValueError, match="duplicate obstacle name"):
        WorldConfig(cuboid=[Cuboid("x", [1, 1, 1])], sphere=[Sphere("x", 0.1)])
    # sphere position alias
    s = Sphere("s", 0.1, position=[1.0, 2.0, 3.0])
    assert s.pose == [1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0] and s.position is None


def test_local_bounds_contain_the_shapes():
    rng = np.random.default_rng(0)
    for obstacle in (
        Cuboid("c", [0.2, 0.4, 0.6]),
        Sphere("s", 0.3),
        Capsule("p", 0.1, [0.1, -0.2, 0.0], [0.3, 0.2, 0.5]),
        Cylinder("y", 0.2, 0.5),
    ):
        lo, hi = obstacle.local_bounds()
        assert (hi > lo).all()
    lo, hi = Cuboid("c", [0.2, 0.4, 0.6]).local_bounds()
    np.testing.assert_allclose(hi, [0.1, 0.2, 0.3])
    lo, hi = Capsule("p", 0.1, [0.1, -0.2, 0.0], [0.3, 0.2, 0.5]).local_bounds()
    np.testing.assert_allclose(lo, [0.0, -0.3, -0.1])
    np.testing.assert_allclose(hi, [0.4, 0.3, 0.6])
    m = Mesh("m", vertices=rng.uniform(-1, 1, (10, 3)), faces=[[0, 1, 2]], scale=[2, 1, 1])
    vertices, _ = m.mesh_data()
    np.testing.assert_allclose(m.local_bounds()[1], vertices.max(0))
    with pytest.raises(TypeError, match="needs a shape"):
        Obstacle("bare")
