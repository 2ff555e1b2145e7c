"""Collision costs: robot spheres against the world's obstacles, and against each other.

Both read the robot's collision spheres along the trajectory, ``link_spheres [B, H, N, 4]``
(centre xyz in the base frame, radius), from forward kinematics, and return ``[B, H]``.

- ``primitive_collision_cost``: for each sphere, the sum over obstacles of the smooth hinge of
  ``activation_distance - d`` (``d`` the signed sphere-to-obstacle distance, see
  :mod:`curobo_lite.kernels.collision_common`), summed over spheres, times ``weight``. With
  ``use_sweep`` the distance at step ``h`` is the minimum over the segment swept by each sphere
  since step ``h-1``, so a fast step cannot tunnel through a thin obstacle.
  Where no gradient is taken (MPPI's rollouts), :meth:`PrimitiveCollisionCost.forward_frames`
  computes the same cost from the link frames of forward kinematics, the spheres never written
  out: a link's bounding sphere is tested first and its spheres only near an obstacle
  (:mod:`curobo_lite.kernels.frame_world_kernels`).
- ``self_collision_cost``: the same penalty summed over the robot's sphere pairs that may touch
  (different links, not in ``self_collision_ignore``), times ``weight``.

The world is not part of the task file: the rollout attaches a
:class:`~curobo_lite.geom.WorldCollision` (shared with the solver, so a world update reaches every
cost that uses it), and the robot's sphere pairs come from its
:class:`~curobo_lite.robot.Kinematics`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import torch

from curobo_lite.geom.self_collision import SelfCollisionModel
from curobo_lite.geom.world_collision import WorldCollision
from curobo_lite.kernels import frame_world_kernels as fwk
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.robot import Kinematics, KinematicsState
from curobo_lite.rollout.cost.base import CostBase, CostConfig, as_bool, as_scalar, check_tensor
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError


def _check_attachment(method: str, value: Any, expected: type) -> None:
    """Raise :class:`InputTypeError` naming the cost's attach ``method`` unless ``value`` is
    ``None`` or an ``expected``."""
    if value is not None and not isinstance(value, expected):
        raise InputTypeError(
            f"{method}: expected a {expected.__name__} or None, received {type(value).__name__}"
        )


class RowPass(NamedTuple):
    """One pass over ``rows`` independent configurations that threads can share: each calls
    ``run(begin, end)`` on rows nobody else takes; ``result()`` once every row has run."""

    rows: int
    run: Callable[[int, int], None]
    result: Callable[[], torch.Tensor]


@dataclass
class PrimitiveCollisionCostConfig(CostConfig):
    """Options of ``primitive_collision_cost``.

    Attributes:
        weight: scale of the summed penalty (per metre of penetration past the band).
        activation_distance: metres from contact at which the penalty starts (``>= 0``).
        use_sweep: check the segment each sphere sweeps between consecutive steps.
        sweep_spacing: samples along a swept segment are at most this fraction of the sphere's
            radius apart (``> 0``), so a surface crossed by the segment is found.
        max_sweep_samples: cap on the samples per segment (``>= 1``).
    """

    section: ClassVar[str] = "primitive_collision_cost"

    activation_distance: float = 0.025
    use_sweep: bool = False
    sweep_spacing: float = 0.5
    max_sweep_samples: int = 16

    def _validate(self) -> None:
        self.activation_distance = as_scalar(
            self.section, "activation_distance", self.activation_distance
        )
        self.use_sweep = as_bool(self.section, "use_sweep", self.use_sweep)
        self.sweep_spacing = as_scalar(self.section, "sweep_spacing", self.sweep_spacing)
        if self.sweep_spacing <= 0.0:
            raise InputValueError(
                f"{self.section}.sweep_spacing: expected a number > 0, received "
                f"{self.sweep_spacing}"
            )
        samples = self.max_sweep_samples
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise InputValueError(
                f"{self.section}.max_sweep_samples: expected an integer >= 1, "
                f"received {excerpt(samples)}"
            )


class PrimitiveCollisionCost(CostBase[PrimitiveCollisionCostConfig]):
    """Robot spheres against the obstacles of an attached :class:`WorldCollision`.

    Without an attached world (or with an empty one) the cost is zero.
    """

    config_cls = PrimitiveCollisionCostConfig
    weight_fields = ("weight", "activation_distance")
    #: the attached world (until :meth:`attach_world`, none)
    world_collision: WorldCollision | None = None

    def attach_world(self, world_collision: WorldCollision | None) -> None:
        """Use ``world_collision`` (shared, not copied) from the next call on."""
        _check_attachment(f"{self.name}.attach_world", world_collision, WorldCollision)
        self.world_collision = world_collision

    def forward(self, link_spheres: torch.Tensor) -> torch.Tensor:
        """Per-step cost ``[B, H]`` of ``link_spheres [B, H, N, 4]``."""
        spheres = check_tensor(
            self.name, "link_spheres", link_spheres, 4, self.tensor_args, last_dim=4
        )
        batch, horizon = spheres.shape[:2]
        world = self.world_collision
        if not self.enabled or world is None or world.num_enabled == 0:
            return self._disabled(batch, horizon)
        cfg = self.config
        # only the penalty is used: obstacles beyond the activation distance need no search
        reach = max(cfg.activation_distance, 1e-6)
        if cfg.use_sweep:
            result = world.swept_sphere_distance(
                spheres,
                activation_distance=cfg.activation_distance,
                max_distance=reach,
                sweep_spacing=cfg.sweep_spacing,
                max_sweep_samples=cfg.max_sweep_samples,
            )
        else:
            result = world.sphere_distance(
                spheres, activation_distance=cfg.activation_distance, max_distance=reach
            )
        return cfg.weight * result.cost.sum(-1)

    def reads_frames(self, kinematics: Kinematics) -> bool:
        """Whether :meth:`forward_frames` serves this call: no gradient to take, a plain (not
        swept) query, a world with obstacles and without voxel grids, and a robot with
        spheres (otherwise :meth:`forward` on the spheres)."""
        world = self.world_collision
        return (
            self.enabled
            and not torch.is_grad_enabled()
            and not self.config.use_sweep
            and world is not None
            and world.num_enabled > 0
            and world.num_voxel_worlds == 0
            and kinematics.num_spheres > 0
        )

    def forward_frames(self, state: KinematicsState, kinematics: Kinematics) -> torch.Tensor:
        """Per-step cost ``[B, H]`` of the robot at the link frames ``state.link_position
        [B, H, L, 3]`` and ``state.link_quaternion [B, H, L, 4]`` of ``kinematics`` (its
        spheres, those :meth:`Kinematics.world_spheres` keeps): :meth:`forward`'s value on
        ``kinematics.world_spheres(link_spheres)`` without the ``[B, H, S, 4]`` spheres or a
        gradient (see :meth:`reads_frames`)."""
        frames_pass = self.frames_pass(state, kinematics)
        frames_pass.run(0, frames_pass.rows)
        return frames_pass.result()

    def frames_pass(
        self, state: KinematicsState, kinematics: Kinematics, out: torch.Tensor | None = None
    ) -> RowPass:
        """:meth:`forward_frames` in parts that threads can share: ``run(begin, end)``
        computes configurations ``begin:end`` of the ``B * H``, ``result()`` the ``[B, H]``
        cost once all have run (called once: with ``out``, a contiguous ``[B, H]`` buffer
        that the pass writes and ``result()`` returns, scaled in place)."""
        position = check_tensor(
            self.name, "link_position", state.link_position, 4, self.tensor_args, last_dim=3
        )
        quaternion = check_tensor(
            self.name, "link_quaternion", state.link_quaternion, 4, self.tensor_args, last_dim=4
        )
        batch, horizon = position.shape[:2]
        if not self.reads_frames(kinematics):
            raise InputValueError(
                f"{self.name}.forward_frames: expected a call reads_frames() accepts (no "
                "gradient, no sweep, obstacles but no voxel grid, a robot with spheres)"
            )
        cfg = self.config
        world = self.world_collision
        reach = max(cfg.activation_distance, 1e-6)
        group_start, group_frame, world_mask = kinematics.sphere_group_frames
        local = kinematics.tables.sphere_local
        num_groups = group_frame.shape[0]
        kw = self.tensor_args.as_kwargs()
        # the group bounds change only with the spheres (held objects are written into the
        # reserved ones in place, which bumps the tensor's version)
        key = tuple(
            (t.data_ptr(), t._version) for t in (local, world_mask, group_start, group_frame)
        )
        cached = self._cache.get("group_bounds")
        if cached is not None and cached[0] == key:
            bounds, frame_end = cached[1:]
        else:
            bounds = torch.empty(num_groups, 5, **kw)
            frame_end = torch.empty(num_groups, dtype=torch.int32, device=local.device)
            bound_inputs = (local, world_mask, group_start, group_frame, bounds, frame_end)
            launch_rows(
                fwk.bounds_kernel(local.dtype),
                num_groups,
                local.device,
                lambda b0, b1: (num_groups, [as_warp(t) for t in bound_inputs]),
                num_groups,
            )
            self._cache["group_bounds"] = (key, bounds, frame_end)
        rows = batch * horizon
        position = position.reshape(rows, *position.shape[2:]).contiguous()
        quaternion = quaternion.reshape(rows, *quaternion.shape[2:]).contiguous()
        cost = torch.empty(rows, **kw) if out is None else out.view(rows)
        tables, grid, broad_phase = world.query_tables(reach)
        constants = [
            as_warp(t) for t in (local, world_mask, group_start, group_frame, bounds, frame_end)
        ]
        per_thread = fwk.rows_per_thread(position.device)

        def make_launch(b0: int, b1: int):
            inputs = [
                as_warp(position[b0:b1]),
                as_warp(quaternion[b0:b1]),
                *constants,
                cfg.activation_distance,
                reach,
                world.initial_range,
                tables,
                grid,
                broad_phase,
                per_thread,
                as_warp(cost[b0:b1]),
            ]
            return -(-(b1 - b0) // per_thread), inputs

        def run(begin: int, end: int) -> None:
            launch_rows(
                fwk.cost_kernel(position.dtype),
                end - begin,
                position.device,
                lambda b0, b1: make_launch(begin + b0, begin + b1),
                # a bounding-sphere test per group and configuration besides the spheres:
                # MPPI's 12 000 Franka configurations (2-3 ms on one core) split over threads
                (end - begin) * (local.shape[0] + 16 * num_groups),
            )

        if out is not None:
            return RowPass(rows, run, lambda: out.mul_(cfg.weight))
        return RowPass(rows, run, lambda: (cfg.weight * cost).view(batch, horizon))


@dataclass
class SelfCollisionCostConfig(CostConfig):
    """Options of ``self_collision_cost``.

    Attributes:
        weight: scale of the summed penalty.
        activation_distance: metres between sphere surfaces at which the penalty starts.
    """

    section: ClassVar[str] = "self_collision_cost"

    activation_distance: float = 0.01

    def _validate(self) -> None:
        self.activation_distance = as_scalar(
            self.section, "activation_distance", self.activation_distance
        )


class SelfCollisionCost(CostBase[SelfCollisionCostConfig]):
    """The robot's spheres against each other (a :class:`SelfCollisionModel` from
    :meth:`attach_robot`).

    Without a model (a robot with no collision spheres) the cost is zero.
    """

    config_cls = SelfCollisionCostConfig
    weight_fields = ("weight", "activation_distance")
    #: the robot's sphere pairs (until :meth:`attach_robot`, none)
    model: SelfCollisionModel | None = None

    def attach_robot(self, model: SelfCollisionModel | None) -> None:
        """The robot's sphere pairs that may collide (``None``: no self-collision term)."""
        _check_attachment(f"{self.name}.attach_robot", model, SelfCollisionModel)
        self.model = model if model is not None and model.num_pairs else None

    def forward(self, link_spheres: torch.Tensor) -> torch.Tensor:
        """Per-step cost ``[B, H]`` of ``link_spheres [B, H, N, 4]``."""
        spheres = check_tensor(
            self.name, "link_spheres", link_spheres, 4, self.tensor_args, last_dim=4
        )
        batch, horizon = spheres.shape[:2]
        if not self.enabled or self.model is None:
            return self._disabled(batch, horizon)
        eta = self.config.activation_distance
        # only the penalty is used: link pairs beyond the activation distance are skipped
        result = self.model.distance(spheres, eta, max_distance=max(eta, 1e-6))
        return self.config.weight * result.cost
