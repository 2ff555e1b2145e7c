"""Warp kernels: the world-collision cost of a robot's spheres read straight from its link frames.

A sampling optimizer (MPPI) needs only the summed collision cost of each configuration, with no
gradient. Writing every sphere of every configuration to memory first (``[N, S, 4]``, 32 MB for
MPC's 12 000 configurations of the Franka's 171 spheres) and querying each one costs more than
the rest of a control step. Here one thread takes one configuration and each of its sphere
groups (a link's spheres, which ride on one frame) in turn:

1. the group's bounding sphere (:func:`group_bounds`: centre and radius in the frame, over the
   group's enabled spheres, recomputed each call so held objects written into the reserved
   spheres count) is placed by the frame's pose and tested against the world's broad phase
   (the obstacles' boxes, or their BVH) with the reach of the query;
2. only when it is within reach are the group's spheres placed one by one and queried exactly as
   :mod:`curobo_lite.kernels.world_collision_kernels`' ``sphere_world_distance`` queries a
   sphere (the same per-sphere reach test and the same per-obstacle functions), and their costs
   summed.

A sphere within reach of an obstacle lies inside its group's bounding sphere, so step 1 drops no
cost: the result equals the sum over the group's spheres of the per-sphere query's cost.

Inputs: ``link_position [N, L, 3]`` and ``link_quaternion [N, L, 4]`` (``wxyz``) of forward
kinematics, ``sphere_local [S, 4]`` (centre in its frame, radius; radius < 0: disabled),
``world_mask [S]`` (int32: 0 for spheres left out of world checks), ``group_start [G + 1]``
and ``group_frame [G]`` (the frame a group rides on: ``-1`` the base, ``f`` link frame ``f``).
Output: ``cost [N]``, summed over the configuration's spheres.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.warp_types import Array1, Array2, Array3, IndexArray
from curobo_lite.kernels.world_collision_kernels import (
    SCALAR_TYPES,
    WORLD_TABLES,
    _query_bvh,
    _query_loop,
    _segment_in_reach,
)

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


@wp.func
def _frame_of(link_position: Array3, link_quaternion: Array3, i: int, frame: int):
    """Position and rotation of link frame ``frame`` of configuration ``i`` (the base frame,
    identity, for ``frame < 0``)."""
    zero = link_position.dtype(0.0)
    p = wp.vector(zero, zero, zero)
    r = wp.quaternion(zero, zero, zero, link_position.dtype(1.0))
    if frame >= 0:
        p = wp.vector(
            link_position[i, frame, 0], link_position[i, frame, 1], link_position[i, frame, 2]
        )
        r = wp.quaternion(
            link_quaternion[i, frame, 1],
            link_quaternion[i, frame, 2],
            link_quaternion[i, frame, 3],
            link_quaternion[i, frame, 0],
        )
    return p, r


@wp.func
def _near_world(c: Any, radius: Any, reach: Any, world: Any, use_bvh: int):
    """Whether the sphere ``(c, radius)`` comes within ``reach`` of an enabled obstacle's box
    (:func:`_segment_in_reach` of a point); the box loop is written out here, reading the
    world's fields in place, where a call per group measured 4x slower."""
    if use_bvh != 0:
        return _segment_in_reach(c, c, radius, reach, world, use_bvh)
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
    bounds: Array2,
):
    """``bounds [G, 4]``: centre (in the group's frame) and radius of a sphere holding group
    ``g``'s enabled world spheres (the centre of their centres' box); radius -1 when none."""
    g = wp.tid()
    zero = sphere_local.dtype(0.0)
    big = sphere_local.dtype(1.0e30)
    lo = wp.vector(big, big, big)
    hi = wp.vector(-big, -big, -big)
    count = wp.int32(0)
    for s in range(group_start[g], group_start[g + 1]):
        if world_mask[s] != 0 and sphere_local[s, 3] >= zero:
            c = wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
            lo = wp.min(lo, c)
            hi = wp.max(hi, c)
            count += 1
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
    # outward slack for rounding: the bound must hold every sphere it stands for
    bounds[g, 3] = radius * sphere_local.dtype(1.0 + 1.0e-5) + sphere_local.dtype(1.0e-6)


@wp.kernel
def frame_world_cost(
    link_position: Array3,
    link_quaternion: Array3,
    sphere_local: Array2,
    world_mask: IndexArray,
    group_start: IndexArray,
    group_frame: IndexArray,
    bounds: Array2,
    activation: Any,
    max_distance: Any,
    initial_range: Any,
    world: Any,
    use_bvh: int,
    cost: Array1,
):
    """``cost [N]``: the summed world-collision cost of configuration ``i``'s spheres (module
    docstring). One thread per configuration: each frame is read once for all the groups
    riding on it (groups are sorted by frame); points are turned by the quaternion (a rotation
    matrix carried through the loop measured 1.4x slower on a CPU)."""
    i = wp.tid()
    zero = activation - activation
    reach = wp.max(activation, max_distance)
    total = zero
    frame = wp.int32(-2)
    p = wp.vector(zero, zero, zero)
    r = wp.quaternion(zero, zero, zero, type(zero)(1.0))
    for g in range(group_frame.shape[0]):
        radius = bounds[g, 3]
        if radius >= zero:
            if group_frame[g] != frame:
                frame = group_frame[g]
                p, r = _frame_of(link_position, link_quaternion, i, frame)
            centre = p + wp.quat_rotate(r, wp.vector(bounds[g, 0], bounds[g, 1], bounds[g, 2]))
            if _near_world(centre, radius, reach, world, use_bvh):
                for s in range(group_start[g], group_start[g + 1]):
                    rad = sphere_local[s, 3]
                    if world_mask[s] != 0 and rad >= zero:
                        c = p + wp.quat_rotate(
                            r, wp.vector(sphere_local[s, 0], sphere_local[s, 1], sphere_local[s, 2])
                        )
                        if _near_world(c, rad, reach, world, use_bvh):
                            cst = zero
                            if use_bvh == 0:
                                _d, _gd, _gr, cst, _gc, _gcr = _query_loop(
                                    c, rad, activation, max_distance, world
                                )
                            else:
                                _d, _gd, _gr, cst, _gc, _gcr = _query_bvh(
                                    c, rad, activation, max_distance, initial_range, world
                                )
                            total += cst
    cost[i] = total


def _bounds_signature(scalar) -> list:
    a2 = wp.array2d(dtype=scalar)
    return [a2, IndexArray, IndexArray, a2]


def _cost_signature(scalar) -> list:
    a2, a3 = wp.array2d(dtype=scalar), wp.array3d(dtype=scalar)
    return [
        a3, a3, a2, IndexArray, IndexArray, IndexArray, a2,
        scalar, scalar, scalar, WORLD_TABLES[scalar], int, wp.array(dtype=scalar),
    ]  # fmt: skip


for _scalar in SCALAR_TYPES.values():
    wp.overload(group_bounds, _bounds_signature(_scalar))
    wp.overload(frame_world_cost, _cost_signature(_scalar))


@functools.cache
def bounds_kernel(dtype: torch.dtype) -> wp.Kernel:
    """The float32 or float64 instance of :func:`group_bounds`."""
    return group_bounds.get_overload(_bounds_signature(SCALAR_TYPES[dtype]))


@functools.cache
def cost_kernel(dtype: torch.dtype) -> wp.Kernel:
    """The float32 or float64 instance of :func:`frame_world_cost`."""
    return frame_world_cost.get_overload(_cost_signature(SCALAR_TYPES[dtype]))
