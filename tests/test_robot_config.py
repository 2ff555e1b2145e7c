"""Robot files: bundled robots, loading rules, URDF import, YAML round trip, validation, CLI."""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path

import pytest
import torch
import yaml

from curobo_lite.cli import main
from curobo_lite.robot import (
    Kinematics,
    RobotConfig,
    URDFWarning,
    available_robots,
    resolve_robot_file,
)
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]
PANDA_URDF = Path(__file__).parent / "data" / "franka_panda.urdf"
F64 = TensorDeviceType(dtype=torch.float64)


def _franka_dict() -> dict:
    data = yaml.safe_load((REPO / "configs" / "robot" / "franka.yml").read_text())
    # relative to configs/robot: absolute, so that copies written elsewhere still find it
    data["collision_geometry"] = str(REPO / "configs" / "robot" / data["collision_geometry"])
    return data


# ------------------------------------------------------------------------------------------
# bundled robots and loading
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, dof, base, ee",
    [
        ("franka", 7, "panda_link0", "panda_hand"),
        ("ur5e", 6, "base", "tool0"),
        ("iiwa", 7, "iiwa_link_0", "iiwa_link_ee"),
        ("planar3", 3, "base", "tool"),
    ],
)
def test_bundled_robots_load(name, dof, base, ee):
    config = RobotConfig.load(name)
    assert (config.name, config.dof, config.base_link, config.ee_link) == (name, dof, base, ee)
    assert len(config.joint_names) == dof
    for kind in ("position", "velocity", "acceleration", "jerk"):
        limits = getattr(config.joint_limits, kind)
        assert limits.shape == (2, dof) and limits.dtype == torch.float32
        assert (limits[0] < limits[1]).all()
    assert config.retract_config.shape == (dof,) and config.cspace_weights.shape == (dof,)
    assert name in available_robots()


def test_franka_limits_are_the_datasheet_values():
    limits = RobotConfig.load("franka", F64).joint_limits
    expected = {
        "position": [
            (-2.8973, 2.8973),
            (-1.7628, 1.7628),
            (-2.8973, 2.8973),
            (-3.0718, -0.0698),
            (-2.8973, 2.8973),
            (-0.0175, 3.7525),
            (-2.8973, 2.8973),
        ],
        "velocity": [(-v, v) for v in (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)],
        "acceleration": [(-a, a) for a in (15, 7.5, 10, 12.5, 15, 20, 20)],
        "jerk": [(-j, j) for j in (7500, 3750, 5000, 6250, 7500, 10000, 10000)],
    }
    for kind, pairs in expected.items():
        ref = torch.tensor(pairs, dtype=torch.float64).t()
        torch.testing.assert_close(getattr(limits, kind), ref)


def test_iiwa_and_ur5e_speeds_in_degrees():
    iiwa = RobotConfig.load("iiwa", F64).joint_limits.velocity[1]
    torch.testing.assert_close(
        iiwa, torch.tensor([85, 85, 100, 75, 130, 135, 135], dtype=torch.float64) * math.pi / 180
    )
    ur5e = RobotConfig.load("ur5e", F64).joint_limits.velocity[1]
    torch.testing.assert_close(ur5e, torch.full((6,), math.pi, dtype=torch.float64))


def test_load_by_name_path_and_from_another_directory(tmp_path, monkeypatch):
    by_name = RobotConfig.load("planar3")
    path = REPO / "configs" / "robot" / "planar3.yml"
    assert resolve_robot_file("planar3").resolve() == path
    for ref in (str(path), path):
        assert RobotConfig.load(ref).joint_names == by_name.joint_names
    monkeypatch.chdir(tmp_path)  # the package locates its own source tree
    assert RobotConfig.load("planar3").joint_names == by_name.joint_names
    with pytest.raises(ValueError, match=r"robot 'no_such_robot'.*available: \[.*'franka'"):
        RobotConfig.load("no_such_robot")
    with pytest.raises(ValueError, match="missing.yml' does not exist"):
        RobotConfig.load("missing.yml")


