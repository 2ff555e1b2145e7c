"""World model: obstacles in the robot base frame, and world files in cuRobo's YAML layout.

A world file (``configs/world/<name>.yml``) maps each obstacle kind to ``{name: fields}``::

    cuboid:   {table: {dims: [x, y, z], pose: [x, y, z, qw, qx, qy, qz]}}
    sphere:   {ball: {radius: r, pose: [...]}}          # or position: [x, y, z] instead of pose
    capsule:  {rod: {radius: r, base: [x, y, z], tip: [x, y, z], pose: [...]}}
    cylinder: {can: {radius: r, height: h, pose: [...]}}
    mesh:     {part: {file_path: part.obj, pose: [...], scale: [sx, sy, sz]}}
              # or inline: {vertices: [[x, y, z], ...], faces: [[i, j, k], ...]}

Every obstacle also takes ``enabled`` (default ``true``; a disabled obstacle is kept in the
world but ignored by collision queries). Poses are ``[x, y, z, qw, qx, qy, qz]`` (metres, unit
quaternion ``wxyz``) of the obstacle frame in the robot base frame and default to identity.
cuRobo's appearance keys (``color``, ``texture``, ``texture_id``, ``material``,
``vertex_colors``, ``vertex_normals``, ``face_colors``) are accepted and ignored; any other
unknown kind or key is an error. Relative mesh paths are resolved against the world file's
folder.

Every problem is a ``ValueError`` (``TypeError`` for a wrong Python type) that names the source
and the key path, e.g. ``world.yml: 'cuboid.table.dims[1]': expected a positive number,
received -0.1``. Obstacles built in Python are validated the same way (source ``<Cuboid>``).
The obstacle classes live in :mod:`curobo_lite.geom.obstacles` (importable from here too);
this module groups them into a :class:`WorldConfig` and reads and writes world files.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from curobo_lite.config_files import (
    FlowListDumper,
    YamlReader,
    atomic_write_text,
    bundled_file_lookups,
    read_config_file,
)
from curobo_lite.geom.obstacles import (
    IDENTITY_POSE,
    IGNORED_KEYS,
    OBSTACLE_KINDS,
    OBSTACLE_TYPES,
    Capsule,
    Cuboid,
    Cylinder,
    Mesh,
    Obstacle,
    Sphere,
    obstacle_source,
    obstacle_source_name,
)
from curobo_lite.geom.voxel_world import VoxelWorld
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import ConfigError, InputTypeError, InputValueError

# the obstacle names stay importable from here, beside the world that groups them
__all__ = [
    "IDENTITY_POSE",
    "OBSTACLE_KINDS",
    "Capsule",
    "Cuboid",
    "Cylinder",
    "Mesh",
    "Obstacle",
    "Sphere",
    "WorldConfig",
    "available_worlds",
    "resolve_world_file",
    "world_config_dirs",
]


@dataclass
class WorldConfig:
    """All obstacles of a scene, grouped by kind (each a list, in file order).

    Names are unique across kinds. Build from a world file with :meth:`load` /
    :meth:`from_dict`, or from obstacle objects directly.
    """

    cuboid: list[Cuboid] = field(default_factory=list)
    sphere: list[Sphere] = field(default_factory=list)
    capsule: list[Capsule] = field(default_factory=list)
    cylinder: list[Cylinder] = field(default_factory=list)
    mesh: list[Mesh] = field(default_factory=list)
    #: voxel signed-distance grids (shared by copies: a live map's new frames reach them all);
    #: not written by :meth:`to_dict` / :meth:`save`
    voxel: list[VoxelWorld] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.voxel = list(self.voxel or [])
        seen: dict[str, str] = {}
        for i, grid in enumerate(self.voxel):
            if not isinstance(grid, VoxelWorld) or grid.name in seen:
                raise InputTypeError(
                    f"WorldConfig.voxel[{i}]: expected a VoxelWorld with a new name, "
                    f"received {excerpt(grid)}"
                )
            seen[grid.name] = "voxel"
        for kind, cls in OBSTACLE_TYPES.items():
            items = getattr(self, kind)
            if items is None:
                items = []
            if not isinstance(items, list | tuple):
                raise InputTypeError(
                    f"WorldConfig.{kind}: expected a list of {cls.__name__}, "
                    f"received {type(items).__name__}"
                )
            items = list(items)
            for i, obstacle in enumerate(items):
                if type(obstacle) is not cls:
                    raise InputTypeError(
                        f"WorldConfig.{kind}[{i}]: expected {cls.__name__}, "
                        f"received {type(obstacle).__name__}"
                    )
                if obstacle.name in seen:
                    raise ConfigError(
                        f"{obstacle_source_name() or '<WorldConfig>'}: '{kind}.{obstacle.name}': "
                        f"duplicate obstacle name (also a {seen[obstacle.name]})"
                    )
                seen[obstacle.name] = kind
            setattr(self, kind, items)

    # construction ------------------------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        source: str = "<dict>",
        base_dir: str | os.PathLike | None = None,
    ) -> WorldConfig:
        """A world from the world-file mapping (see the module docs).

        Args:
            data: ``{kind: {name: {field: value}}}``; ``None`` is the empty world.
            source: named in error messages (the file path for loaded files).
            base_dir: folder that relative mesh paths are resolved against.
        """
        reader = YamlReader(source)
        if data is None:
            return cls()
        data = reader.mapping(data, "world", (), OBSTACLE_KINDS)
        with obstacle_source(source, base_dir):
            groups: dict[str, list[Obstacle]] = {}
            for kind, section in data.items():
                groups[kind] = []
                if section is None:
                    continue
                allowed = tuple(section) if isinstance(section, Mapping) else ()
                section = reader.mapping(section, kind, (), allowed)
                for name in section:
                    if not isinstance(name, str) or not name:
                        raise reader.error(
                            f"{kind}.{name}",
                            f"expected an obstacle name string, received {excerpt(name)}",
                        )
                obstacle_cls = OBSTACLE_TYPES[kind]
                required, optional = obstacle_cls.yaml_keys
                for name, raw in section.items():
                    key = f"{kind}.{name}"
                    raw = reader.mapping(
                        raw, key, required, (*optional, "pose", "enabled", *IGNORED_KEYS)
                    )
                    kwargs = {k: v for k, v in raw.items() if k not in IGNORED_KEYS}
                    groups[kind].append(obstacle_cls(name=name, **kwargs))
            return cls(**groups)

    @classmethod
    def from_point_cloud(cls, points: Any, voxel_size: float = 0.01, **kwargs: Any) -> WorldConfig:
        """A world of one :class:`VoxelWorld` around ``points [N, 3]`` (base frame, tensor or
        array); ``kwargs`` go to :meth:`VoxelWorld.from_points` (``padding``, ``frame_pose``,
        ``name``, ``decay``, ...). Add primitives and meshes to it like to any world."""
        return cls(voxel=[VoxelWorld.from_points(points, voxel_size, **kwargs)])

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> WorldConfig:
        """Load and validate a world file (relative mesh paths: against its folder)."""
        path = Path(path)
        data = read_config_file(path, "world")
        return cls.from_dict(data, source=str(path), base_dir=path.parent)

    @classmethod
    def load(cls, name_or_path: str | os.PathLike | Mapping | WorldConfig) -> WorldConfig:
        """A bundled world by name (``"table"``), a world file by path, a mapping in the
        world-file layout (:meth:`from_dict`), or a ``WorldConfig`` (returned as is)."""
        if isinstance(name_or_path, WorldConfig):
            return name_or_path
        if isinstance(name_or_path, VoxelWorld):
            return cls(voxel=[name_or_path])
        if isinstance(name_or_path, Mapping):
            return cls.from_dict(name_or_path)
        if not isinstance(name_or_path, str | os.PathLike):
            raise InputTypeError(
                f"world: expected a WorldConfig, a mapping, a world file or a bundled name, "
                f"received {type(name_or_path).__name__}"
            )
        return cls.from_yaml(resolve_world_file(name_or_path))

    # export ------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The world-file mapping; kinds without obstacles are left out."""
        out: dict[str, Any] = {}
        for kind in OBSTACLE_KINDS:
            items = getattr(self, kind)
            if items:
                out[kind] = {o.name: o.to_dict() for o in items}
        return out

    def save(self, path: str | os.PathLike) -> None:
        """Write a world file (mesh paths as stored, i.e. resolved)."""
        text = yaml.dump(
            self.to_dict(), Dumper=FlowListDumper, sort_keys=False, default_flow_style=False
        )
        atomic_write_text(path, "# World written by curobo_lite\n" + text)

    # access and edits --------------------------------------------------------------------------
    @property
    def objects(self) -> list[Obstacle]:
        """Every obstacle, kind by kind in :data:`OBSTACLE_KINDS` order."""
        return [o for kind in OBSTACLE_KINDS for o in getattr(self, kind)]

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objects]

    def __iter__(self) -> Iterator[Obstacle]:
        return iter(self.objects)

    def __len__(self) -> int:
        return sum(len(getattr(self, kind)) for kind in OBSTACLE_KINDS)

    def __contains__(self, name: object) -> bool:
        return any(o.name == name for o in self.objects)

    def get(self, name: str) -> Obstacle:
        """The obstacle called ``name`` (``ValueError`` if there is none)."""
        for obstacle in self.objects:
            if obstacle.name == name:
                return obstacle
        raise InputValueError(f"name: no obstacle '{name}' in the world; obstacles: {self.names}")

    def add(self, obstacle: Obstacle) -> None:
        """Append an obstacle to its kind's list (its name must be new)."""
        if type(obstacle) not in OBSTACLE_TYPES.values():
            raise InputTypeError(
                f"obstacle: expected one of {[c.__name__ for c in OBSTACLE_TYPES.values()]}, "
                f"received {type(obstacle).__name__}"
            )
        if obstacle.name in self:
            raise InputValueError(f"obstacle.name: an obstacle '{obstacle.name}' already exists")
        getattr(self, obstacle.kind).append(obstacle)

    def remove(self, name: str) -> Obstacle:
        """Remove and return the obstacle called ``name``."""
        obstacle = self.get(name)
        getattr(self, obstacle.kind).remove(obstacle)
        return obstacle

    def copy(self) -> WorldConfig:
        """A deep copy (obstacles included; voxel grids shared)."""
        return copy.deepcopy(self, {id(grid): grid for grid in self.voxel})

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={len(getattr(self, k))}" for k in OBSTACLE_KINDS)
        counts += f", voxel={len(self.voxel)}" if self.voxel else ""
        return f"WorldConfig({counts})"


# ------------------------------------------------------------------------------------------
# bundled world files
# ------------------------------------------------------------------------------------------
world_config_dirs, available_worlds, resolve_world_file = bundled_file_lookups(
    "world", "table", __name__
)
