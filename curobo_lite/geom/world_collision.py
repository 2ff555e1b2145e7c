"""Sphere-vs-world signed distance and collision cost, differentiable, on device tables.

:class:`WorldCollision` packs a :class:`~curobo_lite.geom.world.WorldConfig` into preallocated
tables (capacity ``cache={"primitive": P, "mesh": M}``), so obstacles can be added, removed,
moved, enabled and disabled at run time without reallocating or rebuilding meshes. Queries run
the Warp kernel of :mod:`curobo_lite.kernels.world_collision_kernels` and are autograd-aware:
the gradient with respect to the query spheres (centres and radii) is computed analytically in
the forward kernel when the spheres require grad, and multiplied by the incoming gradients in
the backward pass (first order only).

Conventions (cuRobo's): spheres are ``[..., N, 4]`` ``(x, y, z, radius)`` in the robot base
frame; a sphere with negative radius is disabled. Signed distances are metres, negative in
penetration.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.config_files import YamlReader
from curobo_lite.geom.sphere_query import SphereWorldQuery as _SphereWorldQuery
from curobo_lite.geom.sphere_query import WorldDistance, check_ranges
from curobo_lite.geom.world import Mesh, Obstacle, WorldConfig, _check_pose
from curobo_lite.kernels import world_collision_kernels as wck
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputTypeError, InputValueError

_PRIMITIVE_IDS = {
    "cuboid": wck.CUBOID,
    "sphere": wck.SPHERE,
    "capsule": wck.CAPSULE,
    "cylinder": wck.CYLINDER,
}
#: where disabled obstacles and empty slots park their bounding boxes (float32-safe)
_FAR = 1.0e30
BROAD_PHASES = ("auto", "bvh", "loop")


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


class WorldCollision:
    """Device tables of a world's obstacles and sphere queries against them.

    Args:
        world: initial obstacles (``None``: empty world).
        tensor_args: device and float dtype of the tables (default CPU float32); queries must
            match both.
        cache: slot capacity ``{"primitive": P, "mesh": M}``; defaults
            ``max(count, 16)`` / ``max(count, 4)``. Edits within capacity reallocate nothing;
            beyond it the tables grow (doubling) and the BVH is rebuilt.
        broad_phase: ``"bvh"`` (search a BVH over obstacle bounds), ``"loop"`` (test every enabled
            obstacle, skipping those whose bounds lie farther than the query's reach) or
            ``"auto"``: the loop up to :attr:`BVH_MIN_OBSTACLES` enabled obstacles with
            ``max_distance = inf`` and below :attr:`BVH_MIN_OBSTACLES_NEAR` with a finite one,
            the BVH otherwise. Measured on CPU (100k spheres in a 2 m cube, float32, one
            thread): with ``max_distance = inf`` the loop wins up to 8 cuboids (26 vs 45 ms at
            4) and the BVH from 16 on (58 vs 100 ms at 32, 95 vs 282 ms at 64). With a finite
            one (Franka spheres of 224 configurations, activation and max_distance 0.01): the
            loop 0.68 vs 0.84 ms on the 2-obstacle table, the BVH 0.80 vs 0.91 ms from 5
            obstacles (narrow gap) and 0.80 vs 1.06 ms at 9 (cubbies).
        initial_range: first broad-phase search half-width beyond ``radius + activation``
            (metres) when ``max_distance`` is larger; the search grows 4x until exact.
        check_finite: reject query spheres holding NaN/inf (a device sync on CUDA).
    """

    #: crossover of the measured loop and BVH costs with ``max_distance = inf`` (8 to 16)
    BVH_MIN_OBSTACLES = 12
    #: the same with a finite ``max_distance`` (2 to 5)
    BVH_MIN_OBSTACLES_NEAR = 4

    def __init__(
        self,
        world: WorldConfig | None = None,
        tensor_args: TensorDeviceType | None = None,
        cache: Mapping[str, int] | None = None,
        broad_phase: str = "auto",
        initial_range: float = 0.1,
        check_finite: bool = True,
    ) -> None:
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
        self._check_world(world)
        capacity = self._check_cache(cache)
        self.tensor_args = tensor_args
        self.broad_phase = broad_phase
        self.initial_range = initial_range
        self.check_finite = check_finite
        wp.init()  # idempotent; needed before the first Warp device lookup
        self._wp_device = wp.device_from_torch(tensor_args.device)
        self._revision = 0
        meshes = {o.name: self._build_mesh(o) for o in world.mesh}
        num_prim = len(world.objects) - len(world.mesh)
        self._allocate(max(num_prim, capacity[0]), max(len(world.mesh), capacity[1]))
        self._load(world.copy(), meshes)

    # validation --------------------------------------------------------------------------------
    @property
    def broad_phase(self) -> str:
        return self._broad_phase

    @broad_phase.setter
    def broad_phase(self, value: str) -> None:
        if value not in BROAD_PHASES:
            raise InputValueError(
                f"broad_phase: expected one of {BROAD_PHASES}, received {value!r}"
            )
        self._broad_phase = value

    @property
    def initial_range(self) -> float:
        return self._initial_range

    @initial_range.setter
    def initial_range(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise InputValueError(f"initial_range: expected a positive number, received {value!r}")
        if not math.isfinite(value):
            raise InputValueError(f"initial_range: expected a finite number, received {value!r}")
        self._initial_range = float(value)

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
        self._h_prim_frame = np.zeros((num_prim, wck.FRAME_COLUMNS))
        self._h_prim_params = np.zeros((num_prim, wck.PARAM_COLUMNS))
        self._h_mesh_enabled = np.zeros(num_mesh, np.int32)
        self._h_mesh_frame = np.zeros((num_mesh, wck.FRAME_COLUMNS))
        self._h_mesh_ids = np.zeros(num_mesh, np.uint64)
        self._h_local_bounds = np.zeros((slots, 2, 3))
        self._h_lowers = np.full((slots, 3), _FAR, np.float32)
        self._h_uppers = np.full((slots, 3), _FAR, np.float32)
        self._meshes: list[wp.Mesh | None] = [None] * num_mesh
        self._prim_type = torch.zeros(num_prim, dtype=torch.int32, device=device)
        self._prim_enabled = torch.zeros(num_prim, dtype=torch.int32, device=device)
        self._prim_frame = torch.zeros(num_prim, wck.FRAME_COLUMNS, **kw)
        self._prim_params = torch.zeros(num_prim, wck.PARAM_COLUMNS, **kw)
        self._mesh_enabled = torch.zeros(num_mesh, dtype=torch.int32, device=device)
        self._mesh_frame = torch.zeros(num_mesh, wck.FRAME_COLUMNS, **kw)
        self._mesh_ids = wp.zeros(num_mesh, dtype=wp.uint64, device=self._wp_device)
        # the enabled slots, first ``_num_enabled`` entries (primitives 0..P-1, meshes P..): the
        # loop broad phase visits only these, not every slot of the capacity
        self._active_slots = torch.zeros(max(slots, 1), dtype=torch.int32, device=device)
        self._lowers = wp.array(self._h_lowers, dtype=wp.vec3f, device=self._wp_device)
        self._uppers = wp.array(self._h_uppers, dtype=wp.vec3f, device=self._wp_device)
        self._bvh = wp.Bvh(self._lowers, self._uppers)
        # the kernels' view of the tables: array fields fixed here, counts and bounds per upload
        self._tables = wck.WORLD_TABLES[wck.SCALAR_TYPES[self.tensor_args.dtype]]()
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
        enabled = self._h_lowers[:, 0] < _FAR
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
        pose = _check_pose(YamlReader("update_obstacle_pose"), pose, "pose")
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

    # queries -----------------------------------------------------------------------------------
    def sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
    ) -> WorldDistance:
        """Signed distance and cost of spheres against the enabled obstacles.

        Args:
            spheres: ``[..., N, 4]`` centres (base frame) and radii; radius < 0 disables a
                sphere (distance ``max_distance``, cost 0, zero gradient).
            activation_distance: ``eta >= 0`` of the smooth-hinge cost.
            max_distance: distances are clamped here (zero gradient beyond); with ``inf``
                (default) the distance to the nearest obstacle is exact however far it is.

        Returns:
            :class:`WorldDistance` with ``distance`` and ``cost`` ``[..., N]``, both
            differentiable with respect to all four columns of ``spheres``.
        """
        self._check_spheres(spheres, min_dim=2)
        act, max_d = self._check_ranges(activation_distance, max_distance)
        distance, cost = _SphereWorldQuery.apply(spheres, self, act, max_d, 0, 1.0, 1)
        return WorldDistance(distance, cost)

    def swept_sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
        sweep_spacing: float = 0.5,
        max_sweep_samples: int = 32,
    ) -> WorldDistance:
        """Continuous check of sphere trajectories ``[B, H, N, 4]`` between time steps.

        Step ``h = 0`` is the plain query. For ``h >= 1`` the sphere's motion from step
        ``h - 1`` (centre travel ``L``) is cut into ``K = min(ceil(L / (sweep_spacing * r)),
        max_sweep_samples)`` pieces (``r`` the smaller of the two radii) and sampled at each
        piece's midpoint ``t = (k + 1/2) / K`` and at the end ``t = 1`` (centre and radius
        interpolated; ``h - 1`` itself is covered by step ``h - 1``). ``distance`` is the
        minimum over the samples, so never above the plain query at ``h``; ``cost`` is the
        maximum (the worst sample: a mean would dilute a short penetration). Gradients reach
        both end spheres with weights ``1 - t`` and ``t`` of the deciding sample.

        Guarantee: the signed distance is 1-Lipschitz and every point of the segment lies within
        ``L / (2K)`` of a sample, so the result is at least the exact swept-sphere distance and
        exceeds it by at most ``L / (2K) <= sweep_spacing * r / 2`` (``L / (2 *
        max_sweep_samples)`` once capped). With the default spacing 0.5, a step whose centre
        passes through an obstacle, however thin, reports a penetration of at least
        ``0.75 r``.

        Args:
            spheres: ``[B, H, N, 4]`` sphere trajectories (radius < 0 disables a sphere at a
                step; a disabled sphere at ``h - 1`` makes step ``h`` a plain query).
            activation_distance, max_distance: as in :meth:`sphere_distance`.
            sweep_spacing: largest sample spacing as a fraction of the radius (> 0).
            max_sweep_samples: cap on ``K`` per step (>= 1).

        Returns:
            :class:`WorldDistance` with ``distance`` and ``cost`` ``[B, H, N]``.
        """
        self._check_spheres(spheres, min_dim=4, max_dim=4)
        act, max_d = self._check_ranges(activation_distance, max_distance)
        if (
            isinstance(sweep_spacing, bool)
            or not isinstance(sweep_spacing, int | float)
            or not (0.0 < sweep_spacing < math.inf)
        ):
            raise InputValueError(
                f"sweep_spacing: expected a positive finite number, received {sweep_spacing!r}"
            )
        if (
            isinstance(max_sweep_samples, bool)
            or not isinstance(max_sweep_samples, int)
            or max_sweep_samples < 1
        ):
            raise InputValueError(
                f"max_sweep_samples: expected an integer >= 1, received {max_sweep_samples!r}"
            )
        distance, cost = _SphereWorldQuery.apply(
            spheres, self, act, max_d, 1, float(sweep_spacing), max_sweep_samples
        )
        return WorldDistance(distance, cost)

    @torch.no_grad()
    def obstacle_distances(
        self, spheres: torch.Tensor, max_distance: float = math.inf
    ) -> tuple[list[str], torch.Tensor]:
        """Signed distance of each sphere to each enabled obstacle on its own: which obstacle
        a sphere hits, and how deep (:meth:`sphere_distance` is their minimum over obstacles).

        One launch per obstacle, no gradient: for reports on a few configurations (why a start
        state is in collision), not for hot loops.

        Args:
            spheres: ``[..., N, 4]`` centres (base frame) and radii; radius < 0 disables a
                sphere (``max_distance`` against every obstacle).
            max_distance: distances are clamped here.

        Returns:
            ``(names, distance)``: the enabled obstacles' names ``[O]`` (world order) and
            ``distance [..., N, O]``.
        """
        self._check_spheres(spheres, min_dim=2)
        _, max_d = self._check_ranges(0.0, max_distance)
        names = [name for name in self.obstacle_names if self._world.get(name).enabled]
        columns = []
        for name in names:
            table, index = self._slots[name]
            slot = index if table == "primitive" else self._num_prim + index
            active = torch.tensor([slot], dtype=torch.int32, device=self.tensor_args.device)
            tables = self._slot_tables(active)
            distance = self._launch(spheres.detach(), 0.0, max_d, 0, 1.0, 1, False, tables)[0]
            columns.append(distance.reshape(spheres.shape[:-1]))
        for voxel_world in self._voxel_worlds:
            names.append(voxel_world.name)
            columns.append(voxel_world.sphere_distance(spheres, 0.0, max_d).distance)
        if not columns:
            return [], spheres.new_empty((*spheres.shape[:-1], 0))
        return names, torch.stack(columns, -1)

    def _slot_tables(self, active: torch.Tensor) -> Any:
        """A copy of the world tables whose loop broad phase visits the slots ``active``
        (int32, kept alive by the caller until the launch is done)."""
        struct = wck.WORLD_TABLES[wck.SCALAR_TYPES[self.tensor_args.dtype]]
        tables = struct()
        for name in struct.vars:
            setattr(tables, name, getattr(self._tables, name))
        tables.active_slots = wp.from_torch(active)
        tables.num_active = int(active.shape[0])
        return tables

    def _check_spheres(self, spheres: Any, min_dim: int, max_dim: int | None = None) -> None:
        require_tensor("spheres", spheres)
        if spheres.dtype != self.tensor_args.dtype:
            raise InputTypeError(
                f"spheres: expected dtype {self.tensor_args.dtype} (the world's), "
                f"received {spheres.dtype}"
            )
        if spheres.device != self.tensor_args.device:
            raise InputValueError(
                f"spheres: expected device {self.tensor_args.device} (the world's), "
                f"received {spheres.device}"
            )
        shape = "[B, H, N, 4]" if max_dim == 4 else "[..., N, 4]"
        if spheres.ndim < min_dim or (max_dim is not None and spheres.ndim > max_dim):
            raise InputValueError(
                f"spheres: expected shape {shape}, received {tuple(spheres.shape)}"
            )
        if spheres.shape[-1] != 4:
            raise InputValueError(
                f"spheres: expected shape {shape}, received {tuple(spheres.shape)}"
            )
        if self.check_finite and not bool(torch.isfinite(spheres).all()):
            raise InputValueError("spheres: expected finite values, received NaN or inf")

    _check_ranges = staticmethod(check_ranges)

    def _use_bvh(self, max_distance: float) -> int:
        if self._broad_phase == "auto":
            if max_distance < math.inf:
                return int(self._num_enabled >= self.BVH_MIN_OBSTACLES_NEAR)
            return int(self._num_enabled > self.BVH_MIN_OBSTACLES)
        return int(self._broad_phase == "bvh")

    def _launch(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
        tables: Any = None,
    ) -> tuple[torch.Tensor, ...]:
        """Flat ``[S]`` distance and cost (and ``[S, 4]`` gradients) of ``spheres [S, 4]``;
        ``tables`` (default: the whole world's) other world tables, searched by the loop."""
        voxel_tables = tables  # None: the whole world, voxel grids included
        horizon, num_spheres = (spheres.shape[1], spheres.shape[2]) if sweep else (1, 1)
        flat = spheres.reshape(-1, 4).contiguous()
        kw = self.tensor_args.as_kwargs()
        rows = flat.shape[0]
        distance = torch.empty(rows, **kw)
        cost = torch.empty(rows, **kw)
        dummy = torch.empty(1, 4, **kw)
        grads = [torch.empty(rows, 4, **kw) if write_grad else dummy for _ in range(2)]
        grads += [torch.empty(rows, 4, **kw) if write_grad and sweep else dummy for _ in range(2)]
        num_enabled = self._num_enabled if tables is None else tables.num_active
        if num_enabled == 0:
            # nothing to be near: skip the launch (MPC and trajopt run with an empty world
            # until one is given)
            distance.fill_(max_distance)
            cost.zero_()
            for g in grads:
                g.zero_()
            return self._fold_voxels(spheres, voxel_tables, activation, max_distance, sweep,
                                     sweep_spacing, max_sweep_samples, write_grad,
                                     distance, cost, grads)  # fmt: skip
        use_bvh = self._use_bvh(max_distance) if tables is None else 0
        tables = self._tables if tables is None else tables
        flat_wp = as_warp(flat)

        def make_launch(b0: int, b1: int):
            outputs = [as_warp(distance[b0:b1]), as_warp(cost[b0:b1])]
            outputs += [as_warp(g[b0:b1]) if g is not dummy else as_warp(g) for g in grads]
            inputs = [
                flat_wp,
                activation,
                max_distance,
                self._initial_range,
                sweep,
                horizon,
                num_spheres,
                sweep_spacing,
                max_sweep_samples,
                tables,
                use_bvh,
                b0,
                int(write_grad),
                *outputs,
            ]
            return b1 - b0, inputs

        work = num_enabled if not use_bvh else 8
        elements = rows * max(work, 1) * (max_sweep_samples if sweep else 1)
        launch_rows(
            wck.kernel_for("distance", flat.dtype), rows, flat.device, make_launch, elements
        )
        return self._fold_voxels(spheres, voxel_tables, activation, max_distance, sweep,
                                 sweep_spacing, max_sweep_samples, write_grad,
                                 distance, cost, grads)  # fmt: skip

    def _fold_voxels(self, spheres, tables, *query) -> tuple[torch.Tensor, ...]:
        """The voxel worlds' distances and costs folded into a whole-world query's outputs
        (``query``: ``_launch``'s arguments then its outputs); per-slot queries skip them."""
        if tables is None:
            for voxel_world in self._voxel_worlds:
                voxel_world.fold_query(spheres, *query)
        distance, cost, grads = query[-3:]
        return distance, cost, *grads

    def __repr__(self) -> str:
        return (
            f"WorldCollision({self._world!r}, capacity={self.capacity}, "
            f"broad_phase={self._broad_phase!r}, {self.tensor_args})"
        )
