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

Collision model (cuRobo's keys, all optional; see :class:`RobotCollisionConfig`):

- ``collision_spheres``: ``{link: [{center: [3], radius}]}`` in each link's frame, or a path
  (relative to the robot file) to a YAML file holding ``collision_spheres: {...}``.
- ``collision_link_names``: links whose spheres are used (default: every key of
  ``collision_spheres``, in file order).
- ``collision_sphere_buffer``: metres added to every radius (default 0).
- ``self_collision_ignore``: ``{link: [links]}`` pairs never checked (symmetric).
- ``self_collision_buffer``: ``{link: metres}`` added to that link's radii in self-collision
  checks only.
- ``lock_joints``: ``{joint: value}`` for joints of the tree that are not in ``joint_names``
  (e.g. gripper fingers); they are held at ``value`` so the links behind them are rigidly
  attached to the chain and can carry spheres.

Dynamics (optional, used by physics simulators such as :class:`curobo_lite.sim.MujocoPlant`;
see :class:`RobotDynamicsConfig`):

- ``dynamics``: ``{link_inertials: {link: {mass, com: [3], inertia: [ixx, iyy, izz, ixy, ixz,
  iyz]}}, effort_limit: [D]}`` masses (kg), centres of mass and inertia tensors about the centre
  of mass (kg m^2), both in the link frame, and joint torque (N m) or force (N) limits. A robot
  file with ``urdf_path`` and no ``dynamics`` takes them from the URDF's ``<inertial>`` and
  ``<limit effort>`` tags.

A link carrying spheres must be on the base-to-end-effector chain or reached from it through
fixed or locked joints (its constant transform is folded into the chain).
Every problem is reported as a ``ValueError`` naming the file, the key and the problem.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from curobo_lite.config_files import (
    FlowListDumper,
    YamlReader,
    bundled_file_lookups,
    read_config_file,
)
from curobo_lite.robot.geometry import (
    quat_from_axis_angle_np,
    quat_to_matrix_np,
    rpy_to_matrix_np,
)
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import ConfigError, InputValueError

MOVING_JOINT_TYPES = ("revolute", "continuous", "prismatic")
SUPPORTED_JOINT_TYPES = (*MOVING_JOINT_TYPES, "fixed")
URDF_JOINT_TYPES = (*SUPPORTED_JOINT_TYPES, "floating", "planar")
LIMIT_KINDS = ("position", "velocity", "acceleration", "jerk")
# Position range given to continuous joints by the URDF importer: one full turn either way,
# so interpolation and limit costs stay well defined.
CONTINUOUS_JOINT_LIMIT = 2.0 * math.pi

# cuRobo's robot-file keys for the collision model (see RobotCollisionConfig)
COLLISION_KEYS = (
    "collision_spheres",
    "collision_link_names",
    "collision_sphere_buffer",
    "self_collision_ignore",
    "self_collision_buffer",
)
_TOP_REQUIRED = (
    "base_link",
    "ee_link",
    "joint_names",
    "joint_limits",
    "retract_config",
    "cspace_weights",
)
_TOP_OPTIONAL = ("name", "joints", "urdf_path", "lock_joints", "dynamics", *COLLISION_KEYS)


# ------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------
def _preview(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


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
        reader = YamlReader(source)
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

    def validate(self, reader: YamlReader, key: str) -> None:
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
        reader = YamlReader(source)
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
        self, reader: YamlReader, joint_names: Sequence[str], key: str = "joint_limits"
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
# collision model
# ------------------------------------------------------------------------------------------
@dataclass
class RobotCollisionConfig:
    """Collision spheres of a robot and its self-collision rules (cuRobo's robot-file keys).

    Attributes:
        spheres: ``{link: [[x, y, z, radius], ...]}`` sphere centres in the link frame (metres)
            and radii without ``sphere_buffer``; only the links of ``link_names``.
        link_names: links carrying spheres, in the order their spheres are listed.
        sphere_buffer: metres added to every radius (``collision_sphere_buffer``).
        self_collision_ignore: ``{link: sorted links}`` closed under symmetry.
        self_collision_buffer: ``{link: metres}`` added to the link's radii for self-collision.
        spheres_file: the separate spheres file the spheres were read from, if any.
    """

    spheres: dict[str, list[list[float]]]
    link_names: list[str]
    sphere_buffer: float = 0.0
    self_collision_ignore: dict[str, list[str]] = field(default_factory=dict)
    self_collision_buffer: dict[str, float] = field(default_factory=dict)
    spheres_file: str | None = None

    @property
    def num_spheres(self) -> int:
        return sum(len(self.spheres[link]) for link in self.link_names)

    def ignores(self, link_a: str, link_b: str) -> bool:
        """Whether the pair is excluded from self-collision checks."""
        return link_b in self.self_collision_ignore.get(link_a, ())

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        source: str = "<dict>",
        base_dir: str | os.PathLike | None = None,
    ) -> RobotCollisionConfig | None:
        """Parse the collision keys of a robot file (other keys are ignored).

        Returns ``None`` when the file has no ``collision_spheres``. Link names are checked
        against the kinematic tree by :class:`RobotConfig`, not here.
        """
        reader = YamlReader(source)
        if data.get("collision_spheres") is None:
            extra = [k for k in COLLISION_KEYS if data.get(k) is not None]
            if extra:
                raise reader.error(extra[0], "given without 'collision_spheres'")
            return None
        raw = data["collision_spheres"]
        spheres_file = None
        sphere_reader = reader
        key = "collision_spheres"
        if isinstance(raw, str):
            path = Path(raw)
            if not path.is_absolute():
                path = Path(base_dir or ".") / path
            if not path.is_file():
                raise reader.error(key, f"spheres file '{path}' does not exist")
            try:
                loaded = yaml.safe_load(path.read_text())
            except yaml.YAMLError as err:
                raise reader.error(key, f"spheres file '{path}' is not valid YAML: {err}") from None
            spheres_file = str(path)
            sphere_reader = YamlReader(spheres_file)
            loaded = sphere_reader.mapping(loaded, "<top level>", ("collision_spheres",))
            raw = loaded["collision_spheres"]
        raw = sphere_reader.mapping(raw, key, (), list(raw) if isinstance(raw, Mapping) else ())
        spheres: dict[str, list[list[float]]] = {}
        for link, entries in raw.items():
            link_key = f"{key}.{link}"
            sphere_reader.string(link, link_key)
            if isinstance(entries, str) or not isinstance(entries, Sequence) or not entries:
                raise sphere_reader.error(
                    link_key, f"expected a non-empty list of spheres, received {entries!r}"
                )
            rows = []
            for i, entry in enumerate(entries):
                entry_key = f"{link_key}[{i}]"
                entry = sphere_reader.mapping(entry, entry_key, ("center", "radius"))
                center = sphere_reader.vector(entry["center"], f"{entry_key}.center", 3)
                radius = sphere_reader.number(entry["radius"], f"{entry_key}.radius")
                if radius <= 0.0:
                    raise sphere_reader.error(
                        f"{entry_key}.radius", f"expected a radius > 0, received {radius!r}"
                    )
                rows.append([*center, radius])
            spheres[str(link)] = rows

        if data.get("collision_link_names") is None:
            link_names = list(spheres)
        else:
            link_names = reader.strings(data["collision_link_names"], "collision_link_names")
            for i, link in enumerate(link_names):
                if link not in spheres:
                    raise reader.error(
                        f"collision_link_names[{i}]",
                        f"link '{link}' has no entry in collision_spheres; links with spheres: "
                        f"{_preview(list(spheres))}",
                    )
        buffer = 0.0
        if data.get("collision_sphere_buffer") is not None:
            buffer = reader.number(data["collision_sphere_buffer"], "collision_sphere_buffer")
        for link in link_names:
            for i, row in enumerate(spheres[link]):
                if row[3] + buffer <= 0.0:
                    raise reader.error(
                        "collision_sphere_buffer",
                        f"buffer {buffer!r} makes sphere {key}.{link}[{i}] (radius {row[3]!r}) "
                        "empty; expected radius + buffer > 0",
                    )

        ignore: dict[str, set[str]] = {}
        if data.get("self_collision_ignore") is not None:
            raw_ignore = data["self_collision_ignore"]
            allowed = list(raw_ignore) if isinstance(raw_ignore, Mapping) else ()
            raw_ignore = reader.mapping(raw_ignore, "self_collision_ignore", (), allowed)
            for link, others in raw_ignore.items():
                entry_key = f"self_collision_ignore.{link}"
                reader.string(link, entry_key)
                others = [] if others is None else reader.strings(others, entry_key)
                for other in others:
                    if other == link:
                        raise reader.error(entry_key, f"link '{link}' ignores itself")
                    ignore.setdefault(link, set()).add(other)
                    ignore.setdefault(other, set()).add(link)
        self_buffer = reader.numbers_by_name(
            data.get("self_collision_buffer"), "self_collision_buffer"
        )
        return cls(
            spheres={link: spheres[link] for link in link_names},
            link_names=link_names,
            sphere_buffer=buffer,
            self_collision_ignore={k: sorted(v) for k, v in ignore.items()},
            self_collision_buffer=self_buffer,
            spheres_file=spheres_file,
        )

    def to_dict(self) -> dict[str, Any]:
        """The robot-file keys, spheres written inline."""
        out: dict[str, Any] = {
            "collision_link_names": list(self.link_names),
            "collision_spheres": {
                link: [{"center": row[:3], "radius": row[3]} for row in self.spheres[link]]
                for link in self.link_names
            },
            "collision_sphere_buffer": self.sphere_buffer,
        }
        if self.self_collision_ignore:
            # each pair once, under the link listed first
            written: dict[str, list[str]] = {}
            seen: set[frozenset[str]] = set()
            for link, others in self.self_collision_ignore.items():
                for other in others:
                    pair = frozenset((link, other))
                    if pair not in seen:
                        seen.add(pair)
                        written.setdefault(link, []).append(other)
            out["self_collision_ignore"] = written
        if self.self_collision_buffer:
            out["self_collision_buffer"] = dict(self.self_collision_buffer)
        return out


# ------------------------------------------------------------------------------------------
# dynamics
# ------------------------------------------------------------------------------------------
# order of the six inertia numbers in a robot file (MuJoCo's fullinertia order)
INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")


def inertia_matrix_np(values: Sequence[float]) -> np.ndarray:
    """``[3, 3]`` symmetric inertia tensor from ``[ixx, iyy, izz, ixy, ixz, iyz]``."""
    ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in values)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass
