"""The synthetic depth camera against analytic ray casts, and depth frames integrated into a
VoxelWorld: points on the true surfaces, distances within one voxel, carving of a moved box."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from curobo_lite.geom import Cuboid, Sphere, VoxelWorld, WorldConfig
from curobo_lite.geom.depth_camera import DepthCamera, pinhole_intrinsics
from curobo_lite.types.errors import InputValueError


def _rays(camera: DepthCamera, pose: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pixel ``(origin [3], unit direction [H*W, 3], z-per-unit-length [H*W])`` in the
    world, computed independently of the kernel (numpy, the pinhole model)."""
    k = camera.intrinsics.double().numpy()
    v, u = np.meshgrid(np.arange(camera.height), np.arange(camera.width), indexing="ij")
    pixels = np.stack((u, v, np.ones_like(u)), -1).reshape(-1, 3).astype(float)
    rays = pixels @ np.linalg.inv(k).T
    w, x, y, z = pose[3:]
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    directions = rays @ rotation.T
    norms = np.linalg.norm(directions, axis=-1)
    return np.asarray(pose[:3]), directions / norms[:, None], rays[:, 2] / norms


def test_depth_of_a_box_and_a_ball_matches_analytic_ray_casts() -> None:
    """A wall facing the camera and a ball in front of it: every pixel's depth is the first
    analytic hit (the ball's tessellation within 2 mm), 0 where the ray meets nothing."""
    world = WorldConfig(
        cuboid=[Cuboid("wall", pose=[1.2, 0.0, 0.5, 1, 0, 0, 0], dims=[0.1, 0.6, 0.4])],
        sphere=[Sphere("ball", pose=[0.8, 0.1, 0.45, 1, 0, 0, 0], radius=0.08)],
    )
    camera = DepthCamera(world, width=64, height=48, fov_y_degrees=50.0)
    pose = DepthCamera.look_at([0.0, 0.0, 0.5], [1.0, 0.0, 0.5])
    depth = camera.render(pose).numpy().reshape(-1)
    origin, direction, z_per_t = _rays(camera, pose)
    # wall front face x = 1.15, |y| <= 0.3, |z - 0.5| <= 0.2
    t_wall = (1.15 - origin[0]) / direction[:, 0]
    hit = origin + t_wall[:, None] * direction
    on_wall = (np.abs(hit[:, 1]) <= 0.3) & (np.abs(hit[:, 2] - 0.5) <= 0.2)
    t = np.where(on_wall, t_wall, np.inf)
    # ball: |o + t d - c| = r
    oc = origin - np.array([0.8, 0.1, 0.45])
    b = direction @ oc
    disc = b * b - (oc @ oc - 0.08**2)
    t_ball = np.where(disc > 0, -b - np.sqrt(np.maximum(disc, 0)), np.inf)
    t = np.minimum(t, t_ball)
    expected = np.where(np.isfinite(t), t * z_per_t, 0.0)
    # pixels whose ray grazes an edge may fall either side: compare the clear ones
    clear = np.abs(disc) > 1e-3  # not grazing the ball's silhouette (its facets)
    clear &= ~(
        (np.abs(np.abs(hit[:, 1]) - 0.3) < 0.01) | (np.abs(np.abs(hit[:, 2] - 0.5) - 0.2) < 0.01)
    )
    assert clear.mean() > 0.8
    np.testing.assert_allclose(depth[clear], expected[clear], atol=2e-3)
    assert (depth[clear & np.isinf(t)] == 0).all() and (expected > 0).sum() > 300
    # the wall's pixels are exact (a plane facing the camera)
    wall_only = clear & on_wall & np.isinf(t_ball)
    np.testing.assert_allclose(depth[wall_only], 1.15, atol=1e-5)


def test_camera_arguments_are_checked() -> None:
    with pytest.raises(InputValueError, match="width"):
        DepthCamera("table", width=0)
    with pytest.raises(InputValueError, match="fov_y_degrees"):
        pinhole_intrinsics(64, 48, 180.0)
    with pytest.raises(InputValueError, match="look_at"):
        DepthCamera.look_at([0, 0, 1], [0, 0, 0])  # along up
    empty = DepthCamera(WorldConfig(), width=8, height=6)
    assert float(empty.render(DepthCamera.look_at([0, 0, 0], [1, 0, 0])).abs().sum()) == 0.0


def _box_sdf(p: np.ndarray, centre, dims) -> np.ndarray:
    q = np.abs(p - np.asarray(centre)) - 0.5 * np.asarray(dims)
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0)


def test_depth_frames_give_distances_within_one_voxel() -> None:
    """A box and a ball seen by six cameras around them: the occupied voxels hold true
    surface points (centres within half a voxel diagonal of the surfaces) and the distances at
    free voxel centres are within one voxel of the analytic ones."""
    box_centre, box_dims = np.array([0.45, 0.0, 0.1]), np.array([0.2, 0.3, 0.16])
    ball, radius = np.array([0.6, 0.1, 0.3]), 0.08
    world = WorldConfig(
        cuboid=[Cuboid("box", pose=[*box_centre, 1, 0, 0, 0], dims=box_dims.tolist())],
        sphere=[Sphere("ball", pose=[*ball, 1, 0, 0, 0], radius=radius)],
    )
    camera = DepthCamera(world, width=160, height=120, fov_y_degrees=60.0)
    voxel = 0.02
    grid = VoxelWorld([0.1, -0.4, -0.2], [0.9, 0.4, 0.6], voxel)
    target = [0.5, 0.0, 0.2]
    for offset in ([1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0.1, 0, 1], [0.1, 0, -1]):
        pose = DepthCamera.look_at((np.asarray(target) + offset).tolist(), target)
        grid.integrate_depth(camera.render(pose), camera.intrinsics, pose, update_esdf=False)
    grid.update_esdf()

    def truth(p: np.ndarray) -> np.ndarray:
        return np.minimum(
            _box_sdf(p, box_centre, box_dims), np.linalg.norm(p - ball, axis=-1) - radius
        )

    occupied = grid.occupied_centres().double().numpy()
    assert len(occupied) > 500
    assert np.abs(truth(occupied)).max() <= 0.5 * math.sqrt(3) * voxel + 1e-6
    centres = grid.voxel_centres().reshape(-1, 3)
    expected = truth(centres.double().numpy())
    seen = expected > 0  # outside both solids (their insides are not observed)
    measured = grid.esdf.reshape(-1).numpy()
    assert np.abs(measured[seen] - expected[seen]).max() <= voxel


