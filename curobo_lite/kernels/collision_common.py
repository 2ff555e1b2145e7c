"""Warp functions shared by the collision kernels (world and self-collision).

The penalty on a signed distance ``d`` (metres, negative = penetration) with activation distance
``eta > 0`` is the smooth hinge of ``x = eta - d`` (cuRobo's collision activation):

- ``0`` for ``x <= 0`` (farther than ``eta`` from contact),
- ``x^2 / (2 eta)`` for ``0 < x < eta`` (inside the activation band, C1 at both ends),
- ``x - eta / 2`` for ``x >= eta`` (in contact or penetrating: linear, gradient 1).

With ``eta == 0`` it is the plain hinge ``max(x, 0)``. The same function on the torch side is
:func:`smooth_hinge_torch`, used by tests and by code that needs no kernel.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from curobo_lite.kernels.warp_types import Array1, Array2

wp.config.log_level = 30  # WARNING


@wp.func
def smooth_hinge(x: Any, eta: Any):
    """Penalty of ``x = eta - d`` (see the module docs)."""
    zero = x * type(x)(0.0)
    value = zero
    if x >= eta:
        value = x - eta * type(x)(0.5)
    elif x > zero:
        value = x * x / (type(x)(2.0) * eta)
    return value


@wp.func
def smooth_hinge_grad(x: Any, eta: Any):
    """Derivative of :func:`smooth_hinge` with respect to ``x``."""
    zero = x * type(x)(0.0)
    value = zero
    if x >= eta:
        value = type(x)(1.0)
    elif x > zero:
        value = x / eta
    return value


@wp.func
def sweep_samples(length: Any, step: Any, max_samples: int):
    """Samples of a swept sphere's segment of ``length`` metres, one every ``step`` metres (a
    fraction of the smaller radius), at most ``max_samples``; 1 for a segment of length 0 (the
    world and the voxel-grid sweeps share this rule)."""
    samples = wp.int32(1)
    if length > type(length)(0.0):
        samples = max_samples
        if step > type(step)(0.0) and length / step < type(length)(max_samples):
            samples = wp.max(int(wp.ceil(length / step)), 1)
    return samples


@wp.func
def store4(a: Array2, i: int, v: Any, w: Any):
    """Row ``i`` of ``a [S, 4]`` set to ``(v[0], v[1], v[2], w)``: a vector and a scalar, such as
    a gradient with respect to a sphere's centre and radius."""
    a[i, 0] = v[0]
    a[i, 1] = v[1]
    a[i, 2] = v[2]
    a[i, 3] = w


@wp.func
def clear_row(
    o: int,
    max_distance: Any,
    sweep: int,
    write_grad: int,
    distance: Array1,
    cost: Array1,
    grad_distance: Array2,
    grad_cost: Array2,
    grad_distance_prev: Array2,
    grad_cost_prev: Array2,
):
    """Output row ``o`` of a sphere query with nothing within reach: ``max_distance``, no
    cost, zero gradients (those written: with ``write_grad``, the previous samples' with
    ``sweep`` too)."""
    zero = type(max_distance)(0.0)  # (not max_distance - max_distance: it may be inf)
    vzero = wp.vector(zero, zero, zero)
    distance[o] = max_distance
    cost[o] = zero
    if write_grad != 0:
        store4(grad_distance, o, vzero, zero)
        store4(grad_cost, o, vzero, zero)
        if sweep != 0:
            store4(grad_distance_prev, o, vzero, zero)
            store4(grad_cost_prev, o, vzero, zero)


def smooth_hinge_torch(x: torch.Tensor, eta: float) -> torch.Tensor:
    """The same penalty in torch (differentiable by autograd), for references and tests."""
    if eta <= 0.0:
        return torch.clamp(x, min=0.0)
    quad = x.clamp(min=0.0, max=eta).square() / (2.0 * eta)
    return torch.where(x >= eta, x - 0.5 * eta, quad)
