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

Exact collision geometry (optional, used by the mesh checks of
:class:`curobo_lite.wrap.RobotWorld` and ``MotionGen``'s ``exact_check``):

- ``collision_geometry``: a URDF file (relative to the robot file) whose ``<collision>``
  elements (meshes, boxes, cylinders, spheres) are the links' exact shapes, in the link frames
  of this file's tree. A robot file with ``urdf_path`` and no ``collision_geometry`` uses the
  ``urdf_path``'s collision elements. Stored as :attr:`RobotConfig.collision_geometry_path`.

A link carrying spheres must be on the base-to-end-effector chain or reached from it through
fixed or locked joints (its constant transform is folded into the chain).
Every problem is reported as a ``ValueError`` naming the file, the key and the problem.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from curobo_lite.config_files import (
    FlowListDumper,
    YamlReader,
    atomic_write_text,
    bundled_file_lookups,
    read_config_file,
)
from curobo_lite.robot.collision_config import COLLISION_KEYS, RobotCollisionConfig
from curobo_lite.robot.curobo_format import curobo_to_robot_dict
from curobo_lite.robot.curobo_layout import is_curobo_layout
from curobo_lite.robot.dynamics_config import (
    INERTIA_KEYS,
    LinkInertial,
    RobotDynamicsConfig,
    inertia_matrix_np,
)
from curobo_lite.robot.joints import (
    CONTINUOUS_JOINT_LIMIT,
    LIMIT_KINDS,
    MOVING_JOINT_TYPES,
    SUPPORTED_JOINT_TYPES,
    URDF_JOINT_TYPES,
    JointLimits,
    JointSpec,
    MimicSpec,
    joint_transform_np,
    kinematic_chain,
    rigid_attachments,
    tree_links,
)
from curobo_lite.robot.urdf import config_dict_from_urdf, read_urdf_dynamics, read_urdf_joints
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import ConfigError, InputValueError

# the parts of a robot description, defined beside this module and importable from here
__all__ = [
    "COLLISION_KEYS",
    "CONTINUOUS_JOINT_LIMIT",
    "INERTIA_KEYS",
    "LIMIT_KINDS",
    "MOVING_JOINT_TYPES",
    "SUPPORTED_JOINT_TYPES",
    "URDF_JOINT_TYPES",
    "JointLimits",
    "JointSpec",
    "LinkInertial",
    "MimicSpec",
    "RobotCollisionConfig",
    "RobotConfig",
    "RobotDynamicsConfig",
    "available_robots",
    "inertia_matrix_np",
    "joint_transform_np",
    "resolve_robot_file",
    "robot_config_dirs",
]

_TOP_REQUIRED = (
    "base_link",
    "ee_link",
    "joint_names",
    "joint_limits",
    "retract_config",
    "cspace_weights",
)
_TOP_OPTIONAL = (
    "name",
    "joints",
    "urdf_path",
    "lock_joints",
    "dynamics",
    "collision_geometry",
    *COLLISION_KEYS,
)


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
        collision_geometry_path: the URDF file holding the links' exact collision shapes
            (``collision_geometry``, else ``urdf_path``), ``None`` when there is none.
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
    collision_geometry_path: str | None = None

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
        chain = kinematic_chain(self.joints, self.base_link, self.ee_link, reader)
        by_name = {j.name: j for j in self.joints}
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
        """Check ``lock_joints`` and the collision links; return the rigid attachments
        (:func:`~curobo_lite.robot.joints.rigid_attachments`)."""
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
        attachments, blocked = rigid_attachments(
            self.joints, self._chain, self.base_link, self.lock_joints
        )
        if self.collision is not None:
            self.collision.check_links(
                reader,
                tree_links(self.joints),
                attachments,
                blocked,
                (self.base_link, self.ee_link),
            )
        return attachments

    def _validate_dynamics(self) -> None:
        """Check that ``dynamics`` names links of the tree and has one effort limit per joint."""
        if self.dynamics is not None:
            self.dynamics.check_links(YamlReader(self.source), tree_links(self.joints), self.dof)

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
        assets_path: str | os.PathLike | None = None,
    ) -> RobotConfig:
        """Build from a parsed robot file; ``base_dir`` resolves a relative ``urdf_path``.

        A cuRobo robot file (``robot_cfg: kinematics: ...``, format 1.0 or 2.0) is read
        through :mod:`curobo_lite.robot.curobo_format`; its relative asset paths try
        ``assets_path`` first."""
        tensor_args = tensor_args or TensorDeviceType()
        if is_curobo_layout(data):
            data = curobo_to_robot_dict(data, source, base_dir, assets_path)
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
                raise reader.error("joints", f"expected a list of joints, received {excerpt(raw)}")
            joints = [JointSpec.from_dict(j, f"joints[{i}]", source) for i, j in enumerate(raw)]
        else:
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
            raw_dynamics = read_urdf_dynamics(urdf_path, joint_names)
            if raw_dynamics is not None:
                dynamics = RobotDynamicsConfig.from_dict(raw_dynamics, None, str(urdf_path))
        limits = JointLimits.from_dict(data["joint_limits"], dof, tensor_args, source)
        retract = reader.vector(data["retract_config"], "retract_config", dof)
        weights = reader.vector(data["cspace_weights"], "cspace_weights", dof)
        lock_joints = reader.numbers_by_name(data.get("lock_joints"), "lock_joints")
        collision = RobotCollisionConfig.from_dict(data, source, base_dir)
        geometry_path = None
        if data.get("collision_geometry") is not None:
            geometry = Path(reader.string(data["collision_geometry"], "collision_geometry"))
            if not geometry.is_absolute():
                geometry = Path(base_dir or ".") / geometry
            if not geometry.is_file():
                raise reader.error("collision_geometry", f"URDF file '{geometry}' does not exist")
            geometry_path = str(geometry.absolute())
        elif has_urdf:
            geometry_path = str(urdf_path.absolute())
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
            collision_geometry_path=geometry_path,
        )

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike,
        tensor_args: TensorDeviceType | None = None,
        assets_path: str | os.PathLike | None = None,
    ) -> RobotConfig:
        """Load and validate a robot file (this package's layout or cuRobo's)."""
        path = Path(path)
        source = str(path)
        data = read_config_file(path, "robot")
        if data is None:
            raise ConfigError(f"{source}: the file is empty")
        return cls.from_dict(data, tensor_args, source, path.parent, assets_path)

    @classmethod
    def load(
        cls,
        name_or_path: str | os.PathLike,
        tensor_args: TensorDeviceType | None = None,
        assets_path: str | os.PathLike | None = None,
    ) -> RobotConfig:
        """A bundled robot by name (``"franka"``) or a robot file by path; ``assets_path``:
        where a cuRobo robot file's relative asset paths are looked up first."""
        return cls.from_yaml(resolve_robot_file(name_or_path), tensor_args, assets_path)

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
        the chain are dropped, except those followed by a mimic joint on it. The URDF's
        ``<collision>`` elements are the exact collision shapes (``collision_geometry_path``).
        """
        data, source = config_dict_from_urdf(
            path, base_link, ee_link, acceleration_limit, jerk_limit, name
        )
        # the URDF's <collision> elements are the exact shapes (RobotWorld's mesh checks)
        data["collision_geometry"] = str(Path(path).absolute())
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
            **(
                {"collision_geometry": self.collision_geometry_path}
                if self.collision_geometry_path is not None
                else {}
            ),
        }

    def to_yaml(self, path: str | os.PathLike) -> None:
        """Write a self-contained robot file (the tree is written out, never a URDF path)."""
        text = yaml.dump(
            self.to_dict(), Dumper=FlowListDumper, sort_keys=False, default_flow_style=False
        )
        header = f"# Robot '{self.name}' written by curobo_lite from {self.source}\n"
        atomic_write_text(path, header + text)

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
            collision_geometry_path=self.collision_geometry_path,
        )

    def __repr__(self) -> str:
        return (
            f"RobotConfig(name={self.name!r}, dof={self.dof}, base_link={self.base_link!r}, "
            f"ee_link={self.ee_link!r}, joint_names={self.joint_names}, {self.tensor_args})"
        )


# bundled robot files
robot_config_dirs, available_robots, resolve_robot_file = bundled_file_lookups(
    "robot", "franka", __name__
)
