"""The grid broad phase of a world's static obstacles, kept in step with the world's edits.

:class:`StaticGrid` builds :mod:`curobo_lite.kernels.world_grid_kernels`' grid (per cell: a
lower bound of the obstacles' distance and the obstacles that may come near) over a
:class:`~curobo_lite.geom.world_tables.WorldTables`' enabled obstacles into a struct beside the
world tables (the kernels read both). After each edit of the tables it compares every slot
with the slot as built: the slots that changed (moved, enabled, disabled, replaced, added)
turn *dynamic*, which every query visits with the loop's box test, so an obstacle moved each
control step costs no rebuild. Past :attr:`StaticGrid.MAX_DYNAMIC` of them the grid is stale and the next query that wants it
builds it again (lazily: edits come in bursts, a query once per control step).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import warp as wp

from curobo_lite.kernels import world_grid_kernels as wgk
from curobo_lite.kernels.launch import as_warp
from curobo_lite.kernels.primitive_sdf import SCALAR_TYPES

#: host-side width of one slot's state row (type, enabled, frame, parameters or mesh id)
_STATE_COLUMNS = 22


class StaticGrid:
    """The grid over a world's obstacles as last built, and which slots changed since.

    Args:
        device: the tables' torch device.
    """

    #: cells at most (a 2.2 m cube at the smallest cell; 10 MB of tables)
    MAX_CELLS = 1 << 18
    #: the smallest cell edge (m): finer cells list fewer obstacles but cost more to build
    MIN_CELL = 0.02
    #: a query reaching farther than this (sphere radius plus its activation or distance
    #: clamp) takes the loop: the cells list the obstacles within it
    BUILD_REACH = 0.2
    #: slots changed since the build beyond which the grid is built again
    MAX_DYNAMIC = 8

    def __init__(self, device: torch.device) -> None:
        self._device = device
        #: the kernels' view of the grid (``kernels.world_grid_kernels.GridTables``)
        self.tables = wgk.GridTables()
        self._struct: Any = None
        self._snapshot: np.ndarray | None = None
        self._buffers: tuple[torch.Tensor, ...] = ()
        self._unmoved = torch.zeros(0, dtype=torch.int32, device=device)
        self._dynamic = torch.zeros(0, dtype=torch.int32, device=device)
        self.stale = True
        #: builds so far (what a captured CUDA graph of a query depends on, with the world's
        #: revision: a build replaces the grid's arrays and geometry)
        self.builds = 0
        self.cell_size = 0.0
        self.dims = (0, 0, 0)

    @staticmethod
    def slot_states(world: Any) -> np.ndarray:
        """``[P + M, 22]`` each slot's host-side state: what a change of makes it dynamic."""
        num_prim = len(world._h_prim_type)
        num_mesh = len(world._h_mesh_enabled)
        states = np.zeros((num_prim + num_mesh, _STATE_COLUMNS))
        prim = states[:num_prim]
        prim[:, 0] = world._h_prim_type
        prim[:, 1] = world._h_prim_enabled
        prim[:, 2:14] = world._h_prim_frame
        prim[:, 14:22] = world._h_prim_params
        mesh = states[num_prim:]
        mesh[:, 0] = -1
        mesh[:, 1] = world._h_mesh_enabled
        mesh[:, 2:14] = world._h_mesh_frame
        ids = world._h_mesh_ids.astype(np.uint64)
        mesh[:, 14] = (ids >> np.uint64(32)).astype(np.float64)
        mesh[:, 15] = (ids & np.uint64(0xFFFFFFFF)).astype(np.float64)
        return states

    def refresh(self, world: Any) -> None:
        """After an upload of ``world``'s tables: mark the slots that changed since the build
        dynamic (or the grid stale past :attr:`MAX_DYNAMIC`, or when the tables were
        reallocated)."""
        if self.stale or world._tables is not self._struct:
            self.stale = True
            return
        states = self.slot_states(world)
        if states.shape != self._snapshot.shape:
            self.stale = True
            return
        changed = np.any(states != self._snapshot, axis=1)
        dynamic = np.flatnonzero(changed & world._h_enabled).astype(np.int32)
        if len(dynamic) > self.MAX_DYNAMIC:
            self.stale = True
            return
        self._unmoved.copy_(torch.from_numpy((~changed).astype(np.int32)))
        self._dynamic[: len(dynamic)].copy_(torch.from_numpy(dynamic))
        self.tables.num_dynamic = len(dynamic)

    def build(self, world: Any) -> bool:
        """Build the grid over ``world``'s enabled obstacles into :attr:`tables`; False when
        it has none (nothing to build)."""
        enabled = world._h_enabled
        if not enabled.any():
            return False
        reach = self.BUILD_REACH
        lo = world._h_lowers[enabled].min(0).astype(np.float64) - reach
        hi = world._h_uppers[enabled].max(0).astype(np.float64) + reach
        extent = hi - lo
        cell = max(self.MIN_CELL, (float(np.prod(extent)) / self.MAX_CELLS) ** (1.0 / 3.0))
        dims = np.maximum(np.ceil(extent / cell), 1).astype(np.int64)
        while int(np.prod(dims)) > self.MAX_CELLS:  # ceil rounding can overshoot
            cell *= 1.05
            dims = np.maximum(np.ceil(extent / cell), 1).astype(np.int64)
        num_cells = int(np.prod(dims))
        origin = np.asarray(lo, np.float32).astype(np.float64)
        cell = float(np.float32(cell))
        if not self._buffers or self._buffers[0].shape[0] < num_cells:
            self._buffers = (
                torch.empty(num_cells, dtype=torch.float32, device=self._device),
                torch.empty(num_cells, dtype=torch.int32, device=self._device),
                torch.empty(num_cells, wgk.SLOTS_PER_CELL, dtype=torch.int32, device=self._device),
            )
        lower_bound, count, slots = (t[:num_cells] for t in self._buffers)
        scalar = world._prim_frame.dtype
        struct = world._tables
        vector = wp.types.vector(3, SCALAR_TYPES[scalar])
        wp.launch(
            wgk.build_kernel(scalar),
            dim=num_cells,
            inputs=[
                struct,
                vector(*origin.tolist()),
                cell,
                wp.vec3i(*dims.tolist()),
                reach,
                as_warp(lower_bound),
                as_warp(count),
                as_warp(slots),
            ],
            device=wp.device_from_torch(self._device),
            stream=wp.stream_from_torch(self._device) if self._device.type == "cuda" else None,
        )
        num_slots = len(world._h_lowers)
        if self._unmoved.shape[0] != num_slots:
            self._unmoved = torch.empty(num_slots, dtype=torch.int32, device=self._device)
            self._dynamic = torch.zeros(num_slots, dtype=torch.int32, device=self._device)
        self._unmoved.fill_(1)
        grid = self.tables
        grid.lower_bound = wp.from_torch(lower_bound)
        grid.count = wp.from_torch(count)
        grid.slots = wp.from_torch(slots)
        grid.unmoved = wp.from_torch(self._unmoved)
        grid.dynamic = wp.from_torch(self._dynamic)
        grid.num_dynamic = 0
        grid.origin = wp.vec3f(*origin.tolist())
        grid.inv_cell = 1.0 / cell
        grid.dims = wp.vec3i(*dims.tolist())
        # rounding slack: a point a hair outside its cell stays covered by its lists
        grid.reach = reach - 1.0e-4
        self._struct = struct
        self._snapshot = self.slot_states(world)
        self.stale = False
        self.builds += 1
        self.cell_size = cell
        self.dims = tuple(int(d) for d in dims)
        return True

    @property
    def half_diagonal(self) -> float:
        """Half the diagonal of a cell (m): how much looser than exact a cell's bound is."""
        return 0.5 * math.sqrt(3.0) * self.cell_size
