"""Robot description: joints, kinematic tree, limits, retract pose; YAML and URDF loading.

A robot file (``configs/robot/<name>.yml``) is a mapping with these keys:

- ``name`` (optional): a label; defaults to the file stem.
- ``base_link``, ``ee_link``: the links kinematics is computed between.
- ``joint_names``: the ``D`` actuated joints, in the order of every ``[..., D]`` tensor.
- ``joints``: the kinematic tree as URDF-style joints, each
  ``{name, type, parent, child, origin: {xyz, rpy}, axis, mimic: {joint, multiplier, offset}}``
  (``origin``, ``axis`` and ``mimic`` optional; ``axis`` defaults to ``[1, 0, 0]`` as in URDF),
  **or** ``urdf_path``: a URDF file (relative to the YAML file) that holds the tree.
- ``joint_limits``: ``position``, ``velocity``, ``acceleration``, ``jerk``, each
  ``{lower: [D], upper: [D]}``.
- ``retract_config``: ``[D]`` a rest configuration inside the position limits.
- ``cspace_weights``: ``[D]`` non-negative weights of joint-space costs.

Joint types: ``revolute``, ``continuous`` (treated as revolute; its position limits in the file
must be finite, and the URDF importer gives it ``[-2 pi, 2 pi]``), ``prismatic`` (metres) and
``fixed`` (folded into the next moving joint's origin). A ``mimic`` joint moves as
``multiplier * q[joint] + offset`` and the joint it follows must be in ``joint_names``.
``floating`` and ``planar`` joints are refused when they lie on the base-to-end-effector chain.
Every problem is reported as a ``ValueError`` naming the file, the key and the problem.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import yaml

from curobo_lite.config_files import (
    available_configs,
    config_dirs,
    resolve_config_file,
)
from curobo_lite.types import TensorDeviceType

MOVING_JOINT_TYPES = ("revolute", "continuous", "prismatic")
SUPPORTED_JOINT_TYPES = (*MOVING_JOINT_TYPES, "fixed")
URDF_JOINT_TYPES = (*SUPPORTED_JOINT_TYPES, "floating", "planar")
LIMIT_KINDS = ("position", "velocity", "acceleration", "jerk")
# Position range given to continuous joints by the URDF importer: one full turn either way,
# so interpolation and limit costs stay well defined.
CONTINUOUS_JOINT_LIMIT = 2.0 * math.pi

_TOP_REQUIRED = (
    "base_link",
    "ee_link",
    "joint_names",
    "joint_limits",
    "retract_config",
    "cspace_weights",
)
_TOP_OPTIONAL = ("name", "joints", "urdf_path")


# ------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------
def _preview(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


class _Reader:
    """Type-checks raw YAML values and builds errors that name the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, key: str, problem: str) -> ValueError:
        return ValueError(f"{self.source}: '{key}': {problem}")

    def mapping(
        self,
        value: Any,
        key: str,
        required: Sequence[str] = (),
        optional: Sequence[str] = (),
    ) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a mapping, received {type(value).__name__}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.error(key, f"missing key(s) {missing}")
        allowed = set(required) | set(optional)
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise self.error(key, f"unknown key(s) {unknown}; allowed keys: {sorted(allowed)}")
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, received {value!r}")
        return value

    def number(self, value: Any, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"expected a number, received {value!r}")
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number, received {value!r}")
        return float(value)

    def vector(self, value: Any, key: str, length: int | None = None) -> list[float]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"expected a list of numbers, received {value!r}")
        if length is not None and len(value) != length:
            raise self.error(key, f"expected {length} numbers, received {len(value)}")
        return [self.number(v, f"{key}[{i}]") for i, v in enumerate(value)]

    def strings(self, value: Any, key: str) -> list[str]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"expected a list of strings, received {value!r}")
        names = [self.string(v, f"{key}[{i}]") for i, v in enumerate(value)]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise self.error(key, f"duplicate name(s) {duplicates}")
        return names


