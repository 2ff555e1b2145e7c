"""Warp kernels that integrate measurements into a voxel grid
(:mod:`curobo_lite.geom.voxel_world`).

Grid: ``[nx, ny, nz]`` float32 voxels of side ``v`` from the grid's lower corner ``origin``;
voxel ``(i, j, k)`` has its centre at ``origin + (i + 1/2, j + 1/2, k + 1/2) v``; occupancy in
``[0, 1]``, occupied from :data:`OCCUPIED`.

- :func:`mark_points`: integration, one thread per point: the voxel holding the point becomes
  occupied (value 1), unless the point lies inside one of the robot's spheres (self-filter).
- :func:`mark_depth`: the same for a depth image, one thread per pixel (or a block of them);
  :func:`check_depth` flags NaN, inf and negative pixels first.
- :func:`carve_projective`: decay and free-space carving of a depth image, one thread per voxel:
  an occupied voxel whose centre and corners project onto pixels that read farther becomes
  free.
- :func:`carve_rays`: free-space carving of a point cloud, one thread per ray: every voxel the
  segment from the sensor to a point crosses, up to ``margin`` voxels short of it, becomes free.

The distance transform is in :mod:`curobo_lite.kernels.edt_kernels`, the queries in
:mod:`curobo_lite.kernels.esdf_query_kernels`.
"""

from __future__ import annotations

import warp as wp

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: occupancy value from which a voxel counts as occupied
OCCUPIED = 0.5
#: grid values (metres) at or above this mean "no obstacle in the grid"
FAR = 1.0e6

Grid = wp.array3d(dtype=wp.float32)


@wp.func
def _voxel_of(p: wp.vec3f, origin: wp.vec3f, inv_voxel: float, shape: wp.vec3i):
    """``(inside, index)`` of the voxel holding world point ``p``."""
    x = (p - origin) * inv_voxel
    index = wp.vec3i(int(wp.floor(x[0])), int(wp.floor(x[1])), int(wp.floor(x[2])))
    inside = wp.bool(True)
    for a in range(3):
        if index[a] < 0 or index[a] >= shape[a]:
            inside = False
    return inside, index


@wp.func
def _mark_point(
    p: wp.vec3f,
    origin: wp.vec3f,
    inv_voxel: float,
    robot_spheres: wp.array(dtype=wp.vec4f),
    robot_lo: wp.vec3f,
    robot_hi: wp.vec3f,
    occupancy: Grid,
):
    """One point of :func:`mark_points`."""
    if not (wp.isfinite(p[0]) and wp.isfinite(p[1]) and wp.isfinite(p[2])):
        return
    shape = wp.vec3i(occupancy.shape[0], occupancy.shape[1], occupancy.shape[2])
    inside, index = _voxel_of(p, origin, inv_voxel, shape)
    if not inside:
        return
    near_robot = wp.bool(True)
    for a in range(3):
        if p[a] < robot_lo[a] or p[a] > robot_hi[a]:
            near_robot = False
    if near_robot:
        for s in range(robot_spheres.shape[0]):
            sphere = robot_spheres[s]
            d = p - wp.vec3f(sphere[0], sphere[1], sphere[2])
            if wp.dot(d, d) <= sphere[3] * sphere[3]:
                return
    occupancy[index[0], index[1], index[2]] = 1.0


@wp.kernel
def mark_points(
    points: wp.array(dtype=wp.vec3f),
    origin: wp.vec3f,
    inv_voxel: float,
    robot_spheres: wp.array(dtype=wp.vec4f),
    robot_lo: wp.vec3f,
    robot_hi: wp.vec3f,
    per_thread: int,
    occupancy: Grid,
):
    """Occupy the voxel of each finite point ``[N]`` inside the grid, except points within a
    robot sphere ``(x, y, z, radius + margin)`` (the spheres' box ``robot_lo..robot_hi``
    first); ``per_thread`` points per thread (as in :func:`carve_projective`)."""
    first = wp.tid() * per_thread
    for i in range(first, wp.min(first + per_thread, points.shape[0])):
        _mark_point(points[i], origin, inv_voxel, robot_spheres, robot_lo, robot_hi, occupancy)


