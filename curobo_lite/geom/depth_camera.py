"""A synthetic pinhole depth camera: ray casting of a world's primitives and meshes with Warp.

:class:`DepthCamera` tessellates the enabled obstacles of a
:class:`~curobo_lite.geom.world.WorldConfig` (boxes exactly; spheres, capsules and cylinders as
trimesh's fine tessellations, within a millimetre of the true surface for the bundled
scenes' sizes), merges them into one ``wp.Mesh`` in the base frame and renders ``[H, W]`` depth
images (metres along the optical axis, 0 where a ray meets nothing) from any camera pose, so
tests and demos of :class:`~curobo_lite.geom.voxel_world.VoxelWorld` need no hardware.

Camera frames follow OpenCV: x right, y down, z forward; :meth:`DepthCamera.look_at` builds
one from an eye point and a target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import trimesh
import warp as wp

from curobo_lite.geom.obstacle_mesh import obstacle_mesh
from curobo_lite.geom.perception_inputs import pose_frame
from curobo_lite.geom.voxel_world import VoxelWorld
from curobo_lite.geom.world import Sphere, WorldConfig
from curobo_lite.kernels.launch import as_warp
from curobo_lite.kernels.raycast_kernels import render_depth
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.types.math import matrix_to_quat


def pinhole_intrinsics(width: int, height: int, fov_y_degrees: float) -> torch.Tensor:
    """``[3, 3]`` pinhole matrix of a ``width x height`` image with the given vertical field of
    view, square pixels and the principal point at the image centre."""
    if not 0.0 < fov_y_degrees < 180.0:
        raise InputValueError(
            f"fov_y_degrees: expected a number in (0, 180), received {fov_y_degrees!r}"
        )
    focal = 0.5 * height / math.tan(math.radians(fov_y_degrees) / 2.0)
    return torch.tensor(
        [[focal, 0.0, (width - 1) / 2.0], [0.0, focal, (height - 1) / 2.0], [0.0, 0.0, 1.0]]
    )


def placed_meshes(world: WorldConfig) -> list[trimesh.Trimesh]:
    """The surfaces of ``world``'s enabled obstacles in the base frame (their poses applied)."""
    parts = []
    for obstacle in world.objects:
        if obstacle.enabled:
            transform = trimesh.transformations.quaternion_matrix(obstacle.pose[3:])
            transform[:3, 3] = obstacle.pose[:3]
            parts.append(obstacle_mesh(obstacle).apply_transform(transform))
    return parts