# ------------------------------------------------------------------------------------------
# joints
# ------------------------------------------------------------------------------------------
@dataclass
class MimicSpec:
    """A joint that follows another: ``q = multiplier * q[joint] + offset``."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class JointSpec:
    """One URDF-style joint of the kinematic tree.

    Attributes:
        name: joint name.
        type: one of ``revolute``, ``continuous``, ``prismatic``, ``fixed`` (``floating`` and
            ``planar`` may appear off the chain, where they are ignored).
        parent, child: link names.
        origin_xyz: ``[3]`` translation of the joint frame in the parent link frame (metres).
        origin_rpy: ``[3]`` URDF roll-pitch-yaw of the joint frame (radians).
        axis: ``[3]`` unit axis in the joint frame (normalised on construction).
        mimic: optional :class:`MimicSpec`.
    """

    name: str
    type: str
    parent: str
    child: str
    origin_xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    origin_rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    mimic: MimicSpec | None = None

    @property
    def is_moving(self) -> bool:
        return self.type in MOVING_JOINT_TYPES

    @property
    def is_actuated(self) -> bool:
        """Moving and not a mimic: owns a column of ``q``."""
        return self.is_moving and self.mimic is None

    @classmethod
    def from_dict(cls, data: Any, key: str = "joints[0]", source: str = "<dict>") -> JointSpec:
        """Parse ``{name, type, parent, child, origin, axis, mimic}``; see the module docs."""
        reader = _Reader(source)
        data = reader.mapping(
            data, key, ("name", "type", "parent", "child"), ("origin", "axis", "mimic")
        )
        name = reader.string(data["name"], f"{key}.name")
        joint_type = reader.string(data["type"], f"{key}.type")
        if joint_type not in URDF_JOINT_TYPES:
            raise reader.error(
                f"{key}.type", f"expected one of {list(URDF_JOINT_TYPES)}, received {joint_type!r}"
            )
        xyz, rpy = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
        if data.get("origin") is not None:
            origin = reader.mapping(data["origin"], f"{key}.origin", (), ("xyz", "rpy"))
            if "xyz" in origin:
                xyz = tuple(reader.vector(origin["xyz"], f"{key}.origin.xyz", 3))
            if "rpy" in origin:
                rpy = tuple(reader.vector(origin["rpy"], f"{key}.origin.rpy", 3))
        axis = (1.0, 0.0, 0.0)
        if data.get("axis") is not None:
            axis = tuple(reader.vector(data["axis"], f"{key}.axis", 3))
        mimic = None
        if data.get("mimic") is not None:
            raw = reader.mapping(
                data["mimic"], f"{key}.mimic", ("joint",), ("multiplier", "offset")
            )
            mimic = MimicSpec(
                joint=reader.string(raw["joint"], f"{key}.mimic.joint"),
                multiplier=reader.number(raw.get("multiplier", 1.0), f"{key}.mimic.multiplier"),
                offset=reader.number(raw.get("offset", 0.0), f"{key}.mimic.offset"),
            )
        joint = cls(
            name=name,
            type=joint_type,
            parent=reader.string(data["parent"], f"{key}.parent"),
            child=reader.string(data["child"], f"{key}.child"),
            origin_xyz=xyz,
            origin_rpy=rpy,
            axis=axis,
            mimic=mimic,
        )
        joint.validate(reader, key)
        return joint

    def validate(self, reader: _Reader, key: str) -> None:
        """Check numbers, the axis norm and mimic use; normalise the axis in place."""
        for attr in ("origin_xyz", "origin_rpy", "axis"):
            sub = {"origin_xyz": "origin.xyz", "origin_rpy": "origin.rpy", "axis": "axis"}[attr]
            setattr(self, attr, tuple(reader.vector(list(getattr(self, attr)), f"{key}.{sub}", 3)))
        norm = math.sqrt(sum(a * a for a in self.axis))
        if self.is_moving and norm < 1e-9:
            raise reader.error(f"{key}.axis", f"axis of joint '{self.name}' has zero length")
        if norm >= 1e-9:
            self.axis = tuple(a / norm for a in self.axis)
        if self.parent == self.child:
            raise reader.error(f"{key}.child", f"joint '{self.name}' connects link to itself")
        if self.mimic is not None:
            if not self.is_moving:
                raise reader.error(
                    f"{key}.mimic", f"a {self.type} joint ('{self.name}') cannot mimic another"
                )
            if self.mimic.joint == self.name:
                raise reader.error(f"{key}.mimic.joint", f"joint '{self.name}' mimics itself")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "parent": self.parent,
            "child": self.child,
            "origin": {"xyz": list(self.origin_xyz), "rpy": list(self.origin_rpy)},
        }
        if self.type != "fixed":
            out["axis"] = list(self.axis)
        if self.mimic is not None:
            out["mimic"] = {
                "joint": self.mimic.joint,
                "multiplier": self.mimic.multiplier,
                "offset": self.mimic.offset,
            }
        return out


# ------------------------------------------------------------------------------------------
# limits
# ------------------------------------------------------------------------------------------
@dataclass
class JointLimits:
    """Per-joint bounds; each attribute is ``[2, D]`` (row 0 lower, row 1 upper).

    Attributes:
        position: radians (revolute) or metres (prismatic).
        velocity, acceleration, jerk: per second, per second squared, per second cubed.
    """

    position: torch.Tensor
    velocity: torch.Tensor
    acceleration: torch.Tensor
    jerk: torch.Tensor

    @classmethod
    def from_dict(
        cls,
        data: Any,
        dof: int,
        tensor_args: TensorDeviceType | None = None,
        source: str = "<dict>",
        key: str = "joint_limits",
    ) -> JointLimits:
        """``{position|velocity|acceleration|jerk: {lower: [D], upper: [D]}}`` to tensors."""
        tensor_args = tensor_args or TensorDeviceType()
        reader = _Reader(source)
        data = reader.mapping(data, key, LIMIT_KINDS)
        values = {}
        for kind in LIMIT_KINDS:
            bounds = reader.mapping(data[kind], f"{key}.{kind}", ("lower", "upper"))
            lower = reader.vector(bounds["lower"], f"{key}.{kind}.lower", dof)
            upper = reader.vector(bounds["upper"], f"{key}.{kind}.upper", dof)
            values[kind] = tensor_args.to_device([lower, upper])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {
            kind: {
                "lower": getattr(self, kind)[0].tolist(),
                "upper": getattr(self, kind)[1].tolist(),
            }
            for kind in LIMIT_KINDS
        }

    def to(self, tensor_args: TensorDeviceType) -> JointLimits:
        return JointLimits(**{k: tensor_args.to_device(getattr(self, k)) for k in LIMIT_KINDS})

    def validate(
        self, reader: _Reader, joint_names: Sequence[str], key: str = "joint_limits"
    ) -> None:
        dof = len(joint_names)
        for kind in LIMIT_KINDS:
            value = getattr(self, kind)
            if not isinstance(value, torch.Tensor) or tuple(value.shape) != (2, dof):
                shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value)
                raise reader.error(
                    f"{key}.{kind}",
                    f"expected a [2, {dof}] tensor (lower; upper), received {shape}",
                )
            if not torch.isfinite(value).all():
                raise reader.error(f"{key}.{kind}", "contains non-finite numbers")
            bad = (value[0] > value[1]).nonzero().flatten().tolist()
            if bad:
                j = bad[0]
                raise reader.error(
                    f"{key}.{kind}",
                    f"lower > upper for joint '{joint_names[j]}' "
                    f"({value[0, j].item():.6g} > {value[1, j].item():.6g})",
                )
            if kind != "position":
                # a robot at rest must satisfy its derivative limits
                bad = ((value[0] > 0) | (value[1] < 0)).nonzero().flatten().tolist()
                if bad:
                    j = bad[0]
                    raise reader.error(
                        f"{key}.{kind}",
                        f"range [{value[0, j].item():.6g}, {value[1, j].item():.6g}] of joint "
                        f"'{joint_names[j]}' does not contain 0",
                    )


# ------------------------------------------------------------------------------------------
# robot
# ------------------------------------------------------------------------------------------
@dataclass
class RobotConfig:
    """A validated robot description (see the module docstring for the file format).

    Attributes:
        name: label.
        base_link, ee_link: kinematics is expressed in ``base_link`` and ends at ``ee_link``.
        joint_names: ``D`` actuated joints, in tensor order.
        joints: the kinematic tree (may hold joints off the base-to-end-effector chain).
        joint_limits: :class:`JointLimits`, each ``[2, D]``.
        retract_config: ``[D]`` rest configuration.
        cspace_weights: ``[D]`` joint-space cost weights.
        tensor_args: device and dtype of the tensors above.
        source: where the description came from, used in error messages.
    """

    name: str
    base_link: str
    ee_link: str
    joint_names: list[str]
    joints: list[JointSpec]
    joint_limits: JointLimits
    retract_config: torch.Tensor
    cspace_weights: torch.Tensor
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)
    source: str = "<RobotConfig>"

    def __post_init__(self) -> None:
        self.joint_names = list(self.joint_names)
        self.joints = list(self.joints)
        self.retract_config = self.tensor_args.to_device(self.retract_config)
        self.cspace_weights = self.tensor_args.to_device(self.cspace_weights)
        self.joint_limits = self.joint_limits.to(self.tensor_args)
        self._chain = self._validate()

    # validation -------------------------------------------------------------------------------
    def _validate(self) -> list[JointSpec]:
        reader = _Reader(self.source)
        for i, joint in enumerate(self.joints):
            joint.validate(reader, f"joints[{i}]")
        if not self.joints:
            raise reader.error("joints", "the kinematic tree has no joints")
        seen: dict[str, int] = {}
        parent_joint: dict[str, JointSpec] = {}
        for i, joint in enumerate(self.joints):
            if joint.name in seen:
                raise reader.error(
                    f"joints[{i}].name",
                    f"joint name '{joint.name}' repeats joints[{seen[joint.name]}]",
                )
            seen[joint.name] = i
            if joint.child in parent_joint:
                raise reader.error(
                    f"joints[{i}].child",
                    f"link '{joint.child}' already has parent joint "
                    f"'{parent_joint[joint.child].name}' (the description must be a tree)",
                )
            parent_joint[joint.child] = joint
        links = {j.parent for j in self.joints} | {j.child for j in self.joints}
        for key in ("base_link", "ee_link"):
            link = getattr(self, key)
            if link not in links:
                raise reader.error(
                    key, f"unknown link '{link}'; links in the tree: {_preview(sorted(links))}"
                )
        if self.base_link == self.ee_link:
            raise reader.error("ee_link", f"ee_link equals base_link ('{self.base_link}')")

        chain: list[JointSpec] = []
        link = self.ee_link
        while link != self.base_link:
            if link not in parent_joint or len(chain) > len(self.joints):
                raise reader.error(
                    "ee_link",
                    f"the chain does not connect base_link '{self.base_link}' to ee_link "
                    f"'{self.ee_link}': walking up from '{self.ee_link}' ends at '{link}'",
                )
            chain.append(parent_joint[link])
            link = parent_joint[link].parent
        chain.reverse()

        by_name = {j.name: j for j in self.joints}
        for joint in chain:
            if joint.type not in SUPPORTED_JOINT_TYPES:
                raise reader.error(
                    f"joints[{seen[joint.name]}].type",
                    f"joint '{joint.name}' on the chain has type '{joint.type}', which is not "
                    f"supported (supported: {list(SUPPORTED_JOINT_TYPES)})",
                )
            if joint.mimic is not None:
                key = f"joints[{seen[joint.name]}].mimic.joint"
                master = by_name.get(joint.mimic.joint)
                if master is None:
                    raise reader.error(key, f"mimics unknown joint '{joint.mimic.joint}'")
                if not master.is_actuated:
                    raise reader.error(
                        key,
                        f"joint '{joint.name}' mimics '{master.name}', which is "
                        f"{'itself a mimic' if master.mimic else master.type} joint; it must "
                        "be an actuated joint",
                    )
        if not any(j.is_moving for j in chain):
            raise reader.error("joints", "the chain from base_link to ee_link has no moving joint")

        expected = [j.name for j in chain if j.is_actuated]
        masters = [j.mimic.joint for j in chain if j.mimic is not None]
        allowed = set(expected) | set(masters)
        duplicates = sorted({n for n in self.joint_names if self.joint_names.count(n) > 1})
        if duplicates:
            raise reader.error("joint_names", f"duplicate name(s) {duplicates}")
        for i, name in enumerate(self.joint_names):
            if name not in by_name:
                raise reader.error(f"joint_names[{i}]", f"unknown joint '{name}'")
            if name not in allowed:
                joint = by_name[name]
                why = (
                    f"is a {joint.type} joint"
                    if not joint.is_moving
                    else "is a mimic joint"
                    if joint.mimic
                    else "is not on the chain from base_link to ee_link"
                )
                raise reader.error(f"joint_names[{i}]", f"joint '{name}' {why}")
        missing = [n for n in (*expected, *masters) if n not in self.joint_names]
        if missing:
            raise reader.error(
                "joint_names",
                f"actuated joint(s) {sorted(set(missing))} on the chain are missing; "
                f"expected {expected + [m for m in masters if m not in expected]}",
            )

        self.joint_limits.validate(reader, self.joint_names)
        dof = len(self.joint_names)
        for key in ("retract_config", "cspace_weights"):
            value = getattr(self, key)
            if tuple(value.shape) != (dof,):
                raise reader.error(
                    key, f"expected {dof} numbers (one per joint), received {tuple(value.shape)}"
                )
            if not torch.isfinite(value).all():
                raise reader.error(key, "contains non-finite numbers")
        if (self.cspace_weights < 0).any():
            raise reader.error("cspace_weights", "weights must be >= 0")
        low, high = self.joint_limits.position
        outside = ((self.retract_config < low) | (self.retract_config > high)).nonzero()
        if outside.numel():
            j = outside.flatten()[0].item()
            raise reader.error(
                "retract_config",
                f"joint '{self.joint_names[j]}' at {self.retract_config[j].item():.6g} is outside "
                f"its position limits [{low[j].item():.6g}, {high[j].item():.6g}]",
            )
        return chain

    # properties ---------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def chain(self) -> list[JointSpec]:
        """Joints from ``base_link`` to ``ee_link`` in order, fixed joints included."""
        return list(self._chain)

    # construction --------------------------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        data: Any,
        tensor_args: TensorDeviceType | None = None,
        source: str = "<dict>",
        base_dir: str | os.PathLike | None = None,
    ) -> RobotConfig:
        """Build from a parsed robot file; ``base_dir`` resolves a relative ``urdf_path``."""
        tensor_args = tensor_args or TensorDeviceType()
        reader = _Reader(source)
        data = reader.mapping(data, "<top level>", _TOP_REQUIRED, _TOP_OPTIONAL)
        has_joints, has_urdf = "joints" in data, "urdf_path" in data
        if has_joints == has_urdf:
            raise reader.error(
                "joints", "give exactly one of 'joints' (the tree) or 'urdf_path' (a URDF file)"
            )
        name = data.get("name")
        name = reader.string(name, "name") if name is not None else Path(source).stem
        joint_names = reader.strings(data["joint_names"], "joint_names")
        if not joint_names:
            raise reader.error("joint_names", "expected at least one joint")
        if has_joints:
            raw = data["joints"]
            if isinstance(raw, str) or not isinstance(raw, Sequence):
                raise reader.error("joints", f"expected a list of joints, received {raw!r}")
            joints = [JointSpec.from_dict(j, f"joints[{i}]", source) for i, j in enumerate(raw)]
        else:
            from curobo_lite.robot.urdf import read_urdf_joints

            urdf_path = Path(reader.string(data["urdf_path"], "urdf_path"))
            if not urdf_path.is_absolute():
                urdf_path = Path(base_dir or ".") / urdf_path
            if not urdf_path.is_file():
                raise reader.error("urdf_path", f"URDF file '{urdf_path}' does not exist")
            joints = read_urdf_joints(urdf_path)
        dof = len(joint_names)
        limits = JointLimits.from_dict(data["joint_limits"], dof, tensor_args, source)
        retract = reader.vector(data["retract_config"], "retract_config", dof)
        weights = reader.vector(data["cspace_weights"], "cspace_weights", dof)
        return cls(
            name=name,
            base_link=reader.string(data["base_link"], "base_link"),
            ee_link=reader.string(data["ee_link"], "ee_link"),
            joint_names=joint_names,
            joints=joints,
            joint_limits=limits,
            retract_config=tensor_args.to_device(retract),
            cspace_weights=tensor_args.to_device(weights),
            tensor_args=tensor_args,
            source=source,
        )

    @classmethod
    def from_yaml(
        cls, path: str | os.PathLike, tensor_args: TensorDeviceType | None = None
    ) -> RobotConfig:
        """Load and validate a robot file."""
        path = Path(path)
        source = str(path)
        if not path.is_file():
            raise ValueError(f"{source}: robot file does not exist")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            raise ValueError(f"{source}: invalid YAML: {err}") from None
        if data is None:
            raise ValueError(f"{source}: the file is empty")
        return cls.from_dict(data, tensor_args, source=source, base_dir=path.parent)

    @classmethod
    def load(
        cls, name_or_path: str | os.PathLike, tensor_args: TensorDeviceType | None = None
    ) -> RobotConfig:
        """A bundled robot by name (``"franka"``) or a robot file by path."""
        return cls.from_yaml(resolve_robot_file(name_or_path), tensor_args)

    @classmethod
    def from_urdf(
        cls,
        path: str | os.PathLike,
        base_link: str,
        ee_link: str,
        tensor_args: TensorDeviceType | None = None,
        acceleration_limit: float | Sequence[float] = 15.0,
        jerk_limit: float | Sequence[float] = 500.0,
        name: str | None = None,
    ) -> RobotConfig:
        """Import the chain ``base_link -> ee_link`` of a URDF file (parsed with yourdfpy).

        Position and velocity limits come from each joint's ``<limit>`` (continuous joints get
        ``[-2 pi, 2 pi]``); URDF has no acceleration or jerk limits, so ``acceleration_limit``
        and ``jerk_limit`` (a scalar or ``D`` values, symmetric) fill them. The retract
        configuration is the middle of the position range; c-space weights are 1. Joints off
        the chain are dropped, except those followed by a mimic joint on it.
        """
        from curobo_lite.robot.urdf import config_dict_from_urdf

        data, source = config_dict_from_urdf(
            path, base_link, ee_link, acceleration_limit, jerk_limit, name
        )
        return cls.from_dict(data, tensor_args, source=source)

    # export ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "base_link": self.base_link,
            "ee_link": self.ee_link,
            "joint_names": list(self.joint_names),
            "joints": [j.to_dict() for j in self.joints],
            "joint_limits": self.joint_limits.to_dict(),
            "retract_config": self.retract_config.tolist(),
            "cspace_weights": self.cspace_weights.tolist(),
        }

    def to_yaml(self, path: str | os.PathLike) -> None:
        """Write a self-contained robot file (the tree is written out, never a URDF path)."""
        text = yaml.dump(
            self.to_dict(), Dumper=_FlowListDumper, sort_keys=False, default_flow_style=False
        )
        header = f"# Robot '{self.name}' written by curobo_lite from {self.source}\n"
        Path(path).write_text(header + text)

    def to(self, tensor_args: TensorDeviceType) -> RobotConfig:
        """Copy with tensors on ``tensor_args``'s device and dtype."""
        return RobotConfig(
            name=self.name,
            base_link=self.base_link,
            ee_link=self.ee_link,
            joint_names=self.joint_names,
            joints=self.joints,
            joint_limits=self.joint_limits,
            retract_config=self.retract_config,
            cspace_weights=self.cspace_weights,
            tensor_args=tensor_args,
            source=self.source,
        )

    def __repr__(self) -> str:
        return (
            f"RobotConfig(name={self.name!r}, dof={self.dof}, base_link={self.base_link!r}, "
            f"ee_link={self.ee_link!r}, joint_names={self.joint_names}, {self.tensor_args})"
        )


class _FlowListDumper(yaml.SafeDumper):
    """Writes lists of scalars on one line (``[0.0, 1.0]``) and everything else in block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(isinstance(v, int | float | str) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_FlowListDumper.add_representer(list, _represent_list)


# ------------------------------------------------------------------------------------------
# bundled robot files
# ------------------------------------------------------------------------------------------
def robot_config_dirs() -> list[Path]:
    """Folders searched for ``<name>.yml`` robot files (see :mod:`curobo_lite.config_files`)."""
    return config_dirs("robot")


def available_robots() -> list[str]:
    """Names of the robot files found in :func:`robot_config_dirs`."""
    return available_configs("robot")


def resolve_robot_file(name_or_path: str | os.PathLike) -> Path:
    """A robot file path from a bundled name (``"franka"``) or a path to a ``.yml`` file."""
    return resolve_config_file("robot", name_or_path)
