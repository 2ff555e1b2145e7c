"""Warp kernels: the world-collision cost of a robot's spheres read straight from its link frames.

A sampling optimizer (MPPI) needs only the summed collision cost of each configuration, with no
gradient. Writing every sphere of every configuration to memory first (``[N, S, 4]``, 32 MB for
MPC's 12 000 configurations of the Franka's 171 spheres) and querying each one costs more than
the rest of a control step. Here a thread takes a few configurations (one on CUDA), and each
configuration's sphere groups (a link's spheres, which ride on one frame) frame by frame:

1. the sphere around the frame's origin that holds every enabled sphere riding on it (its
   reach, :func:`group_bounds`) is tested against the box around all enabled obstacles, then
   the world's broad phase; when it is out of reach, so is every sphere of the frame, and no
   rotation is computed (the usual case);
2. otherwise each group's bounding sphere (:func:`group_bounds`: centre and radius in the frame,
   over the group's enabled spheres; both recomputed each call so held objects written into the
   reserved spheres count) is placed by the frame's pose and tested against that box, then the
   world's broad phase (the obstacles' boxes, or their BVH) with the reach of the query;
3. only when it is within reach are the group's spheres placed one by one and queried exactly as
   :mod:`curobo_lite.kernels.world_collision_kernels`' ``sphere_world_distance`` queries a
   sphere (the same per-sphere reach test and the same per-obstacle functions), and their costs
   summed.

A sphere within reach of an obstacle lies inside its group's bounding sphere, and that inside
its frame's reach, and the obstacle inside the box around all of them, so steps 1 and 2 drop no
cost: the result equals the sum over the group's spheres of the per-sphere query's cost.

Inputs: ``link_position [N, L, 3]`` and ``link_quaternion [N, L, 4]`` (``wxyz``) of forward
kinematics, ``sphere_local [S, 4]`` (centre in its frame, radius; radius < 0: disabled),
``world_mask [S]`` (int32: 0 for spheres left out of world checks), ``group_start [G + 1]``
and ``group_frame [G]`` (the frame a group rides on: ``-1`` the base, ``f`` link frame ``f``).
Output: ``cost [N]``, summed over the configuration's spheres.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.warp_types import Array1, Array2, Array3, IndexArray, scalar_overloads
from curobo_lite.kernels.world_collision_kernels import _query_bvh, _segment_in_reach
from curobo_lite.kernels.world_grid_kernels import BVH, GRID, GridTables, _grid_near, _query_grid
from curobo_lite.kernels.world_slots import WORLD_TABLES, _query_loop

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


@wp.func
def _frame_position(link_position: Array3, i: int, frame: int):
    """Origin of link frame ``frame`` of configuration ``i`` (the base's, zero, for
    ``frame < 0``)."""
    zero = link_position.dtype(0.0)
    p = wp.vector(zero, zero, zero)
    if frame >= 0:
        p = wp.vector(
            link_position[i, frame, 0], link_position[i, frame, 1], link_position[i, frame, 2]
        )
    return p


@wp.func
def _frame_rotation(link_quaternion: Array3, i: int, frame: int):
    """Rotation of link frame ``frame`` of configuration ``i`` (identity for ``frame < 0``)."""
    zero = link_quaternion.dtype(0.0)
    r = wp.quaternion(zero, zero, zero, link_quaternion.dtype(1.0))
    if frame >= 0:
        r = wp.quaternion(
            link_quaternion[i, frame, 1],
            link_quaternion[i, frame, 2],
            link_quaternion[i, frame, 3],
            link_quaternion[i, frame, 0],
        )
    return r


@wp.func(inline=True)
def _near_world(c: Any, radius: Any, reach: Any, world: Any, grid: GridTables, broad_phase: int):
    """Whether the sphere ``(c, radius)`` comes within ``reach`` of an enabled obstacle's box
    (:func:`_segment_in_reach` of a point); the box loop is written out here, reading the
    world's fields in place, where a call per group measured 4x slower."""
    if broad_phase == GRID:
        return _grid_near(c, radius, reach, world, grid)
    if broad_phase == BVH:
        return _segment_in_reach(c, c, radius, reach, world, broad_phase)
    margin = radius + reach
    slot_lo = world.slot_lo
    slot_hi = world.slot_hi
    active_slots = world.active_slots
    near = wp.int32(0)
    for k in range(world.num_active):
        slot = active_slots[k]
        lo = slot_lo[slot]
        hi = slot_hi[slot]
        inside = wp.int32(1)
        for a in range(3):
            if c[a] + margin < type(c[a])(lo[a]) or c[a] - margin > type(c[a])(hi[a]):
                inside = wp.int32(0)
        near = near | inside
    return near != 0