@wp.kernel
def carve_rays(
    points: wp.array(dtype=wp.vec3f),
    rays: wp.array(dtype=wp.int32),
    sensor: wp.vec3f,
    origin: wp.vec3f,
    inv_voxel: float,
    margin: float,
    occupancy: Grid,
):
    """Free every voxel on the segment from ``sensor`` to ``points[rays[i]]`` that lies more than
    ``margin`` voxels before the point, sampled every half voxel within the grid's box."""
    p = points[rays[wp.tid()]]
    if not (wp.isfinite(p[0]) and wp.isfinite(p[1]) and wp.isfinite(p[2])):
        return
    a = (sensor - origin) * inv_voxel
    b = (p - origin) * inv_voxel
    d = b - a
    length = wp.length(d)
    if length <= margin:
        return
    t0 = wp.float32(0.0)
    t1 = 1.0 - margin / length
    shape = wp.vec3i(occupancy.shape[0], occupancy.shape[1], occupancy.shape[2])
    # clip the segment to the grid's box [0, shape] (slab test)
    for axis in range(3):
        lo = -a[axis]
        hi = float(shape[axis]) - a[axis]
        if wp.abs(d[axis]) < 1.0e-12:
            if lo > 0.0 or hi < 0.0:
                t1 = -1.0
        else:
            ta = lo / d[axis]
            tb = hi / d[axis]
            t0 = wp.max(t0, wp.min(ta, tb))
            t1 = wp.min(t1, wp.max(ta, tb))
    if t1 <= t0:
        return
    steps = int(wp.ceil(2.0 * length * (t1 - t0))) + 1
    for s in range(steps):
        t = t0 + (t1 - t0) * float(s) / float(wp.max(steps - 1, 1))
        x = a + t * d
        i = wp.clamp(int(wp.floor(x[0])), 0, shape[0] - 1)
        j = wp.clamp(int(wp.floor(x[1])), 0, shape[1] - 1)
        k = wp.clamp(int(wp.floor(x[2])), 0, shape[2] - 1)
        occupancy[i, j, k] = 0.0


@wp.kernel
def check_depth(
    depth: wp.array(dtype=wp.float32), per_thread: int, flags: wp.array(dtype=wp.int32)
):
    """``flags[0] = 1`` if a pixel of the flat image ``depth`` is NaN or inf, ``flags[1] = 1``
    if one is negative; ``per_thread`` pixels per thread."""
    i = wp.tid() * per_thread
    end = wp.min(i + per_thread, depth.shape[0])
    non_finite = wp.bool(False)
    negative = wp.bool(False)
    while i < end:
        z = depth[i]
        non_finite = non_finite or not wp.isfinite(z)
        negative = negative or z < 0.0
        i += 1
    if non_finite:
        flags[0] = 1
    if negative:
        flags[1] = 1


@wp.kernel
def mark_depth(
    depth: wp.array2d(dtype=wp.float32),
    depth_scale: float,
    max_range: float,
    pixel_to_base: wp.mat33f,
    position: wp.vec3f,
    origin: wp.vec3f,
    inv_voxel: float,
    robot_spheres: wp.array(dtype=wp.vec4f),
    robot_lo: wp.vec3f,
    robot_hi: wp.vec3f,
    per_thread: int,
    occupancy: Grid,
):
    """:func:`mark_points` of a depth image's points, thread ``(v, b)`` taking pixels ``b *
    per_thread`` on of row ``v``: pixel ``(u, v)`` (column, row) reads ``depth *
    depth_scale`` metres along the optical axis; its base-frame point is ``pixel_to_base (u,
    v, 1) z + position`` (``pixel_to_base = rotation K^-1``); pixels without a reading in
    ``(0, max_range]`` are skipped."""
    v, block = wp.tid()
    u = block * per_thread
    end = wp.min(u + per_thread, depth.shape[1])
    while u < end:
        z = depth[v, u] * depth_scale
        if z > 0.0 and z <= max_range:
            p = pixel_to_base @ wp.vec3f(float(u), float(v), 1.0) * z + position
            _mark_point(p, origin, inv_voxel, robot_spheres, robot_lo, robot_hi, occupancy)
        u += 1


