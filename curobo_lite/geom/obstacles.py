"""World obstacles: the shapes of a world file (:class:`Cuboid`, :class:`Sphere`,
:class:`Capsule`, :class:`Cylinder`, :class:`Mesh`), each checked on construction.

The fields and YAML keys of each kind are described in :mod:`curobo_lite.geom.world`, which
groups obstacles into a :class:`~curobo_lite.geom.world.WorldConfig`. Every problem is a
``ValueError`` (``TypeError`` for a wrong Python type) naming the source and the key path;
obstacles built inside :func:`obstacle_source` name that source (a world file) and resolve
relative mesh paths against its folder.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from curobo_lite.config_files import YamlReader
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError

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


@contextlib.contextmanager
def obstacle_source(source: str, base_dir: str | os.PathLike | None = None) -> Iterator[None]:
    """Obstacles built inside name ``source`` in their errors and resolve relative mesh paths
    against ``base_dir`` (how :meth:`WorldConfig.from_dict` reads a file's obstacles)."""
    tokens = (_SOURCE.set(source), _BASE_DIR.set(Path(base_dir) if base_dir else None))
    try:
        yield
    finally:
        _SOURCE.reset(tokens[0])
        _BASE_DIR.reset(tokens[1])


def obstacle_source_name() -> str | None:
    """The source set by the enclosing :func:`obstacle_source` (``None`` outside one)."""
    return _SOURCE.get()


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


def check_pose(reader: YamlReader, value: Any, key: str) -> list[float]:
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
        self.pose = check_pose(reader, self.pose, f"{key}.pose")
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
            pose = check_pose(reader, self.pose, f"sphere.{self.name}.pose")
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
