"""What a cuRobo robot file may hold and where its relative paths point.

The keys of cuRobo's ``robot_cfg: kinematics: {...}`` that this package reads
(:data:`KINEMATICS_KEYS`, :data:`CSPACE_KEYS`, :data:`EXTRA_LINK_KEYS`), those of other tools it
accepts and reports once as a :class:`CuroboKeysIgnored` warning (:func:`report_ignored`), and
the folders a relative asset path resolves against (:func:`asset_roots`, :func:`resolve_asset`):
an ``assets_path`` argument, ``$CUROBO_LITE_ASSETS``, the robot file's folder, the bundled robot
folders. :mod:`curobo_lite.robot.curobo_format` reads such files with them.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from curobo_lite.config_files import YamlReader, config_dirs

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


def report_ignored(source: str, keys: Sequence[str], why: str) -> None:
    """Warn (:class:`CuroboKeysIgnored`) that ``keys`` of ``source`` change nothing, once per
    file and key set."""
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
