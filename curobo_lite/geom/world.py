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
"""

from __future__ import annotations

import contextvars
import copy
import math
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import yaml

from curobo_lite.config_files import (
    FlowListDumper,
    YamlReader,
    atomic_write_text,
    bundled_file_lookups,
    read_config_file,
)
from curobo_lite.geom.voxel_world import VoxelWorld
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import ConfigError, InputTypeError, InputValueError

IDENTITY_POSE = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
#: a quaternion whose norm differs from 1 by more than this is refused (smaller errors are
#: normalised away: hand-written YAML rounds quaternions to a few digits)
QUATERNION_NORM_TOLERANCE = 1e-3
#: cuRobo keys that only affect rendering; accepted in world files and dropped
IGNORED_KEYS = (
    "color",
    "texture",
    "texture_id",
    "material",
    "vertex_colors",
    "vertex_normals",
    "face_colors",
)
OBSTACLE_KINDS = ("cuboid", "sphere", "capsule", "cylinder", "mesh")

# Where the obstacle being validated comes from (a file name inside ``WorldConfig.from_dict``),
# so that the checks in ``__post_init__`` can name it without a constructor argument.
_SOURCE: contextvars.ContextVar[str | None] = contextvars.ContextVar("world_source", default=None)
_BASE_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "world_base_dir", default=None
)


def _as_list(value: Any) -> Any:
    """Numpy arrays and tensors to (nested) lists so the YAML checks apply to them too."""
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str):
        return value.tolist()
    return value


#: lengths and coordinates (m) beyond this are refused: float32 (the collision tables) spaces
#: its values by more than a millimetre past 10 km, and 1e300 would overflow to inf
MAX_COORDINATE = 1.0e4


def _bounded(reader: YamlReader, values: list[float], key: str) -> list[float]:
    for i, v in enumerate(values):
        if abs(v) > MAX_COORDINATE:
            raise reader.error(
                f"{key}[{i}]",
                f"expected a magnitude <= {MAX_COORDINATE:g} m, received {excerpt(v)}",
            )
    return values


def _coordinates(reader: YamlReader, value: Any, key: str) -> list[float]:
    """A checked ``[3]`` point or extent in metres."""
    return _bounded(reader, reader.vector(_as_list(value), key, 3, max_magnitude=None), key)


def _positive(reader: YamlReader, value: Any, key: str) -> float:
    number = reader.number(value, key, max_magnitude=None)
    if number <= 0.0:
        raise reader.error(key, f"expected a positive number, received {excerpt(value)}")
    if number > MAX_COORDINATE:
        raise reader.error(key, f"expected at most {MAX_COORDINATE:g} m, received {excerpt(value)}")
    return number


def _check_pose(reader: YamlReader, value: Any, key: str) -> list[float]:
    """A validated ``[x, y, z, qw, qx, qy, qz]`` with the quaternion normalised."""
    pose = reader.vector(_as_list(value), key, 7, max_magnitude=None)
    _bounded(reader, pose[:3], key)
    norm = math.sqrt(sum(q * q for q in pose[3:]))
    if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
        raise reader.error(
            f"{key}[3:7]",
            f"expected a unit quaternion (qw, qx, qy, qz) with norm within "
            f"{QUATERNION_NORM_TOLERANCE} of 1, received norm {norm:.6g}",
        )
    if abs(norm - 1.0) <= 4.0 * sys.float_info.epsilon:
        return pose  # already unit: keep the exact values so files round-trip bit for bit
    return pose[:3] + [q / norm for q in pose[3:]]


@dataclass
class Obstacle:
    """Common fields of every obstacle.

    Attributes:
        name: unique within a world.
        pose: ``[7]`` obstacle frame in the robot base frame: ``x, y, z, qw, qx, qy, qz``.
        enabled: ``False`` keeps the obstacle in the world but out of collision queries.
    """

    kind: ClassVar[str] = ""
    #: YAML keys beyond ``pose`` / ``enabled``: (required, optional)
    yaml_keys: ClassVar[tuple[tuple[str, ...], tuple[str, ...]]] = ((), ())

    name: str
    _: KW_ONLY
    pose: list[float] = field(default_factory=lambda: list(IDENTITY_POSE))
    enabled: bool = True

    def __post_init__(self) -> None:
        if type(self) not in OBSTACLE_TYPES.values():
            raise InputTypeError(
                f"{type(self).__name__}: use one of "
                f"{[c.__name__ for c in OBSTACLE_TYPES.values()]} (an obstacle needs a shape)"
            )
        source = _SOURCE.get() or f"<{type(self).__name__}>"
        reader = YamlReader(source)
        if not isinstance(self.name, str) or not self.name:
            raise reader.error(
                f"{self.kind}.name", f"expected a non-empty string, received {excerpt(self.name)}"
            )
        key = f"{self.kind}.{self.name}"
        self.pose = _check_pose(reader, self.pose, f"{key}.pose")
        if not isinstance(self.enabled, bool):
            raise reader.error(
                f"{key}.enabled", f"expected true/false, received {excerpt(self.enabled)}"
            )
        self._check(reader, key)

    def _check(self, reader: YamlReader, key: str) -> None:
        """Validate and normalise the kind-specific fields (raise ``reader.error``)."""

    def _fields_to_dict(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        """The ``{field: value}`` entry of this obstacle in a world file (without its name)."""
        out = self._fields_to_dict()
        out["pose"] = list(self.pose)
        if not self.enabled:
            out["enabled"] = False
        return out


@dataclass
class Cuboid(Obstacle):
    """A box centred at its pose. ``dims``: ``[3]`` full side lengths along local x, y, z."""

    kind: ClassVar[str] = "cuboid"
    yaml_keys: ClassVar = (("dims",), ())
    dims: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])

    def _check(self, reader: YamlReader, key: str) -> None:
        dims = reader.vector(_as_list(self.dims), f"{key}.dims", 3, max_magnitude=None)
        self.dims = [_positive(reader, v, f"{key}.dims[{i}]") for i, v in enumerate(dims)]

    def _fields_to_dict(self) -> dict[str, Any]:
        return {"dims": list(self.dims)}

    def local_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        half = 0.5 * np.asarray(self.dims)
        return -half, half


@dataclass
class Sphere(Obstacle):
    """A ball of ``radius`` centred at the pose's position.

    cuRobo's ``position: [x, y, z]`` is accepted instead of (or agreeing with) ``pose``; it is
    folded into ``pose`` and reset to ``None``.
    """

    kind: ClassVar[str] = "sphere"
    yaml_keys: ClassVar = (("radius",), ("position",))
    radius: float = 0.1
    position: list[float] | None = None

    def __post_init__(self) -> None:
        if self.position is not None:
            reader = YamlReader(_SOURCE.get() or "<Sphere>")
            key = f"sphere.{self.name}.position"
            position = _coordinates(reader, self.position, key)
            pose = _check_pose(reader, self.pose, f"sphere.{self.name}.pose")
            if pose[:3] != [0.0, 0.0, 0.0] and pose[:3] != position:
                raise reader.error(
                    key,
                    f"conflicts with pose {pose[:3]}: give the centre once, received {position}",
                )
            self.pose = position + pose[3:]
            self.position = None
        super().__post_init__()

    def _check(self, reader: YamlReader, key: str) -> None:
        self.radius = _positive(reader, self.radius, f"{key}.radius")

    def _fields_to_dict(self) -> dict[str, Any]:
        return {"radius": self.radius}

    def local_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        r = np.full(3, self.radius)
        return -r, r


@dataclass
class Capsule(Obstacle):
    """All points within ``radius`` of the segment ``base``-``tip`` (obstacle frame, ``[3]``)."""

    kind: ClassVar[str] = "capsule"
    yaml_keys: ClassVar = (("radius", "base", "tip"), ())
    radius: float = 0.05
    base: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    tip: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.1])

    def _check(self, reader: YamlReader, key: str) -> None:
        self.radius = _positive(reader, self.radius, f"{key}.radius")
        self.base = _coordinates(reader, self.base, f"{key}.base")
        self.tip = _coordinates(reader, self.tip, f"{key}.tip")

    def _fields_to_dict(self) -> dict[str, Any]:
        return {"radius": self.radius, "base": list(self.base), "tip": list(self.tip)}

    def local_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        ends = np.asarray([self.base, self.tip])
        return ends.min(0) - self.radius, ends.max(0) + self.radius


@dataclass
class Cylinder(Obstacle):
    """A solid cylinder along local z, centred at the pose: ``radius``, full ``height``."""

    kind: ClassVar[str] = "cylinder"
    yaml_keys: ClassVar = (("radius", "height"), ())
    radius: float = 0.05
    height: float = 0.1

    def _check(self, reader: YamlReader, key: str) -> None:
        self.radius = _positive(reader, self.radius, f"{key}.radius")
        self.height = _positive(reader, self.height, f"{key}.height")

    def _fields_to_dict(self) -> dict[str, Any]:
        return {"radius": self.radius, "height": self.height}

    def local_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        half = np.asarray([self.radius, self.radius, 0.5 * self.height])
        return -half, half


@dataclass
class Mesh(Obstacle):
    """A triangle mesh: a file read with trimesh, or inline ``vertices`` / ``faces``.

    Attributes:
        file_path: mesh file; a relative path is resolved against the world file's folder
            (against the working directory for obstacles built in Python) and stored resolved.
        vertices: ``[V, 3]`` inline vertices (obstacle frame, before ``scale``).
        faces: ``[F, 3]`` vertex indices of inline triangles, counter-clockwise seen from
            outside (signed distances assume outward winding on closed meshes).
        scale: ``[3]`` per-axis scale applied to the vertices (before ``pose``).
    """

    kind: ClassVar[str] = "mesh"
    yaml_keys: ClassVar = ((), ("file_path", "vertices", "faces", "scale"))
    file_path: str | None = None
    vertices: list[list[float]] | None = None
    faces: list[list[int]] | None = None
    scale: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])

    def _check(self, reader: YamlReader, key: str) -> None:
        scale = reader.vector(_as_list(self.scale), f"{key}.scale", 3)
        self.scale = [_positive(reader, v, f"{key}.scale[{i}]") for i, v in enumerate(scale)]
        inline = self.vertices is not None or self.faces is not None
        if (self.file_path is None) == (not inline):
            raise reader.error(
                key, "expected either file_path or vertices and faces (exactly one of the two)"
            )
        if self.file_path is not None:
            if not isinstance(self.file_path, str | os.PathLike) or not os.fspath(self.file_path):
                raise reader.error(
                    f"{key}.file_path",
                    f"expected a path string, received {excerpt(self.file_path)}",
                )
            path = Path(self.file_path)
            base = _BASE_DIR.get()
            if not path.is_absolute() and base is not None:
                path = base / path
            if not path.is_file():
                raise reader.error(f"{key}.file_path", f"mesh file '{path}' does not exist")
            self.file_path = str(path.absolute())
            return
        if self.vertices is None or self.faces is None:
            missing = "faces" if self.faces is None else "vertices"
            raise reader.error(f"{key}.{missing}", "inline meshes need both vertices and faces")
        self.vertices = _check_array(reader, self.vertices, f"{key}.vertices", float)
        self.faces = _check_array(reader, self.faces, f"{key}.faces", int)
        if len(self.faces) == 0:
            raise reader.error(f"{key}.faces", "expected at least one triangle, received none")
        bad = [i for i, f in enumerate(self.faces) if min(f) < 0 or max(f) >= len(self.vertices)]
        if bad:
            raise reader.error(
                f"{key}.faces[{bad[0]}]",
                f"expected vertex indices in [0, {len(self.vertices)}), "
                f"received {self.faces[bad[0]]}",
            )

    def _fields_to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.file_path is not None:
            out["file_path"] = self.file_path
        else:
            out["vertices"] = [list(v) for v in self.vertices]
            out["faces"] = [list(f) for f in self.faces]
        out["scale"] = list(self.scale)
        return out

    def mesh_data(self) -> tuple[np.ndarray, np.ndarray]:
        """``(vertices [V, 3] float64 with scale applied, faces [F, 3] int32)``."""
        if self.file_path is not None:
            import trimesh

            try:
                loaded = trimesh.load(self.file_path, force="mesh")
            except Exception as err:  # trimesh raises many types for unreadable files
                raise InputValueError(
                    f"mesh.{self.name}.file_path: cannot read '{self.file_path}': {err}"
                ) from None
            vertices = np.asarray(loaded.vertices, dtype=np.float64)
            faces = np.asarray(loaded.faces, dtype=np.int32)
            if len(faces) == 0:
                raise InputValueError(
                    f"mesh.{self.name}.file_path: '{self.file_path}' holds no triangles"
                )
        else:
            vertices = np.asarray(self.vertices, dtype=np.float64)
            faces = np.asarray(self.faces, dtype=np.int32)
        return vertices * np.asarray(self.scale), faces

    def local_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        vertices, _ = self.mesh_data()
        return vertices.min(0), vertices.max(0)


def _check_array(reader: YamlReader, value: Any, key: str, kind: type) -> list[list]:
    """An ``[n, 3]`` nested list of finite floats (``kind=float``) or integers (``int``)."""
    value = _as_list(value)
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise reader.error(key, f"expected a list of [3] rows, received {type(value).__name__}")
    rows = []
    for i, row in enumerate(value):
        row = reader.vector(_as_list(row), f"{key}[{i}]", 3)
        if kind is float:
            _bounded(reader, row, f"{key}[{i}]")
        if kind is int:
            if any(v != int(v) for v in row):
                raise reader.error(f"{key}[{i}]", f"expected integer indices, received {row}")
            row = [int(v) for v in row]
        rows.append(row)
    return rows


OBSTACLE_TYPES: dict[str, type[Obstacle]] = {
    cls.kind: cls for cls in (Cuboid, Sphere, Capsule, Cylinder, Mesh)
}


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
                        f"{_SOURCE.get() or '<WorldConfig>'}: '{kind}.{obstacle.name}': "
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
        tokens = (_SOURCE.set(source), _BASE_DIR.set(Path(base_dir) if base_dir else None))
        try:
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
        finally:
            _SOURCE.reset(tokens[0])
            _BASE_DIR.reset(tokens[1])

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
