"""The measurement side of :class:`~curobo_lite.geom.voxel_world.VoxelWorld`: point clouds
and depth images into its occupancy grid (marking, carving, decay, robot self-filtering).

:class:`VoxelIntegration` is a mixin of ``VoxelWorld``: it reads the grid's state
(``_occupancy``, ``shape``, ``bounds_min``, ``voxel_size``, ``decay``, ``carve_margin``,
``self_filter_margin``, ``max_range``, ``tensor_args``) and its launch helpers, and calls
``update_esdf`` after an integration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.geom.esdf_transform import PIECES_PER_CPU_THREAD
from curobo_lite.geom.perception_inputs import as_points, pose_frame, positive_number
from curobo_lite.kernels import voxel_kernels as vk
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types import Pose
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputValueError


class VoxelIntegration:
    """``integrate_points`` and ``integrate_depth`` of :class:`VoxelWorld` (see there)."""

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
        depth = depth.detach().to(device=device, dtype=torch.float32).contiguous()
        depth_wp = as_warp(depth)
        flags = torch.zeros(2, device=device, dtype=torch.int32)
        # one Warp pass instead of torch's reductions (which wait for both cores, costly on a
        # shared host)
        per_thread = self._per_thread() * 16
        wp.launch(
            vk.check_depth,
            dim=-(-depth.numel() // per_thread),
            inputs=[as_warp(depth.view(-1)), per_thread, as_warp(flags)],
            **self._stream(),
        )
        non_finite, negative = flags.tolist()
        if non_finite:
            raise InputValueError("depth: expected finite values, received NaN or inf")
        if negative:
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
        position = wp.vec3f(*translation.tolist())
        count = self._occupancy.numel()
        occupancy = as_warp(self._occupancy.view(-1))
        camera = [
            wp.mat33f(*rotation.T.reshape(-1).tolist()), position,
            wp.mat33f(*k.reshape(-1).tolist()), depth_wp, scale, self.max_range,
            self.carve_margin * self.voxel_size,
        ]  # fmt: skip
        grid = [wp.vec3i(*self.shape), self._grid_origin(), self.voxel_size]
        per_thread = self._per_thread()

        def carve(b0: int, b1: int) -> tuple[int, list]:
            return -(-(b1 - b0) // per_thread), [
                occupancy, *grid, *camera, self.decay, b0, b1, per_thread,
            ]  # fmt: skip

        # the decay rides along the carving's pass over the grid
        launch_rows(vk.carve_projective, count, device, carve, count, PIECES_PER_CPU_THREAD)
        pixel_to_base = rotation.double() @ torch.linalg.inv(k.double())
        wp.launch(
            vk.mark_depth,
            dim=(depth.shape[0], -(-depth.shape[1] // per_thread)),
            inputs=[
                depth_wp,
                scale,
                self.max_range,
                wp.mat33f(*pixel_to_base.reshape(-1).tolist()),
                position,
                self._grid_origin(),
                1.0 / self.voxel_size,
                *self._self_filter(spheres),
                per_thread,
                as_warp(self._occupancy),
            ],  # fmt: skip
            **self._stream(),
        )
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

    def _self_filter(self, spheres: torch.Tensor) -> list:
        """The marking kernels' self-filter arguments: the robot ``spheres [S, 4]`` (radius
        already grown by the margin) and the box around them."""
        if spheres.shape[0]:
            reach = spheres[:, 3:]
            low = (spheres[:, :3] - reach).min(0).values.tolist()
            high = (spheres[:, :3] + reach).max(0).values.tolist()
        else:
            low, high = [1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]  # an empty box: no filter
        return [as_warp(spheres.contiguous(), wp.vec4f), wp.vec3f(*low), wp.vec3f(*high)]

    def _integrate(self, points: torch.Tensor, spheres: torch.Tensor) -> None:
        """Mark ``points [N, 3]`` (base frame; NaN rows skipped) occupied, except those within
        the robot ``spheres [S, 4]`` (radius already grown by the margin)."""
        per_thread = self._per_thread()
        wp.launch(
            vk.mark_points,
            dim=-(-points.shape[0] // per_thread),
            inputs=[
                as_warp(points.contiguous(), wp.vec3f),
                self._grid_origin(),
                1.0 / self.voxel_size,
                *self._self_filter(spheres),
                per_thread,
                as_warp(self._occupancy),
            ],  # fmt: skip
            **self._stream(),
        )
