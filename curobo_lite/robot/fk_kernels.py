"""Warp kernels for serial-chain forward kinematics and its exact adjoint.

One thread per configuration walks the chain. Quaternions are stored ``wxyz`` in the arrays
(the package convention) and converted to Warp's ``xyzw`` quaternion type inside the kernels.
Both kernels are generic over the scalar type and instantiated for float32 and float64.

Chain description (``M`` moving joints, fixed joints already folded into the origins):

- ``origin [M, 11]``: folded joint origin, position ``xyz`` then quaternion ``A`` (``wxyz``),
  then ``B = A (0, axis)`` (``wxyz``): a revolute joint at angle ``t`` turns the frame by
  ``A (cos(t/2), sin(t/2) axis) = cos(t/2) A + sin(t/2) B``, one quaternion product instead
  of two.
- ``axis [M, 3]``: unit joint axis in the joint frame.
- ``source [M]``, ``scale [M]``, ``offset [M]``: the joint value is
  ``scale * q[source] + offset`` (identity for actuated joints, the mimic rule otherwise).
- ``joint_type [M]``: 0 revolute, 1 prismatic.
- ``ee_origin [7]`` and ``has_ee``: a constant end-effector offset after the last joint.
- ``write_axis``: write the base-frame joint axes (the adjoint reads them; a forward pass
  without a backward skips them).

Collision spheres (``S`` of them, possibly none) ride on the moving frames:

- ``sphere_local [S, 4]``: centre in the frame it is attached to, then the radius.
- ``sphere_start [M + 2]``: spheres ``sphere_start[f + 1] : sphere_start[f + 2]`` are attached
  to moving frame ``f`` (``f = -1`` is the base frame), so spheres are sorted by frame.

The forward kernel writes base-frame spheres ``[N, S, 4]``; the adjoint adds each sphere
centre's gradient like a point force on its frame (the radius does not depend on ``q``).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.warp_types import Array1, Array2, Array3, IndexArray

# Warp logs a banner and module loads at INFO; keep library users' logs clean.
wp.config.log_level = 30  # WARNING
# the adjoint below is written by hand; Warp's tape adjoints are not needed
wp.set_module_options({"enable_backward": False})

REVOLUTE = 0
PRISMATIC = 1


@wp.func
def _load_vec3(a: wp.array2d(dtype=Any), row: int, col: int):
    return wp.vector(a[row, col], a[row, col + 1], a[row, col + 2])


@wp.func
def _load_quat_wxyz(a: wp.array2d(dtype=Any), row: int, col: int):
    return wp.quaternion(a[row, col + 1], a[row, col + 2], a[row, col + 3], a[row, col])


@wp.func
def _store_vec3(a: wp.array3d(dtype=Any), i: int, k: int, v: Any):
    a[i, k, 0] = v[0]
    a[i, k, 1] = v[1]
    a[i, k, 2] = v[2]


@wp.func
def _store_frame(
    link_position: Array3,
    link_quaternion: Array3,
    i: int,
    k: int,
    p: Any,
    r: Any,
):
    _store_vec3(link_position, i, k, p)
    # one hemisphere (w >= 0), so equal rotations compare equal
    sign = link_quaternion.dtype(1.0)
    if r[3] < link_quaternion.dtype(0.0):
        sign = link_quaternion.dtype(-1.0)
    link_quaternion[i, k, 0] = sign * r[3]
    link_quaternion[i, k, 1] = sign * r[0]
    link_quaternion[i, k, 2] = sign * r[1]
    link_quaternion[i, k, 3] = sign * r[2]


@wp.func
def _store_sphere(
    link_spheres: Array3,
    sphere_local: Array2,
    i: int,
    s: int,
    p: Any,
    r: Any,
):
    c = p + wp.quat_rotate(r, _load_vec3(sphere_local, s, 0))
    link_spheres[i, s, 0] = c[0]
    link_spheres[i, s, 1] = c[1]
    link_spheres[i, s, 2] = c[2]
    link_spheres[i, s, 3] = sphere_local[s, 3]


@wp.kernel
def fk_forward(
    q: Array2,
    origin: Array2,
    axis: Array2,
    scale: Array1,
    offset: Array1,
    source: IndexArray,
    joint_type: IndexArray,
    ee_origin: Array2,
    num_moving: int,
    has_ee: int,
    write_axis: int,
    sphere_local: Array2,
    sphere_start: IndexArray,
    link_position: Array3,
    link_quaternion: Array3,
    joint_axis: Array3,
    link_spheres: Array3,
):
    """Link frames ``[N, L, 3|4]``, base-frame joint axes ``[N, M, 3]`` and collision spheres
    ``[N, S, 4]`` of ``q [N, D]``."""
    i = wp.tid()
    zero = q.dtype(0.0)
    p = wp.vector(zero, zero, zero)
    r = wp.quaternion(zero, zero, zero, q.dtype(1.0))
    for s in range(sphere_start[0], sphere_start[1]):
        _store_sphere(link_spheres, sphere_local, i, s, p, r)
    for j in range(num_moving):
        value = scale[j] * q[i, source[j]] + offset[j]
        p = p + wp.quat_rotate(r, _load_vec3(origin, j, 0))
        a = _load_vec3(axis, j, 0)
        if joint_type[j] == REVOLUTE:
            half = value * q.dtype(0.5)
            turn = _load_quat_wxyz(origin, j, 3) * wp.cos(half)
            turn = turn + _load_quat_wxyz(origin, j, 7) * wp.sin(half)
            r = wp.mul(r, turn)
            # a turn about the axis leaves the axis where it is
            if write_axis != 0:
                _store_vec3(joint_axis, i, j, wp.quat_rotate(r, a))
        else:
            r = wp.mul(r, _load_quat_wxyz(origin, j, 3))
            z = wp.quat_rotate(r, a)
            p = p + z * value
            if write_axis != 0:
                _store_vec3(joint_axis, i, j, z)
        _store_frame(link_position, link_quaternion, i, j, p, r)
        for s in range(sphere_start[j + 1], sphere_start[j + 2]):
            _store_sphere(link_spheres, sphere_local, i, s, p, r)
    if has_ee != 0:
        p = p + wp.quat_rotate(r, _load_vec3(ee_origin, 0, 0))
        r = wp.mul(r, _load_quat_wxyz(ee_origin, 0, 3))
        _store_frame(link_position, link_quaternion, i, num_moving, p, r)


@wp.kernel
def fk_adjoint(
    link_position: Array3,
    link_quaternion: Array3,
    joint_axis: Array3,
    grad_position: Array3,
    grad_quaternion: Array3,
    link_spheres: Array3,
    grad_spheres: Array3,
    sphere_start: IndexArray,
    scale: Array1,
    source: IndexArray,
    joint_type: IndexArray,
    num_moving: int,
    num_links: int,
    grad_q: Array2,
):
    """Accumulate ``dL/dq [N, D]`` (zero-initialised by the caller) from link-frame gradients
    and sphere-centre gradients (a sphere at x_s with gradient g_s on frame k adds
    x_s x g_s to the moment and g_s to the force of every joint j <= k).

    Revolute joint j (base axis z_j through p_j): dp_k/dt = z_j x (p_k - p_j) and
    dq_k/dt = 0.5 (0, z_j) (x) q_k for every link k >= j, hence
    dL/dt_j = z_j . sum_{k>=j} [(p_k - p_j) x g_k + 0.5 (w_k gv_k - gw_k v_k + v_k x gv_k)].
    Prismatic: dL/dd_j = z_j . sum_{k>=j} g_k. One reverse sweep keeps the suffix sums.
    """
    i = wp.tid()
    zero = grad_q.dtype(0.0)
    half = grad_q.dtype(0.5)
    moment = wp.vector(zero, zero, zero)
    force = wp.vector(zero, zero, zero)
    for step in range(num_links):
        k = num_links - 1 - step
        p = wp.vector(link_position[i, k, 0], link_position[i, k, 1], link_position[i, k, 2])
        g = wp.vector(grad_position[i, k, 0], grad_position[i, k, 1], grad_position[i, k, 2])
        w = link_quaternion[i, k, 0]
        v = wp.vector(link_quaternion[i, k, 1], link_quaternion[i, k, 2], link_quaternion[i, k, 3])
        gw = grad_quaternion[i, k, 0]
        gv = wp.vector(grad_quaternion[i, k, 1], grad_quaternion[i, k, 2], grad_quaternion[i, k, 3])
        moment = moment + wp.cross(p, g) + half * (w * gv - gw * v + wp.cross(v, gv))
        force = force + g
        if k < num_moving:
            for s in range(sphere_start[k + 1], sphere_start[k + 2]):
                x = wp.vector(link_spheres[i, s, 0], link_spheres[i, s, 1], link_spheres[i, s, 2])
                gs = wp.vector(grad_spheres[i, s, 0], grad_spheres[i, s, 1], grad_spheres[i, s, 2])
                moment = moment + wp.cross(x, gs)
                force = force + gs
            z = wp.vector(joint_axis[i, k, 0], joint_axis[i, k, 1], joint_axis[i, k, 2])
            value = wp.dot(z, force)
            if joint_type[k] == REVOLUTE:
                value = wp.dot(z, moment - wp.cross(p, force))
            col = source[k]
            grad_q[i, col] = grad_q[i, col] + scale[k] * value


# --------------------------------------------------------------------------------------------------
# CPU float32: eight configurations per thread
#
# One configuration per thread leaves a CPU core's vector units idle: the chain is ~80 scalar
# operations per joint, so a 12 000-configuration launch (an MPPI rollout) is bound by the
# instruction count, not by memory. ``fk_forward_lanes`` walks the chain for LANES
# configurations at once, each quantity an 8-wide vector (one AVX instruction per operation
# where the CPU has AVX): the same formulas as ``fk_forward`` (Warp's ``quat_rotate`` and
# quaternion product, written out lane-wise), the same outputs.

_LANE_COUNT = 8
LANES = wp.constant(_LANE_COUNT)
_Lanes = wp.types.vector(length=_LANE_COUNT, dtype=wp.float32)


@wp.func
def _lanes_rotate(w: _Lanes, x: _Lanes, y: _Lanes, z: _Lanes, c: _Lanes, v: wp.vec3f):
    """``v`` rotated by the lane quaternions ``(w, x, y, z)``; ``c = 2 w^2 - 1`` is passed in
    because every vector rotated into one frame shares it."""
    two = wp.float32(2.0)
    d = (x * v[0] + y * v[1] + z * v[2]) * two
    w2 = w * two
    return (
        c * v[0] + wp.cw_mul(x, d) + wp.cw_mul(y * v[2] - z * v[1], w2),
        c * v[1] + wp.cw_mul(y, d) + wp.cw_mul(z * v[0] - x * v[2], w2),
        c * v[2] + wp.cw_mul(z, d) + wp.cw_mul(x * v[1] - y * v[0], w2),
    )


@wp.func
def _lanes_rotation_c(w: _Lanes):
    return wp.cw_mul(w, w) * wp.float32(2.0) - _Lanes(wp.float32(1.0))


@wp.func
def _lanes_round(x: _Lanes):
    """Round every lane to the nearest integer (ties to even) for ``|x| < 2^22``: adding and
    removing 1.5 * 2^23 leaves no fraction bits (plain float32 arithmetic, no fast-math)."""
    magic = _Lanes(wp.float32(12582912.0))
    return (x + magic) - magic


@wp.func
def _lanes_cos_sin(angle: _Lanes):
    """Cosine and sine of every lane in 8-wide arithmetic, with no per-lane branch: the angle
    less the nearest multiple ``k`` of pi/2 (Cody-Waite, pi/2 in three parts) goes through the
    minimax polynomials of Cephes' ``sinf`` / ``cosf`` on ``[-pi/4, pi/4]``, and ``k mod 4``
    swaps and signs them. Within a few float32 ulp of libm for ``|angle| < 8192`` (a joint's
    half angle is far inside)."""
    one = _Lanes(wp.float32(1.0))
    k = _lanes_round(angle * wp.float32(0.63661977236758134))
    r = angle - k * wp.float32(1.5703125)
    r = r - k * wp.float32(4.837512969970703125e-4)
    r = r - k * wp.float32(7.54978995489188216e-8)
    z = wp.cw_mul(r, r)
    poly = z * wp.float32(-1.9515295891e-4) + _Lanes(wp.float32(8.3321608736e-3))
    poly = wp.cw_mul(poly, z) + _Lanes(wp.float32(-1.6666654611e-1))
    sine_r = r + wp.cw_mul(wp.cw_mul(r, z), poly)
    poly = z * wp.float32(2.443315711809948e-5) + _Lanes(wp.float32(-1.388731625493765e-3))
    poly = wp.cw_mul(poly, z) + _Lanes(wp.float32(4.166664568298827e-2))
    cosine_r = one - z * wp.float32(0.5) + wp.cw_mul(wp.cw_mul(z, z), poly)
    # quadrant q = k mod 4 as its two bits: high = floor(q / 2), odd = q mod 2
    quarter = _lanes_round(k * wp.float32(0.25) - _Lanes(wp.float32(0.375)))
    q = k - quarter * wp.float32(4.0)
    high = _lanes_round(q * wp.float32(0.5) - _Lanes(wp.float32(0.25)))
    odd = q - high * wp.float32(2.0)
    even = one - odd
    # sin: s, c, -s, -c and cos: c, -s, -c, s for q = 0 .. 3
    sign_s = one - high * wp.float32(2.0)
    sign_c = one - (odd + high - wp.cw_mul(odd, high) * wp.float32(2.0)) * wp.float32(2.0)
    sine = wp.cw_mul(sign_s, wp.cw_mul(even, sine_r) + wp.cw_mul(odd, cosine_r))
    cosine = wp.cw_mul(sign_c, wp.cw_mul(even, cosine_r) + wp.cw_mul(odd, sine_r))
    return cosine, sine


@wp.func
def _lanes_mul(
    aw: _Lanes, ax: _Lanes, ay: _Lanes, az: _Lanes, bw: _Lanes, bx: _Lanes, by: _Lanes, bz: _Lanes
):
    """Lane-wise quaternion product ``a b`` (``w, x, y, z``)."""
    return (
        wp.cw_mul(aw, bw) - wp.cw_mul(ax, bx) - wp.cw_mul(ay, by) - wp.cw_mul(az, bz),
        wp.cw_mul(aw, bx) + wp.cw_mul(bw, ax) + wp.cw_mul(ay, bz) - wp.cw_mul(by, az),
        wp.cw_mul(aw, by) + wp.cw_mul(bw, ay) + wp.cw_mul(az, bx) - wp.cw_mul(bz, ax),
        wp.cw_mul(aw, bz) + wp.cw_mul(bw, az) + wp.cw_mul(ax, by) - wp.cw_mul(bx, ay),
    )


@wp.func
def _lanes_const_quat(a: wp.array2d(dtype=wp.float32), row: int, col: int):
    """The ``wxyz`` quaternion at ``a[row, col:col + 4]`` in every lane."""
    return (
        _Lanes(a[row, col]),
        _Lanes(a[row, col + 1]),
        _Lanes(a[row, col + 2]),
        _Lanes(a[row, col + 3]),
    )


@wp.func
def _lanes_vec3(a: wp.array2d(dtype=wp.float32), row: int, col: int):
    return wp.vec3f(a[row, col], a[row, col + 1], a[row, col + 2])


@wp.func
def _store_vec3_lanes(
    out: wp.array3d(dtype=wp.float32),
    first: int,
    num_rows: int,
    k: int,
    x: _Lanes,
    y: _Lanes,
    z: _Lanes,
):
    for lane in range(LANES):
        i = first + lane
        if i < num_rows:
            out[i, k, 0] = x[lane]
            out[i, k, 1] = y[lane]
            out[i, k, 2] = z[lane]


@wp.func
def _store_frame_lanes(
    link_position: wp.array3d(dtype=wp.float32),
    link_quaternion: wp.array3d(dtype=wp.float32),
    first: int,
    num_rows: int,
    k: int,
    px: _Lanes,
    py: _Lanes,
    pz: _Lanes,
    w: _Lanes,
    x: _Lanes,
    y: _Lanes,
    z: _Lanes,
):
    _store_vec3_lanes(link_position, first, num_rows, k, px, py, pz)
    for lane in range(LANES):
        i = first + lane
        if i < num_rows:
            # one hemisphere (w >= 0), as _store_frame
            sign = wp.float32(1.0)
            if w[lane] < wp.float32(0.0):
                sign = wp.float32(-1.0)
            link_quaternion[i, k, 0] = sign * w[lane]
            link_quaternion[i, k, 1] = sign * x[lane]
            link_quaternion[i, k, 2] = sign * y[lane]
            link_quaternion[i, k, 3] = sign * z[lane]


@wp.func
def _store_spheres_lanes(
    link_spheres: wp.array3d(dtype=wp.float32),
    sphere_local: wp.array2d(dtype=wp.float32),
    first: int,
    num_rows: int,
    begin: int,
    end: int,
    px: _Lanes,
    py: _Lanes,
    pz: _Lanes,
    w: _Lanes,
    x: _Lanes,
    y: _Lanes,
    z: _Lanes,
):
    # one lane at a time: spheres are stored row by row, and taking each lane's frame out of
    # the vectors once costs less than taking every sphere centre out of them
    for lane in range(LANES):
        i = first + lane
        if i < num_rows:
            p = wp.vec3f(px[lane], py[lane], pz[lane])
            r = wp.quatf(x[lane], y[lane], z[lane], w[lane])
            for s in range(begin, end):
                _store_sphere(link_spheres, sphere_local, i, s, p, r)


@wp.kernel
def fk_forward_lanes(
    q: wp.array2d(dtype=wp.float32),
    origin: wp.array2d(dtype=wp.float32),
    axis: wp.array2d(dtype=wp.float32),
    scale: wp.array(dtype=wp.float32),
    offset: wp.array(dtype=wp.float32),
    source: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    ee_origin: wp.array2d(dtype=wp.float32),
    num_moving: int,
    has_ee: int,
    write_axis: int,
    sphere_local: wp.array2d(dtype=wp.float32),
    sphere_start: wp.array(dtype=wp.int32),
    link_position: wp.array3d(dtype=wp.float32),
    link_quaternion: wp.array3d(dtype=wp.float32),
    joint_axis: wp.array3d(dtype=wp.float32),
    link_spheres: wp.array3d(dtype=wp.float32),
    num_rows: int,
):
    """``fk_forward`` for configurations ``LANES t .. LANES t + LANES - 1`` of ``num_rows``
    (launch ``ceil(num_rows / LANES)`` threads); lanes past the end compute a copy of the last
    row and store nothing."""
    first = wp.tid() * LANES
    last = num_rows - 1
    px = _Lanes()
    py = _Lanes()
    pz = _Lanes()
    w = _Lanes(wp.float32(1.0))
    x = _Lanes()
    y = _Lanes()
    z = _Lanes()
    c = w  # 2 w^2 - 1 of the identity
    for s in range(sphere_start[0], sphere_start[1]):
        for lane in range(LANES):
            i = first + lane
            if i < num_rows:
                for k in range(4):
                    link_spheres[i, s, k] = sphere_local[s, k]
    for j in range(num_moving):
        value = _Lanes()
        column = source[j]
        for lane in range(LANES):
            value[lane] = scale[j] * q[wp.min(first + lane, last), column] + offset[j]
        dx, dy, dz = _lanes_rotate(w, x, y, z, c, _lanes_vec3(origin, j, 0))
        px = px + dx
        py = py + dy
        pz = pz + dz
        a = _lanes_vec3(axis, j, 0)
        if joint_type[j] == REVOLUTE:
            cosine, sine = _lanes_cos_sin(value * wp.float32(0.5))
            tw = cosine * origin[j, 3] + sine * origin[j, 7]
            tx = cosine * origin[j, 4] + sine * origin[j, 8]
            ty = cosine * origin[j, 5] + sine * origin[j, 9]
            tz = cosine * origin[j, 6] + sine * origin[j, 10]
            w, x, y, z = _lanes_mul(w, x, y, z, tw, tx, ty, tz)
            c = _lanes_rotation_c(w)
            if write_axis != 0:
                ax, ay, az = _lanes_rotate(w, x, y, z, c, a)
                _store_vec3_lanes(joint_axis, first, num_rows, j, ax, ay, az)
        else:
            tw, tx, ty, tz = _lanes_const_quat(origin, j, 3)
            w, x, y, z = _lanes_mul(w, x, y, z, tw, tx, ty, tz)
            c = _lanes_rotation_c(w)
            ax, ay, az = _lanes_rotate(w, x, y, z, c, a)
            px = px + wp.cw_mul(ax, value)
            py = py + wp.cw_mul(ay, value)
            pz = pz + wp.cw_mul(az, value)
            if write_axis != 0:
                _store_vec3_lanes(joint_axis, first, num_rows, j, ax, ay, az)
        _store_frame_lanes(
            link_position, link_quaternion, first, num_rows, j, px, py, pz, w, x, y, z
        )
        _store_spheres_lanes(
            link_spheres,
            sphere_local,
            first,
            num_rows,
            sphere_start[j + 1],
            sphere_start[j + 2],
            px,
            py,
            pz,
            w,
            x,
            y,
            z,
        )
    if has_ee != 0:
        dx, dy, dz = _lanes_rotate(w, x, y, z, c, _lanes_vec3(ee_origin, 0, 0))
        px = px + dx
        py = py + dy
        pz = pz + dz
        tw, tx, ty, tz = _lanes_const_quat(ee_origin, 0, 3)
        w, x, y, z = _lanes_mul(w, x, y, z, tw, tx, ty, tz)
        _store_frame_lanes(
            link_position, link_quaternion, first, num_rows, num_moving, px, py, pz, w, x, y, z
        )


def _signature(name: str, scalar) -> list:
    index = wp.array(dtype=wp.int32)
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    if name == "forward":
        return [a2, a2, a2, a1, a1, index, index, a2, int, int, int, a2, index, a3, a3, a3, a3]
    return [a3, a3, a3, a3, a3, a3, a3, index, a1, index, index, int, int, a2]


def _declare_overloads() -> None:
    """Instantiate both kernels for float32 and float64 so one module build serves both."""
    for scalar in (wp.float32, wp.float64):
        wp.overload(fk_forward, _signature("forward", scalar))
        wp.overload(fk_adjoint, _signature("adjoint", scalar))


_declare_overloads()

_SCALAR = {torch.float32: wp.float32, torch.float64: wp.float64}


@functools.cache
def kernel_for(name: str, dtype: torch.dtype) -> wp.Kernel:
    """The float32 or float64 instance of ``fk_forward`` / ``fk_adjoint``."""
    kernel = fk_forward if name == "forward" else fk_adjoint
    return kernel.get_overload(_signature(name, _SCALAR[dtype]))


def forward_lanes(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether the forward pass on ``device`` / ``dtype`` runs ``fk_forward_lanes`` (CPU float32:
    1.9x the one-configuration-per-thread kernel at 12 000 Franka configurations; on CUDA one
    configuration per thread is what fills the GPU)."""
    return device.type == "cpu" and dtype == torch.float32
