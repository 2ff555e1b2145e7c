"""Warp kernel for robot self-collision between collision spheres.

One thread per configuration loops over the ``P`` checked sphere pairs. For pair ``(i, j)``
with centres ``c``, radii ``r`` and pair buffer ``b`` the signed distance is
``d = |c_i - c_j| - r_i - r_j - b`` (negative = penetration). The kernel writes

- ``distance [B]``: ``min_k d_k`` and ``argmin [B]`` (``-1`` when no pair is enabled; the
  caller turns that distance into ``+inf``),
- ``cost [B]``: ``sum_k smooth_hinge(eta - d_k, eta)`` (see ``collision_common``),
- optionally ``grad_cost [B, N, 4]`` (zeroed here first): the gradient of ``cost`` with
  respect to every sphere
  (``dd/dc_i = u``, ``dd/dc_j = -u`` with ``u`` the unit vector from ``c_j`` to ``c_i``, and
  ``dd/dr = -1``), accumulated in the same pass so no backward kernel is needed.

Pairs with a negative radius (disabled spheres) are skipped. Pairs may be grouped in blocks
between two sphere groups (e.g. two links) so whole blocks that are far apart are culled with
a bounding-sphere test (exact: a culled block can change neither output), and within a block
the pairs of a sphere of the first group far from the second group's bounding sphere.
Generic over float32 and float64.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.collision_common import smooth_hinge, smooth_hinge_grad
from curobo_lite.kernels.warp_types import (
    SCALAR_TYPES,
    Array1,
    Array3,
    IndexArray,
    IndexArray2,
    scalar_overloads,
)

wp.config.log_level = 30  # WARNING
# the gradients are written by hand in the forward pass
wp.set_module_options({"enable_backward": False})

#: the running minimum starts here; a configuration without an enabled pair keeps it
NO_PAIR_DISTANCE = 1.0e30


@wp.func
def _centre(spheres: Array3, b: int, i: int):
    return wp.vector(spheres[b, i, 0], spheres[b, i, 1], spheres[b, i, 2])


@wp.kernel
def self_collision_forward(
    spheres: Array3,
    pairs: IndexArray2,
    pair_buffer: Array1,
    blocks: IndexArray2,
    block_buffer: Array1,
    groups: IndexArray2,
    activation_distance: Any,
    max_distance: Any,
    compute_grad: int,
    bounds: Array3,
    distance: Array1,
    cost: Array1,
    argmin: IndexArray,
    grad_cost: Array3,
):
    """Minimum signed distance, summed penalty and (if ``compute_grad``) its gradient.

    Pairs come in blocks ``[pair_begin, pair_end, group_a, group_b]``; a block whose two sphere
    groups' bounding spheres (``bounds``, computed first) are farther apart than both the
    activation distance and the best distance so far cannot change either result and is
    skipped. ``group_a < 0`` marks a block that is always evaluated.

    ``max_distance`` relaxes the test when only near distances matter: a block farther than
    both ``activation_distance`` and ``max_distance`` is skipped even before a closer pair
    was found, its gap standing in for its pairs (``argmin`` -1). The penalty stays exact, and
    so does ``distance`` below ``max_distance``; above it ``distance`` is a lower bound.
    With ``max_distance = inf`` every result is exact.
    """
    b = wp.tid()
    zero = pair_buffer.dtype(0.0)
    eta = activation_distance
    if compute_grad != 0:
        for s in range(grad_cost.shape[1]):
            for c in range(4):
                grad_cost[b, s, c] = zero
    for group in range(groups.shape[0]):
        centre = wp.vector(zero, zero, zero)
        count = int(0)  # noqa: UP018  (typed, so the loop may reassign it)
        for s in range(groups[group, 0], groups[group, 1]):
            if spheres[b, s, 3] >= zero:
                centre = centre + _centre(spheres, b, s)
                count = count + 1
        reach = pair_buffer.dtype(-1.0)  # no enabled sphere: the block is skipped
        if count > 0:
            centre = centre / pair_buffer.dtype(count)
            for s in range(groups[group, 0], groups[group, 1]):
                r = spheres[b, s, 3]
                if r >= zero:
                    reach = wp.max(reach, wp.length(_centre(spheres, b, s) - centre) + r)
        bounds[b, group, 0] = centre[0]
        bounds[b, group, 1] = centre[1]
        bounds[b, group, 2] = centre[2]
        bounds[b, group, 3] = reach
    best = pair_buffer.dtype(NO_PAIR_DISTANCE)
    best_k = int(-1)  # noqa: UP018  (typed, so the loop may reassign it)
    floor = pair_buffer.dtype(NO_PAIR_DISTANCE)  # smallest gap of a block skipped early
    total = zero
    for block in range(blocks.shape[0]):
        ga = blocks[block, 2]
        gb = blocks[block, 3]
        centre_b = wp.vector(zero, zero, zero)
        rb = zero
        a_begin = int(0)  # noqa: UP018  (typed: the sphere range of group a, when it has one)
        a_end = int(0)  # noqa: UP018
        if ga >= 0:
            ra = bounds[b, ga, 3]
            rb = bounds[b, gb, 3]
            if ra < zero or rb < zero:
                continue
            centre_b = _centre(bounds, b, gb)
            gap = wp.length(_centre(bounds, b, ga) - centre_b) - ra - rb
            gap = gap - block_buffer[block]
            if gap >= eta and gap >= wp.min(best, max_distance):
                floor = wp.min(floor, gap)
                continue
            a_begin = groups[ga, 0]
            a_end = groups[ga, 1]
        # the same test one level down: sphere i of group a against group b's bounding
        # sphere skips i's run of pairs (pairs come sorted by i within a block)
        current_i = int(-1)  # noqa: UP018
        skip_i = int(0)  # noqa: UP018
        for k in range(blocks[block, 0], blocks[block, 1]):
            i = pairs[k, 0]
            if i != current_i:
                current_i = i
                skip_i = 0
                if i >= a_begin and i < a_end:
                    ri = spheres[b, i, 3]
                    gap = wp.length(_centre(spheres, b, i) - centre_b) - ri - rb
                    gap = gap - block_buffer[block]
                    if ri >= zero and gap >= eta and gap >= wp.min(best, max_distance):
                        floor = wp.min(floor, gap)
                        skip_i = 1
            if skip_i != 0:
                continue
            j = pairs[k, 1]
            ri = spheres[b, i, 3]
            rj = spheres[b, j, 3]
            if ri < zero or rj < zero:
                continue
            delta = _centre(spheres, b, i) - _centre(spheres, b, j)
            length = wp.length(delta)
            d = length - ri - rj - pair_buffer[k]
            if d < best:
                best = d
                best_k = k
            x = eta - d
            total = total + smooth_hinge(x, eta)
            if compute_grad != 0 and x > zero:
                # d cost / d d = -smooth_hinge'(x)
                g = -smooth_hinge_grad(x, eta)
                u = wp.vector(zero, zero, zero)
                if length > zero:
                    u = delta / length
                for c in range(3):
                    grad_cost[b, i, c] = grad_cost[b, i, c] + g * u[c]
                    grad_cost[b, j, c] = grad_cost[b, j, c] - g * u[c]
                grad_cost[b, i, 3] = grad_cost[b, i, 3] - g
                grad_cost[b, j, 3] = grad_cost[b, j, 3] - g
    if floor < best:
        best = floor
        best_k = -1
    distance[b] = best
    cost[b] = total
    argmin[b] = best_k


def _signature(scalar) -> list:
    a3, a1 = wp.array3d(dtype=scalar), wp.array(dtype=scalar)
    index2, index1 = wp.array2d(dtype=wp.int32), wp.array(dtype=wp.int32)
    return [a3, index2, a1, index2, a1, index2, scalar, scalar, int, a3, a1, a1, index1, a3]


#: the float32 or float64 instance of :func:`self_collision_forward`
self_collision_kernel = scalar_overloads(self_collision_forward, _signature)


def scalar_type(dtype: torch.dtype):
    """Warp scalar type of a torch floating dtype (float32 / float64)."""
    return SCALAR_TYPES[dtype]
