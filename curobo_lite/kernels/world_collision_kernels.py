"""Warp kernels: signed distance and collision penalty of spheres against a world of obstacles.

One thread per query sphere. Generic over the scalar type (float32 / float64); the gradient with
respect to the sphere (centre and radius) is computed in the forward pass, analytically. The
world tables (the :data:`WORLD_TABLES` struct) and one slot's signed distance are
:mod:`curobo_lite.kernels.world_slots`'.

Broad phase (``broad_phase``: 0 the loop, 1 the BVH, 2 the grid):

- the loop (:func:`_query_loop`) visits every enabled slot, skipping one whose AABB is out of
  reach before its SDF: with a finite ``max_distance`` (the costs' case) most spheres evaluate
  no SDF at all;
- the BVH: the box of half-width ``R`` around the query point is tested against the BVH. An
  obstacle whose AABB misses the box is farther than ``R``, so after a pass the best candidate
  is the true nearest obstacle once its signed distance is ``<= R``; otherwise ``R`` grows 4x
  and the query repeats, until that holds, ``R`` reaches ``radius + max_distance`` or the box
  covers the world bounds. The first ``R`` is at least ``radius + activation``, so the first
  pass sees every obstacle that contributes to the cost;
- the grid (:mod:`curobo_lite.kernels.world_grid_kernels`): one read of a lower bound of the
  static obstacles' distance per point, then only the obstacles listed near its cell, and the
  obstacles moved since the grid was built. The same results as the loop.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from curobo_lite.kernels.collision_common import clear_row, store4, sweep_samples
from curobo_lite.kernels.warp_types import (  # noqa: F401 (SCALAR_TYPES: read from here too)
    SCALAR_TYPES,
    Array1,
    Array2,
    scalar_overloads,
)
from curobo_lite.kernels.world_grid_kernels import BVH, GRID, GridTables, _query_grid
from curobo_lite.kernels.world_slots import (
    WORLD_TABLES,
    _accumulate,
    _box_cover,
    _boxes_overlap,
    _no_obstacle,
    _obstacle_sdf,
    _query_loop,
)

wp.config.log_level = 30  # WARNING
# gradients are computed analytically in the forward kernel
wp.set_module_options({"enable_backward": False})

#: growth factor of the broad-phase search box between passes
RANGE_GROWTH = 4.0
MAX_PASSES = 64


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


@wp.func(inline=True)
def _segment_in_reach(a: Any, c: Any, radius: Any, reach: Any, world: Any, broad_phase: int):
    """Whether an obstacle's bounds come within ``radius + reach`` of the segment ``a``-``c``
    on every axis (False: every sample of the segment is out of reach of every obstacle, its
    query result is :func:`_no_obstacle`'s). One box test per enabled obstacle, or one BVH
    query, instead of a full query per sample: most spheres are far from everything."""
    if not wp.isfinite(reach):
        return True
    margin = radius + reach
    lo = wp.min(a, c) - wp.vector(margin, margin, margin)
    hi = wp.max(a, c) + wp.vector(margin, margin, margin)
    if broad_phase != BVH:
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
    grid: GridTables,
    broad_phase: int,
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
    # the grid's own first read is a cheaper exit than the box test for a point
    in_reach = True
    if broad_phase != GRID or count > 1:
        in_reach = _segment_in_reach(a, c, wp.max(r, ra), reach, world, broad_phase)
    if r < zero or not in_reach:
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
        if broad_phase == GRID:
            d, gd, gdr, cst, gc, gcr = _query_grid(p, rr, activation, max_distance, world, grid)
        elif broad_phase != BVH:
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
        WORLD_TABLES[scalar], GridTables, int, int, int,
        a1, a1, a2, a2, a2, a2,
    ]  # fmt: skip


#: the float32 or float64 instance of :func:`sphere_world_distance` (one module build)
distance_kernel = scalar_overloads(sphere_world_distance, _signature)
