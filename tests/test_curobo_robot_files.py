"""cuRobo robot files (format 1.0 and 2.0) load unchanged (issue 36).

The tests write cuRobo-layout files for the bundled robots themselves (a URDF of the bundled
tree and a ``robot_cfg: kinematics:`` file, written here with this file's own text), load them
wherever a robot is accepted and compare forward kinematics with a URDF read independently
(``tests/curobo_reference.py``; pinocchio as well when it is installed), sphere positions with
numpy, and the limits with the file's ``cspace`` arithmetic.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from curobo_reference import (
    UrdfFK,
    curobo_spheres,
    matrix_to_quat_wxyz,
    pinocchio_fk,
    place_spheres,
    rotation_angle,
)

from curobo_lite.cli import main
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.robot.curobo_layout import CuroboKeysIgnored
from curobo_lite.types.errors import ConfigError

F64 = {"dtype": torch.float64}


def _urdf_text(config: RobotConfig, origin_z_offset: float = 0.0) -> str:
    """A URDF of a bundled robot's tree (this test's own writer); ``origin_z_offset`` moves the
    first joint up, to tell copies of the file apart."""
    index = {n: i for i, n in enumerate(config.joint_names)}
    links = sorted({j.parent for j in config.joints} | {j.child for j in config.joints})
    out = ['<?xml version="1.0"?>', '<robot name="test">']
    out += [f'  <link name="{link}"/>' for link in links]
    for k, j in enumerate(config.joints):
        xyz = list(j.origin_xyz)
        if k == 0:
            xyz[2] += origin_z_offset
        out.append(f'  <joint name="{j.name}" type="{j.type}">')
        out.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>')
        out.append(
            f'    <origin xyz="{" ".join(map(repr, xyz))}" '
            f'rpy="{" ".join(map(repr, j.origin_rpy))}"/>'
        )
        if j.type != "fixed":
            out.append(f'    <axis xyz="{" ".join(map(repr, j.axis))}"/>')
            if j.name in index:
                i = index[j.name]
                lo, hi = config.joint_limits.position[:, i].tolist()
                vel = config.joint_limits.velocity[1, i].item()
            else:
                lo, hi, vel = -0.5, 0.5, 1.0
            out.append(f'    <limit lower="{lo!r}" upper="{hi!r}" velocity="{vel!r}" effort="1"/>')
        out.append("  </joint>")
    out.append("</robot>")
    return "\n".join(out) + "\n"


def _curobo_dict(config: RobotConfig, urdf_path: str, version: float) -> dict:
    """cuRobo's robot-file layout for a bundled robot, locked joints in the c-space as cuRobo's
    published files have them."""
    locked = dict(config.lock_joints)
    names = [*config.joint_names, *locked]
    dof = len(names)
    reserved = config.collision.extra_spheres  # written as cuRobo does: a count per link
    own = [link for link in config.collision.link_names if link not in reserved]
    spheres = {
        link: [{"center": row[:3], "radius": row[3]} for row in config.collision.spheres[link]]
        for link in own
    }
    kin = {
        "usd_path": "robot/non_shipping/robot.usda",  # another tool's keys: reported, ignored
        "isaac_usd_path": "/Isaac/Robots/robot.usd",
        "use_global_cumul": True,
        "urdf_path": urdf_path,
        "asset_root_path": "",
        "base_link": config.base_link,
        "collision_link_names": own,
        "collision_spheres": spheres,
        "collision_sphere_buffer": 0.004,
        "self_collision_ignore": dict(config.collision.self_collision_ignore),
        "self_collision_buffer": {own[-1]: 0.02},
        "lock_joints": locked or None,
        "mesh_link_names": list(config.collision.link_names[:2]),
        **({"extra_collision_spheres": dict(reserved)} if reserved else {}),
        "cspace": {
            "joint_names": names,
            "null_space_weight": [1.0] * dof,
            "cspace_distance_weight": [1.0] * dof,
            "max_acceleration": 12.0,
            "max_jerk": [400.0 + 10 * i for i in range(dof)],
            "position_limit_clip": 0.05,
            "velocity_scale": 0.5,
            "acceleration_scale": 1.5,
        },
    }
    retract = [*config.retract_config.tolist(), *locked.values()]
    if version == 2.0:
        kin["format_version"] = 2.0
        kin["tool_frames"] = [config.ee_link]
        kin["cspace"]["default_joint_position"] = retract
    else:
        kin["ee_link"] = config.ee_link
        kin["cspace"]["retract_config"] = retract
    return {"robot_cfg": {"kinematics": kin}}


def _write(tmp_path: Path, name: str, version: float = 1.0, edit=None) -> tuple[Path, Path]:
    bundled = RobotConfig.load(name)
    folder = tmp_path / f"{name}_{version}"
    folder.mkdir(parents=True, exist_ok=True)
    urdf = folder / f"{name}.urdf"
    urdf.write_text(_urdf_text(bundled))
    data = _curobo_dict(bundled, urdf.name, version)
    if edit is not None:
        edit(data["robot_cfg"]["kinematics"])
    robot_file = folder / f"{name}_curobo.yml"
    robot_file.write_text(yaml.safe_dump(data, sort_keys=False))
    return robot_file, urdf


def _load(path, **kw) -> RobotConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CuroboKeysIgnored)
        return RobotConfig.load(path, tensor_args=None, **kw)


def _random_q(config: RobotConfig, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    low, high = config.joint_limits.position
    return low + torch.rand(n, config.dof, generator=g, dtype=low.dtype) * (high - low)


ROBOTS = ["franka", "ur5e", "iiwa", "planar3"]


def _reference_values(config: RobotConfig, q: np.ndarray) -> dict[str, float]:
    return {**dict(zip(config.joint_names, q.tolist())), **config.lock_joints}


@pytest.mark.parametrize("version", [1.0, 2.0])
@pytest.mark.parametrize("name", ROBOTS)
def test_fk_and_spheres_match_an_independent_reference(tmp_path, name, version):
    bundled = RobotConfig.load(name)
    if bundled.collision is None:
        pytest.skip(f"{name} has no collision spheres")
    robot_file, urdf = _write(tmp_path, name, version)
    config = _load(robot_file)
    assert config.joint_names == bundled.joint_names
    assert config.ee_link == bundled.ee_link and config.lock_joints == bundled.lock_joints
    kin = Kinematics(config)
    q = _random_q(config, 8)
    state = kin.forward(q)
    reference = UrdfFK(urdf)
    links, local, buffer, _, _ = _spheres_of(robot_file)
    for b in range(q.shape[0]):
        values = _reference_values(config, q[b].numpy())
        frames = reference.link_transforms(config.base_link, values)
        ee = frames[config.ee_link]
        np.testing.assert_allclose(state.ee_position[b].numpy(), ee[:3, 3], atol=2e-5)
        angle = rotation_angle(state.ee_quaternion[b].double().numpy(), matrix_to_quat_wxyz(ee))
        assert angle < 1e-4
        pin = pinocchio_fk(urdf, config.ee_link, config.joint_names, q[b].numpy())
        if pin is not None:
            np.testing.assert_allclose(state.ee_position[b].numpy(), pin[:3, 3], atol=2e-5)
        expected = place_spheres(frames, links, local)
        expected[:, 3] += buffer
        got = state.link_spheres[b].numpy()
        reserved = got[:, 3] < 0  # extra_collision_spheres: disabled until an object is held
        assert reserved.sum() == sum(config.collision.extra_spheres.values())
        got = got[~reserved]
        assert got.shape == expected.shape
        # same set of spheres (the order is the kinematics' own)
        gap = np.linalg.norm(got[None, :, :] - expected[:, None, :], axis=-1).min(1)
        assert gap.max() < 3e-5
    # the same robot as the bundled file
    np.testing.assert_allclose(
        state.ee_position.numpy(), Kinematics(bundled).forward(q).ee_position.numpy(), atol=1e-5
    )


def _spheres_of(robot_file: Path):
    return curobo_spheres(robot_file)


@pytest.mark.parametrize("version", [1.0, 2.0])
def test_limits_follow_the_cspace_section(tmp_path, version):
    bundled = RobotConfig.load("franka")
    robot_file, urdf = _write(tmp_path, "franka", version)
    config = _load(robot_file)
    limits = UrdfFK(urdf).limits
    for i, name in enumerate(config.joint_names):
        lo, hi, vel = limits[name]
        assert config.joint_limits.position[:, i].tolist() == pytest.approx([lo + 0.05, hi - 0.05])
        assert config.joint_limits.velocity[1, i].item() == pytest.approx(0.5 * vel)
        assert config.joint_limits.acceleration[1, i].item() == pytest.approx(12.0 * 1.5)
        assert config.joint_limits.jerk[1, i].item() == pytest.approx(400.0 + 10 * i)
        assert config.joint_limits.jerk[0, i].item() == pytest.approx(-(400.0 + 10 * i))
    torch.testing.assert_close(config.retract_config, bundled.retract_config)
    assert config.collision.sphere_buffer == pytest.approx(0.004)
    assert config.collision.self_collision_buffer == {"panda_rightfinger": 0.02}
    assert config.collision.world_collision_fixed_links  # cuRobo checks the base too


def test_keys_of_other_tools_are_reported_once_and_unknown_keys_are_named(tmp_path):
    robot_file, _ = _write(tmp_path, "ur5e")
    with pytest.warns(CuroboKeysIgnored, match="usd_path") as record:
        RobotConfig.load(robot_file)
    assert sum("usd_path" in str(w.message) for w in record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", CuroboKeysIgnored)
        RobotConfig.load(robot_file)  # reported once: the second load is quiet

    bad, _ = _write(tmp_path / "bad", "ur5e", edit=lambda k: k.update(spheres_per_link=4))
    with pytest.raises(ConfigError, match=r"spheres_per_link") as err:
        _load(bad)
    assert str(bad) in str(err.value)
    bad_cspace, _ = _write(
        tmp_path / "bad2", "ur5e", edit=lambda k: k["cspace"].update(max_velocity=3.0)
    )
    with pytest.raises(ConfigError, match=r"kinematics\.cspace.*max_velocity"):
        _load(bad_cspace)


def test_lock_on_the_chain_extra_links_buffers_and_disabled_spheres(tmp_path):
    bundled = RobotConfig.load("franka")

    def edit(kin):
        kin["lock_joints"]["panda_joint7"] = 0.3  # on the chain: folded into a fixed joint
        kin["extra_links"] = {
            # the bundled tree already has attached_object: a second link for held objects
            "held_object": {
                "parent_link_name": "panda_hand",
                "link_name": "held_object",
                "fixed_transform": [0.0, 0.0, 0.1, 0.7071068, 0.0, 0.7071068, 0.0],
                "joint_type": "FIXED",
                "joint_name": "attach_joint",
            }
        }
        kin["collision_link_names"] += ["held_object"]
        kin["collision_spheres"]["held_object"] = [
            {"center": [0.05, 0.0, 0.0], "radius": 0.02},
            {"center": [0.0, 0.0, 0.0], "radius": -0.01},  # disabled in cuRobo: dropped
        ]
        kin["extra_collision_spheres"] = {"held_object": 4}
        kin["collision_sphere_buffer"] = {"held_object": 0.01, "panda_link1": 0.005}

    robot_file, urdf = _write(tmp_path, "franka", edit=edit)
    config = _load(robot_file)
    assert config.dof == 6 and "panda_joint7" not in config.joint_names
    assert "panda_joint7" not in config.lock_joints  # folded into the tree
    q6 = _random_q(config, 4)
    q7 = torch.cat([q6, torch.full((4, 1), 0.3, dtype=q6.dtype)], 1)
    state = Kinematics(config).forward(q6)
    torch.testing.assert_close(
        state.ee_position, Kinematics(bundled).forward(q7).ee_position, atol=1e-5, rtol=0
    )
    # the attached object's sphere: 5 cm along x of a frame 10 cm above the hand, turned 90
    # degrees about y, radius 0.02 + its buffer
    names = Kinematics(config).sphere_link_names
    rows = state.link_spheres[0][torch.tensor([n == "held_object" for n in names])]
    # its own sphere, then the 4 of extra_collision_spheres, reserved and disabled
    assert rows.shape[0] == 5 and bool((rows[1:, 3] < 0).all())
    assert config.collision.extra_spheres == {"held_object": 4}
    values = {**dict(zip(config.joint_names, q6[0].tolist())), "panda_joint7": 0.3}
    values.update(config.lock_joints)
    hand = UrdfFK(urdf).link_transforms("panda_link0", values)["panda_hand"]
    offset = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]], float) @ [0.05, 0, 0] + [0, 0, 0.1]
    expected = hand[:3, :3] @ offset + hand[:3, 3]
    np.testing.assert_allclose(rows[0, :3].numpy(), expected, atol=1e-5)
    assert rows[0, 3].item() == pytest.approx(0.03)
    link1 = config.collision.spheres["panda_link1"]
    assert [r[3] for r in link1] == pytest.approx(
        [r[3] + 0.005 for r in bundled.collision.spheres["panda_link1"]]
    )


def test_asset_paths_resolve_in_order_and_errors_name_the_paths_tried(tmp_path, monkeypatch):
    bundled = RobotConfig.load("ur5e")
    places = {
        "arg": tmp_path / "arg",
        "env": tmp_path / "env",
        "file": tmp_path / "file",
        "bundled": tmp_path / "bundled" / "robot",
    }
    for k, folder in enumerate(places.values()):
        (folder / "robots").mkdir(parents=True)
        (folder / "robots" / "ur5e.urdf").write_text(_urdf_text(bundled, origin_z_offset=k + 1))
    data = _curobo_dict(bundled, "robots/ur5e.urdf", 1.0)
    robot_file = places["file"] / "ur5e_curobo.yml"
    robot_file.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("CUROBO_LITE_CONFIG_DIR", str(tmp_path / "bundled"))
    monkeypatch.setenv("CUROBO_LITE_ASSETS", str(places["env"]))
    retract = bundled.retract_config[None]
    base_z = Kinematics(bundled).forward(retract).ee_position[0, 2].item()

    def lift(**kw) -> float:
        config = _load(robot_file, **kw)
        return Kinematics(config).forward(retract).ee_position[0, 2].item() - base_z

    assert lift(assets_path=places["arg"]) == pytest.approx(1.0, abs=1e-5)
    assert lift() == pytest.approx(2.0, abs=1e-5)
    monkeypatch.delenv("CUROBO_LITE_ASSETS")
    assert lift() == pytest.approx(3.0, abs=1e-5)
    (places["file"] / "robots" / "ur5e.urdf").unlink()
    assert lift() == pytest.approx(4.0, abs=1e-5)
    (places["bundled"] / "robots" / "ur5e.urdf").unlink()
    with pytest.raises(ConfigError, match="urdf_path") as err:
        _load(robot_file, assets_path=places["arg"] / "nothing")
    for folder in (places["arg"] / "nothing", places["file"], places["bundled"]):
        assert str(folder / "robots" / "ur5e.urdf") in str(err.value)


def test_sphere_file_resolves_against_the_robot_file(tmp_path):
    bundled = RobotConfig.load("ur5e")

    def edit(kin):
        spheres = kin.pop("collision_spheres")
        (tmp_path / "ur5e_1.0" / "spheres").mkdir(parents=True, exist_ok=True)
        (tmp_path / "ur5e_1.0" / "spheres" / "ur5e.yml").write_text(
            yaml.safe_dump({"robot": "UR5e", "collision_spheres": spheres})
        )
        kin["collision_spheres"] = "spheres/ur5e.yml"

    robot_file, _ = _write(tmp_path, "ur5e", edit=edit)
    config = _load(robot_file)
    assert config.collision.num_spheres == bundled.collision.num_spheres
    (tmp_path / "ur5e_1.0" / "spheres" / "ur5e.yml").unlink()
    with pytest.raises(ConfigError, match="collision_spheres") as err:
        _load(robot_file)
    assert str(tmp_path / "ur5e_1.0" / "spheres" / "ur5e.yml") in str(err.value)


def test_a_second_chain_is_a_named_error(tmp_path):
    def edit(kin):
        kin["lock_joints"] = None  # the fingers become active joints, off the chain

    robot_file, _ = _write(tmp_path, "franka", edit=edit)
    with pytest.raises(ConfigError, match=r"panda_finger_joint1.*off the chain"):
        _load(robot_file)


def _same_robot(a: RobotConfig, b: RobotConfig) -> None:
    assert a.joint_names == b.joint_names and a.lock_joints == pytest.approx(b.lock_joints)
    for kind in ("position", "velocity", "acceleration", "jerk"):
        torch.testing.assert_close(getattr(a.joint_limits, kind), getattr(b.joint_limits, kind))
    torch.testing.assert_close(a.retract_config, b.retract_config)
    q = _random_q(a, 6, seed=3)
    sa, sb = Kinematics(a).forward(q), Kinematics(b).forward(q)
    torch.testing.assert_close(sa.ee_position, sb.ee_position, atol=1e-5, rtol=0)
    torch.testing.assert_close(sa.ee_quaternion, sb.ee_quaternion, atol=1e-5, rtol=0)
    ra, rb = sa.link_spheres.numpy(), sb.link_spheres.numpy()
    assert ra.shape == rb.shape
    assert np.linalg.norm(ra[:, None] - rb[:, :, None], axis=-1).min(1).max() < 1e-5


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_convert_round_trip_keeps_fk_spheres_limits_and_locks(tmp_path, version):
    robot_file, _ = _write(tmp_path, "franka", float(version))
    original = _load(robot_file)
    lite, back = tmp_path / "lite.yml", tmp_path / "back" / "franka.yml"
    back.parent.mkdir()
    assert main(["robot", "convert", str(robot_file), "-o", str(lite)]) == 0
    assert "robot_cfg" not in yaml.safe_load(lite.read_text())
    args = ["robot", "convert", str(lite), "-o", str(back), "--format-version", version]
    assert main(args) == 0
    written = yaml.safe_load(back.read_text())["robot_cfg"]["kinematics"]
    assert ("tool_frames" in written) == (version == "2.0")
    _same_robot(original, _load(lite))
    _same_robot(original, _load(back))


def test_bundled_robot_to_curobo_and_back(tmp_path):
    out = tmp_path / "franka_curobo.yml"
    assert main(["robot", "convert", "franka", "-o", str(out)]) == 0
    bundled, converted = RobotConfig.load("franka"), _load(out)
    _same_robot(bundled, converted)
    assert converted.collision_geometry_path is not None  # the <collision> shapes came along
    with pytest.raises(SystemExit, match="exist"):
        main(["robot", "convert", "franka", "-o", str(out)])


def test_a_curobo_file_is_accepted_wherever_a_robot_is(tmp_path, capsys):
    from curobo_lite.wrap import RobotWorld

    robot_file, _ = _write(tmp_path, "ur5e")
    checker = RobotWorld.from_config(robot=str(robot_file), world="table")
    assert checker.robot_config.joint_names == RobotConfig.load("ur5e").joint_names
    assert main(["robot", "show", str(robot_file)]) == 0
    assert "tool0" in capsys.readouterr().out
    data = yaml.safe_load(robot_file.read_text())
    with pytest.raises(ConfigError, match="urdf_path"):  # a dict has no folder of its own
        RobotConfig.from_dict(data)
    config = RobotConfig.from_dict(data, assets_path=robot_file.parent)
    assert config.dof == 6 and math.isfinite(config.retract_config.sum().item())


def test_moving_extra_links_and_unknown_ignore_links(tmp_path):
    """A prismatic extra link (cuRobo's ``Z_PRISM``) held by ``lock_joints`` moves its spheres
    along its parent's z; self-collision rules naming links the robot lacks are skipped and
    reported, as cuRobo skips them."""

    def edit(kin):
        kin["extra_links"] = {
            "probe": {
                "parent_link_name": "wrist_3_link",
                "link_name": "probe",
                "joint_name": "probe_joint",
                "joint_type": "Z_PRISM",
                "fixed_transform": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                "joint_limits": [0.0, 0.2],
            }
        }
        kin["lock_joints"] = {"probe_joint": 0.15}
        kin["cspace"]["joint_names"].append("probe_joint")
        kin["cspace"]["retract_config"].append(0.15)
        for key in ("null_space_weight", "cspace_distance_weight", "max_jerk"):
            kin["cspace"][key].append(1.0)
        kin["collision_link_names"].append("probe")
        kin["collision_spheres"]["probe"] = [{"center": [0.0, 0.0, 0.0], "radius": 0.01}]
        kin["self_collision_ignore"]["forarm_link"] = ["wrist_1_link"]  # cuRobo's own typo

    robot_file, urdf = _write(tmp_path, "ur5e", edit=edit)
    with pytest.warns(CuroboKeysIgnored, match="forarm_link"):
        config = RobotConfig.load(robot_file)
    assert config.lock_joints == {"probe_joint": 0.15}
    kin = Kinematics(config)
    q = _random_q(config, 3)
    state = kin.forward(q)
    rows = state.link_spheres[:, torch.tensor([n == "probe" for n in kin.sphere_link_names])]
    for b in range(3):
        values = _reference_values(config, q[b].numpy())
        wrist = UrdfFK(urdf).link_transforms(config.base_link, values)["wrist_3_link"]
        expected = wrist[:3, :3] @ [0.0, 0.0, 0.15] + wrist[:3, 3]
        np.testing.assert_allclose(rows[b, 0, :3].numpy(), expected, atol=1e-5)


def test_malformed_curobo_files_are_named_errors(tmp_path):
    """Seeded mutations of a cuRobo file (a value replaced by one of another type, or a key
    removed): each loads or raises this package's named error, never a bare TypeError."""
    import copy
    import random

    from curobo_lite.types.errors import CuroboLiteError

    robot_file, _ = _write(tmp_path, "franka")
    base = yaml.safe_load(robot_file.read_text())

    def paths(node, prefix=()):
        items = node.items() if isinstance(node, dict) else enumerate(node[:2])
        for key, value in items:
            yield (*prefix, key)
            if isinstance(value, dict | list):
                yield from paths(value, (*prefix, key))

    every = list(paths(base))
    values = [None, 1, -1.5, "x", [], {}, [1, 2], {"a": 1}, True, float("nan"), "panda_link3"]
    rng = random.Random(0)
    for _ in range(120):
        data = copy.deepcopy(base)
        path = rng.choice(every)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice(values)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                RobotConfig.from_dict(data, source=str(robot_file), base_dir=robot_file.parent)
        except CuroboLiteError as err:
            assert str(robot_file) in str(err) or "urdf" in str(err).lower(), (path, err)
