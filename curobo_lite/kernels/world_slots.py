"""Warp functions: the world tables and one obstacle slot's signed distance.

The world's obstacles live in device tables (``P`` primitive slots, ``M`` mesh slots; see
``curobo_lite.geom.world_tables``), the fields of one :data:`WORLD_TABLES` struct:

- ``prim_type [P]`` (``CUBOID``, ``SPHERE``, ``CAPSULE``, ``CYLINDER``), ``prim_enabled [P]``
  (0 for a disabled obstacle or an empty slot).
- ``prim_frame [P, 12]``: rotation ``R`` (row-major, world <- obstacle) then translation ``t``;
  a world point maps to the obstacle frame as ``R^T (p - t)``, a local gradient back as ``R g``.
- ``prim_params [P, 8]``: cuboid half extents ``(hx, hy, hz)``; sphere ``(radius)``; capsule
  ``(radius, base xyz, tip xyz)``; cylinder ``(radius, half height)``; their signed distances
  are :mod:`curobo_lite.kernels.primitive_sdf`'s.
- ``mesh_ids [M]`` (``wp.Mesh.id``, vertices already scaled), ``mesh_enabled [M]``,
  ``mesh_frame [M, 12]``.
- ``active_slots``: the enabled slots (primitives ``0..P-1``, meshes ``P..``) in its first
  ``num_active`` entries; ``world_lo``, ``world_hi``: the bounds of the enabled obstacles;
  ``slot_lo``, ``slot_hi`` ``[P + M]``: each slot's world AABB (the BVH's leaves).
- ``bvh_id``: a ``wp.Bvh`` over the ``P + M`` slots' world AABBs (primitives first), inflated so
  float32 rounding never drops a candidate; disabled and empty slots sit far away.

Meshes: ``wp.mesh_query_point_sign_winding_number`` in float32 (``wp.Mesh`` is float32): the
unsigned distance is the exact distance to the triangle set (closest point on the nearest face),
negative where the generalised winding number exceeds 0.5 (inside a closed, outward-wound mesh;
robust to small holes). The gradient is ``sign * (p - closest) / |p - closest|`` (the face normal
on the surface).

:func:`_query_loop` visits every enabled slot; a slot whose AABB lies farther than
``radius + max(activation, max_distance)`` from the point on some axis is skipped before its SDF
(it can neither be nearer than ``max_distance`` nor add cost).
"""

from __future__ import annotations

from typing import Any

import warp as wp

from curobo_lite.kernels.collision_common import smooth_hinge, smooth_hinge_grad
from curobo_lite.kernels.primitive_sdf import slot_primitive_sdf, to_local, to_world

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: winding-number sign: accuracy of the fast (dipole) approximation and the inside threshold
WINDING_ACCURACY = 2.0
WINDING_THRESHOLD = 0.5


def _world_tables_struct(scalar: type) -> type:
    """The ``wp.struct`` of the world tables (module docstring) for ``scalar`` (float32 /
    float64: a struct's array fields need a concrete dtype). ``WorldCollision`` fills one when
    it allocates its tables and updates its counts and bounds on each upload, so a launch
    passes the whole world as one argument."""
    fields = {
        "prim_type": wp.array(dtype=wp.int32),
        "prim_enabled": wp.array(dtype=wp.int32),
        "prim_frame": wp.array2d(dtype=scalar),
        "prim_params": wp.array2d(dtype=scalar),
        "mesh_ids": wp.array(dtype=wp.uint64),
        "mesh_enabled": wp.array(dtype=wp.int32),
        "mesh_frame": wp.array2d(dtype=scalar),
        "active_slots": wp.array(dtype=wp.int32),
        "slot_lo": wp.array(dtype=wp.vec3f),
        "slot_hi": wp.array(dtype=wp.vec3f),
        "num_active": int,
        "bvh_id": wp.uint64,
        "world_lo": wp.vec3f,
        "world_hi": wp.vec3f,
    }
    name = f"WorldTables_{scalar.__name__}"
    namespace = {"__annotations__": fields, "__module__": __name__, "__qualname__": name}
    return wp.struct(type(name, (), namespace))


#: the world-tables struct type of each scalar type
WORLD_TABLES = {scalar: _world_tables_struct(scalar) for scalar in (wp.float32, wp.float64)}


@wp.func
def _obstacle_sdf(slot: int, p: Any, world: Any):
    """``(valid, sdf, world gradient)`` of world point ``p`` against slot ``slot`` of the
    world tables ``world``."""
    zero = p[0] - p[0]
    d = zero
    g = wp.vector(zero, zero, zero)
    valid = wp.int32(0)
    num_prim = world.prim_type.shape[0]
    if slot < num_prim:
        if world.prim_enabled[slot] != 0:
            valid = 1
            d, g = slot_primitive_sdf(slot, p, world.prim_type, world.prim_frame, world.prim_params)
    else:
        m = slot - num_prim
        mesh_frame = world.mesh_frame
        if world.mesh_enabled[m] != 0:
            q = to_local(mesh_frame, m, p)
            mesh = world.mesh_ids[m]
            q32 = wp.vec3f(wp.float32(q[0]), wp.float32(q[1]), wp.float32(q[2]))
            hit = wp.mesh_query_point_sign_winding_number(
                mesh, q32, wp.float32(1.0e30), wp.float32(WINDING_ACCURACY),
                wp.float32(WINDING_THRESHOLD),
            )  # fmt: skip
            if hit.result:
                valid = 1
                c = wp.mesh_eval_position(mesh, hit.face, hit.u, hit.v)
                v = q - wp.vector(type(zero)(c[0]), type(zero)(c[1]), type(zero)(c[2]))
                n = wp.length(v)
                s = type(zero)(1.0)
                if hit.sign < wp.float32(0.0):
                    s = type(zero)(-1.0)
                d = s * n
                if n > zero:
                    g = v * (s / n)
                else:
                    fn = wp.mesh_eval_face_normal(mesh, hit.face)
                    g = wp.vector(type(zero)(fn[0]), type(zero)(fn[1]), type(zero)(fn[2]))
                g = to_world(mesh_frame, m, g)
    return valid, d, g


