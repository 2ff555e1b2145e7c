"""URDF import through `yourdfpy <https://pypi.org/project/yourdfpy/>`_ (XML parsing is theirs).

The tree (joint origins, axes, types, limits, mimic tags) and the links' ``<inertial>`` tags
are read; the robot model loads no meshes (the viewer asks :func:`read_urdf` for them). A file
yourdfpy could only partly parse loads with a :class:`URDFWarning` that names it.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from curobo_lite.config_files import preview_names
from curobo_lite.robot.geometry import matrix_to_rpy_np
from curobo_lite.robot.joints import (
    CONTINUOUS_JOINT_LIMIT,
    URDF_JOINT_TYPES,
    JointSpec,
    MimicSpec,
)
from curobo_lite.types.checks import excerpt, parse_number, received
from curobo_lite.types.errors import ConfigError, InputTypeError, InputValueError


class URDFWarning(UserWarning):
    """What yourdfpy reported while reading a URDF it could still load (malformed XML it
    recovered from, a mesh it could not find), with the file's path."""


def read_urdf(path: Path, meshes: bool = False, **options: Any) -> Any:
    """The ``yourdfpy.URDF`` of the file at ``path`` (the caller has checked that it exists):
    its tree only, or with ``meshes`` its scene graphs and visual and collision meshes too;
    ``options`` go to ``yourdfpy.URDF.load`` (e.g. a ``filename_handler``). What yourdfpy logs
    while loading (a malformed file it recovered, a missing mesh) comes as one
    :class:`URDFWarning` that names the file: its own lines ("Using different parsing
    approach.") do not say which file."""
    import yourdfpy

    records: list[logging.LogRecord] = []

    def keep(record: logging.LogRecord) -> bool:
        records.append(record)
        return False  # not printed: it comes back below, with the path

    source = logging.getLogger("yourdfpy.urdf")  # the module that logs while loading
    source.addFilter(keep)
    try:
        urdf = yourdfpy.URDF.load(
            str(path),
            build_scene_graph=meshes,
            build_collision_scene_graph=meshes,
            load_meshes=meshes,
            load_collision_meshes=meshes,
            **options,
        )
    finally:
        source.removeFilter(keep)
    reports = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    if reports:
        warnings.warn(f"{path}: yourdfpy: {'; '.join(reports)}", URDFWarning, stacklevel=2)
    return urdf


def _load_urdf(path: Path):
    try:
        import yourdfpy  # noqa: F401 (checked before the file, for the install hint)
    except ImportError as err:
        raise ImportError("URDF import needs the 'yourdfpy' package: pip install yourdfpy") from err
    if not path.is_file():
        raise ConfigError(f"{path}: URDF file does not exist")
    try:
        return read_urdf(path)
    except Exception as err:  # the parser raises many types for malformed files
        raise ConfigError(f"{path}: cannot parse URDF: {err}") from None


def _joint_from_urdf(joint: Any, path: Path) -> JointSpec:
    if joint.type not in URDF_JOINT_TYPES:
        raise ConfigError(f"{path}: joint '{joint.name}': unknown type {joint.type!r}")
    if joint.origin is None:
        xyz, rpy = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    else:
        origin = np.asarray(joint.origin, dtype=np.float64)
        xyz = tuple(float(v) for v in origin[:3, 3])
        rpy = matrix_to_rpy_np(origin[:3, :3])
    axis = (1.0, 0.0, 0.0) if joint.axis is None else tuple(float(v) for v in joint.axis)
    mimic = None
    if joint.mimic is not None:
        mimic = MimicSpec(
            joint=joint.mimic.joint,
            multiplier=1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier),
            offset=0.0 if joint.mimic.offset is None else float(joint.mimic.offset),
        )
    return JointSpec(
        name=joint.name,
        type=joint.type,
        parent=joint.parent,
        child=joint.child,
        origin_xyz=xyz,
        origin_rpy=rpy,
        axis=axis,
        mimic=mimic,
    )


def read_urdf_joints(path: str | os.PathLike) -> list[JointSpec]:
    """Every joint of a URDF file as :class:`JointSpec` (origins converted to xyz + rpy)."""
    path = Path(path)
    urdf = _load_urdf(path)
    return [_joint_from_urdf(j, path) for j in urdf.robot.joints]