def test_config_dir_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "robot").mkdir()
    data = _franka_dict()
    data["name"] = "my_panda"
    (tmp_path / "robot" / "my_panda.yml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("CUROBO_LITE_CONFIG_DIR", str(tmp_path))
    assert RobotConfig.load("my_panda").name == "my_panda"
    assert "my_panda" in available_robots()


def test_tensor_args_are_carried():
    config = RobotConfig.load("franka", F64)
    assert config.tensor_args == F64
    assert config.retract_config.dtype == torch.float64
    assert config.joint_limits.jerk.dtype == torch.float64
    f32 = config.to(TensorDeviceType())
    assert f32.cspace_weights.dtype == torch.float32 and f32.tensor_args.dtype == torch.float32
    assert "franka" in repr(config) and "dof=7" in repr(config)


def test_yaml_round_trip(tmp_path):
    config = RobotConfig.load("ur5e", F64)
    path = tmp_path / "ur5e_copy.yml"
    config.to_yaml(path)
    again = RobotConfig.from_yaml(path, F64)
    assert again.joints == config.joints
    assert again.joint_names == config.joint_names
    for kind in ("position", "velocity", "acceleration", "jerk"):
        assert torch.equal(getattr(again.joint_limits, kind), getattr(config.joint_limits, kind))
    assert torch.equal(again.retract_config, config.retract_config)
    assert torch.equal(again.cspace_weights, config.cspace_weights)
    assert path.read_text().startswith("# Robot 'ur5e' written by curobo_lite")


def test_fixed_joints_fold_into_the_chain():
    config = RobotConfig.load("franka")
    chain = [j.name for j in config.chain]
    assert chain[-2:] == ["panda_joint8", "panda_hand_joint"]
    assert [j.type for j in config.chain[-2:]] == ["fixed", "fixed"]
    assert Kinematics(config).link_names[-2:] == ["panda_link7", "panda_hand"]


# ------------------------------------------------------------------------------------------
# URDF import
# ------------------------------------------------------------------------------------------
def test_from_urdf_reads_tree_and_limits():
    config = RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_hand", tensor_args=F64)
    bundled = RobotConfig.load("franka", F64)
    assert config.joint_names == bundled.joint_names
    assert config.name == "franka_panda"
    for a, b in zip(config.chain, bundled.chain):
        assert (a.name, a.type, a.parent, a.child) == (b.name, b.type, b.parent, b.child)
        assert a.origin_xyz == pytest.approx(b.origin_xyz, abs=1e-12)
        assert a.origin_rpy == pytest.approx(b.origin_rpy, abs=1e-12)
    # off-chain finger joints are dropped (the bundled file keeps them, locked, for spheres),
    # and the Panda URDF has no link for held objects (the bundled file adds attached_object)
    extra = {"panda_finger_joint1", "panda_finger_joint2", "attached_object_joint"}
    assert {j.name for j in config.joints} == {j.name for j in bundled.joints} - extra
    torch.testing.assert_close(config.joint_limits.position, bundled.joint_limits.position)
    torch.testing.assert_close(config.joint_limits.velocity, bundled.joint_limits.velocity)
    # URDF has no acceleration / jerk: documented defaults, symmetric
    assert (config.joint_limits.acceleration == torch.tensor([[-15.0], [15.0]]).double()).all()
    assert (config.joint_limits.jerk == torch.tensor([[-500.0], [500.0]]).double()).all()
    low, high = bundled.joint_limits.position
    torch.testing.assert_close(config.retract_config, 0.5 * (low + high))
    assert (config.cspace_weights == 1).all()


def test_from_urdf_custom_limits_and_mimic_master():
    config = RobotConfig.from_urdf(
        PANDA_URDF,
        "panda_link0",
        "panda_rightfinger",
        acceleration_limit=[10.0] * 8,
        jerk_limit=1000.0,
        name="panda_finger",
    )
    assert config.name == "panda_finger"
    assert config.joint_names[-1] == "panda_finger_joint1"
    assert config.chain[-1].mimic.joint == "panda_finger_joint1"
    assert config.joint_limits.position[:, -1].tolist() == pytest.approx([0.0, 0.04])
    assert config.joint_limits.acceleration[1].tolist() == [10.0] * 8
    assert config.joint_limits.jerk[0].tolist() == [-1000.0] * 8
    with pytest.raises(ValueError, match="acceleration_limit"):
        RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_hand", acceleration_limit=[1.0])
    with pytest.raises(ValueError, match="jerk_limit"):
        RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_hand", jerk_limit=-1.0)


def test_from_urdf_errors(tmp_path):
    with pytest.raises(ValueError, match="'ee_link': unknown link 'panda_link9'"):
        RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_link9")
    with pytest.raises(ValueError, match="chain does not connect"):
        RobotConfig.from_urdf(PANDA_URDF, "panda_leftfinger", "panda_rightfinger")
    with pytest.raises(ValueError, match="URDF file does not exist"):
        RobotConfig.from_urdf(tmp_path / "none.urdf", "a", "b")
    bad = tmp_path / "broken.urdf"
    bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'>")
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        RobotConfig.from_urdf(bad, "a", "b")
    no_velocity = tmp_path / "no_velocity.urdf"
    no_velocity.write_text(
        PANDA_URDF.read_text().replace('velocity="2.61" effort="12"', 'effort="12"', 1)
    )
    with pytest.raises(ValueError, match="joint 'panda_joint5'.*positive 'velocity'"):
        RobotConfig.from_urdf(no_velocity, "panda_link0", "panda_hand")


def test_a_urdf_yourdfpy_recovers_loads_with_one_warning_naming_the_file(tmp_path, capfd, caplog):
    """An undeclared namespace prefix (a leftover ``<xacro:...>`` tag) makes the XML malformed;
    yourdfpy drops the tag and logs two anonymous lines. They come as one URDFWarning with the
    path instead, and nothing is printed; a file it cannot recover prints nothing either."""
    leftover = tmp_path / "leftover_xacro.urdf"
    leftover.write_text(
        PANDA_URDF.read_text().replace("</robot>", '<xacro:property name="x" value="1"/></robot>')
    )
    with pytest.warns(URDFWarning, match=re.escape(str(leftover)) + ".*Namespace prefix xacro"):
        robot = RobotConfig.from_urdf(leftover, "panda_link0", "panda_hand")
    reference = RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_hand")
    assert robot.joint_names == reference.joint_names
    torch.testing.assert_close(robot.joint_limits.position, reference.joint_limits.position)
    bad = tmp_path / "broken.urdf"
    bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='revolute'>")
    with pytest.raises(ValueError, match="cannot parse URDF"):
        RobotConfig.from_urdf(bad, "a", "b")
    assert not [r for r in caplog.records if r.name.startswith("yourdfpy")]
    assert "parsing approach" not in capfd.readouterr().err


ROTATED_INERTIAL_URDF = """<robot name="pendulum">
  <link name="base"/>
  <link name="arm">
    <inertial>
      <origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/>
      <mass value="2.0"/>
      <inertia ixx="1.0" iyy="2.0" izz="3.0" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="hinge" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" velocity="2" effort="5"/>
  </joint>
</robot>
"""


def test_urdf_inertials_are_rotated_into_the_link_frame(tmp_path):
    """A diagonal tensor (1, 2, 3) in a frame turned 90 degrees about z is (2, 1, 3) in the
    link frame; the YAML route (urdf_path, no dynamics section) reads the same."""
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(ROTATED_INERTIAL_URDF)
    imported = RobotConfig.from_urdf(urdf, "base", "arm")
    path = tmp_path / "pendulum.yml"
    data = imported.to_dict()
    data.pop("joints")
    data.pop("dynamics")
    path.write_text(yaml.safe_dump({**data, "urdf_path": "pendulum.urdf"}))
    for config in (imported, RobotConfig.from_yaml(path)):
        inertial = config.dynamics.link_inertials["arm"]
        assert inertial.mass == 2.0
        assert inertial.com == pytest.approx((0.1, 0.0, 0.0))
        assert inertial.inertia == pytest.approx((2.0, 1.0, 3.0, 0.0, 0.0, 0.0), abs=1e-12)
        assert config.dynamics.effort_limit == [5.0]


def test_franka_dynamics_totals():
    """The arm's published mass (Franka datasheet: about 18 kg with the hand) and torque limits."""
    dynamics = RobotConfig.load("franka").dynamics
    total = sum(i.mass for i in dynamics.link_inertials.values())
    assert 17.0 < total < 19.0
    assert dynamics.effort_limit == [87.0] * 4 + [12.0] * 3


# ------------------------------------------------------------------------------------------
# validation: every rule names the file, the key and the problem
# ------------------------------------------------------------------------------------------
def _expect_error(tmp_path, data, key: str, problem: str, text: str | None = None):
    path = tmp_path / "bad_robot.yml"
    path.write_text(text if text is not None else yaml.safe_dump(data))
    with pytest.raises(ValueError) as info:
        RobotConfig.from_yaml(path)
    message = str(info.value)
    assert str(path) in message, message
    assert key in message, message
    assert re.search(problem, message), message


def _mutate(fn):
    data = _franka_dict()
    fn(data)
    return data


def _set(path: str, value):
    def apply(data):
        keys = path.split(".")
        target = data
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = keys[-1]
        target[int(last) if last.isdigit() else last] = value

    return apply


def _delete(key: str):
    return lambda data: data.pop(key)


def _drop_last_joint(data):
    data["joint_names"].pop()
    for kind in data["joint_limits"].values():
        for side in kind.values():
            side.pop()
    data["retract_config"].pop()
    data["cspace_weights"].pop()


INF = float("inf")
NAN = float("nan")
LIMIT7 = [1.0] * 7
CASES = {
    "missing key": (_delete("ee_link"), "<top level>", r"missing key\(s\) \['ee_link'\]"),
    "unknown key": (_set("colour", "red"), "<top level>", r"unknown key\(s\) \['colour'\]"),
    "no tree": (_delete("joints"), "joints", "exactly one of"),
    "tree and urdf": (_set("urdf_path", "x.urdf"), "joints", "exactly one of"),
    "unknown joint key": (_set("joints.0.color", 1), "joints[0]", r"unknown key\(s\)"),
    "missing joint key": (
        lambda d: d["joints"][2].pop("parent"),
        "joints[2]",
        r"missing key\(s\) \['parent'\]",
    ),
    "wrong vector length": (
        _set("joint_limits.velocity.upper", [2.0] * 6),
        "joint_limits.velocity.upper",
        "expected 7 numbers, received 6",
    ),
    "wrong retract length": (
        _set("retract_config", [0.0] * 8),
        "retract_config",
        "expected 7 numbers, received 8",
    ),
    "wrong xyz length": (
        _set("joints.1.origin.xyz", [0.0, 0.0]),
        "joints[1].origin.xyz",
        "expected 3 numbers",
    ),
    "lower above upper": (
        _set("joint_limits.position.lower", [3.0] + [-1.0] * 6),
        "joint_limits.position",
        r"lower > upper for joint 'panda_joint1' \(3 > 2.8973\)",
    ),
    "infinite number": (
        _set("joint_limits.jerk.upper", [INF] + LIMIT7[1:]),
        r"joint_limits.jerk.upper[0]",
        "expected a finite number",
    ),
    "nan": (_set("cspace_weights", [NAN] + LIMIT7[1:]), "cspace_weights[0]", "finite"),
    "not a number": (_set("joints.0.axis", [0, 0, "z"]), "joints[0].axis[2]", "expected a number"),
    "boolean": (_set("retract_config", [True] + [0.0] * 6), "retract_config[0]", "a number"),
    "unknown ee link": (_set("ee_link", "gripper"), "ee_link", "unknown link 'gripper'"),
    "unknown base link": (_set("base_link", "world"), "base_link", "unknown link 'world'"),
    "chain not connected": (
        lambda d: d.update(base_link="panda_hand", ee_link="panda_link5"),
        "ee_link",
        "does not connect base_link 'panda_hand'",
    ),
    "base equals ee": (_set("ee_link", "panda_link0"), "ee_link", "equals base_link"),
    "unknown joint name": (
        _set("joint_names.6", "panda_joint9"),
        "joint_names[6]",
        "unknown joint 'panda_joint9'",
    ),
    "fixed joint named": (
        lambda d: d["joint_names"].__setitem__(6, "panda_joint8"),
        "joint_names[6]",
        "is a fixed joint",
    ),
    "chain joint missing": (
        lambda d: _drop_last_joint(d),
        "joint_names",
        r"\['panda_joint7'\] on the chain are missing",
    ),
    "duplicate joint_names": (
        _set("joint_names.6", "panda_joint1"),
        "joint_names",
        "duplicate",
    ),
    "duplicate joint in tree": (
        _set("joints.1.name", "panda_joint1"),
        "joints[1].name",
        r"repeats joints\[0\]",
    ),
    "link with two parents": (
        _set("joints.4.child", "panda_link2"),
        "joints[4].child",
        "already has parent joint 'panda_joint2'",
    ),
    "unknown joint type": (_set("joints.0.type", "hinge"), "joints[0].type", "expected one of"),
    "floating joint on chain": (
        _set("joints.3.type", "floating"),
        "joints[3].type",
        "'floating', which is not supported",
    ),
    "zero axis": (_set("joints.4.axis", [0, 0, 0]), "joints[4].axis", "zero length"),
    "mimic of unknown joint": (
        _set("joints.6.mimic", {"joint": "ghost"}),
        "joints[6].mimic.joint",
        "unknown joint 'ghost'",
    ),
    "velocity range without zero": (
        _set("joint_limits.velocity.lower", [0.5] + [-2.0] * 6),
        "joint_limits.velocity",
        "does not contain 0",
    ),
    "retract outside limits": (
        _set("retract_config", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        "retract_config",
        "'panda_joint4' at 0 is outside its position limits",
    ),
    "negative weight": (_set("cspace_weights", [-1.0] + LIMIT7[1:]), "cspace_weights", ">= 0"),
    "limits not a mapping": (_set("joint_limits", [1, 2]), "joint_limits", "expected a mapping"),
    "missing limit kind": (
        lambda d: d["joint_limits"].pop("jerk"),
        "joint_limits",
        r"missing key\(s\) \['jerk'\]",
    ),
    "negative mass": (
        _set("dynamics.link_inertials.panda_link1.mass", -1.0),
        "dynamics.link_inertials.panda_link1.mass",
        "expected a mass > 0",
    ),
    # cuRobo's franka_panda.urdf tensor of panda_link3: ixy^2 > ixx iyy
    "inertia not positive definite": (
        _set(
            "dynamics.link_inertials.panda_link3.inertia",
            [0.006, 0.0086, 0.0065, 0.009, 0.003, 0.009],
        ),
        "dynamics.link_inertials.panda_link3.inertia",
        "positive definite",
    ),
    "inertia breaks triangle inequality": (
        _set("dynamics.link_inertials.panda_link3.inertia", [1.0, 0.1, 0.1, 0.0, 0.0, 0.0]),
        "dynamics.link_inertials.panda_link3.inertia",
        "triangle inequality",
    ),
    "inertial of unknown link": (
        _set("dynamics.link_inertials.ghost", {"mass": 1.0, "inertia": [1, 1, 1, 0, 0, 0]}),
        "dynamics.link_inertials.ghost",
        "unknown link 'ghost'",
    ),
    "effort limit per joint": (
        _set("dynamics.effort_limit", [87.0]),
        "dynamics.effort_limit",
        "expected 7 numbers",
    ),
    "effort limit positive": (
        _set("dynamics.effort_limit", [87.0] * 6 + [0.0]),
        "dynamics.effort_limit[6]",
        "expected a limit > 0",
    ),
    "urdf path missing": (
        lambda d: (d.pop("joints"), d.__setitem__("urdf_path", "nowhere.urdf")),
        "urdf_path",
        "does not exist",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validation_errors(tmp_path, case):
    mutate, key, problem = CASES[case]
    _expect_error(tmp_path, _mutate(mutate), key, problem)


def test_mimic_of_a_mimic_is_refused(tmp_path):
    config = RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_rightfinger")
    data = copy.deepcopy(config.to_dict())
    left = next(j for j in data["joints"] if j["name"] == "panda_finger_joint1")
    left["mimic"] = {"joint": "panda_joint7"}
    _drop_last_joint(data)
    _expect_error(tmp_path, data, "mimic.joint", "itself a mimic")


def test_bad_yaml_and_empty_file(tmp_path):
    _expect_error(tmp_path, None, "invalid YAML", "", text="joint_names: [a, b\n")
    _expect_error(tmp_path, None, "empty", "", text="")
    _expect_error(tmp_path, None, "<top level>", "expected a mapping", text="- 1\n- 2\n")
    with pytest.raises(ValueError, match="robot file does not exist"):
        RobotConfig.from_yaml(tmp_path / "absent.yml")


def test_direct_construction_is_validated():
    config = RobotConfig.load("planar3")
    with pytest.raises(ValueError, match=r"retract_config'.*expected 3 numbers"):
        RobotConfig(
            name="x",
            base_link=config.base_link,
            ee_link=config.ee_link,
            joint_names=config.joint_names,
            joints=config.joints,
            joint_limits=config.joint_limits,
            retract_config=torch.zeros(2),
            cspace_weights=config.cspace_weights,
        )


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------
def test_cli_show(capsys):
    assert main(["robot", "show", "franka"]) == 0
    out = capsys.readouterr().out
    for name in ("panda_joint1", "panda_joint7", "panda_hand", "2.175", "1e+04"):
        assert name in out
    numbers = re.search(r"xyz = \[([^\]]+)\]", out).group(1).split(",")
    # Franka 'ready' pose: hand 0.307 m forward, 0.590 m up (published DH numbers)
    assert [float(v) for v in numbers] == pytest.approx([0.3069, 0.0, 0.5903], abs=2e-4)


def test_cli_import_urdf_and_show(tmp_path, capsys):
    out_file = tmp_path / "panda_from_urdf.yml"
    args = ["robot", "import-urdf", str(PANDA_URDF), "--base-link", "panda_link0"]
    args += ["--ee-link", "panda_hand", "-o", str(out_file), "--jerk-limit", "800"]
    assert main(args) == 0
    assert "wrote" in capsys.readouterr().out
    config = RobotConfig.from_yaml(out_file)
    assert config.joint_names == RobotConfig.load("franka").joint_names
    assert config.joint_limits.jerk[1].tolist() == [800.0] * 7
    with pytest.raises(SystemExit, match="exists; pass --force"):
        main(args)
    assert main([*args, "--force"]) == 0
    assert main(["robot", "show", str(out_file)]) == 0
    assert "franka_panda" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="unknown link 'nope'"):
        main([*args[:-4], "--ee-link", "nope", "-o", str(tmp_path / "x.yml")])
    assert not (tmp_path / "x.yml").exists()
    with pytest.raises(SystemExit, match="no such bundled robot"):
        main(["robot", "show", "nonexistent_robot"])


def test_package_directory_is_the_repo_root():
    """Bundled files resolve relative to the package source, as an editable install needs."""
    import curobo_lite

    package_root = Path(curobo_lite.__file__).resolve().parents[1]
    assert os.path.samefile(package_root / "configs" / "robot", REPO / "configs" / "robot")


@pytest.mark.parametrize(
    "rpy",
    [
        (0.3, -0.7, 2.9),
        (0.3, math.pi / 2, -0.2),
        (-1.1, -math.pi / 2, 0.4),
        (math.pi, 0.0, -math.pi),
    ],
)
def test_urdf_origins_survive_import_including_gimbal_lock(tmp_path, rpy):
    """The importer turns yourdfpy's 4x4 origins back into rpy; the rotation must not change."""
    from curobo_lite.types import rpy_to_matrix

    urdf = f"""<robot name="r"><link name="a"/><link name="b"/>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0.1 -0.2 0.3" rpy="{rpy[0]!r} {rpy[1]!r} {rpy[2]!r}"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" velocity="1" effort="1"/></joint></robot>"""
    path = tmp_path / "r.urdf"
    path.write_text(urdf)
    joint = RobotConfig.from_urdf(path, "a", "b").chain[0]
    assert joint.origin_xyz == pytest.approx((0.1, -0.2, 0.3))
    imported = rpy_to_matrix(torch.tensor(joint.origin_rpy, dtype=torch.float64))
    expected = rpy_to_matrix(torch.tensor(rpy, dtype=torch.float64))
    torch.testing.assert_close(imported, expected, atol=1e-12, rtol=0)
