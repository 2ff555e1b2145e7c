"""cuRobo's robot files, read and written: ``robot_cfg: kinematics: {...}``.

Two layouts are read, both unchanged:

- cuRobo 0.7's robot configuration (format 1.0): ``kinematics`` holds ``urdf_path``,
  ``base_link``, ``ee_link``, the collision keys and ``cspace: {joint_names, retract_config,
  ...}``;
- cuRobo's newer layout (``format_version: 2.0``, in ``kinematics`` or beside it): the end
  effector is ``tool_frames[0]`` and the rest pose ``cspace.default_joint_position``.

:func:`curobo_to_robot_dict` turns either into this package's robot-file mapping (see
:mod:`curobo_lite.robot.config`), which :class:`~curobo_lite.robot.config.RobotConfig` then
validates as any robot file; :func:`robot_to_curobo` writes a :class:`RobotConfig` back in
cuRobo's layout, with a URDF of its tree. How each key maps is in ``docs/coming_from_curobo.md``.

Relative paths (``urdf_path``, ``asset_root_path``) resolve against, in order: an
``assets_path`` argument, the environment variable ``CUROBO_LITE_ASSETS``, the robot file's own
folder, the bundled robot folders (``configs/robot``). A sphere file (``collision_spheres:
FILE``) resolves against the robot file's folder. Keys of other tools (USD, Isaac Sim, the
neural dynamics model) are reported once per file as a :class:`CuroboKeysIgnored` warning;
any other unknown key is a :class:`~curobo_lite.types.errors.ConfigError`.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import numpy as np

from curobo_lite.config_files import YamlReader, config_dirs, read_config_file
from curobo_lite.robot.dynamics_config import RobotDynamicsConfig
from curobo_lite.robot.geometry import matrix_to_rpy_np, quat_to_matrix_np
from curobo_lite.robot.joints import (
    JointSpec,
    joint_transform_np,
    tree_links,
)
from curobo_lite.types.errors import ConfigError

# RobotConfig (robot/config.py) imports this module: its instances are typed Any here
RobotConfig = Any

ENV_ASSETS = "CUROBO_LITE_ASSETS"

# kinematics keys that change kinematics or collision: read and honoured
KINEMATICS_KEYS = (
    "urdf_path",
    "asset_root_path",
    "base_link",
    "ee_link",
    "tool_frames",
    "link_names",
    "collision_link_names",
    "collision_spheres",
    "collision_sphere_buffer",
    "extra_collision_spheres",
    "self_collision_ignore",
    "self_collision_buffer",
    "lock_joints",
    "extra_links",
    "mesh_link_names",
    "load_collision_spheres",
    "cspace",
    "format_version",
)
# kinematics keys of other tools (USD, Isaac Sim), of cuRobo's GPU code paths or of its
# visualisation: accepted and reported as ignored
IGNORED_KINEMATICS_KEYS = (
    "usd_path",
    "usd_robot_root",
    "isaac_usd_path",
    "use_usd_kinematics",
    "usd_flip_joints",
    "usd_flip_joint_limits",
    "use_global_cumul",
    "compute_jacobian",
    "debug",
    "load_meshes",
    "load_link_names_with_mesh",
    "load_tool_frames_with_mesh",
    "grasp_contact_link_names",
    "use_external_assets",
    "external_asset_path",
    "external_robot_configs_path",
    "num_envs",
    "add_object_link",
)
CSPACE_KEYS = (
    "joint_names",
    "retract_config",
    "default_joint_position",
    "cspace_distance_weight",
    "null_space_weight",
    "null_space_maximum_distance",
    "max_acceleration",
    "max_jerk",
    "velocity_scale",
    "acceleration_scale",
    "jerk_scale",
    "position_limit_clip",
)
# beside ``kinematics`` in ``robot_cfg``: cuRobo's dynamics model is not used here
IGNORED_ROBOT_CFG_KEYS = ("dynamics", "load_dynamics", "device_cfg", "tensor_args")
EXTRA_LINK_KEYS = (
    "parent_link_name",
    "link_name",
    "joint_name",
    "joint_type",
    "fixed_transform",
    "joint_limits",
    "joint_velocity_limits",
)
# extra-link keys that change nothing here (inertials, cuRobo's internal ids and mimic fields)
IGNORED_EXTRA_LINK_KEYS = (
    "child_link_name",
    "joint_axis",
    "joint_id",
    "joint_offset",
    "mimic_joint_name",
    "joint_effort_limit",
    "link_mass",
    "link_com",
    "link_inertia",
)
# cuRobo's joint types of extra links: this package's type and axis
EXTRA_JOINT_TYPES = {
    "FIXED": ("fixed", (1.0, 0.0, 0.0)),
    **{
        f"{axis}_{kind}": (urdf_type, tuple(float(a == axis) for a in "XYZ"))
        for axis in "XYZ"
        for kind, urdf_type in (("PRISM", "prismatic"), ("ROT", "revolute"))
    },
}


class CuroboKeysIgnored(UserWarning):
    """Keys of a cuRobo robot file that belong to other tools and change nothing here."""


_reported: set[tuple[str, tuple[str, ...]]] = set()
_reported_lock = threading.Lock()


def _report_once(source: str, keys: Sequence[str], why: str) -> None:
    key = (source, tuple(keys))
    with _reported_lock:
        if not keys or key in _reported:
            return
        _reported.add(key)
    warnings.warn(f"{source}: {why}: {list(keys)}", CuroboKeysIgnored, stacklevel=_outside())


def _outside() -> int:
    """The ``stacklevel`` of the first frame outside curobo_lite, seen from the function that
    calls :func:`warnings.warn` (whoever loaded the robot file)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("curobo_lite."):
        frame, level = frame.f_back, level + 1
    return level