def _dynamics_from_urdf(urdf: Any, joint_names: Sequence[str]) -> dict[str, Any] | None:
    """The robot file's ``dynamics`` mapping from a parsed URDF, ``None`` when it has no masses.

    ``<inertial>`` gives the mass, the centre of mass (``origin`` xyz) and the inertia tensor
    in the ``origin`` frame, which is rotated into the link frame here (``R I R^T``).
    """
    inertials: dict[str, Any] = {}
    for link in urdf.robot.links:
        inertial = link.inertial
        if inertial is None or inertial.mass is None or not float(inertial.mass) > 0.0:
            continue
        origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin, float)
        tensor = np.zeros((3, 3)) if inertial.inertia is None else np.asarray(inertial.inertia)
        rotation = origin[:3, :3]
        tensor = rotation @ tensor @ rotation.T
        inertials[link.name] = {
            "mass": float(inertial.mass),
            "com": [float(v) for v in origin[:3, 3]],
            "inertia": [
                float(tensor[0, 0]),
                float(tensor[1, 1]),
                float(tensor[2, 2]),
                float(tensor[0, 1]),
                float(tensor[0, 2]),
                float(tensor[1, 2]),
            ],
        }
    if not inertials:
        return None
    joints = {j.name: j for j in urdf.robot.joints}
    efforts = [
        None
        if joints[n].limit is None or joints[n].limit.effort is None
        else float(joints[n].limit.effort)
        for n in joint_names
        if n in joints
    ]
    out: dict[str, Any] = {"link_inertials": inertials}
    if len(efforts) == len(joint_names) and all(e is not None and e > 0 for e in efforts):
        out["effort_limit"] = efforts
    return out


def read_urdf_dynamics(
    path: str | os.PathLike, joint_names: Sequence[str]
) -> dict[str, Any] | None:
    """The ``dynamics`` mapping (see :mod:`curobo_lite.robot.config`) of a URDF file: link
    masses and inertias, and the ``<limit effort>`` of ``joint_names`` when every one has it;
    ``None`` when no link has a mass."""
    return _dynamics_from_urdf(_load_urdf(Path(path)), joint_names)


def _per_joint(value: float | Sequence[float], dof: int, label: str) -> list[float]:
    """``value`` (the argument ``label``: one positive number, or ``dof`` of them) per joint."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        if len(value) != dof:
            raise InputValueError(
                f"{label}: expected a positive number or {dof} of them, received "
                f"{len(value)}: {excerpt(value)}"
            )
        return [
            parse_number(v, f"{label}[{i}]", low=0.0, low_open=True) for i, v in enumerate(value)
        ]
    return [parse_number(value, label, low=0.0, low_open=True)] * dof


def _per_joint_check(value: Any, label: str) -> float | list[float]:
    """The argument ``label`` checked before the URDF is read (its length is checked once the
    chain's joint count is known)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [
            parse_number(v, f"{label}[{i}]", low=0.0, low_open=True) for i, v in enumerate(value)
        ]
    return parse_number(value, label, low=0.0, low_open=True)


def _check_joint_links(urdf: Any, links: set[str], source: str) -> None:
    """Every joint names an existing parent and child ``<link>`` (a dangling joint would
    break the tree walk with an unrelated error)."""
    for joint in urdf.robot.joints:
        for end in ("parent", "child"):
            link = getattr(joint, end)
            if not isinstance(link, str) or not link:
                raise ConfigError(f"{source}: joint '{joint.name}': has no <{end} link=...>")
            if link not in links:
                raise ConfigError(
                    f"{source}: joint '{joint.name}': {end} link '{link}' is not a <link> of "
                    f"the file"
                )


def _joint_limits(
    urdf: Any, names: Sequence[str], source: str
) -> tuple[list[tuple[float, float]], list[float]]:
    """Position ``(lower, upper)`` and velocity limit of each of ``names`` from the ``<limit>``
    tags of a parsed URDF (continuous joints: ``[-2 pi, 2 pi]``)."""
    joints = {j.name: j for j in urdf.robot.joints}
    position, velocity = [], []
    for jname in names:
        if jname not in joints:
            raise ConfigError(f"{source}: no joint '{jname}'")
        joint = joints[jname]
        limit = joint.limit
        if joint.type == "continuous":
            low, high = -CONTINUOUS_JOINT_LIMIT, CONTINUOUS_JOINT_LIMIT
        elif limit is None or limit.lower is None or limit.upper is None:
            raise ConfigError(f"{source}: joint '{jname}': <limit> needs 'lower' and 'upper'")
        else:
            low, high = float(limit.lower), float(limit.upper)
        if limit is None or limit.velocity is None or not float(limit.velocity) > 0:
            raise ConfigError(
                f"{source}: joint '{jname}': <limit> needs a positive 'velocity', received "
                f"{None if limit is None else limit.velocity!r}"
            )
        position.append((low, high))
        velocity.append(float(limit.velocity))
    return position, velocity


