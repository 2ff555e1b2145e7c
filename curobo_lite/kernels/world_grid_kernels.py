"""Warp kernels: a grid broad phase over a world's static obstacles.

Among large obstacles near the arm (shelf boards, the walls of an open box, turned about the
vertical so that their axis-aligned boxes cover the space between them) the loop's box test
(:func:`~curobo_lite.kernels.world_slots._query_loop`) lets most spheres through to most
obstacles' exact SDFs, though few spheres are near any surface. A uniform grid over the
obstacles (edge ``h``, cells ``[nx, ny, nz]`` from ``origin``) holds per cell:

- ``lower_bound [C]``: a lower bound of the signed distance from any point of the cell to the
  static obstacles: the smallest obstacle SDF at the cell's centre, less the half diagonal
  ``h * sqrt(3) / 2`` (an SDF changes by at most the distance moved), less a rounding slack;
- ``slots [C, K]``, ``count [C]``: the obstacles whose SDF may fall below the grid's reach
  ``R`` (``GridTables.reach``) somewhere in the cell (SDF at the centre less the half diagonal
  ``<= R``); ``count = -1`` when more than ``K`` are (the query then visits every obstacle).

A query of a sphere (centre ``p``, radius ``r``) that reaches ``reach = r + max(activation,
max_distance) <= R`` reads its cell: with ``lower_bound >= reach`` no static obstacle is in
reach (the loop would skip them all); otherwise only the cell's listed obstacles can be (an
unlisted one is farther than ``R`` from every point of the cell). A point outside the grid is
farther than ``R`` from every static obstacle's box (the grid covers their boxes grown by
``R``). A larger reach, a full cell or a non-finite point take the loop. The result equals the
loop's, exactly: each obstacle the grid skips is one the loop skips or one that adds nothing.

Obstacles edited after the build (moved, enabled, added) are *dynamic*: ``unmoved [P + M]``
is 0 for them, the cell lists skip them, and every query visits the first
``num_dynamic`` entries of ``dynamic`` with the loop's box test. A disabled or moved
obstacle keeps its part in ``lower_bound``, which stays a lower bound (of fewer obstacles).
"""

from __future__ import annotations

from typing import Any

import warp as wp

from curobo_lite.kernels.warp_types import scalar_overloads
from curobo_lite.kernels.world_slots import (
    WORLD_TABLES,
    _fold_slot,
    _no_obstacle,
    _obstacle_sdf,
    _query_loop,
    _within_box,
)

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: obstacles listed per cell; a cell near more takes the loop
SLOTS_PER_CELL = 8
#: the broad-phase codes of the kernels' ``broad_phase`` argument
LOOP, BVH, GRID = 0, 1, 2


@wp.struct
class GridTables:
    """The grid of one world (module docstring), a kernel argument of its own beside the
    world's tables: a CPU kernel copies its struct arguments once per thread, so the world
    tables stay as small as the queries without a grid need them (the verdict kernel, the
    BVH)."""

    lower_bound: wp.array(dtype=wp.float32)
    count: wp.array(dtype=wp.int32)
    slots: wp.array2d(dtype=wp.int32)
    unmoved: wp.array(dtype=wp.int32)
    dynamic: wp.array(dtype=wp.int32)
    num_dynamic: int
    origin: wp.vec3f
    inv_cell: wp.float32
    dims: wp.vec3i
    reach: wp.float32


@wp.func(inline=True)
def _grid_cell(p: Any, grid: GridTables):
    """The flat index of the grid cell holding ``p``, or -1 outside the grid (and for a
    non-finite ``p``: every comparison with NaN fails)."""
    dims = grid.dims
    inv = type(p[0])(grid.inv_cell)
    index = wp.int32(0)
    for a in range(3):
        x = (p[a] - type(p[0])(grid.origin[a])) * inv
        if x >= type(x)(0.0) and x < type(x)(dims[a]):
            if index >= 0:
                index = index * dims[a] + wp.int32(x)
        else:
            index = wp.int32(-1)
    return index


