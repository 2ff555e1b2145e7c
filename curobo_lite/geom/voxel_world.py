"""A voxel signed-distance world built from point clouds and depth images (an ESDF in Warp).

:class:`VoxelWorld` holds an occupancy grid over an axis-aligned box of the robot base frame and
the Euclidean signed distance field (ESDF) computed from it:

- :meth:`VoxelWorld.integrate_points` and :meth:`VoxelWorld.integrate_depth` mark the voxels
  that hold measured points occupied, carve free space along the camera rays (so an obstacle
  that moved leaves no ghost), drop the points that lie on the robot's own spheres (plus
  :attr:`VoxelWorld.self_filter_margin`), and refresh the ESDF;
- the ESDF is the exact Euclidean distance transform of the occupancy (Felzenszwalb's separable
  transform along z, y and x, in :mod:`curobo_lite.kernels.edt_kernels`): at a free voxel the
  distance from its centre to the nearest occupied voxel's centre, at an occupied one minus
  (the distance to the nearest free voxel's centre less one voxel). The zero level runs
  through the centres of the occupied voxels at the boundary, each of which holds a measured
  point, so a distance is within ``sqrt(3)/2`` voxel of the distance to the measured surface
  at the voxel centres; distances are negative deeper inside occupied regions. Measured
  surfaces are one or two voxels thick: the inside of a solid seen only from outside is not
  known to be occupied;
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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.geom.perception_inputs import as_points, pose_frame, positive_number, vector3
from curobo_lite.geom.sphere_query import SphereWorldQuery, WorldDistance, check_ranges
from curobo_lite.kernels import edt_kernels as edt
from curobo_lite.kernels import esdf_query_kernels as qk
from curobo_lite.kernels import voxel_kernels as vk
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputTypeError, InputValueError

#: sphere rows per thread of a CPU query launch (a Warp CPU thread copies the launch's
#: arguments first, which costs more than the one grid read of most rows)
QUERY_ROWS_PER_CPU_THREAD = 32
#: the same for the integration and ESDF kernels' voxels and points
CPU_ELEMENTS_PER_THREAD = 64
#: the most voxels along one axis (the transform's exact integer comparisons, about
#: ``6 n^3``, must fit an int32)
MAX_AXIS_VOXELS = 700
#: the most voxels one grid may hold (~1.6 GB of float32 buffers): larger grids are an error
MAX_VOXELS = 1 << 26


class VoxelWorld:
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
        self.name = name
        wp.init()
        self._wp_device = wp.device_from_torch(self.tensor_args.device)
        kw = {"device": self.tensor_args.device, "dtype": torch.float32}
        self._occupancy = torch.zeros(self.shape, **kw)
        self._esdf = torch.full(self.shape, 2.0 * vk.FAR, **kw)
        self._scratch: tuple[torch.Tensor, ...] | None = None

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
        other._scratch = None
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

    # integration ---------------------------------------------------------------------------------
    def integrate_points(
        self,
        points: torch.Tensor | np.ndarray,
        frame_pose: Pose | Sequence[float] | torch.Tensor | None = None,
        robot_spheres: torch.Tensor | None = None,
        carve: bool = False,
        update_esdf: bool = True,
    ) -> None:
        """Mark the voxels holding ``points`` occupied.

        Args:
            points: ``[N, 3]`` (or ``[..., 3]``) in the frame ``frame_pose`` (default: the
                base frame), any float tensor or numpy array; points outside the grid are
                ignored.
            frame_pose: pose of the points' frame in the base frame (a one-row ``Pose`` or
                ``[7]`` ``x, y, z, qw, qx, qy, qz``).
            robot_spheres: ``[..., 4]`` the robot's spheres in the base frame; points within
                ``radius + self_filter_margin`` of one are dropped (radius < 0: ignored).
            carve: free the voxels between the frame's origin (the sensor) and each point.
            update_esdf: refresh the ESDF now (``False``: call :meth:`update_esdf` after the
                last of several integrations).

        Every argument is checked before the grid changes: bad input leaves it as it was.
        """
        device = self.tensor_args.device
        local = as_points("points", points, device)
        if local.shape[0] == 0:
            raise InputValueError("points: expected at least one point, received an empty cloud")
        rotation, translation = self._frame("frame_pose", frame_pose)
        spheres = self._robot_spheres(robot_spheres)
        world = local @ rotation.T + translation
        if self.decay < 1.0:
            self._occupancy.mul_(self.decay)
        if carve:
            self._carve_rays(world, translation)
        self._integrate(world, spheres)
        if update_esdf:
            self.update_esdf()

    def integrate_depth(
        self,
        depth: torch.Tensor | np.ndarray,
        intrinsics: torch.Tensor | np.ndarray | Sequence[Sequence[float]],
        camera_pose: Pose | Sequence[float] | torch.Tensor,
        depth_scale: float = 1.0,
        robot_spheres: torch.Tensor | None = None,
        update_esdf: bool = True,
    ) -> None:
        """Integrate one depth image: its points become occupied, the space in front of them
        is carved free along the camera rays.

        Args:
            depth: ``[H, W]`` depth along the optical axis, ``depth * depth_scale`` metres
                (``depth_scale=0.001`` for millimetre images); 0 means no reading. NaN, inf
                and negative values are refused (``torch.nan_to_num(depth, nan=0.0)`` turns a
                sensor's NaN "no reading" into 0).
            intrinsics: ``[3, 3]`` pinhole matrix ``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]``
                (pixels; pixel ``(u, v)`` is column ``u``, row ``v``).
            camera_pose: the camera frame in the base frame (OpenCV axes: x right, y down,
                z forward), a one-row ``Pose`` or ``[7]``.
            depth_scale: metres per depth unit.
            robot_spheres, update_esdf: as in :meth:`integrate_points`.
        """
        device = self.tensor_args.device
        if isinstance(depth, np.ndarray):
            depth = torch.from_numpy(np.ascontiguousarray(depth))
        require_tensor("depth", depth)
        if depth.ndim != 2 or min(depth.shape) < 1:
            raise InputValueError(f"depth: expected shape [H, W], received {list(depth.shape)}")
        depth = depth.detach().to(device=device, dtype=torch.float32)
        if not bool(torch.isfinite(depth).all()):
            raise InputValueError("depth: expected finite values, received NaN or inf")
        if bool((depth < 0).any()):
            raise InputValueError(f"depth: expected values >= 0, received {float(depth.min())}")
        scale = positive_number("depth_scale", depth_scale)
        k = as_points("intrinsics", intrinsics, device)
        if k.shape != (3, 3) or not (float(k[0, 0]) > 0 and float(k[1, 1]) > 0):
            raise InputValueError(
                f"intrinsics: expected a [3, 3] pinhole matrix with fx, fy > 0, received "
                f"{k.tolist() if k.numel() <= 9 else list(k.shape)}"
            )
        rotation, translation = self._frame("camera_pose", camera_pose)
        spheres = self._robot_spheres(robot_spheres)
        height, width = depth.shape
        points = torch.empty(height * width, 3, **self._kw())
        rotation_wp = wp.mat33f(*rotation.reshape(-1).tolist())
        position_wp = wp.vec3f(*translation.tolist())
        depth_wp = as_warp(depth)
        wp.launch(
            vk.depth_to_points,
            dim=(height, width),
            inputs=[
                depth_wp,
                scale,
                self.max_range,
                wp.mat33f(*torch.linalg.inv(k.double()).reshape(-1).tolist()),
                rotation_wp,
                position_wp,
                as_warp(points, wp.vec3f),
            ],  # fmt: skip
            **self._stream(),
        )
        if self.decay < 1.0:
            self._occupancy.mul_(self.decay)
        count = self._occupancy.numel()
        occupancy = as_warp(self._occupancy.view(-1))
        camera = [
            wp.mat33f(*rotation.T.reshape(-1).tolist()), position_wp,
            wp.mat33f(*k.reshape(-1).tolist()), depth_wp, scale, self.max_range,
            self.carve_margin * self.voxel_size,
        ]  # fmt: skip
        grid = [wp.vec3i(*self.shape), self._grid_origin(), self.voxel_size]

        per_thread = self._per_thread()

        def carve(b0: int, b1: int) -> tuple[int, list]:
            return -(-(b1 - b0) // per_thread), [occupancy, *grid, *camera, b0, b1, per_thread]

        launch_rows(vk.carve_projective, count, self.tensor_args.device, carve, count)
        self._integrate(points, spheres)
        if update_esdf:
            self.update_esdf()

    def _frame(self, name: str, pose: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if pose is None:
            return torch.eye(3, **self._kw()), torch.zeros(3, **self._kw())
        return pose_frame(name, pose, self.tensor_args.device)

    def _robot_spheres(self, spheres: Any) -> torch.Tensor:
        if spheres is None:
            return torch.zeros(0, 4, **self._kw())
        spheres = as_points("robot_spheres", spheres, self.tensor_args.device, columns=4)
        spheres = spheres[spheres[:, 3] >= 0]
        return torch.cat((spheres[:, :3], spheres[:, 3:] + self.self_filter_margin), -1)

    def _carve_rays(self, points: torch.Tensor, sensor: torch.Tensor) -> None:
        """Free the voxels on the segments from ``sensor [3]`` to ``points [N, 3]``."""
        rays = torch.arange(points.shape[0], device=points.device, dtype=torch.int32)
        wp.launch(
            vk.carve_rays,
            dim=points.shape[0],
            inputs=[
                as_warp(points.contiguous(), wp.vec3f),
                as_warp(rays),
                wp.vec3f(*sensor.tolist()),
                self._grid_origin(),
                1.0 / self.voxel_size,
                self.carve_margin,
                as_warp(self._occupancy),
            ],  # fmt: skip
            **self._stream(),
        )

    def _integrate(self, points: torch.Tensor, spheres: torch.Tensor) -> None:
        """Mark ``points [N, 3]`` (base frame; NaN rows skipped) occupied, except those within
        the robot ``spheres [S, 4]`` (radius already grown by the margin)."""
        if spheres.shape[0]:
            reach = spheres[:, 3:]
            low = (spheres[:, :3] - reach).min(0).values.tolist()
            high = (spheres[:, :3] + reach).max(0).values.tolist()
        else:
            low, high = [1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]  # an empty box: no filter
        per_thread = self._per_thread()
        wp.launch(
            vk.mark_points,
            dim=-(-points.shape[0] // per_thread),
            inputs=[
                as_warp(points.contiguous(), wp.vec3f),
                self._grid_origin(),
                1.0 / self.voxel_size,
                as_warp(spheres.contiguous(), wp.vec4f),
                wp.vec3f(*low),
                wp.vec3f(*high),
                per_thread,
                as_warp(self._occupancy),
            ],  # fmt: skip
            **self._stream(),
        )

    def update_esdf(self) -> None:
        """Recompute the ESDF from the occupancy (in place: the ESDF keeps its address, so a
        captured CUDA graph that queries it sees the new values)."""
        if self._scratch is None:
            count = self._occupancy.numel()
            lines = count // min(self.shape)
            self._scratch = (
                torch.empty(self.shape, **self._kw()),
                torch.empty(self.shape, **self._kw()),
                torch.empty(count, device=self.tensor_args.device, dtype=torch.int32),
                torch.empty(count, **self._kw()),
                torch.empty(2 * (count + lines), device=self.tensor_args.device, dtype=torch.int32),
            )
        outside, inside, sites, values, bounds = self._scratch
        count = self._occupancy.numel()
        device = self.tensor_args.device
        occupancy = as_warp(self._occupancy.view(-1))
        fields = [as_warp(outside.view(-1)), as_warp(inside.view(-1))]
        scratch = [as_warp(sites), as_warp(values), as_warp(bounds)]

        strides = outside.stride()
        for axis in (2, 1, 0):
            n = self.shape[axis]
            a, b = (i for i in range(3) if i != axis)
            line = [n, strides[axis], self.shape[b], strides[a], strides[b]]

            def first(b0: int, b1: int, line: list = line) -> tuple[int, list]:
                return b1 - b0, [occupancy, *line, b0, *fields]

            def make_launch(b0: int, b1: int, line: list = line) -> tuple[int, list]:
                return b1 - b0, [*fields, *line, b0, *scratch]

            if axis == 2:  # the contiguous axis, from the occupancy
                launch_rows(edt.edt_first_pass, count // n, device, first, count * 4)
            else:
                launch_rows(edt.edt_pass, count // n, device, make_launch, count * 8)
        esdf = as_warp(self._esdf.view(-1))

        per_thread = self._per_thread()

        def finish(b0: int, b1: int) -> tuple[int, list]:
            count = -(-(b1 - b0) // per_thread)
            return count, [occupancy, *fields, self.voxel_size, b0, b1, per_thread, esdf]

        launch_rows(edt.edt_finish, count, device, finish, count)

    # queries -------------------------------------------------------------------------------------
    def sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
    ) -> WorldDistance:
        """Signed distance and cost of spheres against the grid alone (the
        :meth:`WorldCollision.sphere_distance <curobo_lite.geom.WorldCollision.sphere_distance>`
        contract: ``spheres [..., N, 4]`` on the grid's device, float32 or float64, radius < 0
        disabled; ``distance`` and ``cost`` ``[..., N]``, differentiable)."""
        require_tensor("spheres", spheres)
        if spheres.ndim < 2 or spheres.shape[-1] != 4:
            raise InputValueError(
                f"spheres: expected shape [..., N, 4], received {tuple(spheres.shape)}"
            )
        if spheres.dtype not in qk.SCALAR_TYPES:
            raise InputTypeError(f"spheres: expected float32 or float64, received {spheres.dtype}")
        if spheres.device != self.tensor_args.device:
            raise InputValueError(
                f"spheres: expected device {self.tensor_args.device} (the grid's), "
                f"received {spheres.device}"
            )
        act, max_d = check_ranges(activation_distance, max_distance)
        distance, cost = SphereWorldQuery.apply(spheres, self, act, max_d, 0, 1.0, 1)
        return WorldDistance(distance, cost)

    def _launch(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
    ) -> tuple[torch.Tensor, ...]:
        """The grid's flat outputs for :class:`SphereWorldQuery` (an empty world's, folded)."""
        rows = spheres.numel() // 4
        kw = {"device": spheres.device, "dtype": spheres.dtype}
        distance = torch.full((rows,), max_distance, **kw)
        cost = torch.zeros(rows, **kw)
        dummy = torch.zeros(1, 4, **kw)
        grads = [torch.zeros(rows, 4, **kw) if write_grad else dummy for _ in range(2)]
        grads += [torch.zeros(rows, 4, **kw) if write_grad and sweep else dummy for _ in range(2)]
        self.fold_query(
            spheres, activation, max_distance, sweep, sweep_spacing, max_sweep_samples,
            write_grad, distance, cost, grads,
        )  # fmt: skip
        return distance, cost, *grads

    def fold_query(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
        distance: torch.Tensor,
        cost: torch.Tensor,
        grads: Sequence[torch.Tensor],
    ) -> None:
        """Fold the grid's result for ``spheres`` (``[..., N, 4]``; ``[B, H, N, 4]`` with
        ``sweep``) into the flat outputs of another world's query (``distance``, ``cost``
        ``[S]``; ``grads``: four ``[S, 4]``, or ``[1, 4]`` placeholders without
        ``write_grad``): the smaller distance, the summed cost. With ``sweep`` each part's cost
        is its largest over the samples, so the sum bounds the largest total from above."""
        horizon, num_spheres = (spheres.shape[1], spheres.shape[2]) if sweep else (1, 1)
        flat = spheres.reshape(-1, 4).contiguous()
        rows = flat.shape[0]
        flat_wp = as_warp(flat)
        esdf = as_warp(self._esdf)
        scalars = [float(v) for v in self.bounds_min] + [self.voxel_size, self.inflation]

        per_thread = 1 if flat.is_cuda else QUERY_ROWS_PER_CPU_THREAD

        def make_launch(b0: int, b1: int) -> tuple[int, list]:
            outputs = [as_warp(distance[b0:b1]), as_warp(cost[b0:b1])]
            outputs += [as_warp(g[b0:b1]) if g.shape[0] == rows else as_warp(g) for g in grads]
            return -(-(b1 - b0) // per_thread), [
                flat_wp, activation, max_distance, sweep, horizon, num_spheres, sweep_spacing,
                max_sweep_samples, esdf, *scalars, b0, b1, per_thread, int(write_grad),
                *outputs,
            ]  # fmt: skip

        elements = rows * 16 * (max_sweep_samples if sweep else 1)
        launch_rows(qk.query_kernel(flat.dtype), rows, flat.device, make_launch, elements)

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
        for i in range(grid.shape[0]):
            spheres = torch.cat((centres[i], torch.zeros_like(centres[i][..., :1])), -1)
            spheres = spheres.reshape(-1, 4).to(**world.tensor_args.as_kwargs())
            distance = world.sphere_distance(spheres, max_distance=math.inf).distance
            grid._esdf[i] = distance.reshape(grid.shape[1:]).clamp(max=2.0 * vk.FAR)
        grid._occupancy.copy_((grid._esdf < 0).float())
        return grid

    def __getstate__(self) -> dict[str, Any]:
        # the Warp device handle does not pickle (worlds travel to Ray workers, torchrun ranks)
        state = {k: v for k, v in self.__dict__.items() if k != "_wp_device"}
        state["_scratch"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        wp.init()
        self._wp_device = wp.device_from_torch(self.tensor_args.device)

    def __repr__(self) -> str:
        return (
            f"VoxelWorld(name={self.name!r}, shape={list(self.shape)}, "
            f"voxel_size={self.voxel_size}, bounds_min={list(self.bounds_min)}, "
            f"bounds_max={list(self.bounds_max)}, device={self.tensor_args.device})"
        )