@wp.func
def _box_cover(p: Any, lo: wp.vec3f, hi: wp.vec3f):
    """Half-width of the smallest box around ``p`` that contains the box ``[lo, hi]``."""
    zero = p[0] - p[0]
    cover = zero
    for i in range(3):
        cover = wp.max(cover, wp.max(p[i] - type(zero)(lo[i]), type(zero)(hi[i]) - p[i]))
    return cover


@wp.func
def _within_box(p: Any, lo: wp.vec3f, hi: wp.vec3f, reach: Any):
    """Whether ``p`` lies within ``reach`` of the box ``[lo, hi]`` on every axis (a point
    outside that slab box is farther than ``reach`` from anything inside the box)."""
    inside = True
    for i in range(3):
        if p[i] < type(reach)(lo[i]) - reach or p[i] > type(reach)(hi[i]) + reach:
            inside = False
    return inside


@wp.func
def _accumulate(
    valid: int,
    sdf: Any,
    g: Any,
    radius: Any,
    activation: Any,
    with_cost: int,
    best: Any,
    best_g: Any,
    best_r: Any,
    cost: Any,
    cost_g: Any,
    cost_r: Any,
):
    """Fold one obstacle's ``(valid, sdf, gradient)`` into a sphere's running nearest distance
    ``(best, best_g, best_r)`` and, with ``with_cost``, its summed activation cost
    ``(cost, cost_g, cost_r)``; returns the six updated values."""
    if valid != 0:
        dist = sdf - radius
        if dist < best:
            best = dist
            best_g = g
            best_r = type(radius)(-1.0)
        if with_cost != 0:
            x = activation - dist
            h = smooth_hinge_grad(x, activation)
            cost = cost + smooth_hinge(x, activation)
            cost_g = cost_g - h * g
            cost_r = cost_r + h
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func
def _no_obstacle(max_distance: Any):
    """The query result with no obstacle in reach: ``max_distance``, no cost, zero
    gradients (the six values of :func:`_query_loop`)."""
    zero = type(max_distance)(0.0)  # not max_distance - max_distance: it may be inf
    g = wp.vector(zero, zero, zero)
    return max_distance, g, zero, zero, g, zero


@wp.func(inline=True)
def _fold_slot(
    slot: int,
    p: Any,
    radius: Any,
    activation: Any,
    reach: Any,
    world: Any,
    best: Any,
    best_g: Any,
    best_r: Any,
    cost: Any,
    cost_g: Any,
    cost_r: Any,
):
    """An enabled slot folded into a sphere's running result (:func:`_accumulate`) when its
    box lies within ``reach`` of the centre ``p`` on every axis: the body of every query's
    loop over obstacles. Inlined: a call would copy the world's struct."""
    if _within_box(p, world.slot_lo[slot], world.slot_hi[slot], reach):
        # the callers visit enabled slots only: a primitive needs no enabled check
        valid = wp.int32(1)
        sdf = radius - radius
        g = best_g
        if slot < world.prim_type.shape[0]:
            sdf, g = slot_primitive_sdf(
                slot, p, world.prim_type, world.prim_frame, world.prim_params
            )
        else:
            valid, sdf, g = _obstacle_sdf(slot, p, world)
        best, best_g, best_r, cost, cost_g, cost_r = _accumulate(
            valid, sdf, g, radius, activation, 1, best, best_g, best_r, cost, cost_g, cost_r
        )
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func(inline=True)
def _query_loop(p: Any, radius: Any, activation: Any, max_distance: Any, world: Any):
    """Distance, its gradient and the cost of one sphere (centre ``p``) against the obstacles
    in the first ``num_active`` entries of ``active_slots`` (the enabled slots) of the world
    tables ``world``.

    Returns ``(distance, grad_distance_centre, grad_distance_radius, cost, grad_cost_centre,
    grad_cost_radius)``; the distance is clamped at ``max_distance`` (zero gradient there).
    """
    best, best_g, best_r, cost, cost_g, cost_r = _no_obstacle(max_distance)
    reach = radius + wp.max(activation, max_distance)
    for i in range(world.num_active):
        best, best_g, best_r, cost, cost_g, cost_r = _fold_slot(
            world.active_slots[i], p, radius, activation, reach, world, best, best_g, best_r,
            cost, cost_g, cost_r,
        )  # fmt: skip
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func
def _boxes_overlap(lo: Any, hi: Any, box_lo: wp.vec3f, box_hi: wp.vec3f):
    """Whether the box ``[lo, hi]`` meets the float32 box ``[box_lo, box_hi]``."""
    overlap = True
    for i in range(3):
        if lo[i] > type(lo[i])(box_hi[i]) or hi[i] < type(lo[i])(box_lo[i]):
            overlap = False
    return overlap
