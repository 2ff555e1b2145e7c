"""Warp kernels of the voxel signed-distance world (:mod:`curobo_lite.geom.voxel_world`).

Grid: ``[nx, ny, nz]`` float32 voxels of side ``v`` from the grid's lower corner ``origin``;
voxel ``(i, j, k)`` has its centre at ``origin + (i + 1/2, j + 1/2, k + 1/2) v``.

- :func:`mark_points`: integration, one thread per point: the voxel holding the point becomes
  occupied (value 1), unless the point lies inside one of the robot's spheres (self-filter).
- :func:`depth_to_points`: a depth image's pixels to base-frame points, one thread per pixel.
- :func:`carve_projective`: free-space carving of a depth image, one thread per voxel: an
  occupied voxel whose centre projects onto a pixel that reads farther becomes free (0).
- :func:`carve_rays`: free-space carving of a point cloud, one thread per ray: every voxel the
  segment from the sensor to a point crosses, up to ``margin`` voxels short of it, becomes free.
- :func:`edt_pass`: one axis of the exact Euclidean distance transform of Felzenszwalb and
  Huttenlocher ("Distance transforms of sampled functions", 2012), one thread per grid line:
  ``f(q) <- min_p (q - p)^2 + f(p)``, the lower envelope of parabolas in ``O(n)``. Run along
  the three axes on ``f = 0`` at the sites and ``INF`` elsewhere it gives the squared distance
  (voxel units) from every voxel centre to the nearest site centre, exactly. It transforms two
  fields per launch (the distance to occupied voxels and the distance to free ones, for the
  sign); a line whose values are all ``INF`` or all ``0`` is left as it is.
- :func:`sphere_esdf_distance`: sphere queries, one thread per sphere (swept like
  :func:`~curobo_lite.kernels.world_collision_kernels.sphere_world_distance`): the signed
  distance is the trilinear interpolation of the grid at the centre, its gradient the exact
  gradient of that interpolant. Outside the grid's box of voxel centres the point ``p`` is
  clamped to ``q`` on the box, ``e = |p - q|``, and the distance is ``sqrt(e^2 + d(q)^2)``
  (``d(q) >= 0``: a lower bound of the distance to anything inside the box, since ``p - q`` is
  an outward normal of the box) or ``e + d(q)`` (``d(q) < 0``). The result is folded into the
  outputs already holding the other obstacles' result: the distance is the smaller one, the
  cost the sum.

Grid values at or above :data:`FAR` mean "no obstacle" (a grid with no occupied voxel).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.collision_common import smooth_hinge, smooth_hinge_grad
from curobo_lite.kernels.warp_types import Array1, Array2

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: squared distance of a voxel with no site on its line (float32-safe, sqrt(INF) * v finite)
INF = 1.0e20
#: grid values at or above this (metres) mean "no obstacle in the grid"
FAR = 1.0e6
#: occupancy value from which a voxel counts as occupied
OCCUPIED = 0.5
#: lines whose squared distances stay at or below this take the windowed exact minimum
SMALL = 16.0

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
def depth_to_points(
    depth: wp.array2d(dtype=wp.float32),
    depth_scale: float,
    max_range: float,
    k_inv: wp.mat33f,
    rotation: wp.mat33f,
    position: wp.vec3f,
    points: wp.array(dtype=wp.vec3f),
):
    """Pixel ``(u, v)`` of a depth image to its base-frame point ``points[v * W + u]``
    (``depth * depth_scale`` metres along the optical axis; NaN where there is no reading in
    ``(0, max_range]``)."""
    v, u = wp.tid()
    z = depth[v, u] * depth_scale
    p = wp.vec3f(wp.nan, wp.nan, wp.nan)
    if z > 0.0 and z <= max_range:
        p = rotation @ (k_inv @ wp.vec3f(float(u), float(v), 1.0) * z) + position
    points[v * depth.shape[1] + u] = p


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
    offset: int,
    end: int,
    per_thread: int,
):
    """Projective carving of the flat voxels ``offset + t * per_thread`` on (up to ``end``)
    in thread ``t`` (several per thread on a CPU, where a thread first copies the launch's
    arguments): a voxel holding some occupancy whose centre and eight corners all project
    onto pixels that read farther than themselves plus ``margin`` (metres) lies in front of
    the measured surfaces: it becomes free. (The corners keep a voxel that a surface's
    silhouette crosses.) Voxels partly outside the image, behind the camera or behind a
    surface keep their value."""
    first = wp.tid() * per_thread + offset
    for i in range(first, wp.min(first + per_thread, end)):
        if occupancy[i] > 0.0:
            if _carve_voxel(
                i, shape, origin, voxel, world_to_camera, position, intrinsics, depth,
                depth_scale, max_range, margin,
            ):  # fmt: skip
                occupancy[i] = 0.0


@wp.kernel
def edt_first_pass(
    occupancy: wp.array(dtype=wp.float32),
    n: int,
    stride: int,
    count_b: int,
    stride_a: int,
    stride_b: int,
    line_offset: int,
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
):
    """The first axis of the transform straight from the occupancy (lines as in
    :func:`edt_pass`): two sweeps give each voxel's distance along its line to the nearest
    occupied voxel (``outside``) and the nearest free one (``inside``), squared; ``INF``
    where the line has none."""
    line = wp.tid() + line_offset
    a = line / count_b
    b = line - a * count_b
    first = a * stride_a + b * stride_b
    far = n + n + 2
    last_occupied = -far
    last_free = -far
    q = wp.int32(0)
    index = first
    while q < n:
        if occupancy[index] >= OCCUPIED:
            last_occupied = q
        else:
            last_free = q
        outside[index] = float(q - last_occupied)
        inside[index] = float(q - last_free)
        q += 1
        index += stride
    next_occupied = far + n
    next_free = far + n
    q = n - 1
    index = first + (n - 1) * stride
    while q >= 0:
        if occupancy[index] >= OCCUPIED:
            next_occupied = q
        else:
            next_free = q
        d = wp.min(outside[index], float(next_occupied - q))
        outside[index] = wp.where(d < float(n), d * d, INF)
        d = wp.min(inside[index], float(next_free - q))
        inside[index] = wp.where(d < float(n), d * d, INF)
        q -= 1
        index -= stride


@wp.kernel
def edt_finish(
    occupancy: wp.array(dtype=wp.float32),
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    voxel: float,
    offset: int,
    end: int,
    per_thread: int,
    esdf: wp.array(dtype=wp.float32),
):
    """Signed distance from the squared transforms (voxel units): ``v sqrt(outside)`` at a
    free voxel, ``-v (sqrt(inside) - 1)`` at an occupied one (0 on an occupied voxel next to
    a free one: the zero level runs through the centres of the boundary voxels, where a
    measured surface lies on average). Elements as in :func:`carve_projective`."""
    first = wp.tid() * per_thread + offset
    for i in range(first, wp.min(first + per_thread, end)):
        if occupancy[i] >= OCCUPIED:
            esdf[i] = -voxel * (wp.sqrt(inside[i]) - 1.0)
        else:
            esdf[i] = voxel * wp.sqrt(outside[i])


@wp.func
def _edt_line(
    f: wp.array(dtype=wp.float32),
    first: int,
    stride: int,
    n: int,
    line: int,
    sites: wp.array(dtype=wp.int32),
    values: wp.array(dtype=wp.float32),
    bounds: wp.array(dtype=wp.int32),
    scan: bool,
):
    """Felzenszwalb's 1-D transform, in place, of the line ``f[first + q * stride]``,
    ``q < n``; ``sites``/``values`` (``n`` per line) hold the envelope's parabolas, ``bounds``
    (``2 (n + 1)``) where each starts. With ``scan`` a first look at the line skips lines
    that cannot change and takes the window for small values (the inside field: mostly zeros);
    without it (the outside field: nearly every line changes) the envelope starts at once.
    (Flat indices and while loops: Warp's CPU code for dynamic ``range`` loops over 3-D
    indices is ~10x slower.)"""
    any_finite = wp.bool(False)
    any_infinite = wp.bool(not scan)
    varies = wp.bool(not scan)
    largest = wp.float32(0.0)
    first_value = f[first]
    q = wp.int32(0)
    if not scan:
        any_finite = True
        q = n
    index = first
    while q < n:
        fq = f[index]
        if fq < INF:
            any_finite = True
            largest = wp.max(largest, fq)
        else:
            any_infinite = True
        if fq != first_value:
            varies = True
        q += 1
        index += stride
    if not any_finite or not varies:
        return  # nothing to lower: all INF, or all one value (a flat surface's lines)
    base = line * n
    if not any_infinite and largest <= SMALL:
        # small values (the inside of thin occupied shells): only p with (q - p)^2 < f(q)
        # can lower f(q), so a window of +-sqrt(f(q)) is exact and cheaper than the envelope
        q = wp.int32(0)
        index = first
        while q < n:
            fq = f[index]
            best = fq
            reach = int(wp.sqrt(fq))
            w = wp.max(q - reach, 0)
            while w <= wp.min(q + reach, n - 1):
                d = float(w - q)
                best = wp.min(best, d * d + f[first + w * stride])
                w += 1
            values[base + q] = best
            q += 1
            index += stride
        q = wp.int32(0)
        index = first
        while q < n:
            f[index] = values[base + q]
            q += 1
            index += stride
        return
    # the envelope: parabola k has its apex at sites[k] with height values[k] and starts at
    # the rational s_k = bounds[2 k] / bounds[2 k + 1] (integers: squared voxel distances are
    # integers, so the comparisons are exact and need no division)
    zbase = 2 * line * (n + 1)
    k = wp.int32(-1)
    q = wp.int32(0)
    index = first
    while q < n:
        fq = f[index]
        if fq < INF:
            lift = int(fq) + q * q
            num = wp.int32(0)
            den = wp.int32(1)
            searching = k >= 0
            while searching:
                p = sites[base + k]
                num = lift - (int(values[base + k]) + p * p)
                den = 2 * (q - p)
                # pop parabola k while the new one undercuts it from its start on (k > 0; the
                # first one starts at -infinity)
                if k > 0 and num * bounds[zbase + 2 * k + 1] <= bounds[zbase + 2 * k] * den:
                    k -= 1
                else:
                    searching = False
            k += 1
            sites[base + k] = q
            values[base + k] = fq
            bounds[zbase + 2 * k] = num
            bounds[zbase + 2 * k + 1] = den
        q += 1
        index += stride
    if k < 0:
        return  # no finite value: the line stays INF
    j = wp.int32(0)
    site = sites[base]
    value = values[base]
    q = wp.int32(0)
    index = first
    while q < n:
        while j < k and bounds[zbase + 2 * j + 2] < q * bounds[zbase + 2 * j + 3]:
            j += 1
            site = sites[base + j]
            value = values[base + j]
        d = float(q - site)
        f[index] = d * d + value
        q += 1
        index += stride


@wp.kernel
def edt_pass(
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    n: int,
    stride: int,
    count_b: int,
    stride_a: int,
    stride_b: int,
    line_offset: int,
    sites: wp.array(dtype=wp.int32),
    values: wp.array(dtype=wp.float32),
    bounds: wp.array(dtype=wp.int32),
):
    """The 1-D transform of every line of both flattened fields along one axis (``n``
    voxels ``stride`` apart; line ``a * count_b + b`` starts at ``a * stride_a + b *
    stride_b``); thread ``i`` takes line ``i + line_offset`` (CPU row chunks)."""
    line = wp.tid() + line_offset
    a = line / count_b
    b = line - a * count_b
    first = a * stride_a + b * stride_b
    _edt_line(outside, first, stride, n, line, sites, values, bounds, False)
    _edt_line(inside, first, stride, n, line, sites, values, bounds, True)


@wp.func
def _cell(x: Any, n: int):
    """Interpolation cell along one axis of continuous centre coordinate ``x``: ``(index,
    fraction, inside, overshoot)``, ``x`` clamped to ``[0, n - 1]`` (``inside`` 0 when
    clamped, ``overshoot`` the clamped-off length in voxels)."""
    zero = x - x
    top = type(x)(n - 1)
    c = wp.clamp(x, zero, top)
    i = wp.min(int(wp.floor(c)), n - 2)
    inside = type(x)(1.0)
    if c != x:
        inside = zero
    return i, c - type(x)(i), inside, x - c


@wp.func
def esdf_sample(esdf: Grid, origin: Any, inv_voxel: Any, voxel: Any, p: Any):
    """``(distance, gradient)`` of the grid's trilinear interpolant at world point ``p``
    (module docstring: clamped to the box of voxel centres, with the outside bound)."""
    zero = voxel - voxel
    half = type(zero)(0.5)
    x = (p - origin) * inv_voxel
    i, fx, in_x, out_x = _cell(x[0] - half, esdf.shape[0])
    j, fy, in_y, out_y = _cell(x[1] - half, esdf.shape[1])
    k, fz, in_z, out_z = _cell(x[2] - half, esdf.shape[2])
    c000 = type(zero)(esdf[i, j, k])
    c001 = type(zero)(esdf[i, j, k + 1])
    c010 = type(zero)(esdf[i, j + 1, k])
    c011 = type(zero)(esdf[i, j + 1, k + 1])
    c100 = type(zero)(esdf[i + 1, j, k])
    c101 = type(zero)(esdf[i + 1, j, k + 1])
    c110 = type(zero)(esdf[i + 1, j + 1, k])
    c111 = type(zero)(esdf[i + 1, j + 1, k + 1])
    c00 = c000 + (c001 - c000) * fz
    c01 = c010 + (c011 - c010) * fz
    c10 = c100 + (c101 - c100) * fz
    c11 = c110 + (c111 - c110) * fz
    c0 = c00 + (c01 - c00) * fy
    c1 = c10 + (c11 - c10) * fy
    d = c0 + (c1 - c0) * fx
    gx = c1 - c0
    gy = (c01 - c00) + ((c11 - c10) - (c01 - c00)) * fx
    d0z = (c001 - c000) + ((c011 - c010) - (c001 - c000)) * fy
    d1z = (c101 - c100) + ((c111 - c110) - (c101 - c100)) * fy
    gz = d0z + (d1z - d0z) * fx
    g = wp.vector(gx * in_x, gy * in_y, gz * in_z) * inv_voxel
    outward = wp.vector(out_x, out_y, out_z) * voxel
    e = wp.length(outward)
    if e > zero and d < type(zero)(FAR):
        n = outward / e
        if d >= zero:
            r = wp.sqrt(e * e + d * d)
            g = (e * n + d * g) / r
            d = r
        else:
            d = d + e
            g = g + n
    return d, g


@wp.func
def _store4(a: Array2, i: int, v: Any, w: Any):
    a[i, 0] = v[0]
    a[i, 1] = v[1]
    a[i, 2] = v[2]
    a[i, 3] = w


@wp.func
def _add4(a: Array2, i: int, v: Any, w: Any):
    a[i, 0] = a[i, 0] + v[0]
    a[i, 1] = a[i, 1] + v[1]
    a[i, 2] = a[i, 2] + v[2]
    a[i, 3] = a[i, 3] + w


@wp.func
def _fold_sphere(
    s: int,
    o: int,
    spheres: Array2,
    activation: Any,
    max_distance: Any,
    sweep: int,
    horizon: int,
    num_spheres: int,
    sweep_spacing: Any,
    max_sweep_samples: int,
    esdf: Grid,
    origin_x: Any,
    origin_y: Any,
    origin_z: Any,
    voxel: Any,
    inflation: Any,
    write_grad: int,
    distance: Array1,
    cost: Array1,
    grad_distance: Array2,
    grad_cost: Array2,
    grad_distance_prev: Array2,
    grad_cost_prev: Array2,
):
    """:func:`sphere_esdf_distance` for row ``s`` of ``spheres``, output row ``o``."""
    zero = activation - activation
    one = zero + type(zero)(1.0)
    r = spheres[s, 3]
    if r < zero:
        return
    c = wp.vector(spheres[s, 0], spheres[s, 1], spheres[s, 2])
    origin = wp.vector(origin_x, origin_y, origin_z)
    inv_voxel = one / voxel
    vzero = wp.vector(zero, zero, zero)
    a = c
    ra = r
    samples = wp.int32(1)
    count = wp.int32(1)
    h = wp.int32(0)
    if sweep != 0:
        h = (s // num_spheres) % horizon
    if h > 0:
        p = s - num_spheres
        if spheres[p, 3] >= zero:
            a = wp.vector(spheres[p, 0], spheres[p, 1], spheres[p, 2])
            ra = spheres[p, 3]
            length = wp.length(c - a)
            step = sweep_spacing * wp.min(r, ra)
            if length > zero:
                samples = max_sweep_samples
                if step > zero and length / step < type(zero)(max_sweep_samples):
                    samples = wp.max(int(wp.ceil(length / step)), 1)
                count = samples + 1
    # broad phase: one read at the voxel holding the segment's midpoint. The interpolant is
    # sqrt(3)-Lipschitz (its partial derivatives are averages of 1-Lipschitz differences), so
    # nothing on the segment comes within reach when this bound clears it
    reach = wp.max(activation, max_distance)
    if wp.isfinite(reach):
        m = (a + c) * type(zero)(0.5) - origin
        i = wp.clamp(int(wp.floor(m[0] * inv_voxel)), 0, esdf.shape[0] - 1)
        j = wp.clamp(int(wp.floor(m[1] * inv_voxel)), 0, esdf.shape[1] - 1)
        k = wp.clamp(int(wp.floor(m[2] * inv_voxel)), 0, esdf.shape[2] - 1)
        spread = type(zero)(0.5) * wp.length(c - a) + type(zero)(0.8660254) * voxel
        lower = type(zero)(esdf[i, j, k]) - type(zero)(1.7320508) * spread
        if lower - inflation - wp.max(r, ra) > reach:
            return
    best_d = max_distance
    best_gd = vzero
    best_td = one
    best_c = zero
    best_gc = vzero
    best_gcr = zero
    best_tc = one
    found = wp.int32(0)
    for k in range(count):
        t = one
        if k < count - 1:
            t = (type(zero)(k) + type(zero)(0.5)) / type(zero)(samples)
        sdf, g = esdf_sample(esdf, origin, inv_voxel, voxel, a + t * (c - a))
        if sdf < type(zero)(FAR):
            found = 1
            dist = sdf - inflation - (ra + t * (r - ra))
            if dist < best_d:
                best_d = dist
                best_gd = g
                best_td = t
            x = activation - dist
            if x > zero:
                cst = smooth_hinge(x, activation)
                if cst > best_c:
                    hg = smooth_hinge_grad(x, activation)
                    best_c = cst
                    best_gc = -hg * g
                    best_gcr = hg
                    best_tc = t
    if found == 0:
        return
    if best_d < distance[o]:
        distance[o] = best_d
        if write_grad != 0:
            _store4(grad_distance, o, best_gd * best_td, -best_td)
            if sweep != 0:
                _store4(grad_distance_prev, o, best_gd * (one - best_td), best_td - one)
    if best_c > zero:
        cost[o] = cost[o] + best_c
        if write_grad != 0:
            _add4(grad_cost, o, best_gc * best_tc, best_gcr * best_tc)
            if sweep != 0:
                _add4(grad_cost_prev, o, best_gc * (one - best_tc), best_gcr * (one - best_tc))


@wp.kernel
def sphere_esdf_distance(
    spheres: Array2,
    activation: Any,
    max_distance: Any,
    sweep: int,
    horizon: int,
    num_spheres: int,
    sweep_spacing: Any,
    max_sweep_samples: int,
    esdf: Grid,
    origin_x: Any,
    origin_y: Any,
    origin_z: Any,
    voxel: Any,
    inflation: Any,
    row_offset: int,
    row_end: int,
    rows_per_thread: int,
    write_grad: int,
    distance: Array1,
    cost: Array1,
    grad_distance: Array2,
    grad_cost: Array2,
    grad_distance_prev: Array2,
    grad_cost_prev: Array2,
):
    """Fold the grid's distance and cost of spheres ``[S, 4]`` into ``distance``/``cost``
    ``[S]`` and their gradients (rows, sweep samples and output offsets as in
    ``sphere_world_distance``): the distance becomes the smaller, the cost the sum. Every
    distance is lowered by ``inflation`` (metres). Thread ``t`` takes rows ``row_offset +
    t * rows_per_thread`` on, up to ``row_end`` (several per thread on a CPU: a Warp CPU thread
    copies the launch's arguments, which costs more than most rows' one grid read)."""
    first = wp.tid() * rows_per_thread + row_offset
    last = wp.min(first + rows_per_thread, row_end)
    for s in range(first, last):
        _fold_sphere(
            s, s - row_offset, spheres, activation, max_distance, sweep, horizon, num_spheres,
            sweep_spacing, max_sweep_samples, esdf, origin_x, origin_y, origin_z, voxel,
            inflation, write_grad, distance, cost, grad_distance, grad_cost,
            grad_distance_prev, grad_cost_prev,
        )  # fmt: skip


def _query_signature(scalar) -> list:
    a1, a2 = wp.array(dtype=scalar), wp.array2d(dtype=scalar)
    return [
        a2, scalar, scalar, int, int, int, scalar, int,
        Grid, scalar, scalar, scalar, scalar, scalar, int, int, int, int,
        a1, a1, a2, a2, a2, a2,
    ]  # fmt: skip


#: the Warp scalar type of each supported torch dtype
SCALAR_TYPES = {torch.float32: wp.float32, torch.float64: wp.float64}
for _scalar in SCALAR_TYPES.values():
    wp.overload(sphere_esdf_distance, _query_signature(_scalar))


@functools.cache
def query_kernel(dtype: torch.dtype) -> wp.Kernel:
    """The float32 or float64 instance of :func:`sphere_esdf_distance`."""
    return sphere_esdf_distance.get_overload(_query_signature(SCALAR_TYPES[dtype]))