class LinkInertial:
    """Mass properties of one link, in the link frame.

    Attributes:
        mass: kg, > 0.
        com: ``[3]`` centre of mass (metres).
        inertia: ``[6]`` ``ixx, iyy, izz, ixy, ixz, iyz`` about the centre of mass (kg m^2);
            the tensor is positive definite and its principal moments satisfy the triangle
            inequality (``a + b >= c``), as every rigid body's do.
    """

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]

    def validate(self, reader: YamlReader, key: str) -> None:
        self.mass = reader.number(self.mass, f"{key}.mass")
        if self.mass <= 0.0:
            raise reader.error(f"{key}.mass", f"expected a mass > 0 kg, received {self.mass!r}")
        self.com = tuple(reader.vector(list(self.com), f"{key}.com", 3))
        self.inertia = tuple(reader.vector(list(self.inertia), f"{key}.inertia", 6))
        moments = np.linalg.eigvalsh(inertia_matrix_np(self.inertia))
        if moments[0] <= 0.0:
            raise reader.error(
                f"{key}.inertia",
                f"expected a positive definite tensor [ixx, iyy, izz, ixy, ixz, iyz], received "
                f"{list(self.inertia)} (principal moments {moments.round(8).tolist()})",
            )
        if moments[0] + moments[1] < moments[2] * (1.0 - 1e-6):
            raise reader.error(
                f"{key}.inertia",
                f"principal moments {moments.round(8).tolist()} of {list(self.inertia)} break "
                "the triangle inequality (the two smallest must add up to the largest)",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"mass": self.mass, "com": list(self.com), "inertia": list(self.inertia)}


