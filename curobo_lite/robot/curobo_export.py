"""A :class:`~curobo_lite.robot.config.RobotConfig` written in cuRobo's layout.

:func:`robot_urdf_text` writes a URDF of the robot's tree (links, joints, limits, masses, the
collision geometry's elements) and :func:`robot_to_curobo` the ``robot_cfg: kinematics:``
mapping around it (cuRobo 0.7's layout or the newer ``format_version: 2.0``), which
:mod:`curobo_lite.robot.curobo_format` reads back.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from curobo_lite.config_files import YamlReader
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.joints import tree_links


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
