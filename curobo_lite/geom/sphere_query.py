"""What every sphere-distance world shares: the result type, the range checks and the autograd
function around a world's ``_launch``.

:class:`~curobo_lite.geom.world_collision.WorldCollision` (primitives and meshes, voxel grids
folded in) and :class:`~curobo_lite.geom.voxel_world.VoxelWorld` (a grid on its own) both
answer ``sphere_distance`` through :class:`SphereWorldQuery`: the world's
``_launch(spheres, activation, max_distance, sweep, sweep_spacing, max_sweep_samples,
write_grad)`` returns the flat distance and cost and, with ``write_grad``, their gradients with
respect to the spheres (computed in the forward kernels), which the backward pass multiplies by
the incoming gradients (first order only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.autograd.function import once_differentiable

from curobo_lite.types.errors import InputValueError


@dataclass
class WorldDistance:
    """Result of a sphere-vs-world query; both ``[..., N]`` like the query's leading shape.

    Attributes:
        distance: signed distance from each sphere's surface to the nearest enabled obstacle
            (negative: penetration depth), clamped at ``max_distance``.
        cost: sum over obstacles of ``smooth_hinge(activation - d_io, activation)``.
    """

    distance: torch.Tensor
    cost: torch.Tensor


def check_ranges(activation: Any, max_distance: Any) -> tuple[float, float]:
    """``(activation_distance, max_distance)`` as floats, or an error naming the bad one."""
    for name, value in (("activation_distance", activation), ("max_distance", max_distance)):
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise InputValueError(f"{name}: expected a number, received {value!r}")
    if not (0.0 <= activation < math.inf):
        raise InputValueError(
            f"activation_distance: expected a finite number >= 0, received {activation!r}"
        )
    if not max_distance > 0.0:
        raise InputValueError(
            f"max_distance: expected a positive number, received {max_distance!r}"
        )
    return float(activation), float(max_distance)


class SphereWorldQuery(torch.autograd.Function):
    """``spheres [..., N, 4] -> (distance [..., N], cost [..., N])`` with analytic backward."""

    @staticmethod
    def forward(
        ctx,
        spheres: torch.Tensor,
        world: Any,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
    ):
        ctx.set_materialize_grads(False)
        write_grad = bool(ctx.needs_input_grad[0])
        distance, cost, *grads = world._launch(
            spheres.detach(),
            activation,
            max_distance,
            sweep,
            sweep_spacing,
            max_sweep_samples,
            write_grad,
        )
        ctx.sweep = sweep
        ctx.num_spheres = spheres.shape[-2]
        ctx.shape = spheres.shape
        if write_grad:
            ctx.save_for_backward(*(grads if sweep else grads[:2]))
        leading = spheres.shape[:-1]
        return distance.reshape(leading), cost.reshape(leading)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_distance: torch.Tensor | None, grad_cost: torch.Tensor | None):
        saved = ctx.saved_tensors
        n = ctx.num_spheres
        grad = None
        for k, incoming in enumerate((grad_distance, grad_cost)):
            if incoming is None:
                continue
            weight = incoming.reshape(-1, 1)
            term = weight * saved[k]
            grad = term if grad is None else grad + term
            if ctx.sweep and term.shape[0] > n:
                # the earlier end of row s is row s - N
                grad[:-n] += (weight * saved[2 + k])[n:]
        if grad is not None:
            grad = grad.reshape(ctx.shape)
        return grad, None, None, None, None, None, None
