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
