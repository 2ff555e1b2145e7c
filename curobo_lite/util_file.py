"""cuRobo's ``curobo.util_file`` names for finding and reading configuration files.

``get_robot_configs_path()`` and ``get_world_configs_path()`` are the bundled folders
(``configs/robot``, ``configs/world``); ``get_assets_path()`` is ``$CUROBO_LITE_ASSETS`` when
set, else the bundled robot folder (where its URDF and meshes live). A cuRobo robot file's
relative ``urdf_path`` is tried against an ``assets_path`` argument, ``$CUROBO_LITE_ASSETS``,
the robot file's folder and the bundled robot folder, in that order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from curobo_lite.config_files import config_dirs, read_config_file
from curobo_lite.robot.curobo_layout import ENV_ASSETS
from curobo_lite.types.errors import InputTypeError

__all__ = [
    "get_assets_path",
    "get_robot_configs_path",
    "get_world_configs_path",
    "join_path",
    "load_yaml",
]


def _bundled(kind: str) -> str:
    dirs = config_dirs(kind)
    return str(next((d for d in dirs if d.is_dir()), dirs[0]))


def get_robot_configs_path() -> str:
    """The bundled robot-file folder (``configs/robot``)."""
    return _bundled("robot")


def get_world_configs_path() -> str:
    """The bundled world-file folder (``configs/world``)."""
    return _bundled("world")


def get_assets_path() -> str:
    """``$CUROBO_LITE_ASSETS`` when set, else the bundled robot folder."""
    return os.environ.get(ENV_ASSETS) or get_robot_configs_path()


def join_path(path1: str | os.PathLike, path2: str | os.PathLike) -> str:
    """``path2`` when it is absolute, else ``path1/path2`` (cuRobo's rule)."""
    if Path(path2).is_absolute():
        return os.fspath(path2)
    return os.path.join(os.fspath(path1), os.fspath(path2))


def load_yaml(file_path: str | os.PathLike | Mapping) -> Any:
    """The parsed YAML file (a mapping is returned as is); a missing file or invalid YAML is a
    :class:`~curobo_lite.types.errors.ConfigError` naming the path."""
    if isinstance(file_path, Mapping):
        return file_path
    if not isinstance(file_path, str | os.PathLike):
        raise InputTypeError(
            f"file_path: expected a path or a mapping, received {type(file_path).__name__}"
        )
    return read_config_file(Path(file_path), "YAML")