class DepthCamera:
    """Renders depth images of a world's enabled obstacles.

    Args:
        world: the scene (a ``WorldConfig``, world file or bundled name); voxel grids in it
            are not drawn.
        width, height: image size (pixels).
        fov_y_degrees: vertical field of view, used when ``intrinsics`` is not given.
        intrinsics: ``[3, 3]`` pinhole matrix (overrides ``fov_y_degrees``).
        max_range: rays stop here (metres along the ray).
        tensor_args: device of the mesh and of the images.
    """

    def __init__(
        self,
        world: WorldConfig | str,
        width: int = 640,
        height: int = 480,
        fov_y_degrees: float = 60.0,
        intrinsics: torch.Tensor | np.ndarray | None = None,
        max_range: float = 10.0,
        tensor_args: TensorDeviceType | None = None,
    ) -> None:
        for name, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputValueError(f"{name}: expected a positive integer, received {value!r}")
        if not 0.0 < max_range < math.inf:
            raise InputValueError(
                f"max_range: expected a positive finite number, received {max_range!r}"
            )
        self.tensor_args = TensorDeviceType() if tensor_args is None else tensor_args
        if intrinsics is None:
            intrinsics = pinhole_intrinsics(width, height, fov_y_degrees)
        intrinsics = torch.as_tensor(np.asarray(intrinsics, dtype=np.float64))
        if intrinsics.shape != (3, 3) or not bool(torch.isfinite(intrinsics).all()):
            raise InputValueError(
                f"intrinsics: expected a finite [3, 3] matrix, received shape "
                f"{list(intrinsics.shape)}"
            )
        self.width, self.height, self.max_range = width, height, float(max_range)
        self.intrinsics = intrinsics.to(torch.float32)
        self._k_inv = wp.mat33f(*torch.linalg.inv(intrinsics).reshape(-1).tolist())
        wp.init()
        self._wp_device = wp.device_from_torch(self.tensor_args.device)
        self.update_world(world)

    def update_world(self, world: WorldConfig | str) -> None:
        """Render ``world`` from now on (its enabled obstacles, merged into one mesh)."""
        parts = placed_meshes(WorldConfig.load(world))
        self._mesh = None
        if parts:
            merged = trimesh.util.concatenate(parts)
            self._mesh = wp.Mesh(
                points=wp.array(
                    np.asarray(merged.vertices, np.float32), dtype=wp.vec3f, device=self._wp_device
                ),
                indices=wp.array(
                    np.asarray(merged.faces, np.int32).reshape(-1),
                    dtype=wp.int32,
                    device=self._wp_device,
                ),
            )

    def render(self, camera_pose: Pose | Sequence[float] | torch.Tensor) -> torch.Tensor:
        """``[H, W]`` float32 depth (metres along the optical axis, 0: no surface) seen from
        ``camera_pose`` (a one-row ``Pose`` or ``[7]``, OpenCV axes, base frame)."""
        rotation, position = pose_frame("camera_pose", camera_pose, torch.device("cpu"))
        depth = torch.zeros(self.height, self.width, device=self.tensor_args.device)
        if self._mesh is None:
            return depth
        wp.launch(
            render_depth,
            dim=(self.height, self.width),
            inputs=[
                self._mesh.id,
                wp.mat33f(*rotation.reshape(-1).tolist()),
                wp.vec3f(*position.tolist()),
                self._k_inv,
                self.max_range,
                as_warp(depth),
            ],
            device=self._wp_device,
            stream=wp.stream_from_torch(depth.device) if depth.is_cuda else None,
        )
        return depth

    @staticmethod
    def look_at(
        eye: Sequence[float], target: Sequence[float], up: Sequence[float] = (0.0, 0.0, 1.0)
    ) -> list[float]:
        """``[7]`` pose (``x, y, z, qw, qx, qy, qz``) of a camera at ``eye`` looking at
        ``target`` with image rows running against ``up`` (OpenCV axes)."""
        eye_, target_, up_ = (np.asarray(v, dtype=float) for v in (eye, target, up))
        forward = target_ - eye_
        right = np.cross(forward, up_)
        if not np.linalg.norm(forward) > 0 or not np.linalg.norm(right) > 1e-9:
            raise InputValueError(
                f"look_at: expected a target away from eye and not along up, received eye "
                f"{eye_.tolist()}, target {target_.tolist()}, up {up_.tolist()}"
            )
        z = forward / np.linalg.norm(forward)
        x = right / np.linalg.norm(right)
        y = np.cross(z, x)
        matrix = torch.tensor(np.stack((x, y, z), axis=1))
        quaternion = matrix_to_quat(matrix[None])[0]
        return eye_.tolist() + quaternion.tolist()

    def __repr__(self) -> str:
        return (
            f"DepthCamera({self.width}x{self.height}, max_range={self.max_range}, "
            f"{self.tensor_args})"
        )


def depth_world(
    world: WorldConfig | str,
    cameras: int = 3,
    voxel_size: float = 0.02,
    robot_spheres: torch.Tensor | None = None,
    width: int = 320,
    height: int = 240,
    tensor_args: TensorDeviceType | None = None,
) -> VoxelWorld:
    """What ``cameras`` synthetic depth cameras see of ``world``: a :class:`VoxelWorld`
    (``conservative_inflation``) over the box of the world's enabled obstacles (grown by 0.2 m
    and cut to 2 m around the robot's base), integrated from ``width x height`` frames taken
    from a ring around and above the box's centre, looking at it. ``robot_spheres``: drawn
    into the scene (a real camera sees the arm) and filtered out of the frames."""
    if isinstance(cameras, bool) or not isinstance(cameras, int) or cameras < 1:
        raise InputValueError(f"cameras: expected an integer >= 1, received {cameras!r}")
    world = WorldConfig.load(world)
    boxes = [mesh.bounds for mesh in placed_meshes(world)]
    if not boxes:
        raise InputValueError("world: expected at least one enabled obstacle to look at")
    low = np.maximum(np.min([b[0] for b in boxes], 0) - 0.2, -2.0)
    high = np.minimum(np.max([b[1] for b in boxes], 0) + 0.2, 2.0)
    grid = VoxelWorld(low, np.maximum(high, low + 4 * voxel_size), voxel_size, tensor_args)
    grid.inflation = grid.conservative_inflation()
    seen = world.copy()
    if robot_spheres is not None:
        for i, (x, y, z, r) in enumerate(robot_spheres.detach().reshape(-1, 4).tolist()):
            if r > 0:
                seen.add(Sphere(f"robot_sphere_{i}", pose=[x, y, z, 1, 0, 0, 0], radius=r))
    camera = DepthCamera(seen, width, height, tensor_args=tensor_args)
    centre = 0.5 * (low + high)
    reach = float(np.linalg.norm(high - low))
    for k in range(cameras):
        angle = 2.0 * math.pi * (k + 0.5) / cameras
        eye = centre + reach * np.array([math.cos(angle), math.sin(angle), 0.6])
        pose = DepthCamera.look_at(eye.tolist(), centre.tolist())
        grid.integrate_depth(
            camera.render(pose), camera.intrinsics, pose, robot_spheres=robot_spheres,
            update_esdf=False,
        )  # fmt: skip
    grid.update_esdf()
    return grid
