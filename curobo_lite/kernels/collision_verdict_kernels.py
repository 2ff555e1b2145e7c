"""Warp kernel: pass/fail world query of robot configurations (is any link near an obstacle?).

The distance kernel (:mod:`curobo_lite.kernels.world_collision_kernels`) answers, for every
sphere, its signed distance (and gradients) to the nearest obstacle: each sphere visits every
obstacle's bounds. A validity check only needs, per configuration, the smallest distance
down to a threshold: here one thread takes one (configuration, link) pair,

1. bounds the link's enabled spheres by one box (radius included),
2. tests that box, grown by ``reach``, against each enabled obstacle's bounds (the world
   tables' ``slot_lo``/``slot_hi``) and, only for an obstacle it meets, tests the link's
   spheres one by one with the distance kernel's own box test and signed distance
   (``_within_box``, ``_obstacle_sdf``: the same numbers, so the same verdict),
3. stops at the first sphere deeper than ``deep`` (the configuration fails whatever the rest
   says).

Output per (configuration, link): the smallest ``sdf - radius`` over the pairs it measured,
clamped at ``reach`` (nothing measured: ``reach``); a value below ``deep`` is a bound, not
the minimum. Minimum over a configuration's links = :meth:`WorldCollision.sphere_distance`
with ``max_distance=reach``, minimum over the spheres, wherever that is ``>= deep``.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.warp_types import Array1, Array2, IndexArray2, scalar_overloads
from curobo_lite.kernels.world_slots import (
    WORLD_TABLES,
    _boxes_overlap,
    _obstacle_sdf,
    _within_box,
)

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


@wp.kernel
def link_world_verdict(
    spheres: Array2,
    groups: IndexArray2,
    num_spheres: int,
    reach: Any,
    deep: Any,
    world: Any,
    row_offset: int,
    out: Array1,
):
    """``out [B * G]`` (module docstring) of spheres ``[B * N, 4]`` (rows ``b * N + n``),
    links ``groups [G, 2]`` (``[begin, end)`` sphere ranges); radius < 0: disabled."""
    tid = wp.tid() + row_offset
    num_groups = groups.shape[0]
    b = tid // num_groups
    begin = b * num_spheres + groups[tid % num_groups, 0]
    end = b * num_spheres + groups[tid % num_groups, 1]
    zero = reach - reach
    big = type(zero)(1.0e30)
    lo = wp.vector(big, big, big)
    hi = wp.vector(-big, -big, -big)
    enabled = wp.int32(0)
    for s in range(begin, end):
        r = spheres[s, 3]
        if r >= zero:
            c = wp.vector(spheres[s, 0], spheres[s, 1], spheres[s, 2])
            lo = wp.min(lo, c - wp.vector(r, r, r))
            hi = wp.max(hi, c + wp.vector(r, r, r))
            enabled = 1
    best = reach
    if enabled != 0:
        grow = wp.vector(reach, reach, reach)
        lo = lo - grow
        hi = hi + grow
        slot_lo = world.slot_lo
        slot_hi = world.slot_hi
        active_slots = world.active_slots
        for i in range(world.num_active):
            slot = active_slots[i]
            if _boxes_overlap(lo, hi, slot_lo[slot], slot_hi[slot]):
                for s in range(begin, end):
                    r = spheres[s, 3]
                    c = wp.vector(spheres[s, 0], spheres[s, 1], spheres[s, 2])
                    if r >= zero and _within_box(c, slot_lo[slot], slot_hi[slot], r + reach):
                        valid, sdf, _grad = _obstacle_sdf(slot, c, world)
                        if valid != 0:
                            best = wp.min(best, sdf - r)
                if best < deep:
                    break
    out[tid - row_offset] = best


def _signature(scalar) -> list:
    return [
        wp.array2d(dtype=scalar), IndexArray2, int, scalar, scalar, WORLD_TABLES[scalar], int,
        wp.array(dtype=scalar),
    ]  # fmt: skip


#: the float32 or float64 instance of :func:`link_world_verdict`
verdict_kernel = scalar_overloads(link_world_verdict, _signature)


def link_world_distance(
    spheres: torch.Tensor,
    groups: torch.Tensor,
    tables: Any,
    num_active: int,
    reach: float,
    deep: float,
) -> torch.Tensor:
    """``[B, G]`` smallest distance (m) from each link's spheres to the obstacles, exact in
    ``[deep, reach]`` (clamped at ``reach``; below ``deep`` only a bound): the kernel of the
    module docstring.

    Args:
        spheres: ``[B, N, 4]`` centres and radii (radius < 0: disabled), contiguous.
        groups: ``[G, 2]`` int32 ``[begin, end)`` sphere range of each link.
        tables: the world-tables struct (``WorldCollision.world_tables``), same scalar type.
        num_active: its enabled obstacles (0: every link reads ``reach``).
        reach, deep: thresholds (m), ``deep <= reach``.
    """
    B, N = spheres.shape[0], spheres.shape[1]
    G = groups.shape[0]
    out = torch.full((B, G), reach, dtype=spheres.dtype, device=spheres.device)
    if num_active == 0 or B * G == 0:
        return out
    flat = spheres.reshape(B * N, 4).contiguous()
    flat_wp, groups_wp, out_flat = as_warp(flat), as_warp(groups), out.reshape(-1)

    def make_launch(b0: int, b1: int):
        return b1 - b0, [flat_wp, groups_wp, N, reach, deep, tables, b0, as_warp(out_flat[b0:b1])]

    launch_rows(
        verdict_kernel(spheres.dtype), B * G, spheres.device, make_launch, B * N * num_active
    )
    return out