@wp.kernel
def group_bounds(
    sphere_local: Array2,
    world_mask: IndexArray,
    group_start: IndexArray,
    group_frame: IndexArray,
    bounds: Array2,
    frame_end: IndexArray,
):
    """``bounds [G, 5]``: centre (in the group's frame) and radius of a sphere holding group
    ``g``'s enabled world spheres (the centre of their centres' box; radius -1 when none), and
    the reach of the frame it rides on: the largest ``|centre| + radius`` of the enabled world
    spheres of every group on that frame (-1 when none), so a sphere of that radius around the
    frame's origin holds them all. ``frame_end [G]``: one past the last group on ``g``'s
    frame (groups are sorted by frame)."""
    g = wp.tid()
    zero = sphere_local.dtype(0.0)
    big = sphere_local.dtype(1.0e30)
    # outward slack for rounding: a bound must hold every sphere it stands for
    grow = sphere_local.dtype(1.0 + 1.0e-5)
    slack = sphere_local.dtype(1.0e-6)
    lo = wp.vector(big, big, big)
    hi = wp.vector(-big, -big, -big)
    count = wp.int32(0)
    for s in range(group_start[g], group_start[g + 1]):
        if world_mask[s] != 0 and sphere_local[s, 3] >= zero:
            c = wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
            lo = wp.min(lo, c)
            hi = wp.max(hi, c)
            count += 1
    end = g + 1
    frame_reach = sphere_local.dtype(-1.0)
    for h in range(group_frame.shape[0]):
        if group_frame[h] == group_frame[g]:
            end = wp.max(end, h + 1)
            for s in range(group_start[h], group_start[h + 1]):
                if world_mask[s] != 0 and sphere_local[s, 3] >= zero:
                    c = wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
                    reach_s = (wp.length(c) + sphere_local[s, 3]) * grow + slack
                    frame_reach = wp.max(frame_reach, reach_s)
    frame_end[g] = end
    bounds[g, 4] = frame_reach
    if count == 0:
        bounds[g, 0] = zero
        bounds[g, 1] = zero
        bounds[g, 2] = zero
        bounds[g, 3] = sphere_local.dtype(-1.0)
        return
    centre = (lo + hi) * sphere_local.dtype(0.5)
    radius = zero
    for s in range(group_start[g], group_start[g + 1]):
        if world_mask[s] != 0 and sphere_local[s, 3] >= zero:
            c = wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
            radius = wp.max(radius, wp.length(c - centre) + sphere_local[s, 3])
    bounds[g, 0] = centre[0]
    bounds[g, 1] = centre[1]
    bounds[g, 2] = centre[2]
    bounds[g, 3] = radius * grow + slack


@wp.func
def _near_world_bounds(c: Any, margin: Any, world: Any):
    """Whether the sphere of centre ``c`` comes within ``margin`` of the box around every
    enabled obstacle (``world_lo``, ``world_hi``): False rules out every obstacle at once."""
    near = True
    for a in range(3):
        if c[a] + margin < type(c[a])(world.world_lo[a]) or c[a] - margin > type(c[a])(
            world.world_hi[a]
        ):
            near = False
    return near


@wp.func(inline=True)
def _group_cost(
    p: Any,
    r: Any,
    g: int,
    sphere_local: Array2,
    world_mask: IndexArray,
    group_start: IndexArray,
    activation: Any,
    max_distance: Any,
    initial_range: Any,
    world: Any,
    grid: GridTables,
    broad_phase: int,
):
    """The summed cost of group ``g``'s enabled world spheres placed by the frame ``(p, r)``,
    each queried exactly as ``sphere_world_distance`` queries a sphere."""
    zero = activation - activation
    reach = wp.max(activation, max_distance)
    total = zero
    for s in range(group_start[g], group_start[g + 1]):
        rad = sphere_local[s, 3]
        if world_mask[s] != 0 and rad >= zero:
            c = p + wp.quat_rotate(
                r, wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
            )
            if _near_world(c, rad, reach, world, grid, broad_phase):
                cst = zero
                if broad_phase == GRID:
                    _d, _gd, _gr, cst, _gc, _gcr = _query_grid(
                        c, rad, activation, max_distance, world, grid
                    )
                elif broad_phase != BVH:
                    _d, _gd, _gr, cst, _gc, _gcr = _query_loop(
                        c, rad, activation, max_distance, world
                    )
                else:
                    _d, _gd, _gr, cst, _gc, _gcr = _query_bvh(
                        c, rad, activation, max_distance, initial_range, world
                    )
                total += cst
    return total


