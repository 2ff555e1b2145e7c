"""Warp functions: signed distance and its gradient of a point against one primitive shape.

The primitives of a world's tables (``prim_type``, ``prim_params [P, 8]`` and ``prim_frame
[P, 12]``, see :mod:`curobo_lite.kernels.world_collision_kernels`): cuboid half extents ``(hx,
hy, hz)``; sphere ``(radius)``; capsule ``(radius, base xyz, tip xyz)``; cylinder ``(radius,
half height)``. A frame row holds the rotation ``R`` (row-major, world <- obstacle) then the
translation ``t``: a world point maps to the obstacle frame as ``R^T (p - t)``, a local gradient
back as ``R g``. Generic over the scalar type (float32 / float64). :func:`sdf_kernel` gives
unit tests the per-primitive functions on their own.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from curobo_lite.kernels.collision_common import store4
from curobo_lite.kernels.warp_types import (  # noqa: F401 (SCALAR_TYPES: read from here too)
    SCALAR_TYPES,
    Array2,
    IndexArray,
    scalar_overloads,
)

wp.config.log_level = 30  # WARNING
# gradients are computed analytically
wp.set_module_options({"enable_backward": False})

CUBOID = 0
SPHERE = 1
CAPSULE = 2
CYLINDER = 3
FRAME_COLUMNS = 12
PARAM_COLUMNS = 8


@wp.func
def _sign_of(x: Any):
    """+1 for ``x >= 0`` (so points on a symmetry plane pick a face), -1 otherwise."""
    one = type(x)(1.0)
    return wp.where(x < type(x)(0.0), -one, one)


@wp.func
def _perpendicular(v: Any, zero: Any):
    """A unit vector perpendicular to ``v`` (``v`` need not be normalised; any if ``v = 0``)."""
    one = zero + type(zero)(1.0)
    e = wp.vector(one, zero, zero)
    if wp.abs(v[0]) > wp.abs(v[1]) or wp.abs(v[0]) > wp.abs(v[2]):
        e = wp.vector(zero, one, zero)
        if wp.abs(v[1]) > wp.abs(v[2]):
            e = wp.vector(zero, zero, one)
    w = wp.cross(v, e)
    n = wp.length(w)
    if n > zero:
        w = w / n
    else:
        w = e
    return w


@wp.func
def sdf_box(p: Any, hx: Any, hy: Any, hz: Any):
    """Signed distance and gradient of a box with half extents ``h`` centred at the origin.

    Outside: distance to the nearest surface point, gradient along ``p - closest``. Inside:
    ``max_i(|p_i| - h_i)`` (the nearest face), gradient that face's outward normal.
    """
    zero = hx - hx
    qx = wp.abs(p[0]) - hx
    qy = wp.abs(p[1]) - hy
    qz = wp.abs(p[2]) - hz
    sx = _sign_of(p[0])
    sy = _sign_of(p[1])
    sz = _sign_of(p[2])
    d = zero
    g = wp.vector(zero, zero, zero)
    if qx > zero or qy > zero or qz > zero:
        ox = wp.max(qx, zero)
        oy = wp.max(qy, zero)
        oz = wp.max(qz, zero)
        d = wp.sqrt(ox * ox + oy * oy + oz * oz)
        g = wp.vector(sx * ox / d, sy * oy / d, sz * oz / d)
    else:
        if qx >= qy and qx >= qz:
            d = qx
            g = wp.vector(sx, zero, zero)
        elif qy >= qz:
            d = qy
            g = wp.vector(zero, sy, zero)
        else:
            d = qz
            g = wp.vector(zero, zero, sz)
    return d, g


@wp.func
def sdf_sphere(p: Any, radius: Any):
    """Signed distance and gradient of a ball of ``radius`` at the origin."""
    zero = radius - radius
    n = wp.length(p)
    g = wp.vector(zero, zero, zero + type(zero)(1.0))
    if n > zero:
        g = p / n
    return n - radius, g


@wp.func
def sdf_capsule(p: Any, radius: Any, a: Any, b: Any):
    """Signed distance and gradient of the points within ``radius`` of segment ``a``-``b``."""
    zero = radius - radius
    ab = b - a
    denom = wp.dot(ab, ab)
    t = zero
    if denom > zero:
        t = wp.clamp(wp.dot(p - a, ab) / denom, zero, zero + type(zero)(1.0))
    v = p - (a + t * ab)
    n = wp.length(v)
    g = _perpendicular(ab, zero)
    if n > zero:
        g = v / n
    return n - radius, g


@wp.func
def sdf_cylinder(p: Any, radius: Any, half_height: Any):
    """Signed distance and gradient of a solid cylinder along z centred at the origin.

    Outside: distance to the nearest point of the side, caps or rims; inside: the nearer of
    side and cap, gradient that surface's outward normal.
    """
    zero = radius - radius
    one = zero + type(zero)(1.0)
    rho = wp.sqrt(p[0] * p[0] + p[1] * p[1])
    radial = wp.vector(one, zero, zero)
    if rho > zero:
        radial = wp.vector(p[0] / rho, p[1] / rho, zero)
    axial = wp.vector(zero, zero, _sign_of(p[2]))
    dr = rho - radius
    dz = wp.abs(p[2]) - half_height
    d = zero
    g = wp.vector(zero, zero, zero)
    if dr > zero or dz > zero:
        orr = wp.max(dr, zero)
        ozz = wp.max(dz, zero)
        d = wp.sqrt(orr * orr + ozz * ozz)
        g = radial * (orr / d) + axial * (ozz / d)
    elif dr >= dz:
        d = dr
        g = radial
    else:
        d = dz
        g = axial
    return d, g


@wp.func
def to_local(frame: Array2, j: int, p: Any):
    """``R^T (p - t)``: a world point in the frame stored in row ``j``."""
    d = p - wp.vector(frame[j, 9], frame[j, 10], frame[j, 11])
    return wp.vector(
        frame[j, 0] * d[0] + frame[j, 3] * d[1] + frame[j, 6] * d[2],
        frame[j, 1] * d[0] + frame[j, 4] * d[1] + frame[j, 7] * d[2],
        frame[j, 2] * d[0] + frame[j, 5] * d[1] + frame[j, 8] * d[2],
    )


@wp.func
def to_world(frame: Array2, j: int, g: Any):
    """``R g``: a local direction back in the world frame."""
    return wp.vector(
        frame[j, 0] * g[0] + frame[j, 1] * g[1] + frame[j, 2] * g[2],
        frame[j, 3] * g[0] + frame[j, 4] * g[1] + frame[j, 5] * g[2],
        frame[j, 6] * g[0] + frame[j, 7] * g[1] + frame[j, 8] * g[2],
    )


@wp.func
def primitive_row_sdf(kind: int, q: Any, params: Array2, row: int):
    """Signed distance and local gradient of local point ``q`` against the primitive of
    ``kind`` whose parameters are ``params[row]``."""
    zero = q[0] - q[0]
    d = zero
    g = wp.vector(zero, zero, zero)
    a0 = params[row, 0]
    if kind == CUBOID:
        d, g = sdf_box(q, a0, params[row, 1], params[row, 2])
    elif kind == SPHERE:
        d, g = sdf_sphere(q, a0)
    elif kind == CAPSULE:
        a = wp.vector(params[row, 1], params[row, 2], params[row, 3])
        b = wp.vector(params[row, 4], params[row, 5], params[row, 6])
        d, g = sdf_capsule(q, a0, a, b)
    else:
        d, g = sdf_cylinder(q, a0, params[row, 1])
    return d, g


@wp.func
def slot_primitive_sdf(
    slot: int,
    p: Any,
    prim_type: IndexArray,
    prim_frame: Array2,
    prim_params: Array2,
):
    """``(sdf, world gradient)`` of world point ``p`` against primitive slot ``slot`` (the
    tables passed one by one: the hot loop does not copy the whole world struct per call)."""
    d, g = primitive_row_sdf(prim_type[slot], to_local(prim_frame, slot, p), prim_params, slot)
    return d, to_world(prim_frame, slot, g)


@wp.kernel
def sdf_primitive_points(
    points: Array2,
    kind: int,
    params: Array2,
    out: Array2,
):
    """``out[i] = (sdf, gradient xyz)`` of local ``points [n, 3]`` against one primitive with
    parameters ``params [1, 8]``: the per-primitive functions exposed for unit tests."""
    i = wp.tid()
    p = wp.vector(points[i, 0], points[i, 1], points[i, 2])
    d, g = primitive_row_sdf(kind, p, params, 0)
    store4(out, i, wp.vector(d, g[0], g[1]), g[2])


def _sdf_signature(scalar) -> list:
    a2 = wp.array2d(dtype=scalar)
    return [a2, int, a2, a2]


#: the float32 or float64 instance of :func:`sdf_primitive_points` (one module build)
sdf_kernel = scalar_overloads(sdf_primitive_points, _sdf_signature)