def test_depth_carving_removes_a_moved_box() -> None:
    """The box moves; the next frames carve its old place free (no ghost) and show it at the
    new one."""

    def scene(x: float) -> WorldConfig:
        return WorldConfig(
            cuboid=[
                Cuboid("box", pose=[x, 0.0, 0.1, 1, 0, 0, 0], dims=[0.12, 0.12, 0.2]),
                Cuboid("floor", pose=[0.5, 0.0, -0.02, 1, 0, 0, 0], dims=[1.2, 1.2, 0.04]),
            ]
        )

    grid = VoxelWorld([0.1, -0.4, -0.06], [0.9, 0.4, 0.4], 0.02)
    old, new = torch.tensor([[0.35, 0.0, 0.12, 0.0]]), torch.tensor([[0.65, 0.0, 0.12, 0.0]])
    poses = [
        DepthCamera.look_at(eye, [0.5, 0.0, 0.1]) for eye in ([1.3, 0.5, 0.8], [-0.2, 0.3, 0.9])
    ]
    camera = DepthCamera(scene(0.35), width=160, height=120)
    for pose in poses:
        grid.integrate_depth(camera.render(pose), camera.intrinsics, pose)
    assert float(grid.sphere_distance(old).distance) <= 0.07  # the box's faces, 6 cm away
    assert float(grid.sphere_distance(new).distance) > 0.1
    camera.update_world(scene(0.65))
    for pose in poses:
        grid.integrate_depth(camera.render(pose), camera.intrinsics, pose, depth_scale=1.0)
    assert float(grid.sphere_distance(old).distance) >= 0.1  # the floor, 12 cm below
    assert float(grid.sphere_distance(new).distance) <= 0.07
    # millimetre images integrate the same
    again = VoxelWorld([0.1, -0.4, -0.06], [0.9, 0.4, 0.4], 0.02)
    millimetres = (camera.render(poses[0]) * 1000).round().to(torch.int32)
    again.integrate_depth(millimetres, camera.intrinsics, poses[0], depth_scale=0.001)
    assert again.occupied_centres().shape[0] > 100


def test_depth_decay_forgets_what_is_not_seen_again() -> None:
    """A wall 0.5 m in front of a camera, then frames without readings: with ``decay = 0.8``
    its voxels stay for three of them (0.8^3 >= 0.5) and are gone at the fourth (the decay
    runs inside the carving pass); frames that see it again keep it."""
    intrinsics = torch.tensor([[40.0, 0.0, 20.0], [0.0, 40.0, 15.0], [0.0, 0.0, 1.0]])
    identity = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]  # looking along +z
    wall, blank = torch.full((30, 40), 0.5), torch.zeros(30, 40)
    probe = torch.tensor([[0.0, 0.0, 0.45, 0.0]])  # 5 cm in front of the wall's centre
    for frames, expect in (([blank] * 3, True), ([blank] * 4, False), ([wall] * 5, True)):
        grid = VoxelWorld([-0.3, -0.3, 0.1], [0.3, 0.3, 0.7], 0.02, decay=0.8)
        grid.integrate_depth(wall, intrinsics, identity)
        for depth in frames:
            grid.integrate_depth(depth, intrinsics, identity)
        near = float(grid.sphere_distance(probe).distance) <= 0.06
        assert near == expect, (len(frames), expect)
        assert bool((grid.occupancy >= 0.5).any()) == expect


def test_viewer_draws_a_voxel_world_as_its_occupied_voxels() -> None:
    """The viewer shows a grid's occupied voxel centres beside the primitives, and a new frame
    integrated into the shared grid after the next sync."""
    pytest.importorskip("viser", reason="the viewer needs viser: pip install '.[viz]'")
    from curobo_lite.viz import Viewer

    grid = VoxelWorld([0.3, -0.3, 0.0], [0.7, 0.3, 0.4], 0.02, name="camera")
    grid.integrate_points(torch.tensor([[0.505, 0.0, 0.2], [0.525, 0.0, 0.2]]))
    world = WorldConfig(cuboid=[Cuboid("box", pose=[0.5, 0.4, 0.1, 1, 0, 0, 0])], voxel=[grid])
    with Viewer("franka", world=world, port=0) as viewer:
        points = viewer._obstacle_nodes["camera"].points
        np.testing.assert_allclose(np.sort(points[:, 0]), [0.51, 0.53], atol=1e-3)
        assert "box" in viewer._obstacle_nodes
        grid.integrate_points(torch.tensor([[0.4, 0.1, 0.1]]))
        viewer.sync_world()
        assert len(viewer._obstacle_nodes["camera"].points) == 3
