"""Warp kernel of sphere queries against a voxel signed-distance grid
(:mod:`curobo_lite.geom.voxel_world`).

:func:`sphere_esdf_distance`: one thread per sphere, or a block of them on a CPU (swept like
:func:`~curobo_lite.kernels.world_collision_kernels.sphere_world_distance`): the signed distance
is the trilinear interpolation of the grid at the centre, its gradient the exact gradient of
that interpolant. Outside the grid's box of voxel centres the point ``p`` is clamped to ``q``
on the box, ``e = |p - q|``, and the distance is ``sqrt(e^2 + d(q)^2)`` (``d(q) >= 0``: a lower
bound of the distance to anything inside the box, since ``p - q`` is an outward normal of the
box) or ``e + d(q)`` (``d(q) < 0``). The result is folded into the outputs already holding the
other obstacles' result: the distance is the smaller one, the cost the sum. Grid values at or
above :data:`~curobo_lite.kernels.voxel_kernels.FAR` mean "no obstacle".
"""

from __future__ import annotations

from typing import Any

import warp as wp

from curobo_lite.kernels.collision_common import (
    clear_row,
    smooth_hinge,
    smooth_hinge_grad,
    store4,
    sweep_samples,
)
from curobo_lite.kernels.voxel_kernels import FAR, Grid
from curobo_lite.kernels.warp_types import (  # noqa: F401 (SCALAR_TYPES: read from here too)
    SCALAR_TYPES,
    Array1,
    Array2,
    scalar_overloads,
)

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


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
            if length > zero:
                samples = sweep_samples(length, sweep_spacing * wp.min(r, ra), max_sweep_samples)
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
            store4(grad_distance, o, best_gd * best_td, -best_td)
            if sweep != 0:
                store4(grad_distance_prev, o, best_gd * (one - best_td), best_td - one)
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
    overwrite: int,
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
    distance is lowered by ``inflation`` (metres). With ``overwrite`` the outputs start as an
    empty world's (``max_distance``, zero cost and gradients) instead of holding another
    world's result: the caller needs no fill (torch's parallel fills leave their threads
    spinning on a CPU, in the way of these launches). Thread ``t`` takes rows ``row_offset +
    t * rows_per_thread`` on, up to ``row_end`` (several per thread on a CPU: a Warp CPU thread
    copies the launch's arguments, which costs more than most rows' one grid read)."""
    s = wp.tid() * rows_per_thread + row_offset
    last = wp.min(s + rows_per_thread, row_end)
    while s < last:  # (a while loop: Warp's CPU code for a dynamic range loop is slower)
        if overwrite != 0:
            clear_row(
                s - row_offset, max_distance, sweep, write_grad, distance, cost, grad_distance,
                grad_cost, grad_distance_prev, grad_cost_prev,
            )  # fmt: skip
        _fold_sphere(
            s, s - row_offset, spheres, activation, max_distance, sweep, horizon, num_spheres,
            sweep_spacing, max_sweep_samples, esdf, origin_x, origin_y, origin_z, voxel,
            inflation, write_grad, distance, cost, grad_distance, grad_cost,
            grad_distance_prev, grad_cost_prev,
        )  # fmt: skip
        s += 1


def _query_signature(scalar) -> list:
    a1, a2 = wp.array(dtype=scalar), wp.array2d(dtype=scalar)
    return [
        a2, scalar, scalar, int, int, int, scalar, int,
        Grid, scalar, scalar, scalar, scalar, scalar, int, int, int, int, int,
        a1, a1, a2, a2, a2, a2,
    ]  # fmt: skip


#: the float32 or float64 instance of :func:`sphere_esdf_distance`
query_kernel = scalar_overloads(sphere_esdf_distance, _query_signature)
