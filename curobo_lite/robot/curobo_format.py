"""cuRobo's robot files, read: ``robot_cfg: kinematics: {...}``.

Two layouts are read, both unchanged:

- cuRobo 0.7's robot configuration (format 1.0): ``kinematics`` holds ``urdf_path``,
  ``base_link``, ``ee_link``, the collision keys and ``cspace: {joint_names, retract_config,
  ...}``;
- cuRobo's newer layout (``format_version: 2.0``, in ``kinematics`` or beside it): the end
  effector is ``tool_frames[0]`` and the rest pose ``cspace.default_joint_position``.

:func:`curobo_to_robot_dict` turns either into this package's robot-file mapping (see
:mod:`curobo_lite.robot.config`), which :class:`~curobo_lite.robot.config.RobotConfig` then
validates as any robot file; :mod:`curobo_lite.robot.curobo_export` writes a
:class:`RobotConfig` back in cuRobo's layout, with a URDF of its tree. How each key maps is in
``docs/coming_from_curobo.md``; which keys are read, which ignored and where relative paths
point is :mod:`curobo_lite.robot.curobo_layout`'s.

Relative paths (``urdf_path``, ``asset_root_path``) resolve against, in order: an
``assets_path`` argument, the environment variable ``CUROBO_LITE_ASSETS``, the robot file's own
folder, the bundled robot folders (``configs/robot``). A sphere file (``collision_spheres:
FILE``) resolves against the robot file's folder. Keys of other tools (USD, Isaac Sim, the
neural dynamics model) are reported once per file as a :class:`CuroboKeysIgnored` warning;
any other unknown key is a :class:`~curobo_lite.types.errors.ConfigError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from curobo_lite.config_files import YamlReader, read_config_file
from curobo_lite.robot.curobo_layout import (
    CSPACE_KEYS,
    EXTRA_JOINT_TYPES,
    EXTRA_LINK_KEYS,
    IGNORED_EXTRA_LINK_KEYS,
    IGNORED_KINEMATICS_KEYS,
    IGNORED_ROBOT_CFG_KEYS,
    KINEMATICS_KEYS,
    asset_roots,
    report_ignored,
    resolve_asset,
)
from curobo_lite.robot.dynamics_config import RobotDynamicsConfig
from curobo_lite.robot.geometry import matrix_to_rpy_np, quat_to_matrix_np
from curobo_lite.robot.joints import (
    JointSpec,
    joint_transform_np,
    tree_links,
)
from curobo_lite.types.errors import ConfigError


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
    report_ignored(
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
    report_ignored(
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
            report_ignored(
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
            report_ignored(
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
            report_ignored(source, ["<urdf inertials>"], f"left out: {err}")
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
    report_ignored(
        reader.source,
        sorted(set(unknown)),
        "self-collision rules name links that are not in the robot and are skipped (as cuRobo "
        "does)",
    )
    return out
