"""Fit collision spheres to a robot's link geometry (URDF meshes and primitives).

:func:`fit_robot_spheres` maps URDF link frames to the frames of a robot file (same-named links
and joints; geometry on URDF links that the robot file lacks is moved to the link they are
fixed to), checks that the two describe the same kinematics, and covers each link's geometry
with spheres. The pieces live in their own modules and are re-exported here:

- :mod:`~curobo_lite.robot.link_geometry`: a URDF's collision geometry as meshes;
- :mod:`~curobo_lite.robot.sphere_cover`: the fit of one solid (tight, deterministic, covering
  its whole surface) and its quality numbers;
- :mod:`~curobo_lite.robot.self_collision_ignore`: the link pairs to skip in self-collision
  checks;
- :mod:`~curobo_lite.robot.sphere_yaml`: the robot-file blocks and their in-place replacement.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.joints import JointSpec, link_poses
from curobo_lite.robot.link_geometry import LinkGeometry, load_urdf_geometry, require_trimesh
from curobo_lite.robot.self_collision_ignore import suggest_self_collision_ignore
from curobo_lite.robot.sphere_cover import (
    FitResult,
    LinkFit,
    coverage_gap,
    fit_spheres,
    fit_spheres_tight,
    protrusion,
    union_volume,
    winding_number,
)
from curobo_lite.robot.sphere_yaml import (
    DECIMALS,
    GENERATOR,
    ignore_yaml,
    names_yaml,
    replace_top_level_block,
    spheres_yaml,
)
from curobo_lite.types.errors import InputValueError

__all__ = [
    "DECIMALS",
    "GENERATOR",
    "FitResult",
    "LinkFit",
    "LinkGeometry",
    "coverage_gap",
    "fit_robot_spheres",
    "fit_spheres",
    "fit_spheres_tight",
    "protrusion",
    "ignore_yaml",
    "load_urdf_geometry",
    "names_yaml",
    "replace_top_level_block",
    "spheres_yaml",
    "suggest_self_collision_ignore",
    "union_volume",
    "winding_number",
]


def _fixed_groups(joints: Sequence[JointSpec]) -> dict[str, set[str]]:
    """``{link: links joined to it by fixed joints}`` (itself included)."""
    groups: dict[str, set[str]] = {}
    for joint in joints:
        for link in (joint.parent, joint.child):
            groups.setdefault(link, {link})
    for joint in joints:
        if joint.type == "fixed":
            merged = groups[joint.parent] | groups[joint.child]
            for link in merged:
                groups[link] = merged
    return groups


def fit_robot_spheres(
    urdf_path: str | os.PathLike,
    config: RobotConfig | None = None,
    spheres_per_link: int | None = None,
    tolerance: float | None = None,
    seed: int = 0,
    links: Sequence[str] | None = None,
    check_configurations: int = 3,
    link_budgets: dict[str, int] | None = None,
    outside: float | None = None,
    inside: float = 0.007,
    link_tight: dict[str, tuple[float, float]] | None = None,
) -> list[LinkFit]:
    """Fit spheres to every link with collision geometry in a URDF.

    Args:
        urdf_path: the URDF holding the collision geometry.
        config: the robot file the spheres are for. URDF links are matched to its links by
            name; geometry is moved into the robot file's link frames (which may differ from
            the URDF's, e.g. other joint-frame conventions) by comparing the two trees at the
            zero configuration (locked joints at their ``lock_joints`` values), and the
            match is checked at ``check_configurations`` random configurations of the joints
            both share. Geometry on a URDF link that the robot file lacks goes to the link of
            the robot file it is fixed to. ``None``: spheres in the URDF link frames.
        spheres_per_link: sphere budget per link (split over its pieces by surface area).
        tolerance: cover tolerance in metres (see :func:`fit_spheres`), instead of a budget.
        seed: random seed.
        links: only these links (robot-file names); default every link with geometry.
        check_configurations: random configurations at which the frame match is verified.
        link_budgets: ``{link: N}`` sphere budgets that override ``spheres_per_link`` /
            ``tolerance`` for those links.
        outside: the tight fit (:func:`fit_spheres_tight`) for every link: spheres reach at
            most ``outside`` metres past the geometry and cover it below depth ``inside``
            (a link's pieces are merged into one solid first). Links fixed to the base get the
            mounting plane ``z = 0`` of the base frame as a floor no sphere crosses.
        inside: the tight fit's cover depth (metres).
        link_tight: ``{link: (outside, inside)}``: the tight fit for those links (e.g. tighter
            on the hand and fingers, which must fit around grasped objects).

    Returns:
        One :class:`LinkFit` per link, in the robot file's tree order (URDF order without one).
    """
    from curobo_lite.robot.urdf import read_urdf_joints

    geometry = load_urdf_geometry(urdf_path)
    if not geometry:
        raise InputValueError(f"{urdf_path}: no link has collision geometry")
    urdf_joints = read_urdf_joints(urdf_path)
    pieces: dict[str, list[tuple[Any, str]]] = {}
    if config is None:
        for link, items in geometry.items():
            pieces[link] = [(g.mesh, f"{g.description} on URDF link {link}") for g in items]
        order = list(geometry)
    else:
        urdf_links = {j.parent for j in urdf_joints} | {j.child for j in urdf_joints}
        if config.base_link not in urdf_links:
            raise InputValueError(
                f"{urdf_path}: robot base_link '{config.base_link}' is not a link of the URDF, "
                "so its frames cannot be matched to the robot file's"
            )
        robot_links = {j.parent for j in config.joints} | {j.child for j in config.joints}
        groups = _fixed_groups(urdf_joints)
        lock = dict(config.lock_joints)
        urdf_pose = link_poses(urdf_joints, config.base_link, lock)
        robot_pose = link_poses(config.joints, config.base_link, lock)
        shared = [n for n in config.joint_names if n in {j.name for j in urdf_joints}]
        rng = np.random.default_rng(seed)
        low, high = config.joint_limits.position.double().cpu().numpy()
        checks = []
        for _ in range(check_configurations):
            q = low + rng.random(len(low)) * (high - low)
            values = {**lock, **{n: float(v) for n, v in zip(config.joint_names, q)}}
            values = {k: v for k, v in values.items() if k in shared or k in lock}
            checks.append(
                (
                    link_poses(urdf_joints, config.base_link, values),
                    link_poses(config.joints, config.base_link, values),
                )
            )
        order = [config.base_link] + [j.child for j in config.joints]
        for urdf_link, items in geometry.items():
            if urdf_link in robot_links:
                target = urdf_link
            else:
                matches = [
                    link
                    for link in order
                    if link in groups.get(urdf_link, ()) and _attached(config, link)
                ]
                if not matches:
                    continue
                target = matches[0]
            if not _attached(config, target) or urdf_link not in urdf_pose:
                continue
            offset = np.linalg.inv(robot_pose[target]) @ urdf_pose[urdf_link]
            for urdf_at, robot_at in checks:
                moved = np.linalg.inv(robot_at[target]) @ urdf_at[urdf_link]
                if np.abs(moved - offset).max() > 1e-6:
                    raise InputValueError(
                        f"{urdf_path}: link '{urdf_link}' moves relative to the robot file's "
                        f"link '{target}' when the joints move; the URDF and the robot file "
                        "do not describe the same kinematics"
                    )
            note = "" if target == urdf_link else f" (fixed to {target})"
            for g in items:
                mesh = g.mesh.copy()
                mesh.apply_transform(offset)
                pieces.setdefault(target, []).append(
                    (mesh, f"{g.description} on URDF link {urdf_link}{note}")
                )
    unknown = [link for link in (link_budgets or {}) if link not in pieces]
    if unknown:
        raise InputValueError(
            f"link_budgets: no collision geometry for {unknown}; links with geometry: "
            f"{sorted(pieces)}"
        )
    if links is not None:
        missing = [link for link in links if link not in pieces]
        if missing:
            raise InputValueError(
                f"links: no collision geometry for {missing}; links with geometry: {sorted(pieces)}"
            )
        pieces = {link: pieces[link] for link in links}
    results = []
    for link in dict.fromkeys(order):
        if link not in pieces:
            continue
        items = pieces[link]
        areas = np.array([mesh.area for mesh, _ in items])
        budgets: list[int | None] = [None] * len(items)
        link_budget = (link_budgets or {}).get(link, spheres_per_link)
        if link_budget is not None:
            share = np.maximum(1, np.floor(link_budget * areas / areas.sum())).astype(int)
            budgets = [int(b) for b in share]
        tight = (link_tight or {}).get(link)
        if tight is None and outside is not None and link not in (link_budgets or {}):
            tight = (outside, inside)
        if tight is not None:
            solids = [_merge_solids([mesh for mesh, _ in items])]
            floor = _base_floor(config, link)
            fitted = [
                fit_spheres_tight(
                    solids[0], outside=tight[0], inside=tight[1], seed=seed, floor_z=floor
                ).spheres
            ]
        else:
            solids = [mesh for mesh, _ in items]
            fitted = [
                fit_spheres(
                    mesh, num_spheres=budget, tolerance=None if budget else tolerance, seed=seed
                ).spheres
                for mesh, budget in zip(solids, budgets)
            ]
        volume = sum(abs(float(mesh.volume)) for mesh in solids)
        spheres = _round_spheres(np.concatenate(fitted))
        gaps = [coverage_gap(mesh, spheres) for mesh, _ in items]
        results.append(
            LinkFit(
                link=link,
                spheres=spheres,
                sources=[text for _, text in items],
                coverage_gap=max(gaps),
                volume_ratio=union_volume(spheres) / volume if volume > 0 else float("nan"),
                meshes=[mesh for mesh, _ in items],
            )
        )
    return results


def _merge_solids(meshes: list) -> Any:
    """One solid of a link's pieces (their boolean union), so the tight fit shares spheres
    between overlapping pieces; the pieces concatenated when the union fails."""
    if len(meshes) == 1:
        return meshes[0]
    trimesh = require_trimesh()
    try:
        merged = trimesh.boolean.union(meshes)
        if merged.is_watertight and merged.volume > 0:
            return merged
    except (ValueError, ImportError, RuntimeError):
        pass
    return trimesh.util.concatenate(meshes)


def _base_floor(config: RobotConfig | None, link: str) -> float | None:
    """``z`` of the base's mounting plane in ``link``'s frame when no active joint moves
    ``link`` (it is the base or rigidly fixed to it) and the link frame is not tilted; else
    ``None``."""
    if config is None:
        return None
    try:
        anchor, attach = config.rigid_attachment(link)
    except ValueError:
        return None
    if anchor != config.base_link or not np.allclose(attach[:3, :3], np.eye(3), atol=1e-9):
        return None
    return float(-attach[2, 3])


def _attached(config: RobotConfig, link: str) -> bool:
    try:
        config.rigid_attachment(link)
    except ValueError:
        return False
    return True


def _round_spheres(spheres: np.ndarray) -> np.ndarray:
    """Round centres to ``DECIMALS`` and grow radii by the rounding error, rounding up."""
    scale = 10.0**DECIMALS
    centres = np.round(spheres[:, :3] * scale) / scale
    shift = np.linalg.norm(centres - spheres[:, :3], axis=1)
    radii = np.ceil((spheres[:, 3] + shift) * scale) / scale
    return np.concatenate((centres, radii[:, None]), axis=1)