def is_curobo_layout(data: Any) -> bool:
    """Whether a parsed robot file is in cuRobo's layout (``robot_cfg:`` or a top-level
    ``kinematics:`` mapping)."""
    return isinstance(data, Mapping) and (
        isinstance(data.get("robot_cfg"), Mapping) or isinstance(data.get("kinematics"), Mapping)
    )


def asset_roots(
    base_dir: str | os.PathLike | None, assets_path: str | os.PathLike | None = None
) -> list[Path]:
    """Folders a relative asset path resolves against, first match wins: ``assets_path``,
    ``$CUROBO_LITE_ASSETS``, the robot file's folder (``base_dir``), the bundled robot
    folders."""
    roots = []
    if assets_path is not None:
        roots.append(Path(assets_path))
    if os.environ.get(ENV_ASSETS):
        roots.append(Path(os.environ[ENV_ASSETS]))
    if base_dir is not None:
        roots.append(Path(base_dir))
    roots.extend(config_dirs("robot"))
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def resolve_asset(
    reader: YamlReader, key: str, value: str, roots: Sequence[Path], directory: bool = False
) -> Path:
    """The first existing ``root / value`` (``value`` itself when absolute); a
    :class:`ConfigError` naming every path tried when none exists."""
    path = Path(reader.string(value, key))
    tried = [path] if path.is_absolute() else [root / path for root in roots]
    for candidate in tried:
        if candidate.is_dir() if directory else candidate.is_file():
            return candidate.absolute()
    kind = "folder" if directory else "file"
    raise reader.error(
        key,
        f"{kind} '{value}' not found; tried {[str(p) for p in tried]} (set {ENV_ASSETS} "
        "or pass assets_path to point at cuRobo's assets folder)",
    )


def _any_keys(reader: YamlReader, value: Any, key: str) -> Mapping[str, Any]:
    """A mapping whose keys are names (links, joints): any keys, a named error for anything
    that is not a mapping."""
    return reader.mapping(value, key, (), list(value) if isinstance(value, Mapping) else ())