@dataclass
class RobotDynamicsConfig:
    """Mass properties and actuator limits (the robot file's ``dynamics`` section).

    Attributes:
        link_inertials: ``{link: LinkInertial}``; links without an entry are massless.
        effort_limit: ``[D]`` torque (N m) or force (N) limits of ``joint_names``, ``None``
            when unknown.
    """

    link_inertials: dict[str, LinkInertial] = field(default_factory=dict)
    effort_limit: list[float] | None = None

    @classmethod
    def from_dict(
        cls, data: Any, dof: int | None = None, source: str = "<dict>", key: str = "dynamics"
    ) -> RobotDynamicsConfig:
        """``{link_inertials: {link: {mass, com, inertia}}, effort_limit: [D]}``; ``dof``
        ``None`` leaves the length of ``effort_limit`` to :class:`RobotConfig`'s checks."""
        reader = YamlReader(source)
        data = reader.mapping(data, key, (), ("link_inertials", "effort_limit"))
        inertials: dict[str, LinkInertial] = {}
        raw = data.get("link_inertials") or {}
        raw = reader.mapping(
            raw, f"{key}.link_inertials", (), list(raw) if isinstance(raw, Mapping) else ()
        )
        for link, entry in raw.items():
            entry_key = f"{key}.link_inertials.{link}"
            reader.string(link, entry_key)
            entry = reader.mapping(entry, entry_key, ("mass", "inertia"), ("com",))
            inertial = LinkInertial(
                mass=entry["mass"],
                com=tuple(reader.vector(entry.get("com", [0.0, 0.0, 0.0]), f"{entry_key}.com", 3)),
                inertia=tuple(reader.vector(entry["inertia"], f"{entry_key}.inertia", 6)),
            )
            inertial.validate(reader, entry_key)
            inertials[str(link)] = inertial
        effort = None
        if data.get("effort_limit") is not None:
            effort = reader.vector(data["effort_limit"], f"{key}.effort_limit", dof)
            bad = [i for i, v in enumerate(effort) if v <= 0.0]
            if bad:
                raise reader.error(
                    f"{key}.effort_limit[{bad[0]}]",
                    f"expected a limit > 0, received {effort[bad[0]]!r}",
                )
        return cls(link_inertials=inertials, effort_limit=effort)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "link_inertials": {k: v.to_dict() for k, v in self.link_inertials.items()}
        }
        if self.effort_limit is not None:
            out["effort_limit"] = list(self.effort_limit)
        return out


