"""Joints of a robot description: URDF-style joint specs (mimic joints included), per-joint
limits, the constant transform of a joint at a given value, and the links rigidly attached to a
kinematic chain through fixed or locked joints.

:class:`~curobo_lite.robot.RobotConfig` holds these and checks them against one another; the
URDF importer (:mod:`curobo_lite.robot.urdf`) builds :class:`JointSpec` lists from a URDF file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from curobo_lite.config_files import YamlReader, preview_names
from curobo_lite.robot.geometry import (
    quat_from_axis_angle_np,
    quat_to_matrix_np,
    rpy_to_matrix_np,
)
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.checks import excerpt

MOVING_JOINT_TYPES = ("revolute", "continuous", "prismatic")
SUPPORTED_JOINT_TYPES = (*MOVING_JOINT_TYPES, "fixed")
URDF_JOINT_TYPES = (*SUPPORTED_JOINT_TYPES, "floating", "planar")
LIMIT_KINDS = ("position", "velocity", "acceleration", "jerk")
# Position range given to continuous joints by the URDF importer: one full turn either way,
# so interpolation and limit costs stay well defined.
CONTINUOUS_JOINT_LIMIT = 2.0 * math.pi


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
                f"{key}.type",
                f"expected one of {list(URDF_JOINT_TYPES)}, received {excerpt(joint_type)}",
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


def tree_links(joints: Sequence[JointSpec]) -> set[str]:
    """Every link ``joints`` connect (parents and children)."""
    return {j.parent for j in joints} | {j.child for j in joints}


def check_tree_links(
    reader: YamlReader, key: str, names: Iterable[str], links: Collection[str]
) -> None:
    """Raise ``reader.error(key, ...)`` for the first of ``names`` that is not one of the tree's
    ``links`` (:func:`tree_links`), listing those."""
    for name in names:
        if name not in links:
            raise reader.error(
                key, f"unknown link '{name}'; links in the tree: {preview_names(sorted(links))}"
            )


def kinematic_chain(
    joints: Sequence[JointSpec], base_link: str, ee_link: str, reader: YamlReader
) -> list[JointSpec]:
    """The joints from ``base_link`` to ``ee_link``, in order (fixed joints included), after
    checking the tree: every joint valid, names unique, one parent per link, both links in the
    tree, every chain joint of a supported type, mimics following actuated joints and at least
    one moving joint. A problem raises ``reader.error`` naming its key."""
    for i, joint in enumerate(joints):
        joint.validate(reader, f"joints[{i}]")
    if not joints:
        raise reader.error("joints", "the kinematic tree has no joints")
    seen: dict[str, int] = {}
    parent_joint: dict[str, JointSpec] = {}
    for i, joint in enumerate(joints):
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
    links = tree_links(joints)
    check_tree_links(reader, "base_link", [base_link], links)
    check_tree_links(reader, "ee_link", [ee_link], links)
    if base_link == ee_link:
        raise reader.error("ee_link", f"ee_link equals base_link ('{base_link}')")

    chain: list[JointSpec] = []
    link = ee_link
    while link != base_link:
        if link not in parent_joint or len(chain) > len(joints):
            raise reader.error(
                "ee_link",
                f"the chain does not connect base_link '{base_link}' to ee_link "
                f"'{ee_link}': walking up from '{ee_link}' ends at '{link}'",
            )
        chain.append(parent_joint[link])
        link = parent_joint[link].parent
    chain.reverse()

    by_name = {j.name: j for j in joints}
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

    return chain


def walk_tree(
    joints: Sequence[JointSpec],
    roots: Sequence[str],
    joint_value: Callable[[JointSpec], float | None],
) -> tuple[dict[str, tuple[str, np.ndarray]], dict[str, JointSpec]]:
    """Breadth-first from ``roots`` through ``joints`` in both directions (parent to child and
    back), each joint held at ``joint_value(joint)``; a joint whose value is ``None`` is not
    crossed.

    Returns:
        ``(reached, blocked)``: ``{link: (root, T [4, 4])}`` for every link reached (the roots
        included), ``T`` the transform from the frame of the root it was reached from to the
        link's; and ``{link: joint}`` for links behind a joint that was not crossed.
    """
    reached: dict[str, tuple[str, np.ndarray]] = {root: (root, np.eye(4)) for root in roots}
    blocked: dict[str, JointSpec] = {}
    frontier = list(reached)
    while frontier:
        nxt = []
        for link in frontier:
            root, transform = reached[link]
            for joint in joints:
                if link not in (joint.parent, joint.child):
                    continue
                other = joint.child if joint.parent == link else joint.parent
                if other in reached:
                    continue
                value = joint_value(joint)
                if value is None:
                    blocked.setdefault(other, joint)
                    continue
                step = joint_transform_np(joint, value)
                if joint.child == link:
                    step = np.linalg.inv(step)
                reached[other] = (root, transform @ step)
                nxt.append(other)
        frontier = nxt
    return reached, blocked


def rigid_attachments(
    joints: Sequence[JointSpec],
    chain: Sequence[JointSpec],
    base_link: str,
    lock_joints: Mapping[str, float],
) -> tuple[dict[str, tuple[str, np.ndarray]], dict[str, JointSpec]]:
    """The links rigidly attached to ``chain`` (the base-to-end-effector joints): a
    :func:`walk_tree` from ``base_link`` and the chain's links through fixed joints and the
    joints of ``lock_joints`` (held at their value; a mimic of a locked joint follows it).

    Returns:
        ``(attachments, blocked)``: ``{link: (chain_link, T [4, 4])}`` for every attached link,
        ``chain_link`` being ``base_link`` or the child of a chain joint and ``T`` the constant
        transform from its frame to ``link``'s; and ``{link: joint}`` for links the walk
        reached but could not pass, with the moving joint that stopped it.
    """

    def locked_value(joint: JointSpec) -> float | None:
        if joint.type == "fixed":
            return 0.0
        if joint.name in lock_joints:
            return lock_joints[joint.name]
        if joint.mimic is not None and joint.mimic.joint in lock_joints:
            return joint.mimic.multiplier * lock_joints[joint.mimic.joint] + joint.mimic.offset
        return None

    return walk_tree(joints, [base_link, *(joint.child for joint in chain)], locked_value)


def link_poses(
    joints: Sequence[JointSpec], root: str, values: dict[str, float]
) -> dict[str, np.ndarray]:
    """``{link: T [4, 4]}`` of every link connected to ``root`` (joints at ``values``, else 0),
    walking the tree both ways from ``root``."""
    reached, _ = walk_tree(joints, [root], lambda joint: values.get(joint.name, 0.0))
    return {link: transform for link, (_, transform) in reached.items()}
