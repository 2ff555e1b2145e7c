"""Sphere queries of :class:`~curobo_lite.geom.voxel_world.VoxelWorld`: trilinear ESDF
samples with exact gradients, alone or folded into another world's query.

:class:`VoxelQueries` is a mixin of ``VoxelWorld``: it reads the grid's ``_esdf``,
``bounds_min``, ``voxel_size``, ``inflation`` and ``tensor_args``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from curobo_lite.geom.esdf_transform import PIECES_PER_CPU_THREAD
from curobo_lite.geom.sphere_query import SphereWorldQuery, WorldDistance, check_ranges
from curobo_lite.kernels import esdf_query_kernels as qk
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputTypeError, InputValueError

#: sphere rows per thread of a CPU query launch (a Warp CPU thread copies the launch's
#: arguments first, which costs more than the one grid read of most rows)
QUERY_ROWS_PER_CPU_THREAD = 32


class VoxelQueries:
    """``sphere_distance`` and ``fold_query`` of :class:`VoxelWorld` (see there)."""

    def sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
    ) -> WorldDistance:
        """Signed distance and cost of spheres against the grid alone (the
        :meth:`WorldCollision.sphere_distance <curobo_lite.geom.WorldCollision.sphere_distance>`
        contract: ``spheres [..., N, 4]`` on the grid's device, float32 or float64, radius < 0
        disabled; ``distance`` and ``cost`` ``[..., N]``, differentiable)."""
        require_tensor("spheres", spheres)
        if spheres.ndim < 2 or spheres.shape[-1] != 4:
            raise InputValueError(
                f"spheres: expected shape [..., N, 4], received {tuple(spheres.shape)}"
            )
        if spheres.dtype not in qk.SCALAR_TYPES:
            raise InputTypeError(f"spheres: expected float32 or float64, received {spheres.dtype}")
        if spheres.device != self.tensor_args.device:
            raise InputValueError(
                f"spheres: expected device {self.tensor_args.device} (the grid's), "
                f"received {spheres.device}"
            )
        act, max_d = check_ranges(activation_distance, max_distance)
        distance, cost = SphereWorldQuery.apply(spheres, self, act, max_d, 0, 1.0, 1)
        return WorldDistance(distance, cost)

    def _launch(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
    ) -> tuple[torch.Tensor, ...]:
        """The grid's flat outputs for :class:`SphereWorldQuery` (an empty world's, folded)."""
        rows = spheres.numel() // 4
        kw = {"device": spheres.device, "dtype": spheres.dtype}
        # the kernel writes every row (overwrite): no fills
        distance = torch.empty(rows, **kw)
        cost = torch.empty(rows, **kw)
        dummy = torch.zeros(1, 4, **kw)
        grads = [torch.empty(rows, 4, **kw) if write_grad else dummy for _ in range(2)]
        grads += [torch.empty(rows, 4, **kw) if write_grad and sweep else dummy for _ in range(2)]
        self.fold_query(
            spheres, activation, max_distance, sweep, sweep_spacing, max_sweep_samples,
            write_grad, distance, cost, grads, overwrite=True,
        )  # fmt: skip
        return distance, cost, *grads

    def fold_query(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
        distance: torch.Tensor,
        cost: torch.Tensor,
        grads: Sequence[torch.Tensor],
        overwrite: bool = False,
    ) -> None:
        """Fold the grid's result for ``spheres`` (``[..., N, 4]``; ``[B, H, N, 4]`` with
        ``sweep``) into the flat outputs of another world's query (``distance``, ``cost``
        ``[S]``; ``grads``: four ``[S, 4]``, or ``[1, 4]`` placeholders without
        ``write_grad``): the smaller distance, the summed cost. With ``sweep`` each part's cost
        is its largest over the samples, so the sum bounds the largest total from above.
        ``overwrite``: the outputs hold nothing yet (any values): the grid's result is written
        as if folded into an empty world's (``max_distance``, zero cost and gradients)."""
        horizon, num_spheres = (spheres.shape[1], spheres.shape[2]) if sweep else (1, 1)
        flat = spheres.reshape(-1, 4).contiguous()
        rows = flat.shape[0]
        flat_wp = as_warp(flat)
        esdf = as_warp(self._esdf)
        scalars = [float(v) for v in self.bounds_min] + [self.voxel_size, self.inflation]

        per_thread = 1 if flat.is_cuda else QUERY_ROWS_PER_CPU_THREAD

        def make_launch(b0: int, b1: int) -> tuple[int, list]:
            outputs = [as_warp(distance[b0:b1]), as_warp(cost[b0:b1])]
            outputs += [as_warp(g[b0:b1]) if g.shape[0] == rows else as_warp(g) for g in grads]
            return -(-(b1 - b0) // per_thread), [
                flat_wp, activation, max_distance, sweep, horizon, num_spheres, sweep_spacing,
                max_sweep_samples, esdf, *scalars, b0, b1, per_thread, int(write_grad),
                int(overwrite), *outputs,
            ]  # fmt: skip

        elements = rows * 16 * (max_sweep_samples if sweep else 1)
        # rows near surfaces cost more than those the broad phase drops: threads take pieces
        launch_rows(
            qk.query_kernel(flat.dtype), rows, flat.device, make_launch, elements,
            PIECES_PER_CPU_THREAD,
        )  # fmt: skip