def joint_transform_np(joint: JointSpec, value: float = 0.0) -> np.ndarray:
    """``[4, 4]`` transform from ``joint.parent`` to ``joint.child`` at joint value ``value``."""
    transform = np.eye(4)
    transform[:3, :3] = rpy_to_matrix_np(joint.origin_rpy)
    transform[:3, 3] = joint.origin_xyz
    if joint.is_moving and value != 0.0:
        motion = np.eye(4)
        axis = np.asarray(joint.axis, dtype=np.float64)
        if joint.type == "prismatic":
            motion[:3, 3] = axis * value
        else:
            motion[:3, :3] = quat_to_matrix_np(quat_from_axis_angle_np(axis, value))
        transform = transform @ motion
    return transform


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
        lock_joints: ``{joint: value}`` joints off ``joint_names`` held fixed (e.g. fingers).
        collision: the collision spheres and self-collision rules, ``None`` when the robot
            file has no ``collision_spheres``.
        dynamics: masses, inertias and effort limits, ``None`` when the robot file has none.
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
    lock_joints: dict[str, float] = field(default_factory=dict)
    collision: RobotCollisionConfig | None = None
    dynamics: RobotDynamicsConfig | None = None

    def __post_init__(self) -> None:
        self.joint_names = list(self.joint_names)
        self.joints = list(self.joints)
        self.lock_joints = dict(self.lock_joints)
        self.retract_config = self.tensor_args.to_device(self.retract_config)
        self.cspace_weights = self.tensor_args.to_device(self.cspace_weights)
        self.joint_limits = self.joint_limits.to(self.tensor_args)
        self._chain = self._validate()
        self._attachments = self._validate_collision()
        self._validate_dynamics()

    # validation -------------------------------------------------------------------------------
    def _validate(self) -> list[JointSpec]:
        reader = YamlReader(self.source)
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

    def _validate_collision(self) -> dict[str, tuple[str, np.ndarray]]:
        """Check ``lock_joints`` and the collision links; return the rigid attachments.

        Returns:
            ``{link: (chain_link, T [4, 4])}`` for every link rigidly attached to the chain:
            ``chain_link`` is ``base_link`` or the child of a chain joint and ``T`` the
            constant transform from its frame to ``link``'s frame.
        """
        reader = YamlReader(self.source)
        by_name = {j.name: j for j in self.joints}
        chain_names = {j.name for j in self._chain}
        for name, value in self.lock_joints.items():
            key = f"lock_joints.{name}"
            if name not in by_name:
                raise reader.error(key, f"unknown joint '{name}'")
            joint = by_name[name]
            if not joint.is_moving:
                raise reader.error(key, f"joint '{name}' is {joint.type}; only moving joints lock")
            if name in self.joint_names or name in chain_names:
                raise reader.error(
                    key, f"joint '{name}' is on the base-to-end-effector chain; it cannot be locked"
                )
            self.lock_joints[name] = reader.number(value, key)

        def locked_value(joint: JointSpec) -> float | None:
            if joint.type == "fixed":
                return 0.0
            if joint.name in self.lock_joints:
                return self.lock_joints[joint.name]
            if joint.mimic is not None and joint.mimic.joint in self.lock_joints:
                return joint.mimic.multiplier * self.lock_joints[joint.mimic.joint] + (
                    joint.mimic.offset
                )
            return None

        # breadth-first from the chain links through fixed and locked joints, both directions
        attachments: dict[str, tuple[str, np.ndarray]] = {
            self.base_link: (self.base_link, np.eye(4))
        }
        for joint in self._chain:
            attachments[joint.child] = (joint.child, np.eye(4))
        blocked: dict[str, JointSpec] = {}
        frontier = list(attachments)
        while frontier:
            nxt = []
            for link in frontier:
                anchor, transform = attachments[link]
                for joint in self.joints:
                    if link not in (joint.parent, joint.child):
                        continue
                    other = joint.child if joint.parent == link else joint.parent
                    if other in attachments:
                        continue
                    value = locked_value(joint)
                    if value is None:
                        blocked.setdefault(other, joint)
                        continue
                    step = joint_transform_np(joint, value)
                    if joint.child == link:
                        step = np.linalg.inv(step)
                    attachments[other] = (anchor, transform @ step)
                    nxt.append(other)
            frontier = nxt

        if self.collision is None:
            return attachments
        links = {j.parent for j in self.joints} | {j.child for j in self.joints}
        col = self.collision
        for link in col.link_names:
            if link not in links:
                raise reader.error(
                    f"collision_spheres.{link}",
                    f"unknown link '{link}'; links in the tree: {_preview(sorted(links))}",
                )
            if link not in attachments:
                joint = blocked.get(link)
                why = (
                    f" (joint '{joint.name}' is {joint.type} and not in lock_joints)"
                    if joint is not None
                    else ""
                )
                raise reader.error(
                    f"collision_spheres.{link}",
                    f"link '{link}' is not rigidly attached to the chain from '{self.base_link}' "
                    f"to '{self.ee_link}' through fixed or locked joints{why}",
                )
        for link, others in col.self_collision_ignore.items():
            for name in (link, *others):
                if name not in links:
                    raise reader.error(
                        f"self_collision_ignore.{link}",
                        f"unknown link '{name}'; links in the tree: {_preview(sorted(links))}",
                    )
        for link in col.self_collision_buffer:
            if link not in links:
                raise reader.error(
                    f"self_collision_buffer.{link}",
                    f"unknown link '{link}'; links in the tree: {_preview(sorted(links))}",
                )
        return attachments

    def _validate_dynamics(self) -> None:
        """Check that ``dynamics`` names links of the tree and has one effort limit per joint."""
        if self.dynamics is None:
            return
        reader = YamlReader(self.source)
        links = {j.parent for j in self.joints} | {j.child for j in self.joints}
        for link, inertial in self.dynamics.link_inertials.items():
            key = f"dynamics.link_inertials.{link}"
            if link not in links:
                raise reader.error(
                    key, f"unknown link '{link}'; links in the tree: {_preview(sorted(links))}"
                )
            inertial.validate(reader, key)
        effort = self.dynamics.effort_limit
        if effort is not None and len(effort) != self.dof:
            raise reader.error(
                "dynamics.effort_limit",
                f"expected {self.dof} numbers (one per joint), received {len(effort)}",
            )

    # properties ---------------------------------------------------------------------------------
    def rigid_attachment(self, link: str) -> tuple[str, np.ndarray]:
        """``(chain_link, T [4, 4])``: the chain link ``link`` is rigidly attached to and the
        constant transform from that chain link's frame to ``link``'s (float64)."""
        if link not in self._attachments:
            raise InputValueError(
                f"link: '{link}' is not rigidly attached to the chain of robot '{self.name}'"
            )
        anchor, transform = self._attachments[link]
        return anchor, transform.copy()

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
        reader = YamlReader(source)
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
        dynamics = None
        if data.get("dynamics") is not None:
            # its length is checked with the chain (RobotConfig._validate_dynamics)
            dynamics = RobotDynamicsConfig.from_dict(data["dynamics"], None, source)
        elif has_urdf:
            from curobo_lite.robot.urdf import read_urdf_dynamics

            raw_dynamics = read_urdf_dynamics(urdf_path, joint_names)
            if raw_dynamics is not None:
                dynamics = RobotDynamicsConfig.from_dict(raw_dynamics, None, str(urdf_path))
        limits = JointLimits.from_dict(data["joint_limits"], dof, tensor_args, source)
        retract = reader.vector(data["retract_config"], "retract_config", dof)
        weights = reader.vector(data["cspace_weights"], "cspace_weights", dof)
        lock_joints = reader.numbers_by_name(data.get("lock_joints"), "lock_joints")
        collision = RobotCollisionConfig.from_dict(data, source, base_dir)
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
            lock_joints=lock_joints,
            collision=collision,
            dynamics=dynamics,
        )

    @classmethod
    def from_yaml(
        cls, path: str | os.PathLike, tensor_args: TensorDeviceType | None = None
    ) -> RobotConfig:
        """Load and validate a robot file."""
        path = Path(path)
        source = str(path)
        data = read_config_file(path, "robot")
        if data is None:
            raise ConfigError(f"{source}: the file is empty")
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
            **({"lock_joints": dict(self.lock_joints)} if self.lock_joints else {}),
            **(self.collision.to_dict() if self.collision is not None else {}),
            **({"dynamics": self.dynamics.to_dict()} if self.dynamics is not None else {}),
        }

    def to_yaml(self, path: str | os.PathLike) -> None:
        """Write a self-contained robot file (the tree is written out, never a URDF path)."""
        text = yaml.dump(
            self.to_dict(), Dumper=FlowListDumper, sort_keys=False, default_flow_style=False
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
            lock_joints=self.lock_joints,
            collision=self.collision,
            dynamics=self.dynamics,
        )

    def __repr__(self) -> str:
        return (
            f"RobotConfig(name={self.name!r}, dof={self.dof}, base_link={self.base_link!r}, "
            f"ee_link={self.ee_link!r}, joint_names={self.joint_names}, {self.tensor_args})"
        )


# ------------------------------------------------------------------------------------------
# bundled robot files
# ------------------------------------------------------------------------------------------
robot_config_dirs, available_robots, resolve_robot_file = bundled_file_lookups(
    "robot", "franka", __name__
)
