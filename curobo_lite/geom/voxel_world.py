"""A voxel signed-distance world built from point clouds and depth images (an ESDF in Warp).

:class:`VoxelWorld` holds an occupancy grid over an axis-aligned box of the robot base frame and
the Euclidean signed distance field (ESDF) computed from it:

- :meth:`VoxelWorld.integrate_points` and :meth:`VoxelWorld.integrate_depth` mark the voxels
  that hold measured points occupied, carve free space along the camera rays (so an obstacle
  that moved leaves no ghost), drop the points that lie on the robot's own spheres (plus
  :attr:`VoxelWorld.self_filter_margin`), and refresh the ESDF;
- the ESDF is the exact Euclidean distance transform of the occupancy (Felzenszwalb's separable
  transform along x, y and z, in :mod:`curobo_lite.kernels.edt_kernels`): at a free voxel the
  distance from its centre to the nearest occupied voxel's centre, at an occupied one minus
  (the distance to the nearest free voxel's centre less one voxel). The zero level runs
  through the centres of the occupied voxels at the boundary, each of which holds a measured
  point, so a distance is within ``sqrt(3)/2`` voxel of the distance to the measured surface
  at the voxel centres; distances are negative deeper inside occupied regions. Measured
  surfaces are one or two voxels thick: the inside of a solid seen only from outside is not
  known to be occupied. With ``max_esdf_distance`` the ESDF holds ``min(distance,
  max_esdf_distance)`` outside, and a refresh skips the space farther than that from every
  surface;
- sphere queries (:meth:`VoxelWorld.sphere_distance`, and every
  :class:`~curobo_lite.geom.world_collision.WorldCollision` whose world holds the grid)
  interpolate the ESDF trilinearly, with the interpolant's exact gradient.

Moving things: every integration first multiplies the occupancy by :attr:`VoxelWorld.decay`
(default 1: a voxel stays occupied until a ray carves it); a voxel counts as occupied from 0.5,
so with ``decay < 1`` one that is not seen again is dropped after
``floor(log 0.5 / log decay)`` frames. :meth:`VoxelWorld.clear` empties the grid.

A ``VoxelWorld`` is accepted wherever a world is (``RobotWorld``, ``MotionGen``, ``MpcSolver``,
``TrajOptSolver``, ``IKSolver``, ``update_world``), alone or mixed with primitives and meshes in
one ``WorldConfig(voxel=[...])``; the solvers share it, so frames integrated later are seen by
the next query. ``WorldConfig.from_point_cloud(points, voxel_size)`` builds one around a cloud.

By concern: the grid and its construction here; integration in
:mod:`~curobo_lite.geom.voxel_integration`, the ESDF refresh in
:mod:`~curobo_lite.geom.esdf_transform`, the sphere queries in
:mod:`~curobo_lite.geom.voxel_queries` (their names are importable from here too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.geom.esdf_transform import EsdfTransform
from curobo_lite.geom.perception_inputs import as_points, pose_frame, positive_number, vector3
from curobo_lite.geom.voxel_integration import VoxelIntegration
from curobo_lite.geom.voxel_queries import QUERY_ROWS_PER_CPU_THREAD, VoxelQueries
from curobo_lite.kernels import voxel_kernels as vk
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError

__all__ = [
    "CPU_ELEMENTS_PER_THREAD", "MAX_AXIS_VOXELS", "MAX_VOXELS", "QUERY_ROWS_PER_CPU_THREAD",
    "EsdfTransform", "VoxelIntegration", "VoxelQueries", "VoxelWorld",
]  # fmt: skip

#: voxels or points per thread of the integration kernels on a CPU (a Warp CPU thread copies
#: the launch's arguments first, which costs more than most elements' work)
CPU_ELEMENTS_PER_THREAD = 64
#: the most voxels along one axis (the transform's exact integer comparisons, about
#: ``6 n^3``, must fit an int32)
MAX_AXIS_VOXELS = 700
#: the most voxels one grid may hold (~1.6 GB of float32 buffers): larger grids are an error
MAX_VOXELS = 1 << 26


class VoxelWorld(VoxelIntegration, VoxelQueries):
    """An occupancy grid and its signed distance field over ``[bounds_min, bounds_max]``.

    Args:
        bounds_min, bounds_max: ``[3]`` corners of the box (robot base frame, metres); the box
            is cut into ``ceil((max - min) / voxel_size)`` voxels per axis (at least 2), so its
            upper corner may grow by up to one voxel.
        voxel_size: edge of a voxel (metres).
        tensor_args: device of the grids (float32 always; queries take float32 or float64).
        decay: occupancy factor applied at each integration, in ``(0, 1]`` (module docstring).
        carve_margin: carving stops this many voxels before each measured point.
        self_filter_margin: points within a robot sphere's radius plus this (metres) are
            dropped when an integration is given ``robot_spheres``.
        max_range: depth readings beyond this (metres) are neither integrated nor carved.
        inflation: metres taken off every queried distance. The grid's distances are within
            ``sqrt(3)/2`` voxel of the distance to the measured surfaces, on either side;
            ``inflation = sqrt(3)/2 * voxel_size`` (:meth:`conservative_inflation`) makes
            them never exceed it, which a planner that must clear the true surfaces wants.
        max_esdf_distance: metres up to which the ESDF is exact outside the obstacles; it
            holds ``min(distance, max_esdf_distance)`` (default ``inf``: exact everywhere).
            A refresh skips the space farther than this from every surface: with 0.2 m
            (beyond what the collision costs reach: sphere radius plus activation distance)
            the benchmark's table scene refreshes in ~20 % less time than exactly. A query
            with a larger ``max_distance`` reads distances beyond it as it.
        name: what :meth:`WorldCollision.obstacle_distances` calls the grid.
    """

    def __init__(
        self,
        bounds_min: Sequence[float] | torch.Tensor,
        bounds_max: Sequence[float] | torch.Tensor,
        voxel_size: float,
        tensor_args: TensorDeviceType | None = None,
        *,
        decay: float = 1.0,
        carve_margin: float = 1.0,
        self_filter_margin: float = 0.02,
        max_range: float = math.inf,
        inflation: float = 0.0,
        max_esdf_distance: float = math.inf,
        name: str = "voxels",
    ) -> None:
        tensor_args = TensorDeviceType() if tensor_args is None else tensor_args
        if not isinstance(tensor_args, TensorDeviceType):
            raise InputTypeError(
                f"tensor_args: expected TensorDeviceType, received {type(tensor_args).__name__}"
            )
        low = vector3("bounds_min", bounds_min)
        high = vector3("bounds_max", bounds_max)
        voxel_size = positive_number("voxel_size", voxel_size, 10.0)
        if not (high > low).all():
            raise InputValueError(
                f"bounds_max: expected every coordinate above bounds_min {low.tolist()}, "
                f"received {high.tolist()}"
            )
        shape = np.maximum(np.ceil((high - low) / voxel_size - 1e-9).astype(np.int64), 2)
        if int(shape.max()) > MAX_AXIS_VOXELS:
            raise InputValueError(
                f"voxel_size: {voxel_size} m over {(high - low).tolist()} m makes "
                f"{shape.tolist()} voxels, more than {MAX_AXIS_VOXELS} along an axis; use "
                f"larger voxels"
            )
        if int(np.prod(shape)) > MAX_VOXELS:
            raise InputValueError(
                f"voxel_size: {voxel_size} m over {(high - low).tolist()} m makes "
                f"{shape.tolist()} voxels, more than {MAX_VOXELS}; use larger voxels"
            )
        if not (0.0 < decay <= 1.0):
            raise InputValueError(f"decay: expected a number in (0, 1], received {decay!r}")
        if not isinstance(name, str) or not name:
            raise InputValueError(f"name: expected a non-empty string, received {name!r}")
        self.tensor_args = TensorDeviceType(tensor_args.device, torch.float32)
        self.voxel_size = voxel_size
        self.shape = tuple(int(n) for n in shape)
        self.bounds_min = tuple(low.tolist())
        self.bounds_max = tuple((low + shape * voxel_size).tolist())
        self.decay = float(decay)
        self.carve_margin = float(carve_margin)
        self.self_filter_margin = float(self_filter_margin)
        self.max_range = float(max_range)
        if (
            isinstance(inflation, bool)
            or not isinstance(inflation, int | float)
            or not (0.0 <= inflation < math.inf)
        ):
            raise InputValueError(f"inflation: expected a number >= 0, received {inflation!r}")
        self.inflation = float(inflation)
        if (
            isinstance(max_esdf_distance, bool)
            or not isinstance(max_esdf_distance, int | float)
            or not (max_esdf_distance > 0.0)
        ):
            raise InputValueError(
                f"max_esdf_distance: expected a number > 0 (metres, inf: exact), received "
                f"{max_esdf_distance!r}"
            )
        self.max_esdf_distance = float(max_esdf_distance)
        self.name = name
        wp.init()
        self._wp_device = wp.device_from_torch(self.tensor_args.device)
        kw = {"device": self.tensor_args.device, "dtype": torch.float32}
        self._occupancy = torch.zeros(self.shape, **kw)
        self._esdf = torch.full(self.shape, 2.0 * vk.FAR, **kw)
        self._transform: EsdfTransform | None = None

    def conservative_inflation(self) -> float:
        """``sqrt(3)/2 * voxel_size``: the :attr:`inflation` at which a queried distance at a
        voxel centre never exceeds the distance to the measured surfaces."""
        return 0.5 * math.sqrt(3.0) * self.voxel_size

    # state ---------------------------------------------------------------------------------------
    @property
    def occupancy(self) -> torch.Tensor:
        """``[nx, ny, nz]`` occupancy in ``[0, 1]`` (occupied from 0.5); edit through the
        integrations or :meth:`clear`, then :meth:`update_esdf`."""
        return self._occupancy

    @property
    def esdf(self) -> torch.Tensor:
        """``[nx, ny, nz]`` signed distance (metres) at the voxel centres; values from
        :data:`~curobo_lite.kernels.voxel_kernels.FAR` mean "nothing occupied"."""
        return self._esdf

    def voxel_centres(self) -> torch.Tensor:
        """``[nx, ny, nz, 3]`` centres of the voxels (base frame, float32)."""
        axes = [
            self.bounds_min[a] + (torch.arange(n, **self._kw()) + 0.5) * self.voxel_size
            for a, n in enumerate(self.shape)
        ]
        return torch.stack(torch.meshgrid(*axes, indexing="ij"), -1)

    def occupied_centres(self) -> torch.Tensor:
        """``[M, 3]`` centres of the occupied voxels (for viewers and checks)."""
        return self.voxel_centres()[self._occupancy >= vk.OCCUPIED]

    def clear(self) -> None:
        """Forget every measurement: all voxels free, the ESDF empty."""
        self._occupancy.zero_()
        self._esdf.fill_(2.0 * vk.FAR)

    def to(self, device: str | torch.device) -> VoxelWorld:
        """This grid if it lives on ``device``, else a copy there (later integrations into
        one are not seen by the other)."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device == self.tensor_args.device:
            return self
        other = VoxelWorld.__new__(VoxelWorld)
        other.__dict__.update(self.__dict__)
        other.tensor_args = TensorDeviceType(device, torch.float32)
        other._wp_device = wp.device_from_torch(device)
        other._occupancy = self._occupancy.to(device)
        other._esdf = self._esdf.to(device)
        other._transform = None
        return other

    def _stream(self) -> dict[str, Any]:
        """``wp.launch`` keywords: this grid's device and, on CUDA, torch's current stream (the
        queries and the torch ops on the grid run there)."""
        if self.tensor_args.device.type == "cuda":
            return {
                "device": self._wp_device,
                "stream": wp.stream_from_torch(self.tensor_args.device),
            }
        return {"device": self._wp_device}

    def _per_thread(self) -> int:
        """Elements per thread of the per-element kernels: one on CUDA, a block on a CPU (a
        Warp CPU thread copies the launch's arguments first, costlier than a cheap element)."""
        return 1 if self.tensor_args.device.type == "cuda" else CPU_ELEMENTS_PER_THREAD

    def _kw(self) -> dict[str, Any]:
        return {"device": self.tensor_args.device, "dtype": torch.float32}

    def _grid_origin(self) -> wp.vec3f:
        return wp.vec3f(*self.bounds_min)

    def update_esdf(self) -> None:
        """Recompute the ESDF from the occupancy (in place: the ESDF keeps its address, so a
        captured CUDA graph that queries it sees the new values)."""
        if self._transform is None:
            self._transform = EsdfTransform(self.shape, self.tensor_args.device)
        self._transform.run(self._occupancy, self._esdf, self.voxel_size, self.max_esdf_distance)

    # construction --------------------------------------------------------------------------------
    @classmethod
    def from_points(
        cls,
        points: torch.Tensor | np.ndarray,
        voxel_size: float = 0.01,
        padding: float = 0.1,
        frame_pose: Pose | Sequence[float] | torch.Tensor | None = None,
        **kwargs: Any,
    ) -> VoxelWorld:
        """A grid around a cloud ``[N, 3]`` (its box grown by ``padding`` metres), on the
        points' device, with the cloud integrated; ``kwargs`` go to the constructor."""
        device = points.device if isinstance(points, torch.Tensor) else torch.device("cpu")
        local = as_points("points", points, device)
        if local.shape[0] == 0:
            raise InputValueError("points: expected at least one point, received an empty cloud")
        padding = positive_number("padding", padding) if padding != 0 else 0.0
        kwargs.setdefault("tensor_args", TensorDeviceType(device))
        rotation, translation = (
            pose_frame("frame_pose", frame_pose, device)
            if (frame_pose is not None)
            else (torch.eye(3, device=device), torch.zeros(3, device=device))
        )
        world = local @ rotation.T + translation
        low = world.min(0).values.double().cpu().numpy() - padding
        high = world.max(0).values.double().cpu().numpy() + padding
        grid = cls(low, np.maximum(high, low + 2 * voxel_size), voxel_size, **kwargs)
        grid.integrate_points(world)
        return grid

    @classmethod
    def from_world(
        cls,
        world: Any,
        bounds_min: Sequence[float] | torch.Tensor,
        bounds_max: Sequence[float] | torch.Tensor,
        voxel_size: float,
        **kwargs: Any,
    ) -> VoxelWorld:
        """The exact signed distance of a primitive and mesh world sampled at the voxel centres
        (negative inside solids), on the world's device.

        A static world's ESDF trades exactness for speed: a query reads eight grid values,
        whatever the number of obstacles (the MPC use: build it once, query it every step).
        Distances between voxel centres are interpolated trilinearly (their error grows with
        the curvature of the distance function, at most half a voxel's diagonal); occupancy
        (for later integrations) is set where the distance is negative.

        Args:
            world: a :class:`~curobo_lite.geom.WorldCollision` (or anything whose
                ``sphere_distance(spheres [N, 4], max_distance=inf).distance`` is the signed
                distance): ``VoxelWorld.from_world(WorldCollision(world_config), ...)`` for a
                ``WorldConfig``.
            bounds_min, bounds_max, voxel_size, kwargs: as in the constructor.
        """
        if not hasattr(world, "sphere_distance") or not hasattr(world, "tensor_args"):
            raise InputTypeError(
                f"world: expected a WorldCollision (wrap a WorldConfig as "
                f"WorldCollision(world)), received {type(world).__name__}"
            )
        kwargs.setdefault("tensor_args", TensorDeviceType(world.tensor_args.device))
        grid = cls(bounds_min, bounds_max, voxel_size, **kwargs)
        centres = grid.voxel_centres()
        far = min(2.0 * vk.FAR, grid.max_esdf_distance)  # capped like a refresh
        for i in range(grid.shape[0]):
            spheres = torch.cat((centres[i], torch.zeros_like(centres[i][..., :1])), -1)
            spheres = spheres.reshape(-1, 4).to(**world.tensor_args.as_kwargs())
            distance = world.sphere_distance(spheres, max_distance=math.inf).distance
            grid._esdf[i] = distance.reshape(grid.shape[1:]).clamp(max=far)
        grid._occupancy.copy_((grid._esdf < 0).float())
        return grid

    def __getstate__(self) -> dict[str, Any]:
        # the Warp device handle does not pickle (worlds travel to Ray workers, torchrun ranks)
        state = {k: v for k, v in self.__dict__.items() if k != "_wp_device"}
        state["_transform"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("_scratch", None)  # pickled before the transform had its own class
        state.setdefault("_transform", None)
        state.setdefault("max_esdf_distance", math.inf)
        self.__dict__.update(state)
        wp.init()
        self._wp_device = wp.device_from_torch(self.tensor_args.device)

    def __repr__(self) -> str:
        return (
            f"VoxelWorld(name={self.name!r}, shape={list(self.shape)}, "
            f"voxel_size={self.voxel_size}, bounds_min={list(self.bounds_min)}, "
            f"bounds_max={list(self.bounds_max)}, device={self.tensor_args.device})"
        )
