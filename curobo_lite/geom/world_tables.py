"""A world's obstacles packed into preallocated device tables, editable at run time.

:class:`WorldTables` packs a :class:`~curobo_lite.geom.world.WorldConfig` into the tables that
the kernels of :mod:`curobo_lite.kernels.world_collision_kernels` read (capacity
``cache={"primitive": P, "mesh": M}``), so obstacles can be added, removed, moved, enabled and
disabled without reallocating or rebuilding meshes. Each edit writes host mirrors, then uploads
them into the same device tensors and rebuilds (or, for a move, refits) the BVH over the
obstacles' bounds. :class:`~curobo_lite.geom.world_collision.WorldCollision` adds the sphere
queries.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.config_files import YamlReader
from curobo_lite.geom.obstacles import Mesh, Obstacle, check_pose
from curobo_lite.geom.world import WorldConfig
from curobo_lite.kernels import primitive_sdf
from curobo_lite.kernels import world_collision_kernels as wck
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError

_PRIMITIVE_IDS = {
    "cuboid": primitive_sdf.CUBOID,
    "sphere": primitive_sdf.SPHERE,
    "capsule": primitive_sdf.CAPSULE,
    "cylinder": primitive_sdf.CYLINDER,
}
#: where disabled obstacles and empty slots park their bounding boxes (float32-safe)
_FAR = 1.0e30


def _quat_matrix(q: Sequence[float]) -> np.ndarray:
    """``[3, 3]`` rotation of a unit ``wxyz`` quaternion."""
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


class WorldTables:
    """Device tables of a world's obstacles and the edits of them.

    Args:
        world: initial obstacles (``None``: empty world).
        tensor_args: device and float dtype of the tables (default CPU float32).
        cache: slot capacity ``{"primitive": P, "mesh": M}``; defaults
            ``max(count, 16)`` / ``max(count, 4)``. Edits within capacity reallocate nothing;
            beyond it the tables grow (doubling) and the BVH is rebuilt.
    """

    def __init__(
        self,
        world: WorldConfig | None = None,
        tensor_args: TensorDeviceType | None = None,
        cache: Mapping[str, int] | None = None,
    ) -> None:
        self._build_tables(*self._check_tables_args(world, tensor_args, cache))

    # validation --------------------------------------------------------------------------------
    @classmethod
    def _check_tables_args(
        cls,
        world: WorldConfig | None,
        tensor_args: TensorDeviceType | None,
        cache: Mapping[str, int] | None,
    ) -> tuple[WorldConfig, TensorDeviceType, tuple[int, int]]:
        """``(world, tensor_args, capacity)`` with the defaults filled in, or an error naming
        the bad argument (before anything is built)."""
        tensor_args = TensorDeviceType() if tensor_args is None else tensor_args
        if not isinstance(tensor_args, TensorDeviceType):
            raise InputTypeError(
                f"tensor_args: expected TensorDeviceType, received {type(tensor_args).__name__}"
            )
        if tensor_args.dtype not in (torch.float32, torch.float64):
            raise InputTypeError(
                f"tensor_args.dtype: expected torch.float32 or torch.float64, "
                f"received {tensor_args.dtype}"
            )
        world = WorldConfig() if world is None else world
        cls._check_world(world)
        capacity = cls._check_cache(cache)
        return world, tensor_args, capacity

    def _build_tables(
        self, world: WorldConfig, tensor_args: TensorDeviceType, capacity: tuple[int, int]
    ) -> None:
        """Allocate the tables for ``capacity`` and load ``world`` (checked arguments)."""
        self.tensor_args = tensor_args
        wp.init()  # idempotent; needed before the first Warp device lookup
        self._wp_device = wp.device_from_torch(tensor_args.device)
        self._revision = 0
        meshes = {o.name: self._build_mesh(o) for o in world.mesh}
        num_prim = len(world.objects) - len(world.mesh)
        self._allocate(max(num_prim, capacity[0]), max(len(world.mesh), capacity[1]))
        self._load(world.copy(), meshes)

    @staticmethod
    def _check_world(world: Any) -> None:
        if not isinstance(world, WorldConfig):
            raise InputTypeError(f"world: expected WorldConfig, received {type(world).__name__}")

    @staticmethod
    def _check_cache(cache: Mapping[str, int] | None) -> tuple[int, int]:
        defaults = {"primitive": 16, "mesh": 4}
        if cache is None:
            return defaults["primitive"], defaults["mesh"]
        if not isinstance(cache, Mapping):
            raise InputTypeError(f"cache: expected a mapping, received {type(cache).__name__}")
        unknown = [k for k in cache if k not in defaults]
        if unknown:
            raise InputValueError(
                f"cache: unknown key(s) {unknown}; allowed keys: {list(defaults)}"
            )
        values = {**defaults, **cache}
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputValueError(
                    f"cache.{key}: expected a non-negative integer, received {value!r}"
                )
        return max(values["primitive"], 1), max(values["mesh"], 1)

    def _name_slot(self, name: Any) -> tuple[str, int]:
        if not isinstance(name, str):
            raise InputTypeError(f"name: expected a string, received {type(name).__name__}")
        if name not in self._slots:
            raise InputValueError(
                f"name: no obstacle '{name}' in the world; obstacles: {self.obstacle_names}"
            )
        return self._slots[name]

    def _build_mesh(self, obstacle: Mesh) -> tuple[wp.Mesh, np.ndarray, np.ndarray]:
        """A ``wp.Mesh`` of the scaled vertices and their local bounds (may raise)."""
        vertices, faces = obstacle.mesh_data()
        points = wp.array(vertices.astype(np.float32), dtype=wp.vec3f, device=self._wp_device)
        indices = wp.array(
            faces.reshape(-1).astype(np.int32), dtype=wp.int32, device=self._wp_device
        )
        mesh = wp.Mesh(points=points, indices=indices, support_winding_number=True)
        return mesh, vertices.min(0), vertices.max(0)

    # tables ------------------------------------------------------------------------------------
    def _allocate(self, num_prim: int, num_mesh: int) -> None:
        """(Re)allocate the host mirrors, device tables and BVH for the given capacity."""
        kw = self.tensor_args.as_kwargs()
        device = self.tensor_args.device
        self._num_prim, self._num_mesh = num_prim, num_mesh
        slots = num_prim + num_mesh
        self._h_prim_type = np.zeros(num_prim, np.int32)
        self._h_prim_enabled = np.zeros(num_prim, np.int32)
        self._h_prim_frame = np.zeros((num_prim, primitive_sdf.FRAME_COLUMNS))
        self._h_prim_params = np.zeros((num_prim, primitive_sdf.PARAM_COLUMNS))
        self._h_mesh_enabled = np.zeros(num_mesh, np.int32)
        self._h_mesh_frame = np.zeros((num_mesh, primitive_sdf.FRAME_COLUMNS))
        self._h_mesh_ids = np.zeros(num_mesh, np.uint64)
        self._h_local_bounds = np.zeros((slots, 2, 3))
        self._h_lowers = np.full((slots, 3), _FAR, np.float32)
        self._h_uppers = np.full((slots, 3), _FAR, np.float32)
        self._meshes: list[wp.Mesh | None] = [None] * num_mesh
        self._prim_type = torch.zeros(num_prim, dtype=torch.int32, device=device)
        self._prim_enabled = torch.zeros(num_prim, dtype=torch.int32, device=device)
        self._prim_frame = torch.zeros(num_prim, primitive_sdf.FRAME_COLUMNS, **kw)
        self._prim_params = torch.zeros(num_prim, primitive_sdf.PARAM_COLUMNS, **kw)
        self._mesh_enabled = torch.zeros(num_mesh, dtype=torch.int32, device=device)
        self._mesh_frame = torch.zeros(num_mesh, primitive_sdf.FRAME_COLUMNS, **kw)
        self._mesh_ids = wp.zeros(num_mesh, dtype=wp.uint64, device=self._wp_device)
        # the enabled slots, first ``_num_enabled`` entries (primitives 0..P-1, meshes P..): the
        # loop broad phase visits only these, not every slot of the capacity
        self._active_slots = torch.zeros(max(slots, 1), dtype=torch.int32, device=device)
        self._lowers = wp.array(self._h_lowers, dtype=wp.vec3f, device=self._wp_device)
        self._uppers = wp.array(self._h_uppers, dtype=wp.vec3f, device=self._wp_device)
        self._bvh = wp.Bvh(self._lowers, self._uppers)
        # the kernels' view of the tables: array fields fixed here, counts and bounds per upload
        self._tables = wck.WORLD_TABLES[primitive_sdf.SCALAR_TYPES[self.tensor_args.dtype]]()
        for name in (
            "prim_type",
            "prim_enabled",
            "prim_frame",
            "prim_params",
            "mesh_enabled",
            "mesh_frame",
            "active_slots",
        ):
            setattr(self._tables, name, wp.from_torch(getattr(self, "_" + name)))
        self._tables.mesh_ids = self._mesh_ids
        self._tables.slot_lo = self._lowers
        self._tables.slot_hi = self._uppers

    def _load(self, world: WorldConfig, meshes: Mapping[str, tuple]) -> None:
        """Replace every slot's contents with ``world`` (capacity must suffice)."""
        self._h_prim_enabled[:] = 0
        self._h_mesh_enabled[:] = 0
        self._h_mesh_ids[:] = 0
        self._meshes = [None] * self._num_mesh
        # emptied slots keep no bounds (they would count as enabled and stay BVH leaves)
        self._h_lowers[:] = _FAR
        self._h_uppers[:] = _FAR
        self._slots: dict[str, tuple[str, int]] = {}
        self._free = {
            "primitive": list(range(self._num_prim - 1, -1, -1)),
            "mesh": list(range(self._num_mesh - 1, -1, -1)),
        }
        self._world = world
        for obstacle in world.objects:
            self._place(obstacle, meshes.get(obstacle.name))
        # voxel grids are shared (a live map's new frames are seen), copied only across devices
        self._voxel_worlds = [v.to(self.tensor_args.device) for v in world.voxel]
        self._upload(rebuild=True)

    def _place(self, obstacle: Obstacle, mesh: tuple | None) -> None:
        """Write ``obstacle`` into a free slot of its table (host side)."""
        table = "mesh" if isinstance(obstacle, Mesh) else "primitive"
        index = self._free[table].pop()
        self._slots[obstacle.name] = (table, index)
        if table == "mesh":
            wp_mesh, lo, hi = mesh
            self._meshes[index] = wp_mesh
            self._h_mesh_ids[index] = wp_mesh.id
            self._h_local_bounds[self._num_prim + index] = (lo, hi)
        else:
            self._h_prim_type[index] = _PRIMITIVE_IDS[obstacle.kind]
            params = self._h_prim_params[index]
            params[:] = 0.0
            if obstacle.kind == "cuboid":
                params[:3] = 0.5 * np.asarray(obstacle.dims)
            elif obstacle.kind == "sphere":
                params[0] = obstacle.radius
            elif obstacle.kind == "capsule":
                params[0] = obstacle.radius
                params[1:4] = obstacle.base
                params[4:7] = obstacle.tip
            else:
                params[0] = obstacle.radius
                params[1] = 0.5 * obstacle.height
            self._h_local_bounds[index] = obstacle.local_bounds()
        self._write_pose(obstacle)

    def _write_pose(self, obstacle: Obstacle) -> None:
        """Frame row, enabled flag and inflated world AABB of a placed obstacle (host side)."""
        table, index = self._slots[obstacle.name]
        slot = index if table == "primitive" else self._num_prim + index
        rotation = _quat_matrix(obstacle.pose[3:])
        translation = np.asarray(obstacle.pose[:3])
        frame = self._h_prim_frame if table == "primitive" else self._h_mesh_frame
        frame[index, :9] = rotation.reshape(-1)
        frame[index, 9:] = translation
        enabled = self._h_prim_enabled if table == "primitive" else self._h_mesh_enabled
        enabled[index] = int(obstacle.enabled)
        if not obstacle.enabled:
            self._h_lowers[slot] = _FAR
            self._h_uppers[slot] = _FAR
            return
        lo, hi = self._h_local_bounds[slot]
        corners = np.stack(np.meshgrid(*zip(lo, hi), indexing="ij"), -1).reshape(-1, 3)
        world = corners @ rotation.T + translation
        # float32 boxes must contain the float64 ones: pad beyond rounding
        pad = 1e-5 + 1e-6 * np.abs(world).max()
        low, high = (world.min(0) - pad).astype(np.float32), (world.max(0) + pad).astype(np.float32)
        self._h_lowers[slot] = np.nextafter(low, np.float32(-np.inf))
        self._h_uppers[slot] = np.nextafter(high, np.float32(np.inf))

    def _clear_slot(self, name: str) -> None:
        table, index = self._slots.pop(name)
        slot = index
        if table == "primitive":
            self._h_prim_enabled[index] = 0
        else:
            self._h_mesh_enabled[index] = 0
            self._h_mesh_ids[index] = 0
            self._meshes[index] = None
            slot = self._num_prim + index
        self._h_lowers[slot] = _FAR
        self._h_uppers[slot] = _FAR
        self._free[table].append(index)

    def _upload(self, rebuild: bool) -> None:
        """Copy the host mirrors into the preallocated device tables; rebuild or refit the BVH."""
        for tensor, host in (
            (self._prim_type, self._h_prim_type),
            (self._prim_enabled, self._h_prim_enabled),
            (self._prim_frame, self._h_prim_frame),
            (self._prim_params, self._h_prim_params),
            (self._mesh_enabled, self._h_mesh_enabled),
            (self._mesh_frame, self._h_mesh_frame),
        ):
            tensor.copy_(torch.from_numpy(host))
        self._mesh_ids.assign(self._h_mesh_ids)
        self._lowers.assign(self._h_lowers)
        self._uppers.assign(self._h_uppers)
        if rebuild:
            self._bvh.rebuild()
        else:
            self._bvh.refit()
        if self.tensor_args.device.type == "cuda":
            # the copies and the BVH update ran on Warp's stream; queries run on torch's
            wp.synchronize_device(self._wp_device)
        # the enabled slots (host side; the grid broad phase reads it too)
        self._h_enabled = enabled = self._h_lowers[:, 0] < _FAR
        active = np.flatnonzero(enabled).astype(np.int32)
        self._num_enabled = len(active)
        self._active_slots[: len(active)].copy_(torch.from_numpy(active))
        if self._num_enabled:
            self._world_lo = wp.vec3f(*self._h_lowers[enabled].min(0).tolist())
            self._world_hi = wp.vec3f(*self._h_uppers[enabled].max(0).tolist())
        else:
            self._world_lo = self._world_hi = wp.vec3f(0.0, 0.0, 0.0)
        self._tables.num_active = self._num_enabled
        self._revision += 1
        self._tables.bvh_id = self._bvh.id
        self._tables.world_lo = self._world_lo
        self._tables.world_hi = self._world_hi

    def _grow(self, table: str, extra: Mapping[str, tuple]) -> None:
        """Double one table's capacity and reload ``self._world`` (a reallocation); ``extra``:
        built meshes of obstacles not placed yet."""
        meshes = {
            name: (self._meshes[index], *self._h_local_bounds[self._num_prim + index])
            for name, (kind, index) in self._slots.items()
            if kind == "mesh"
        }
        num_prim, num_mesh = self._num_prim, self._num_mesh
        if table == "primitive":
            num_prim *= 2
        else:
            num_mesh *= 2
        self._allocate(num_prim, num_mesh)
        self._load(self._world, {**meshes, **extra})

    # world edits -------------------------------------------------------------------------------
    @property
    def world(self) -> WorldConfig:
        """A copy of the current world (edits made through this object are reflected)."""
        return self._world.copy()

    @property
    def revision(self) -> int:
        """Counts the uploads of the tables (every edit makes one): a captured CUDA graph that
        queried this world holds the tables' counts and bounds of its capture, so a caller that
        replays one captures again when this changes."""
        return self._revision

    @property
    def num_voxel_worlds(self) -> int:
        """Voxel signed-distance grids among the obstacles (the exact mesh checks do not see
        them: a grid has no true surface to check against)."""
        return len(self._voxel_worlds)

    @property
    def num_enabled(self) -> int:
        """Obstacles currently enabled, voxel worlds included (host-side count: reading it
        costs no device sync)."""
        return self._num_enabled + len(self._voxel_worlds)

    @property
    def obstacle_names(self) -> list[str]:
        return self._world.names

    @property
    def capacity(self) -> dict[str, int]:
        """Slots per table: ``{"primitive": P, "mesh": M}``."""
        return {"primitive": self._num_prim, "mesh": self._num_mesh}

    def update_world(self, world: WorldConfig) -> None:
        """Replace every obstacle (capacity grows only if ``world`` needs more slots)."""
        self._check_world(world)
        meshes = {o.name: self._build_mesh(o) for o in world.mesh}
        num_prim = len(world.objects) - len(world.mesh)
        if num_prim > self._num_prim or len(world.mesh) > self._num_mesh:
            self._allocate(max(num_prim, self._num_prim), max(len(world.mesh), self._num_mesh))
        self._load(world.copy(), meshes)

    def add_obstacle(self, obstacle: Obstacle) -> None:
        """Add one obstacle (its name must be new)."""
        candidate = self._world.copy()
        candidate.add(obstacle)  # type and name checks
        candidate.remove(obstacle.name)
        obstacle = copy.deepcopy(obstacle)  # the world keeps its own, like update_world
        candidate.add(obstacle)
        mesh = self._build_mesh(obstacle) if isinstance(obstacle, Mesh) else None
        table = "mesh" if mesh is not None else "primitive"
        self._world = candidate
        if not self._free[table]:
            self._grow(table, {obstacle.name: mesh} if mesh is not None else {})
            return
        self._place(obstacle, mesh)
        self._upload(rebuild=True)

    def remove_obstacle(self, name: str) -> None:
        """Remove the obstacle called ``name``; its slot becomes free."""
        self._name_slot(name)
        self._world.remove(name)
        self._clear_slot(name)
        self._upload(rebuild=True)

    def update_obstacle_pose(
        self, name: str, pose: Sequence[float] | torch.Tensor | Pose | np.ndarray
    ) -> None:
        """Move an obstacle: ``pose`` is ``[7]`` (``x, y, z, qw, qx, qy, qz``) or a one-row
        :class:`~curobo_lite.types.Pose`. Meshes move without a rebuild; the BVH is refit."""
        self._name_slot(name)
        if isinstance(pose, Pose):
            if pose.position.shape[0] != 1:
                raise InputValueError(
                    f"pose: expected a Pose with one row, received batch {pose.position.shape[0]}"
                )
            pose = torch.cat((pose.position[0], pose.quaternion[0]))
        if isinstance(pose, torch.Tensor):
            if pose.shape not in ((7,), (1, 7)):
                raise InputValueError(f"pose: expected shape [7], received {tuple(pose.shape)}")
            pose = pose.detach().reshape(-1).cpu().double().tolist()
        pose = check_pose(YamlReader("update_obstacle_pose"), pose, "pose")
        obstacle = self._world.get(name)
        obstacle.pose = pose
        self._write_pose(obstacle)
        self._upload(rebuild=False)

    def enable_obstacle(self, name: str, enabled: bool = True) -> None:
        """Enable (or, with ``enabled=False``, disable) the obstacle called ``name``."""
        self._name_slot(name)
        if not isinstance(enabled, bool):
            raise InputTypeError(f"enabled: expected a bool, received {type(enabled).__name__}")
        obstacle = self._world.get(name)
        obstacle.enabled = enabled
        self._write_pose(obstacle)
        self._upload(rebuild=True)
