"""Sphere-vs-world signed distance and collision cost, differentiable, on device tables.

:class:`WorldCollision` holds a world's obstacles in the device tables of
:class:`~curobo_lite.geom.world_tables.WorldTables` (editable at run time without reallocating)
and queries them. Queries run the Warp kernel of
:mod:`curobo_lite.kernels.world_collision_kernels` and are autograd-aware: the gradient with
respect to the query spheres (centres and radii) is computed analytically in the forward kernel
when the spheres require grad, and multiplied by the incoming gradients in the backward pass
(first order only).

Conventions (cuRobo's): spheres are ``[..., N, 4]`` ``(x, y, z, radius)`` in the robot base
frame; a sphere with negative radius is disabled. Signed distances are metres, negative in
penetration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import warp as wp

from curobo_lite.geom.sphere_query import SphereWorldQuery as _SphereWorldQuery
from curobo_lite.geom.sphere_query import WorldDistance, check_ranges
from curobo_lite.geom.world import WorldConfig
from curobo_lite.geom.world_grid import StaticGrid
from curobo_lite.geom.world_tables import WorldTables
from curobo_lite.kernels import world_collision_kernels as wck
from curobo_lite.kernels import world_grid_kernels as wgk
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.primitive_sdf import SCALAR_TYPES
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputTypeError, InputValueError

BROAD_PHASES = ("auto", "bvh", "loop", "grid")


class WorldCollision(WorldTables):
    """Device tables of a world's obstacles and sphere queries against them.

    Args:
        world: initial obstacles (``None``: empty world).
        tensor_args: device and float dtype of the tables (default CPU float32); queries must
            match both.
        cache: slot capacity ``{"primitive": P, "mesh": M}``; defaults
            ``max(count, 16)`` / ``max(count, 4)``. Edits within capacity reallocate nothing;
            beyond it the tables grow (doubling) and the BVH is rebuilt.
        broad_phase: ``"bvh"`` (search a BVH over obstacle bounds), ``"loop"`` (test every enabled
            obstacle, skipping those whose bounds lie farther than the query's reach) or
            ``"auto"``: the loop up to :attr:`BVH_MIN_OBSTACLES` enabled obstacles with
            ``max_distance = inf`` and below :attr:`BVH_MIN_OBSTACLES_NEAR` with a finite one,
            the BVH otherwise. Measured on CPU (100k spheres in a 2 m cube, float32, one
            thread): with ``max_distance = inf`` the loop wins up to 8 cuboids (26 vs 45 ms at
            4) and the BVH from 16 on (58 vs 100 ms at 32, 95 vs 282 ms at 64). With a finite
            one (Franka spheres of 224 configurations, activation and max_distance 0.01): the
            loop 0.68 vs 0.84 ms on the 2-obstacle table, the BVH 0.80 vs 0.91 ms from 5
            obstacles (narrow gap) and 0.80 vs 1.06 ms at 9 (cubbies). ``"grid"``: a grid
            over the obstacles as built (:mod:`curobo_lite.geom.world_grid`; obstacles edited
            since are visited like the loop's), for queries reaching at most
            ``StaticGrid.BUILD_REACH``; ``"auto"`` takes it for MPPI's world cost
            (:meth:`query_tables`: millions of spheres a call in a world that stays) from
            :attr:`GRID_MIN_OBSTACLES` obstacles with ``max_distance <= GRID_MAX_DISTANCE``,
            not for the other queries (IK, trajopt, checks: MotionGen meets a new world per
            problem, and a build per world cost MotionBenchMaker's bookshelf_thin 0.03 s of
            median plan time). A whole MPC step (400 x 30 Franka configurations, 2-core CPU,
            quiet, ``benchmarks/broad_phase.py``): MotionBenchMaker's box 65.5 ms with the
            loop, 7.9 ms with the grid; bookshelf_thin 90.2 vs 8.5 ms; the bundled table (2
            obstacles) 3.6 vs 3.8 ms, narrow gap (6) 5.3 vs 3.7 ms, cubbies (10) 4.6 vs
            3.9 ms.
        initial_range: first broad-phase search half-width beyond ``radius + activation``
            (metres) when ``max_distance`` is larger; the search grows 4x until exact.
        check_finite: reject query spheres holding NaN/inf (a device sync on CUDA).
    """

    #: crossover of the measured loop and BVH costs with ``max_distance = inf`` (8 to 16)
    BVH_MIN_OBSTACLES = 12
    #: the same with a finite ``max_distance`` (2 to 5)
    BVH_MIN_OBSTACLES_NEAR = 4
    #: ``"auto"`` gives MPPI's world cost the grid from this many enabled obstacles with a
    #: ``max_distance`` up to :attr:`GRID_MAX_DISTANCE`; with fewer the loop's few box tests
    #: cost less than the grid's memory reads
    GRID_MIN_OBSTACLES = 4
    GRID_MAX_DISTANCE = 0.1

    def __init__(
        self,
        world: WorldConfig | None = None,
        tensor_args: TensorDeviceType | None = None,
        cache: Mapping[str, int] | None = None,
        broad_phase: str = "auto",
        initial_range: float = 0.1,
        check_finite: bool = True,
    ) -> None:
        # every argument is checked before anything is built
        tables_args = self._check_tables_args(world, tensor_args, cache)
        self.broad_phase = broad_phase
        self.initial_range = initial_range
        self.check_finite = check_finite
        self._grid = StaticGrid(tables_args[1].device)
        self._build_tables(*tables_args)

    # validation --------------------------------------------------------------------------------
    @property
    def broad_phase(self) -> str:
        return self._broad_phase

    @broad_phase.setter
    def broad_phase(self, value: str) -> None:
        if value not in BROAD_PHASES:
            raise InputValueError(
                f"broad_phase: expected one of {BROAD_PHASES}, received {value!r}"
            )
        self._broad_phase = value

    @property
    def initial_range(self) -> float:
        return self._initial_range

    @initial_range.setter
    def initial_range(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise InputValueError(f"initial_range: expected a positive number, received {value!r}")
        if not math.isfinite(value):
            raise InputValueError(f"initial_range: expected a finite number, received {value!r}")
        self._initial_range = float(value)

    # queries -----------------------------------------------------------------------------------
    def sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
    ) -> WorldDistance:
        """Signed distance and cost of spheres against the enabled obstacles.

        Args:
            spheres: ``[..., N, 4]`` centres (base frame) and radii; radius < 0 disables a
                sphere (distance ``max_distance``, cost 0, zero gradient).
            activation_distance: ``eta >= 0`` of the smooth-hinge cost.
            max_distance: distances are clamped here (zero gradient beyond); with ``inf``
                (default) the distance to the nearest obstacle is exact however far it is.

        Returns:
            :class:`WorldDistance` with ``distance`` and ``cost`` ``[..., N]``, both
            differentiable with respect to all four columns of ``spheres``.
        """
        self._check_spheres(spheres, min_dim=2)
        act, max_d = self._check_ranges(activation_distance, max_distance)
        distance, cost = _SphereWorldQuery.apply(spheres, self, act, max_d, 0, 1.0, 1)
        return WorldDistance(distance, cost)

    def swept_sphere_distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
        sweep_spacing: float = 0.5,
        max_sweep_samples: int = 32,
    ) -> WorldDistance:
        """Continuous check of sphere trajectories ``[B, H, N, 4]`` between time steps.

        Step ``h = 0`` is the plain query. For ``h >= 1`` the sphere's motion from step
        ``h - 1`` (centre travel ``L``) is cut into ``K = min(ceil(L / (sweep_spacing * r)),
        max_sweep_samples)`` pieces (``r`` the smaller of the two radii) and sampled at each
        piece's midpoint ``t = (k + 1/2) / K`` and at the end ``t = 1`` (centre and radius
        interpolated; ``h - 1`` itself is covered by step ``h - 1``). ``distance`` is the
        minimum over the samples, so never above the plain query at ``h``; ``cost`` is the
        maximum (the worst sample: a mean would dilute a short penetration). Gradients reach
        both end spheres with weights ``1 - t`` and ``t`` of the deciding sample.

        Guarantee: the signed distance is 1-Lipschitz and every point of the segment lies within
        ``L / (2K)`` of a sample, so the result is at least the exact swept-sphere distance and
        exceeds it by at most ``L / (2K) <= sweep_spacing * r / 2`` (``L / (2 *
        max_sweep_samples)`` once capped). With the default spacing 0.5, a step whose centre
        passes through an obstacle, however thin, reports a penetration of at least
        ``0.75 r``.

        Args:
            spheres: ``[B, H, N, 4]`` sphere trajectories (radius < 0 disables a sphere at a
                step; a disabled sphere at ``h - 1`` makes step ``h`` a plain query).
            activation_distance, max_distance: as in :meth:`sphere_distance`.
            sweep_spacing: largest sample spacing as a fraction of the radius (> 0).
            max_sweep_samples: cap on ``K`` per step (>= 1).

        Returns:
            :class:`WorldDistance` with ``distance`` and ``cost`` ``[B, H, N]``.
        """
        self._check_spheres(spheres, min_dim=4, max_dim=4)
        act, max_d = self._check_ranges(activation_distance, max_distance)
        if (
            isinstance(sweep_spacing, bool)
            or not isinstance(sweep_spacing, int | float)
            or not (0.0 < sweep_spacing < math.inf)
        ):
            raise InputValueError(
                f"sweep_spacing: expected a positive finite number, received {sweep_spacing!r}"
            )
        if (
            isinstance(max_sweep_samples, bool)
            or not isinstance(max_sweep_samples, int)
            or max_sweep_samples < 1
        ):
            raise InputValueError(
                f"max_sweep_samples: expected an integer >= 1, received {max_sweep_samples!r}"
            )
        distance, cost = _SphereWorldQuery.apply(
            spheres, self, act, max_d, 1, float(sweep_spacing), max_sweep_samples
        )
        return WorldDistance(distance, cost)

    @torch.no_grad()
    def obstacle_distances(
        self, spheres: torch.Tensor, max_distance: float = math.inf
    ) -> tuple[list[str], torch.Tensor]:
        """Signed distance of each sphere to each enabled obstacle on its own: which obstacle
        a sphere hits, and how deep (:meth:`sphere_distance` is their minimum over obstacles).

        One launch per obstacle, no gradient: for reports on a few configurations (why a start
        state is in collision), not for hot loops.

        Args:
            spheres: ``[..., N, 4]`` centres (base frame) and radii; radius < 0 disables a
                sphere (``max_distance`` against every obstacle).
            max_distance: distances are clamped here.

        Returns:
            ``(names, distance)``: the enabled obstacles' names ``[O]`` (world order) and
            ``distance [..., N, O]``.
        """
        self._check_spheres(spheres, min_dim=2)
        _, max_d = self._check_ranges(0.0, max_distance)
        names = [name for name in self.obstacle_names if self._world.get(name).enabled]
        columns = []
        for name in names:
            table, index = self._slots[name]
            slot = index if table == "primitive" else self._num_prim + index
            active = torch.tensor([slot], dtype=torch.int32, device=self.tensor_args.device)
            tables = self._slot_tables(active)
            distance = self._launch(spheres.detach(), 0.0, max_d, 0, 1.0, 1, False, tables)[0]
            columns.append(distance.reshape(spheres.shape[:-1]))
        for voxel_world in self._voxel_worlds:
            names.append(voxel_world.name)
            columns.append(voxel_world.sphere_distance(spheres, 0.0, max_d).distance)
        if not columns:
            return [], spheres.new_empty((*spheres.shape[:-1], 0))
        return names, torch.stack(columns, -1)

    def _slot_tables(self, active: torch.Tensor) -> Any:
        """A copy of the world tables whose loop broad phase visits the slots ``active``
        (int32, kept alive by the caller until the launch is done)."""
        struct = wck.WORLD_TABLES[SCALAR_TYPES[self.tensor_args.dtype]]
        tables = struct()
        for name in struct.vars:
            setattr(tables, name, getattr(self._tables, name))
        tables.active_slots = wp.from_torch(active)
        tables.num_active = int(active.shape[0])
        return tables

    def _check_spheres(self, spheres: Any, min_dim: int, max_dim: int | None = None) -> None:
        require_tensor("spheres", spheres)
        if spheres.dtype != self.tensor_args.dtype:
            raise InputTypeError(
                f"spheres: expected dtype {self.tensor_args.dtype} (the world's), "
                f"received {spheres.dtype}"
            )
        if spheres.device != self.tensor_args.device:
            raise InputValueError(
                f"spheres: expected device {self.tensor_args.device} (the world's), "
                f"received {spheres.device}"
            )
        shape = "[B, H, N, 4]" if max_dim == 4 else "[..., N, 4]"
        if spheres.ndim < min_dim or (max_dim is not None and spheres.ndim > max_dim):
            raise InputValueError(
                f"spheres: expected shape {shape}, received {tuple(spheres.shape)}"
            )
        if spheres.shape[-1] != 4:
            raise InputValueError(
                f"spheres: expected shape {shape}, received {tuple(spheres.shape)}"
            )
        if self.check_finite and not bool(torch.isfinite(spheres).all()):
            raise InputValueError("spheres: expected finite values, received NaN or inf")

    _check_ranges = staticmethod(check_ranges)

    def query_tables(self, max_distance: float) -> tuple[Any, Any, int]:
        """``(tables, grid, broad_phase)``: the world-tables struct, the grid's
        (``kernels.world_grid_kernels.GridTables``, built first when ``broad_phase`` is
        ``GRID``) and the broad-phase code (``LOOP``, ``BVH`` or ``GRID``) for a sampling
        optimizer's kernel that queries this world itself at ``max_distance``
        (``kernels.frame_world_kernels``). The structs read the world's buffers in place:
        valid until the next obstacle update."""
        code = self._broad_phase_code(max_distance, sampling=True)
        return self._tables, self._grid.tables, code

    @property
    def world_tables(self) -> Any:
        """The world-tables struct (``kernels.world_slots.WORLD_TABLES``) for kernels with a
        broad phase of their own (the verdict kernel); valid until the next obstacle update."""
        return self._tables

    @property
    def grid_builds(self) -> int:
        """Builds of the static grid so far: with :attr:`revision`, what a captured CUDA graph
        of a query depends on (a build replaces the grid's arrays and geometry)."""
        return self._grid.builds

    def _broad_phase_code(self, max_distance: float, sampling: bool = False) -> int:
        """The kernels' broad-phase code at ``max_distance``; builds a stale grid first.
        ``sampling``: a sampling optimizer's call (MPPI's world cost, ``query_tables``), the
        only one ``"auto"`` gives the grid (class docstring)."""
        mode = self._broad_phase
        if mode == "auto":
            if (
                sampling
                and max_distance <= self.GRID_MAX_DISTANCE
                and self._num_enabled >= self.GRID_MIN_OBSTACLES
            ):
                mode = "grid"
            elif max_distance < math.inf:
                mode = "bvh" if self._num_enabled >= self.BVH_MIN_OBSTACLES_NEAR else "loop"
            else:
                mode = "bvh" if self._num_enabled > self.BVH_MIN_OBSTACLES else "loop"
        if mode == "grid":
            if self._grid.stale and not self._grid.build(self):
                return wgk.LOOP
            return wgk.GRID
        return wgk.BVH if mode == "bvh" else wgk.LOOP

    def _upload(self, rebuild: bool) -> None:
        super()._upload(rebuild)
        self._grid.refresh(self)

    def _launch(
        self,
        spheres: torch.Tensor,
        activation: float,
        max_distance: float,
        sweep: int,
        sweep_spacing: float,
        max_sweep_samples: int,
        write_grad: bool,
        tables: Any = None,
    ) -> tuple[torch.Tensor, ...]:
        """Flat ``[S]`` distance and cost (and ``[S, 4]`` gradients) of ``spheres [S, 4]``;
        ``tables`` (default: the whole world's) other world tables, searched by the loop."""
        voxel_tables = tables  # None: the whole world, voxel grids included
        horizon, num_spheres = (spheres.shape[1], spheres.shape[2]) if sweep else (1, 1)
        flat = spheres.reshape(-1, 4).contiguous()
        kw = self.tensor_args.as_kwargs()
        rows = flat.shape[0]
        distance = torch.empty(rows, **kw)
        cost = torch.empty(rows, **kw)
        dummy = torch.empty(1, 4, **kw)
        grads = [torch.empty(rows, 4, **kw) if write_grad else dummy for _ in range(2)]
        grads += [torch.empty(rows, 4, **kw) if write_grad and sweep else dummy for _ in range(2)]
        num_enabled = self._num_enabled if tables is None else tables.num_active
        if num_enabled == 0:
            # nothing to be near: skip the launch (MPC and trajopt run with an empty world
            # until one is given); a voxel grid's query writes the outputs itself (torch's
            # parallel fills would leave their threads spinning in its launches' way)
            grid_writes = tables is None and bool(self._voxel_worlds)
            if not grid_writes:
                distance.fill_(max_distance)
                cost.zero_()
                for g in grads:
                    g.zero_()
            return self._fold_voxels(spheres, voxel_tables, activation, max_distance, sweep,
                                     sweep_spacing, max_sweep_samples, write_grad,
                                     distance, cost, grads, overwrite=grid_writes)  # fmt: skip
        phase = self._broad_phase_code(max_distance) if tables is None else wgk.LOOP
        tables = self._tables if tables is None else tables
        flat_wp = as_warp(flat)

        def make_launch(b0: int, b1: int):
            outputs = [as_warp(distance[b0:b1]), as_warp(cost[b0:b1])]
            outputs += [as_warp(g[b0:b1]) if g is not dummy else as_warp(g) for g in grads]
            inputs = [
                flat_wp,
                activation,
                max_distance,
                self._initial_range,
                sweep,
                horizon,
                num_spheres,
                sweep_spacing,
                max_sweep_samples,
                tables,
                self._grid.tables,
                phase,
                b0,
                int(write_grad),
                *outputs,
            ]
            return b1 - b0, inputs

        work = num_enabled if phase == wgk.LOOP else 8
        elements = rows * max(work, 1) * (max_sweep_samples if sweep else 1)
        launch_rows(wck.distance_kernel(flat.dtype), rows, flat.device, make_launch, elements)
        return self._fold_voxels(spheres, voxel_tables, activation, max_distance, sweep,
                                 sweep_spacing, max_sweep_samples, write_grad,
                                 distance, cost, grads)  # fmt: skip

    def _fold_voxels(self, spheres, tables, *query, overwrite=False) -> tuple[torch.Tensor, ...]:
        """The voxel worlds' distances and costs folded into a whole-world query's outputs
        (``query``: ``_launch``'s arguments then its outputs); per-slot queries skip them.
        ``overwrite``: the outputs are unwritten, the first grid writes them."""
        if tables is None:
            for i, voxel_world in enumerate(self._voxel_worlds):
                voxel_world.fold_query(spheres, *query, overwrite=overwrite and i == 0)
        distance, cost, grads = query[-3:]
        return distance, cost, *grads

    def __repr__(self) -> str:
        return (
            f"WorldCollision({self._world!r}, capacity={self.capacity}, "
            f"broad_phase={self._broad_phase!r}, {self.tensor_args})"
        )