@wp.kernel
def frame_world_cost(
    link_position: Array3,
    link_quaternion: Array3,
    sphere_local: Array2,
    world_mask: IndexArray,
    group_start: IndexArray,
    group_frame: IndexArray,
    bounds: Array2,
    frame_end: IndexArray,
    activation: Any,
    max_distance: Any,
    initial_range: Any,
    world: Any,
    grid: GridTables,
    broad_phase: int,
    rows_per_thread: int,
    cost: Array1,
):
    """``cost [N]``: the summed world-collision cost of each configuration's spheres (module
    docstring). A thread takes ``rows_per_thread`` consecutive configurations (launch
    ``ceil(N / rows_per_thread)`` threads): a CPU thread's start (its copy of the arguments,
    the world's tables among them) cost about as much as testing a whole configuration. The
    groups are taken frame by frame (they are sorted by frame): the sphere of the frame's
    reach around its origin (``bounds[g, 4]``) is tested against the box around every enabled
    obstacle, then the broad phase, and only when it is near is the frame's rotation read and
    each group's bounding sphere tested the same way. Points are turned by
    the quaternion (a rotation matrix carried through the loop measured 1.4x slower on a
    CPU)."""
    first = wp.tid() * rows_per_thread
    last = wp.min(first + rows_per_thread, cost.shape[0])
    zero = activation - activation
    reach = wp.max(activation, max_distance)
    num_groups = group_frame.shape[0]
    i = first
    # while loops: Warp's CPU code for a dynamic range loop is slower
    while i < last:
        total = zero
        g = wp.int32(0)
        while g < num_groups:
            end = frame_end[g]
            frame_reach = bounds[g, 4]
            if frame_reach >= zero:
                frame = group_frame[g]
                p = _frame_position(link_position, i, frame)
                # every group of the frame lies within frame_reach of its origin: a test
                # without a rotation rules them all out (the usual case)
                near = _near_world_bounds(p, frame_reach + reach, world)
                if near:
                    near = _near_world(p, frame_reach, reach, world, grid, broad_phase)
                if near:
                    r = _frame_rotation(link_quaternion, i, frame)
                    h = g
                    while h < end:
                        radius = bounds[h, 3]
                        if radius >= zero:
                            local_centre = wp.vector(bounds[h, 0], bounds[h, 1], bounds[h, 2])
                            centre = p + wp.quat_rotate(r, local_centre)
                            if _near_world_bounds(centre, radius + reach, world):
                                if _near_world(centre, radius, reach, world, grid, broad_phase):
                                    total += _group_cost(
                                        p, r, h, sphere_local, world_mask, group_start,
                                        activation, max_distance, initial_range, world, grid,
                                        broad_phase,
                                    )  # fmt: skip
                        h += 1
            g = end
        cost[i] = total
        i += 1


def _bounds_signature(scalar) -> list:
    a2 = wp.array2d(dtype=scalar)
    return [a2, IndexArray, IndexArray, IndexArray, a2, IndexArray]


def _cost_signature(scalar) -> list:
    a2, a3 = wp.array2d(dtype=scalar), wp.array3d(dtype=scalar)
    return [
        a3, a3, a2, IndexArray, IndexArray, IndexArray, a2, IndexArray,
        scalar, scalar, scalar, WORLD_TABLES[scalar], GridTables, int, int,
        wp.array(dtype=scalar),
    ]  # fmt: skip


#: the float32 or float64 instances of :func:`group_bounds` and :func:`frame_world_cost`
bounds_kernel = scalar_overloads(group_bounds, _bounds_signature)
cost_kernel = scalar_overloads(frame_world_cost, _cost_signature)


#: configurations per thread on a CPU, where a thread's start costs about one configuration
#: (12 000 Franka configurations near retract in the table world, 1 thread: 4.1 ms with one
#: per thread); one per thread on CUDA, where threads are cheap and many
CPU_ROWS_PER_THREAD = 16


def rows_per_thread(device: torch.device) -> int:
    """Configurations per thread of :func:`frame_world_cost` on ``device``."""
    return CPU_ROWS_PER_THREAD if device.type == "cpu" else 1
