"""Warp kernels: signed distance and collision penalty of spheres against a world of obstacles.

One thread per query sphere. Generic over the scalar type (float32 / float64); the gradient with
respect to the sphere (centre and radius) is computed in the forward pass, analytically.

World tables (``P`` primitive slots, ``M`` mesh slots; see ``curobo_lite.geom.world_tables``),
the fields of one :data:`WORLD_TABLES` struct:

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

Broad phase (``use_bvh``): the box of half-width ``R`` around the query point is tested against
the BVH. An obstacle whose AABB misses the box is farther than ``R``, so after a pass the best
candidate is the true nearest obstacle once its signed distance is ``<= R``; otherwise ``R`` grows
4x and the query repeats, until that holds, ``R`` reaches ``radius + max_distance`` or the box
covers the world bounds. The first ``R`` is at least ``radius + activation``, so the first pass
sees every obstacle that contributes to the cost. Without the BVH every active slot is visited,
but one whose AABB lies farther than ``radius + max(activation, max_distance)`` from the point on
some axis is skipped before its SDF (it can neither be nearer than ``max_distance`` nor add
cost): with a finite ``max_distance`` (the costs' case) most spheres evaluate no SDF at all.

Meshes: ``wp.mesh_query_point_sign_winding_number`` in float32 (``wp.Mesh`` is float32): the
unsigned distance is the exact distance to the triangle set (closest point on the nearest face),
negative where the generalised winding number exceeds 0.5 (inside a closed, outward-wound mesh;
robust to small holes). The gradient is ``sign * (p - closest) / |p - closest|`` (the face normal
on the surface).
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
from curobo_lite.kernels.primitive_sdf import (
    slot_primitive_sdf,
    to_local,
    to_world,
)
from curobo_lite.kernels.warp_types import (  # noqa: F401 (SCALAR_TYPES: read from here too)
    SCALAR_TYPES,
    Array1,
    Array2,
    scalar_overloads,
)

wp.config.log_level = 30  # WARNING
# gradients are computed analytically in the forward kernel
wp.set_module_options({"enable_backward": False})

#: winding-number sign: accuracy of the fast (dipole) approximation and the inside threshold
WINDING_ACCURACY = 2.0
WINDING_THRESHOLD = 0.5
#: growth factor of the broad-phase search box between passes
RANGE_GROWTH = 4.0
MAX_PASSES = 64


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


@wp.func
def _query_loop(p: Any, radius: Any, activation: Any, max_distance: Any, world: Any):
    """Distance, its gradient and the cost of one sphere (centre ``p``) against the obstacles
    in the first ``num_active`` entries of ``active_slots`` (the enabled slots) of the world
    tables ``world``.

    Returns ``(distance, grad_distance_centre, grad_distance_radius, cost, grad_cost_centre,
    grad_cost_radius)``; the distance is clamped at ``max_distance`` (zero gradient there).
    """
    zero = radius - radius
    best, best_g, best_r, cost, cost_g, cost_r = _no_obstacle(max_distance)
    reach = radius + wp.max(activation, max_distance)
    slot_lo = world.slot_lo
    slot_hi = world.slot_hi
    active_slots = world.active_slots
    prim_type = world.prim_type
    prim_frame = world.prim_frame
    prim_params = world.prim_params
    num_prim = prim_type.shape[0]
    for i in range(world.num_active):
        slot = active_slots[i]
        if _within_box(p, slot_lo[slot], slot_hi[slot], reach):
            # active slots are enabled: a primitive needs no enabled check
            valid = wp.int32(1)
            sdf = zero
            g = best_g
            if slot < num_prim:
                sdf, g = slot_primitive_sdf(slot, p, prim_type, prim_frame, prim_params)
            else:
                valid, sdf, g = _obstacle_sdf(slot, p, world)
            best, best_g, best_r, cost, cost_g, cost_r = _accumulate(
                valid, sdf, g, radius, activation, 1, best, best_g, best_r, cost, cost_g, cost_r
            )
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func
def _query_bvh(
    p: Any, radius: Any, activation: Any, max_distance: Any, initial_range: Any, world: Any
):
    """:func:`_query_loop`'s result over the obstacles whose bounds the BVH finds near ``p``,
    the search box growing until exact (module docstring). A separate function from the
    loop: its traversal state is a large local the loop path should not set up per sphere."""
    zero = radius - radius
    best, best_g, best_r, cost, cost_g, cost_r = _no_obstacle(max_distance)
    search = radius + wp.max(activation, wp.min(max_distance, initial_range))
    cover = _box_cover(p, world.world_lo, world.world_hi)
    first = wp.int32(1)
    done = wp.int32(0)
    passes = wp.int32(0)
    while done == 0:
        # outward slack for rounding the box to float32 (obstacle boxes carry their own)
        slack = type(zero)(1.0e-6) * (search + wp.abs(p[0]) + wp.abs(p[1]) + wp.abs(p[2]))
        half = search + slack
        lo = wp.vec3f(wp.float32(p[0] - half), wp.float32(p[1] - half), wp.float32(p[2] - half))
        hi = wp.vec3f(wp.float32(p[0] + half), wp.float32(p[1] + half), wp.float32(p[2] + half))
        query = wp.bvh_query_aabb(world.bvh_id, lo, hi)
        slot = wp.int32(0)
        while wp.bvh_query_next(query, slot):
            valid, sdf, g = _obstacle_sdf(slot, p, world)
            best, best_g, best_r, cost, cost_g, cost_r = _accumulate(
                valid, sdf, g, radius, activation, first, best, best_g, best_r, cost, cost_g,
                cost_r,
            )  # fmt: skip
        first = 0
        passes += 1
        # everything outside the box is farther than ``search`` from p; the pass cap only
        # matters for non-finite input (4^MAX_PASSES outgrows any finite world)
        if best + radius <= search or search >= radius + max_distance or search >= cover:
            done = 1
        elif passes >= MAX_PASSES:
            done = 1
        else:
            search = wp.min(search * type(zero)(RANGE_GROWTH), radius + max_distance)
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func
def _segment_in_reach(a: Any, c: Any, radius: Any, reach: Any, world: Any, use_bvh: int):
    """Whether an obstacle's bounds come within ``radius + reach`` of the segment ``a``-``c``
    on every axis (False: every sample of the segment is out of reach of every obstacle, its
    query result is :func:`_no_obstacle`'s). One box test per enabled obstacle, or one BVH
    query, instead of a full query per sample: most spheres are far from everything."""
    if not wp.isfinite(reach):
        return True
    margin = radius + reach
    lo = wp.min(a, c) - wp.vector(margin, margin, margin)
    hi = wp.max(a, c) + wp.vector(margin, margin, margin)
    if use_bvh == 0:
        slot_lo = world.slot_lo
        slot_hi = world.slot_hi
        active_slots = world.active_slots
        for i in range(world.num_active):
            slot = active_slots[i]
            if _boxes_overlap(lo, hi, slot_lo[slot], slot_hi[slot]):
                return True
        return False
    # outward slack for rounding the box to float32 (obstacle boxes carry their own)
    slack = type(reach)(1.0e-6) * (margin + wp.max(wp.abs(lo)) + wp.max(wp.abs(hi)))
    lo32 = wp.vec3f(wp.float32(lo[0] - slack), wp.float32(lo[1] - slack), wp.float32(lo[2] - slack))
    hi32 = wp.vec3f(wp.float32(hi[0] + slack), wp.float32(hi[1] + slack), wp.float32(hi[2] + slack))
    query = wp.bvh_query_aabb(world.bvh_id, lo32, hi32)
    slot = wp.int32(0)
    return wp.bvh_query_next(query, slot)


@wp.func
def _boxes_overlap(lo: Any, hi: Any, box_lo: wp.vec3f, box_hi: wp.vec3f):
    """Whether the box ``[lo, hi]`` meets the float32 box ``[box_lo, box_hi]``."""
    overlap = True
    for i in range(3):
        if lo[i] > type(lo[i])(box_hi[i]) or hi[i] < type(lo[i])(box_lo[i]):
            overlap = False
    return overlap


@wp.kernel
def sphere_world_distance(
    spheres: Array2,
    activation: Any,
    max_distance: Any,
    initial_range: Any,
    sweep: int,
    horizon: int,
    num_spheres: int,
    sweep_spacing: Any,
    max_sweep_samples: int,
    world: Any,
    use_bvh: int,
    row_offset: int,
    write_grad: int,
    distance: Array1,
    cost: Array1,
    grad_distance: Array2,
    grad_cost: Array2,
    grad_distance_prev: Array2,
    grad_cost_prev: Array2,
):
    """Distance ``[S]`` and cost ``[S]`` of spheres ``[S, 4]`` (rows ``b*H*N + h*N + n``).

    With ``sweep``, row ``h >= 1`` samples the segment from the same sphere at ``h - 1``
    (row ``- N``): ``K = min(ceil(L / (sweep_spacing * r)), max_sweep_samples)`` sub-segment
    midpoints ``t = (k + 1/2) / K`` and the end point ``t = 1`` (centre and radius interpolated);
    the distance is the minimum, the cost the maximum over the samples. Gradients (with
    ``write_grad``) go to this row's sphere (``grad_*``, weight ``t``) and the previous one
    (``grad_*_prev``, weight ``1 - t``); outputs
    are written at ``row - row_offset`` so a row chunk can use views of its own rows.
    """
    s = wp.tid() + row_offset
    o = s - row_offset
    zero = activation - activation
    one = zero + type(zero)(1.0)
    r = spheres[s, 3]
    c = wp.vector(spheres[s, 0], spheres[s, 1], spheres[s, 2])
    vzero = wp.vector(zero, zero, zero)
    a = c
    ra = r
    samples = wp.int32(1)
    count = wp.int32(1)
    h = wp.int32(0)
    if sweep != 0:
        h = (s // num_spheres) % horizon
    if h > 0 and r >= zero:
        rp = spheres[s - num_spheres, 3]
        if rp >= zero:
            a = wp.vector(
                spheres[s - num_spheres, 0],
                spheres[s - num_spheres, 1],
                spheres[s - num_spheres, 2],
            )
            ra = rp
            length = wp.length(c - a)
            if length > zero:
                samples = sweep_samples(length, sweep_spacing * wp.min(r, rp), max_sweep_samples)
                count = samples + 1
    reach = wp.max(activation, max_distance)
    if r < zero or not _segment_in_reach(a, c, wp.max(r, ra), reach, world, use_bvh):
        # a disabled sphere, or no obstacle within reach of any sample of its segment (most
        # spheres): skip the per-sample queries
        clear_row(
            o, max_distance, sweep, write_grad, distance, cost, grad_distance, grad_cost,
            grad_distance_prev, grad_cost_prev,
        )  # fmt: skip
        return
    best_d = max_distance
    best_gd = vzero
    best_gdr = zero
    best_td = one
    best_c = zero
    best_gc = vzero
    best_gcr = zero
    best_tc = one
    for k in range(count):
        # midpoints of the K sub-segments, then the end point itself
        t = one
        if k < count - 1:
            t = (type(zero)(k) + type(zero)(0.5)) / type(zero)(samples)
        p = a + t * (c - a)
        rr = ra + t * (r - ra)
        d = max_distance
        gd = vzero
        gdr = zero
        cst = zero
        gc = vzero
        gcr = zero
        if use_bvh == 0:
            d, gd, gdr, cst, gc, gcr = _query_loop(p, rr, activation, max_distance, world)
        else:
            d, gd, gdr, cst, gc, gcr = _query_bvh(
                p, rr, activation, max_distance, initial_range, world
            )
        if k == 0 or d < best_d:
            best_d = d
            best_gd = gd
            best_gdr = gdr
            best_td = t
        if k == 0 or cst > best_c:
            best_c = cst
            best_gc = gc
            best_gcr = gcr
            best_tc = t
    distance[o] = best_d
    cost[o] = best_c
    if write_grad != 0:
        store4(grad_distance, o, best_gd * best_td, best_gdr * best_td)
        store4(grad_cost, o, best_gc * best_tc, best_gcr * best_tc)
        if sweep != 0:
            store4(grad_distance_prev, o, best_gd * (one - best_td), best_gdr * (one - best_td))
            store4(grad_cost_prev, o, best_gc * (one - best_tc), best_gcr * (one - best_tc))


def _signature(scalar) -> list:
    a1, a2 = wp.array(dtype=scalar), wp.array2d(dtype=scalar)
    return [
        a2, scalar, scalar, scalar, int, int, int, scalar, int,
        WORLD_TABLES[scalar], int, int, int,
        a1, a1, a2, a2, a2, a2,
    ]  # fmt: skip


#: the float32 or float64 instance of :func:`sphere_world_distance` (one module build)
distance_kernel = scalar_overloads(sphere_world_distance, _signature)