def read_urdf_joint_limits(
    path: str | os.PathLike, names: Sequence[str]
) -> tuple[list[tuple[float, float]], list[float]]:
    """Position ``(lower, upper)`` and velocity limit of each of the joints ``names`` of a URDF
    file, from its ``<limit>`` tags (continuous joints: ``[-2 pi, 2 pi]``); a missing joint or
    tag is a :class:`ConfigError` naming the file and the joint."""
    path = Path(path)
    return _joint_limits(_load_urdf(path), names, str(path))


def config_dict_from_urdf(
    path: str | os.PathLike,
    base_link: str,
    ee_link: str,
    acceleration_limit: float | Sequence[float] = 15.0,
    jerk_limit: float | Sequence[float] = 500.0,
    name: str | None = None,
) -> tuple[dict[str, Any], str]:
    """A robot-file mapping (see :mod:`curobo_lite.robot.config`) for one URDF chain.

    Returns ``(data, source)``; ``RobotConfig.from_dict(data, source=source)`` validates it.
    """
    for key, link in (("base_link", base_link), ("ee_link", ee_link)):
        if not isinstance(link, str) or not link:
            raise InputTypeError(f"{key}: expected a link name (a string), {received(link)}")
    if name is not None and not isinstance(name, str):
        raise InputTypeError(f"name: expected a string or None, {received(name)}")
    # the arguments first: a bad limit is reported before the file is parsed
    acceleration = _per_joint_check(acceleration_limit, "acceleration_limit")
    jerk = _per_joint_check(jerk_limit, "jerk_limit")
    if not isinstance(path, str | os.PathLike):
        raise InputTypeError(f"path: expected a path to a URDF file, {received(path)}")
    path = Path(path)
    source = str(path)
    urdf = _load_urdf(path)
    joints = {j.name: j for j in urdf.robot.joints}
    links = {link.name for link in urdf.robot.links if isinstance(link.name, str)}
    _check_joint_links(urdf, links, source)
    parent_joint = {j.child: j for j in urdf.robot.joints}
    for key, link in (("base_link", base_link), ("ee_link", ee_link)):
        if link not in links:
            raise ConfigError(
                f"{source}: '{key}': unknown link {excerpt(link)}; links: "
                f"{preview_names(sorted(links), 20)}"
            )
    chain = []
    link = ee_link
    while link != base_link:
        if link not in parent_joint or len(chain) > len(joints):
            raise ConfigError(
                f"{source}: 'ee_link': the chain does not connect base_link '{base_link}' to "
                f"ee_link '{ee_link}': walking up from '{ee_link}' ends at '{link}'"
            )
        chain.append(parent_joint[link])
        link = parent_joint[link].parent
    chain.reverse()

    joint_names = [j.name for j in chain if j.type != "fixed" and j.mimic is None]
    for j in chain:
        if j.mimic is not None and j.mimic.joint not in joint_names:
            if j.mimic.joint not in joints:
                raise ConfigError(
                    f"{source}: joint '{j.name}': mimics unknown joint '{j.mimic.joint}'"
                )
            joint_names.append(j.mimic.joint)
    chain_names = {j.name for j in chain}
    kept = [*chain, *(joints[n] for n in joint_names if n not in chain_names)]

    position, velocity = _joint_limits(urdf, joint_names, source)
    position_lower = [low for low, _ in position]
    position_upper = [high for _, high in position]
    dof = len(joint_names)
    acceleration = _per_joint(acceleration, dof, "acceleration_limit")
    jerk = _per_joint(jerk, dof, "jerk_limit")
    data = {
        "name": name or path.stem,
        "base_link": base_link,
        "ee_link": ee_link,
        "joint_names": joint_names,
        "joints": [_joint_from_urdf(j, path).to_dict() for j in kept],
        "joint_limits": {
            "position": {"lower": position_lower, "upper": position_upper},
            "velocity": {"lower": [-v for v in velocity], "upper": velocity},
            "acceleration": {"lower": [-a for a in acceleration], "upper": acceleration},
            "jerk": {"lower": [-j for j in jerk], "upper": jerk},
        },
        "retract_config": [0.5 * (lo + hi) for lo, hi in zip(position_lower, position_upper)],
        "cspace_weights": [1.0] * dof,
    }
    dynamics = _dynamics_from_urdf(urdf, joint_names)
    if dynamics is not None:
        kept_links = {base_link} | {j.child for j in kept}
        dynamics["link_inertials"] = {
            k: v for k, v in dynamics["link_inertials"].items() if k in kept_links
        }
        data["dynamics"] = dynamics
    return data, source