@wp.func
def _in_front(
    point: wp.vec3f,
    world_to_camera: wp.mat33f,
    position: wp.vec3f,
    intrinsics: wp.mat33f,
    depth: wp.array2d(dtype=wp.float32),
    depth_scale: float,
    max_range: float,
    margin: float,
):
    """Whether the pixel that ``point`` projects onto reads a surface more than ``margin``
    beyond it (False outside the image, behind the camera or without a reading)."""
    local = world_to_camera @ (point - position)
    if local[2] <= 0.0:
        return False
    pixel = intrinsics @ local
    u = int(wp.floor(pixel[0] / pixel[2] + 0.5))
    v = int(wp.floor(pixel[1] / pixel[2] + 0.5))
    if u < 0 or v < 0 or u >= depth.shape[1] or v >= depth.shape[0]:
        return False
    z = depth[v, u] * depth_scale
    return z > 0.0 and z <= max_range and local[2] + margin < z


@wp.func
def _carve_voxel(
    i: int,
    shape: wp.vec3i,
    origin: wp.vec3f,
    voxel: float,
    world_to_camera: wp.mat33f,
    position: wp.vec3f,
    intrinsics: wp.mat33f,
    depth: wp.array2d(dtype=wp.float32),
    depth_scale: float,
    max_range: float,
    margin: float,
):
    """Whether voxel ``i``'s centre and eight corners all lie in front of the measured
    surfaces (see :func:`carve_projective`)."""
    plane = shape[1] * shape[2]
    ix = i / plane
    iy = (i - ix * plane) / shape[2]
    iz = i - ix * plane - iy * shape[2]
    centre = origin + voxel * wp.vec3f(float(ix) + 0.5, float(iy) + 0.5, float(iz) + 0.5)
    free = _in_front(
        centre, world_to_camera, position, intrinsics, depth, depth_scale, max_range, margin
    )
    for corner in range(8):
        if free:
            offset_c = wp.vec3f(
                float(corner % 2) - 0.5, float((corner / 2) % 2) - 0.5, float(corner / 4) - 0.5
            )
            free = _in_front(
                centre + voxel * offset_c, world_to_camera, position, intrinsics, depth,
                depth_scale, max_range, margin,
            )  # fmt: skip
    return free


@wp.kernel
def carve_projective(
    occupancy: wp.array(dtype=wp.float32),
    shape: wp.vec3i,
    origin: wp.vec3f,
    voxel: float,
    world_to_camera: wp.mat33f,
    position: wp.vec3f,
    intrinsics: wp.mat33f,
    depth: wp.array2d(dtype=wp.float32),
    depth_scale: float,
    max_range: float,
    margin: float,
    decay: float,
    offset: int,
    end: int,
    per_thread: int,
):
    """Decay (the occupancy times ``decay``) and projective carving of the flat voxels
    ``offset + t * per_thread`` on (up to ``end``) in thread ``t`` (several per thread on a
    CPU, where a thread first copies the launch's arguments): a voxel holding some
    occupancy whose centre and eight corners all project onto pixels that read farther than
    themselves plus ``margin`` (metres) lies in front of the measured surfaces: it becomes
    free. (The corners keep a voxel that a surface's
    silhouette crosses.) Voxels partly outside the image, behind the camera or behind a
    surface keep their value."""
    i = wp.tid() * per_thread + offset
    last = wp.min(i + per_thread, end)
    while i < last:
        value = occupancy[i]
        if value > 0.0:
            if _carve_voxel(
                i, shape, origin, voxel, world_to_camera, position, intrinsics, depth,
                depth_scale, max_range, margin,
            ):  # fmt: skip
                occupancy[i] = 0.0
            elif decay < 1.0:
                occupancy[i] = value * decay
        i += 1