def _per_joint(reader: YamlReader, value: Any, key: str, dof: int) -> list[float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [reader.number(value, key)] * dof
    values = reader.vector(value, key)
    if len(values) == 1:
        return values * dof
    if len(values) != dof:
        raise reader.error(
            key, f"expected one number or {dof} (one per joint), received {len(values)}"
        )
    return values


def _pose_matrix(reader: YamlReader, value: Any, key: str) -> np.ndarray:
    """cuRobo's ``[x, y, z, qw, qx, qy, qz]`` as a ``[4, 4]`` transform."""
    pose = reader.vector(value, key, 7)
    quat = np.asarray(pose[3:], dtype=np.float64)
    norm = float(np.linalg.norm(quat))
    if not norm > 0.0:
        raise reader.error(key, f"quaternion (qw, qx, qy, qz) {pose[3:]} has zero length")
    transform = np.eye(4)
    transform[:3, :3] = quat_to_matrix_np(quat / norm)
    transform[:3, 3] = pose[:3]
    return transform


def _with_origin(joint: JointSpec, transform: np.ndarray, **changes: Any) -> JointSpec:
    fields = {
        "name": joint.name,
        "type": joint.type,
        "parent": joint.parent,
        "child": joint.child,
        "axis": joint.axis,
        "mimic": joint.mimic,
        **changes,
    }
    return JointSpec(
        origin_xyz=tuple(float(v) for v in transform[:3, 3]),
        origin_rpy=matrix_to_rpy_np(transform[:3, :3]),
        **fields,
    )


def _chain_joint_names(joints: Sequence[JointSpec], base_link: str, ee_link: str) -> set[str]:
    parent_joint = {j.child: j for j in joints}
    names: set[str] = set()
    link = ee_link
    while link != base_link and link in parent_joint and len(names) <= len(joints):
        names.add(parent_joint[link].name)
        link = parent_joint[link].parent
    return names


def _extra_link(
    reader: YamlReader, name: str, raw: Any, key: str, limits: dict[str, tuple]
) -> JointSpec:
    """The joint of one of cuRobo's ``extra_links``; a moving one's position and velocity
    limits go to ``limits[joint name]``."""
    data = reader.mapping(
        raw,
        key,
        ("parent_link_name", "fixed_transform"),
        (*EXTRA_LINK_KEYS, *IGNORED_EXTRA_LINK_KEYS),
    )
    joint_type = data.get("joint_type", "FIXED")
    if joint_type not in EXTRA_JOINT_TYPES:
        raise reader.error(
            f"{key}.joint_type",
            f"expected one of {list(EXTRA_JOINT_TYPES)}, received {joint_type!r}",
        )
    urdf_type, axis = EXTRA_JOINT_TYPES[joint_type]
    link = reader.string(data.get("link_name", name), f"{key}.link_name")
    if link != name:
        raise reader.error(f"{key}.link_name", f"expected '{name}' (the key), received '{link}'")
    transform = _pose_matrix(reader, data["fixed_transform"], f"{key}.fixed_transform")
    joint = JointSpec(
        name=reader.string(data.get("joint_name", f"{name}_joint"), f"{key}.joint_name"),
        type=urdf_type,
        parent=reader.string(data["parent_link_name"], f"{key}.parent_link_name"),
        child=name,
        axis=axis,
    )
    if urdf_type != "fixed":
        position = reader.vector(data.get("joint_limits"), f"{key}.joint_limits", 2)
        velocity = reader.vector(
            data.get("joint_velocity_limits", [-2.0, 2.0]), f"{key}.joint_velocity_limits", 2
        )
        limits[joint.name] = (tuple(position), max(abs(velocity[0]), abs(velocity[1])))
    return _with_origin(joint, transform)


def _urdf_limits(
    urdf_path: Path, names: Sequence[str], reader: YamlReader, extra: Mapping[str, tuple]
) -> tuple[list, list]:
    """Position ``(lower, upper)`` and velocity of ``names`` from the URDF's ``<limit>``, or
    from ``extra`` (the extra links' joints)."""
    from curobo_lite.robot.urdf import read_urdf_joint_limits

    in_urdf = [n for n in names if n not in extra]
    try:
        position, velocity = read_urdf_joint_limits(urdf_path, in_urdf)
    except ConfigError as err:
        raise reader.error("kinematics.cspace.joint_names", str(err)) from None
    found = dict(zip(in_urdf, zip(position, velocity, strict=True), strict=True))
    found.update(extra)
    return [found[n][0] for n in names], [found[n][1] for n in names]


def _spheres(
    reader: YamlReader, raw: Any, base_dir: Path | None
) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """The ``collision_spheres`` mapping, read from its file when it names one."""
    if not isinstance(raw, str):
        return _any_keys(reader, raw, "collision_spheres"), reader.source
    path = Path(raw)
    tried = path if path.is_absolute() else Path(base_dir or ".") / path
    if not tried.is_file():
        raise reader.error("collision_spheres", f"spheres file '{raw}' not found; tried '{tried}'")
    sphere_reader = YamlReader(str(tried))
    try:  # the bounded loader: alias bombs, undecodable text
        loaded = read_config_file(tried, "spheres")
    except ConfigError as err:
        raise reader.error("collision_spheres", f"spheres file: {err}") from None
    # cuRobo's sphere files may carry a 'robot' label beside the spheres
    loaded = sphere_reader.mapping(loaded, "<top level>", ("collision_spheres",), ("robot",))
    spheres = loaded["collision_spheres"]
    return _any_keys(sphere_reader, spheres, "collision_spheres"), str(tried)


def curobo_to_robot_dict(
    data: Mapping[str, Any],
    source: str = "<dict>",
    base_dir: str | os.PathLike | None = None,
    assets_path: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """This package's robot-file mapping for a cuRobo robot file (either layout).

    ``base_dir`` is the robot file's folder; ``assets_path`` the first folder relative asset
    paths resolve against (see the module docstring).
    """
    reader = YamlReader(source)
    top = data["robot_cfg"] if "robot_cfg" in data else data
    outer = [k for k in data if k != "robot_cfg"] if "robot_cfg" in data else []
    if outer:
        raise reader.error("<top level>", f"unknown key(s) {outer} beside 'robot_cfg'")
    top = reader.mapping(
        top, "robot_cfg", ("kinematics",), ("format_version", *IGNORED_ROBOT_CFG_KEYS)
    )
    _report_once(
        source,
        [f"robot_cfg.{k}" for k in top if k in IGNORED_ROBOT_CFG_KEYS],
        "ignored (cuRobo's dynamics model and device settings are not used by curobo_lite)",
    )
    kin = reader.mapping(
        top["kinematics"],
        "kinematics",
        ("base_link",),
        (*KINEMATICS_KEYS, *IGNORED_KINEMATICS_KEYS),
    )
    _report_once(
        source,
        [f"kinematics.{k}" for k in kin if k in IGNORED_KINEMATICS_KEYS],
        "ignored (keys of USD / Isaac Sim and of cuRobo's GPU code paths)",
    )
    version = kin.get("format_version", top.get("format_version", 1.0))
    version = reader.number(version, "format_version")
    if version not in (1.0, 2.0):
        raise reader.error("format_version", f"expected 1.0 or 2.0, received {version!r}")
    roots = asset_roots(base_dir, assets_path)
    base_dir = Path(base_dir) if base_dir is not None else None

    # the tree -------------------------------------------------------------------------------
    if kin.get("urdf_path") is None:
        raise reader.error("kinematics.urdf_path", "missing: cuRobo robot files name a URDF")
    urdf_path = resolve_asset(reader, "kinematics.urdf_path", kin["urdf_path"], roots)
    if kin.get("asset_root_path"):
        mesh_root = resolve_asset(
            reader, "kinematics.asset_root_path", kin["asset_root_path"], roots, directory=True
        )
        if mesh_root.resolve() != urdf_path.parent.resolve():
            _report_once(
                source,
                ["kinematics.asset_root_path"],
                f"mesh paths resolve against the URDF's folder {urdf_path.parent}, not "
                f"{mesh_root} (exact mesh checks only)",
            )
    from curobo_lite.robot.urdf import read_urdf_joints

    joints = read_urdf_joints(urdf_path)
    base_link = reader.string(kin["base_link"], "kinematics.base_link")
    if kin.get("ee_link") is not None:
        ee_link = reader.string(kin["ee_link"], "kinematics.ee_link")
    elif kin.get("tool_frames"):
        ee_link = reader.strings(kin["tool_frames"], "kinematics.tool_frames")[0]
    else:
        raise reader.error("kinematics.ee_link", "missing: give ee_link or tool_frames")
    extra = kin.get("extra_links") or {}
    extra = _any_keys(reader, extra, "kinematics.extra_links")
    extra_limits: dict[str, tuple] = {}
    joints += [
        _extra_link(reader, n, v, f"kinematics.extra_links.{n}", extra_limits)
        for n, v in extra.items()
    ]
    links = tree_links(joints)
    for key in ("link_names", "mesh_link_names", "tool_frames"):
        if kin.get(key) is not None:
            for i, link in enumerate(reader.strings(kin[key], f"kinematics.{key}")):
                if link not in links:
                    raise reader.error(f"kinematics.{key}[{i}]", f"unknown link '{link}'")

    # joints: locked ones on the chain become fixed, the rest stay locked ---------------------
    lock = reader.numbers_by_name(kin.get("lock_joints"), "kinematics.lock_joints")
    chain = _chain_joint_names(joints, base_link, ee_link)
    by_name = {j.name: j for j in joints}
    followers = {j.name: j.mimic for j in joints if j.mimic is not None}
    for name, value in lock.items():
        if name not in by_name:
            raise reader.error(f"kinematics.lock_joints.{name}", f"unknown joint '{name}'")
        held = {name: value}  # a locked joint holds the joints that mimic it too
        held.update(
            {f: m.multiplier * value + m.offset for f, m in followers.items() if m.joint == name}
        )
        for held_name, held_value in held.items():
            if held_name in chain or held_name != name:
                joint = by_name[held_name]
                fixed = _with_origin(
                    joint, joint_transform_np(joint, held_value), type="fixed", mimic=None
                )
                joints[joints.index(joint)] = fixed
    off_chain_lock = {n: v for n, v in lock.items() if n not in chain}

    # c-space -----------------------------------------------------------------------------
    cspace = reader.mapping(kin.get("cspace"), "kinematics.cspace", ("joint_names",), CSPACE_KEYS)
    all_names = reader.strings(cspace["joint_names"], "kinematics.cspace.joint_names")
    keep = [i for i, n in enumerate(all_names) if n not in lock]
    names = [all_names[i] for i in keep]
    for i, name in enumerate(all_names):
        if name in by_name and name not in lock and name not in chain:
            raise reader.error(
                f"kinematics.cspace.joint_names[{i}]",
                f"joint '{name}' is off the chain from '{base_link}' to '{ee_link}' (a second "
                "arm, a hand or a leg); curobo_lite plans one chain: hold it in lock_joints",
            )
    n_all = len(all_names)

    def per_joint(key: str, default: Any) -> list[float]:
        value = cspace.get(key)
        values = _per_joint(
            reader, default if value is None else value, f"kinematics.cspace.{key}", n_all
        )
        return [values[i] for i in keep]

    retract_key = (
        "default_joint_position" if "default_joint_position" in cspace else "retract_config"
    )
    if cspace.get(retract_key) is not None:
        retract = per_joint(retract_key, None)
    else:
        retract = None
    distance = per_joint("cspace_distance_weight", 1.0)
    if cspace.get("null_space_weight") is not None:
        null_space = per_joint("null_space_weight", 1.0)
        if cspace.get("cspace_distance_weight") is None:
            distance = null_space
        elif not np.allclose(null_space, distance):
            _report_once(
                source,
                ["kinematics.cspace.null_space_weight"],
                "differs from cspace_distance_weight; curobo_lite has one set of c-space "
                "weights (cspace_weights) and takes cspace_distance_weight",
            )
    if cspace.get("null_space_maximum_distance") is not None:
        raise reader.error(
            "kinematics.cspace.null_space_maximum_distance",
            "not supported: curobo_lite's null-space cost has no maximum distance",
        )
    position, velocity = _urdf_limits(urdf_path, names, reader, extra_limits)
    clip = per_joint("position_limit_clip", 0.0)
    lower = [lo + c for (lo, _), c in zip(position, clip, strict=True)]
    upper = [hi - c for (_, hi), c in zip(position, clip, strict=True)]
    velocity = [v * s for v, s in zip(velocity, per_joint("velocity_scale", 1.0), strict=True)]
    acceleration = [
        a * s
        for a, s in zip(
            per_joint("max_acceleration", 10.0), per_joint("acceleration_scale", 1.0), strict=True
        )
    ]
    jerk = [
        j * s
        for j, s in zip(per_joint("max_jerk", 500.0), per_joint("jerk_scale", 1.0), strict=True)
    ]
    if retract is None:  # cuRobo's default: zeros, here held inside the limits
        retract = [min(max(0.0, lo), hi) for lo, hi in zip(lower, upper, strict=True)]

    out: dict[str, Any] = {
        "name": Path(source).stem if source != "<dict>" else urdf_path.stem,
        "base_link": base_link,
        "ee_link": ee_link,
        "joint_names": names,
        "joints": [j.to_dict() for j in joints],
        "joint_limits": {
            "position": {"lower": lower, "upper": upper},
            "velocity": {"lower": [-v for v in velocity], "upper": velocity},
            "acceleration": {"lower": [-a for a in acceleration], "upper": acceleration},
            "jerk": {"lower": [-j for j in jerk], "upper": jerk},
        },
        "retract_config": retract,
        "cspace_weights": distance,
        "collision_geometry": str(urdf_path),
    }
    if off_chain_lock:
        out["lock_joints"] = off_chain_lock
    from curobo_lite.robot.urdf import read_urdf_dynamics

    dynamics = read_urdf_dynamics(urdf_path, names)
    if dynamics is not None:
        dynamics["link_inertials"] = {
            k: v for k, v in dynamics["link_inertials"].items() if k in links
        }
        try:  # only simulators read them; cuRobo's URDFs hold some invalid tensors
            RobotDynamicsConfig.from_dict(dynamics, None, str(urdf_path))
            out["dynamics"] = dynamics
        except ConfigError as err:
            _report_once(source, ["<urdf inertials>"], f"left out: {err}")
    out.update(_collision(reader, kin, base_dir, links))
    return out


def _collision(
    reader: YamlReader, kin: Mapping[str, Any], base_dir: Path | None, links: set[str]
) -> dict[str, Any]:
    """The collision keys of this package's robot file from cuRobo's."""
    load = kin.get("load_collision_spheres", True)
    if (
        not reader.boolean(load, "kinematics.load_collision_spheres")
        or kin.get("collision_spheres") is None
    ):
        if kin.get("collision_link_names") and load:
            raise reader.error(
                "kinematics.collision_link_names", "given without 'collision_spheres'"
            )
        return {}
    spheres, sphere_source = _spheres(reader, kin["collision_spheres"], base_dir)
    names = reader.strings(kin.get("collision_link_names") or [], "kinematics.collision_link_names")
    extra_spheres = kin.get("extra_collision_spheres") or {}
    extra_spheres = _any_keys(reader, extra_spheres, "kinematics.extra_collision_spheres")
    for link, count in extra_spheres.items():
        key = f"kinematics.extra_collision_spheres.{link}"
        if link not in links:
            raise reader.error(key, f"unknown link '{link}'")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise reader.error(key, f"expected a count >= 0, received {count!r}")
    raw_buffer = kin.get("collision_sphere_buffer") or 0.0
    if isinstance(raw_buffer, Mapping):
        per_link = reader.numbers_by_name(raw_buffer, "kinematics.collision_sphere_buffer")
        buffer = 0.0
    else:
        per_link, buffer = {}, reader.number(raw_buffer, "kinematics.collision_sphere_buffer")
    sphere_reader = YamlReader(sphere_source)
    out_spheres: dict[str, list[dict[str, Any]]] = {}
    for i, link in enumerate(names):
        key = f"kinematics.collision_link_names[{i}]"
        if link not in links:
            raise reader.error(key, f"unknown link '{link}'")
        if link not in spheres:
            if link in extra_spheres:
                continue  # only placeholders, disabled until an object is attached
            raise reader.error(key, f"link '{link}' has no entry in collision_spheres")
        rows = []
        entries = spheres[link]
        if isinstance(entries, str) or not isinstance(entries, Sequence):
            raise sphere_reader.error(
                f"collision_spheres.{link}", f"expected a list, received {entries!r}"
            )
        for j, entry in enumerate(entries):
            ekey = f"collision_spheres.{link}[{j}]"
            entry = sphere_reader.mapping(entry, ekey, ("center", "radius"))
            center = sphere_reader.vector(entry["center"], f"{ekey}.center", 3)
            radius = sphere_reader.number(entry["radius"], f"{ekey}.radius")
            radius += per_link.get(link, 0.0)
            if radius + buffer > 0.0 and radius > 0.0:  # cuRobo disables radius <= 0
                rows.append({"center": center, "radius": radius})
        if rows:
            out_spheres[link] = rows
    out: dict[str, Any] = {}
    if not out_spheres:
        return out
    out["collision_spheres"] = out_spheres
    out["collision_link_names"] = list(out_spheres)
    # reserved for attached objects: allocated disabled (RobotCollisionConfig.extra_spheres)
    reserved = {link: int(count) for link, count in extra_spheres.items() if count > 0}
    if reserved:
        out["extra_collision_spheres"] = reserved
    out["collision_sphere_buffer"] = buffer
    # cuRobo checks every collision link against the world, the base's too
    out["world_collision_fixed_links"] = True
    ignore: dict[str, list[str]] = {}
    unknown: list[str] = []
    raw_ignore = kin.get("self_collision_ignore") or {}
    raw_ignore = _any_keys(reader, raw_ignore, "kinematics.self_collision_ignore")
    for link, others in raw_ignore.items():
        others = reader.strings(others or [], f"kinematics.self_collision_ignore.{link}")
        kept = [o for o in others if o in links and o != link]
        unknown += [n for n in (link, *others) if n not in links]
        if link in links and kept:
            ignore[link] = kept
    if ignore:
        out["self_collision_ignore"] = ignore
    self_buffer = reader.numbers_by_name(
        kin.get("self_collision_buffer"), "kinematics.self_collision_buffer"
    )
    unknown += [n for n in self_buffer if n not in links]
    self_buffer = {k: v for k, v in self_buffer.items() if k in links}
    if self_buffer:
        out["self_collision_buffer"] = self_buffer
    _report_once(
        reader.source,
        sorted(set(unknown)),
        "self-collision rules name links that are not in the robot and are skipped (as cuRobo "
        "does)",
    )
    return out


# writing ----------------------------------------------------------------------------------------
def _fmt(values: Sequence[float]) -> str:
    return " ".join(repr(float(v)) for v in values)


def _collision_elements(path: str | None, out_dir: Path | None) -> dict[str, list[str]]:
    """``{link: [<collision> XML]}`` of the URDF at ``path``, mesh file names made relative to
    ``out_dir`` (absolute when it is ``None``)."""
    if path is None:
        return {}
    import xml.etree.ElementTree as ET

    source = Path(path)
    out: dict[str, list[str]] = {}
    for link in ET.parse(source).getroot().iter("link"):
        for element in link.findall("collision"):
            for mesh in element.iter("mesh"):
                name = mesh.get("filename", "")
                if name and "://" not in name:
                    target = (source.parent / name).absolute()
                    mesh.set(
                        "filename",
                        os.path.relpath(target, out_dir) if out_dir is not None else str(target),
                    )
            element.tail = None
            out.setdefault(link.get("name", ""), []).append(
                ET.tostring(element, encoding="unicode").strip()
            )
    return out


def robot_urdf_text(config: RobotConfig, out_dir: str | os.PathLike | None = None) -> str:
    """A URDF of ``config``'s tree: links, joints (origins, axes, mimic tags), the limits of
    the actuated joints, masses when ``config.dynamics`` has them, and the ``<collision>``
    elements of ``config.collision_geometry_path`` (mesh paths relative to ``out_dir``, the
    folder the URDF is written to; absolute without it)."""
    limits = config.joint_limits
    index = {n: i for i, n in enumerate(config.joint_names)}
    inertials = config.dynamics.link_inertials if config.dynamics is not None else {}
    collisions = _collision_elements(
        config.collision_geometry_path, Path(out_dir) if out_dir is not None else None
    )
    lines = ['<?xml version="1.0"?>', f"<robot name={quoteattr(config.name)}>"]
    for link in sorted(tree_links(config.joints)):
        inertial = inertials.get(link)
        shapes = collisions.get(link, [])
        if inertial is None and not shapes:
            lines.append(f"  <link name={quoteattr(link)}/>")
            continue
        lines.append(f"  <link name={quoteattr(link)}>")
        if inertial is not None:
            i = list(inertial.inertia)
            lines += [
                f'    <inertial><origin xyz="{_fmt(inertial.com)}" rpy="0 0 0"/>'
                f'<mass value="{float(inertial.mass)!r}"/>',
                f'      <inertia ixx="{i[0]!r}" iyy="{i[1]!r}" izz="{i[2]!r}" ixy="{i[3]!r}" '
                f'ixz="{i[4]!r}" iyz="{i[5]!r}"/></inertial>',
            ]
        lines += [f"    {shape}" for shape in shapes]
        lines.append("  </link>")
    effort = config.dynamics.effort_limit if config.dynamics is not None else None
    for joint in config.joints:
        lines.append(f'  <joint name={quoteattr(joint.name)} type="{joint.type}">')
        lines.append(f"    <parent link={quoteattr(joint.parent)}/>")
        lines.append(f"    <child link={quoteattr(joint.child)}/>")
        lines.append(f'    <origin xyz="{_fmt(joint.origin_xyz)}" rpy="{_fmt(joint.origin_rpy)}"/>')
        if joint.is_moving:
            lines.append(f'    <axis xyz="{_fmt(joint.axis)}"/>')
            if joint.name in index:
                i = index[joint.name]
                low, high = limits.position[0, i].item(), limits.position[1, i].item()
                vel = limits.velocity[1, i].item()
                eff = float(effort[i]) if effort is not None else 1000.0
            else:  # locked or off the chain: a placeholder range around the held value
                value = config.lock_joints.get(joint.name, 0.0)
                low, high, vel, eff = min(value, -math.pi), max(value, math.pi), 1.0, 1000.0
            lines.append(
                f'    <limit lower="{low!r}" upper="{high!r}" velocity="{vel!r}" effort="{eff!r}"/>'
            )
        if joint.mimic is not None:
            lines.append(
                f"    <mimic joint={quoteattr(joint.mimic.joint)} "
                f'multiplier="{joint.mimic.multiplier!r}" offset="{joint.mimic.offset!r}"/>'
            )
        lines.append("  </joint>")
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def _symmetric(config: RobotConfig, kind: str) -> list[float]:
    value = getattr(config.joint_limits, kind)
    low, high = value[0].tolist(), value[1].tolist()
    for name, lo, hi in zip(config.joint_names, low, high, strict=True):
        if not math.isclose(-lo, hi, rel_tol=1e-9, abs_tol=1e-12):
            raise YamlReader(config.source).error(
                f"joint_limits.{kind}",
                f"joint '{name}' has limits [{lo}, {hi}]; cuRobo's files hold symmetric "
                f"{kind} limits only",
            )
    return high


def robot_to_curobo(
    config: RobotConfig, urdf_path: str, format_version: float = 1.0
) -> dict[str, Any]:
    """``config`` as a cuRobo robot file (``format_version`` 1.0: cuRobo 0.7's layout; 2.0:
    the newer one), whose tree is the URDF written by :func:`robot_urdf_text` at
    ``urdf_path``."""
    if format_version not in (1.0, 2.0):
        raise ValueError(f"format_version: expected 1.0 or 2.0, received {format_version!r}")
    locked = list(config.lock_joints)
    names = [*config.joint_names, *locked]
    retract = [*config.retract_config.tolist(), *config.lock_joints.values()]
    weights = [*config.cspace_weights.tolist(), *([1.0] * len(locked))]
    acceleration = _symmetric(config, "acceleration")
    jerk = _symmetric(config, "jerk")
    _symmetric(config, "velocity")
    cspace: dict[str, Any] = {
        "joint_names": names,
        ("retract_config" if format_version == 1.0 else "default_joint_position"): retract,
        "null_space_weight": weights,
        "cspace_distance_weight": weights,
        "max_acceleration": [*acceleration, *([max(acceleration)] * len(locked))],
        "max_jerk": [*jerk, *([max(jerk)] * len(locked))],
    }
    kin: dict[str, Any] = {}
    if format_version == 2.0:
        kin["format_version"] = 2.0
    kin["urdf_path"] = urdf_path
    kin["asset_root_path"] = ""
    kin["base_link"] = config.base_link
    if format_version == 1.0:
        kin["ee_link"] = config.ee_link
    else:
        kin["tool_frames"] = [config.ee_link]
    kin["lock_joints"] = dict(config.lock_joints) if locked else None
    collision = config.collision
    if collision is not None:
        written = collision.to_dict()
        kin["collision_link_names"] = written["collision_link_names"]
        kin["collision_spheres"] = written["collision_spheres"]
        kin["collision_sphere_buffer"] = written["collision_sphere_buffer"]
        kin["self_collision_ignore"] = written.get("self_collision_ignore", {})
        kin["self_collision_buffer"] = written.get("self_collision_buffer", {})
        if written.get("extra_collision_spheres"):
            kin["extra_collision_spheres"] = written["extra_collision_spheres"]
    kin["cspace"] = cspace
    return {"robot_cfg": {"kinematics": kin}}