@wp.func(inline=True)
def _query_grid(
    p: Any, radius: Any, activation: Any, max_distance: Any, world: Any, grid: GridTables
):
    """:func:`~curobo_lite.kernels.world_slots._query_loop`'s six values, the static obstacles
    found through the grid (module docstring), the dynamic ones by the loop's box test."""
    reach = radius + wp.max(activation, max_distance)
    if not (reach <= type(reach)(grid.reach)):  # also inf / NaN
        return _query_loop(p, radius, activation, max_distance, world)
    cell = _grid_cell(p, grid)
    count = wp.int32(0)
    if cell >= 0:
        count = grid.count[cell]
        if count < 0:
            return _query_loop(p, radius, activation, max_distance, world)
        if not (type(reach)(grid.lower_bound[cell]) < reach):
            count = 0
    best, best_g, best_r, cost, cost_g, cost_r = _no_obstacle(max_distance)
    # the cell's static obstacles, then the dynamic ones: the loop's body on each
    for k in range(count + grid.num_dynamic):
        slot = wp.int32(0)
        if k < count:
            slot = grid.slots[cell, k]
            if grid.unmoved[slot] == 0:  # moved since the build: among the dynamic ones
                slot = -1
        else:
            slot = grid.dynamic[k - count]
        if slot >= 0:
            best, best_g, best_r, cost, cost_g, cost_r = _fold_slot(
                slot, p, radius, activation, reach, world, best, best_g, best_r, cost, cost_g,
                cost_r,
            )  # fmt: skip
    return best, best_g, best_r, cost, cost_g, cost_r


@wp.func(inline=True)
def _grid_near(c: Any, radius: Any, reach: Any, world: Any, grid: GridTables):
    """Whether the sphere ``(c, radius)`` may come within ``reach`` of an obstacle (False: it
    is farther from every one): the cell's lower bound for the static obstacles, the box test
    for the dynamic ones."""
    margin = radius + reach
    cell = _grid_cell(c, grid)
    near = True
    if cell >= 0:
        near = type(margin)(grid.lower_bound[cell]) < margin
    elif margin <= type(margin)(grid.reach):
        near = False
    if not near:
        slot_lo = world.slot_lo
        slot_hi = world.slot_hi
        for k in range(grid.num_dynamic):
            slot = grid.dynamic[k]
            if _within_box(c, slot_lo[slot], slot_hi[slot], margin):
                near = True
    return near


@wp.kernel
def grid_build(
    world: Any,
    origin: Any,
    cell_size: Any,
    dims: wp.vec3i,
    build_reach: Any,
    lower_bound: wp.array(dtype=wp.float32),
    count: wp.array(dtype=wp.int32),
    slots: wp.array2d(dtype=wp.int32),
):
    """One cell per thread (flat index ``(ix * ny + iy) * nz + iz``): ``lower_bound``,
    ``count`` and ``slots`` of the enabled obstacles (module docstring). An obstacle whose box
    is farther than ``build_reach`` plus the half diagonal from the centre skips its SDF (the
    box distance bounds it from below)."""
    c = wp.tid()
    iz = c % dims[2]
    iy = (c // dims[2]) % dims[1]
    ix = c // (dims[2] * dims[1])
    half = cell_size * type(cell_size)(0.5)
    p = origin + wp.vector(
        type(cell_size)(ix) * cell_size + half,
        type(cell_size)(iy) * cell_size + half,
        type(cell_size)(iz) * cell_size + half,
    )
    half_diagonal = cell_size * type(cell_size)(0.8660254037844386)
    best = type(cell_size)(1.0e30)
    n = wp.int32(0)
    for k in range(world.num_active):
        slot = world.active_slots[k]
        lo = world.slot_lo[slot]
        hi = world.slot_hi[slot]
        gap2 = type(cell_size)(0.0)
        for a in range(3):
            gap = wp.max(
                wp.max(type(cell_size)(lo[a]) - p[a], p[a] - type(cell_size)(hi[a])),
                type(cell_size)(0.0),
            )
            gap2 += gap * gap
        box_distance = wp.sqrt(gap2)
        if box_distance - half_diagonal > build_reach:
            best = wp.min(best, box_distance)
        else:
            valid, sdf, _g = _obstacle_sdf(slot, p, world)
            if valid != 0:
                best = wp.min(best, sdf)
                if sdf - half_diagonal <= build_reach:
                    if n < SLOTS_PER_CELL:
                        slots[c, n] = slot
                    n += 1
    # rounding slack: float32 storage and the centre's position error
    slack = type(cell_size)(1.0e-5) + type(cell_size)(1.0e-6) * wp.abs(best)
    lower_bound[c] = wp.float32(best - half_diagonal - slack)
    if n > SLOTS_PER_CELL:
        n = -1
    count[c] = n


def _build_signature(scalar) -> list:
    return [
        WORLD_TABLES[scalar], wp.types.vector(3, scalar), scalar, wp.vec3i, scalar,
        wp.array(dtype=wp.float32), wp.array(dtype=wp.int32), wp.array2d(dtype=wp.int32),
    ]  # fmt: skip


#: the float32 or float64 instance of :func:`grid_build`
build_kernel = scalar_overloads(grid_build, _build_signature)
