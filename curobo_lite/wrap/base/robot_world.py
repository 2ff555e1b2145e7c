"""RobotWorld: collision queries of a robot's configurations and trajectories against a world.

The checker users call on their own configurations and plans::

    from curobo_lite.wrap import RobotWorld

    checker = RobotWorld.from_config(robot="franka", world="table")
    distance = checker.collision_distance(q)          # [B] metres, negative = penetration
    ok = checker.validate(q)                          # [B] bool: in limits, no collision
    ok_plan = checker.validate_trajectory(plan)       # [B] bool, swept between steps

    # exact answers on the robot's collision meshes (coal; robot file key collision_geometry)
    clearance = checker.mesh_distance(q)              # [B] metres, negative = penetration
    ok = checker.validate_mesh(q)                     # [B] bool
    ok_plan = checker.validate_trajectory_mesh(plan)  # [B] bool, swept between steps

Every distance is differentiable with respect to ``q`` (exact gradients through forward
kinematics, the collision spheres and the signed-distance kernels), so the same object serves
as a cost in a user's own optimization.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from curobo_lite.geom import SelfCollisionModel, WorldCollision, WorldConfig
from curobo_lite.geom.exact_collision import ExactDistance
from curobo_lite.kernels.collision_verdict_kernels import link_world_distance
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.attach import ATTACHED_LINK, AttachedObjects, let_go, take_hold
from curobo_lite.wrap.base.mesh_check import (
    DEFAULT_SWEEP_RESOLUTION,
    LinkPoses,
    MeshCheck,
    no_geometry_message,
    pose_rows,
)
from curobo_lite.wrap.base.offenders import (
    OFFENDER_KINDS,
    Offender,
    find_offenders,
    position_in_limits,
)

#: Query range (m) of the pass/fail checks: only contact matters, so the broad phase looks no
#: farther than this.
_CHECK_RANGE = 1e-4


class RobotWorld:
    """A robot's collision spheres against a :class:`WorldCollision` and against each other.

    Args:
        robot_config: a robot with ``collision_spheres``.
        world_collision: the obstacles (shared, edited in place by :meth:`update_world`).
        tensor_args: device and dtype of accepted configurations (default: the robot's).
    """

    def __init__(
        self,
        robot_config: RobotConfig,
        world_collision: WorldCollision,
        tensor_args: TensorDeviceType | None = None,
    ) -> None:
        if not isinstance(robot_config, RobotConfig):
            raise InputTypeError(
                f"robot_config: expected a RobotConfig, received {type(robot_config).__name__}"
            )
        if not isinstance(world_collision, WorldCollision):
            raise InputTypeError(
                f"world_collision: expected a WorldCollision, received "
                f"{type(world_collision).__name__}"
            )
        self.robot_config = robot_config
        self.tensor_args = tensor_args or robot_config.tensor_args
        self.kinematics = Kinematics(robot_config, self.tensor_args)
        if self.kinematics.num_spheres == 0:
            raise InputValueError(
                f"robot_config: robot {robot_config.name!r} has no collision_spheres; add them "
                "to its robot file (`curobo-lite robot spheres` fits them to its meshes)"
            )
        self.world_collision = world_collision
        self.self_collision_model: SelfCollisionModel | None = None
        if self.kinematics.self_collision_pairs.numel():
            self.self_collision_model = SelfCollisionModel.from_kinematics(self.kinematics)
        self._mesh_check: MeshCheck | None = None  # built on the first mesh query
        self._mesh_revision = -1
        self._verdict_groups: torch.Tensor | None = None  # int32 link sphere ranges
        #: objects held, per link (:meth:`attach_objects_to_robot`)
        self.attached: dict[str, AttachedObjects] = {}

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        world: WorldCollision | WorldConfig | str | Mapping | None = None,
        tensor_args: TensorDeviceType | None = None,
    ) -> RobotWorld:
        """From a robot (bundled name, path or :class:`RobotConfig`) and a world (a
        :class:`WorldConfig`, a cuRobo-layout dict, a world file, a bundled name, or ``None``
        for an empty world)."""
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        return cls(robot, as_world_collision(world, tensor_args), tensor_args)

    def update_world(self, world: WorldConfig | str | Mapping) -> None:
        """Replace the obstacles (no rebuild of the robot side)."""
        self.world_collision.update_world(as_world_config(world))

    # --- held objects ----------------------------------------------------------------------------

    def attach_objects_to_robot(
        self,
        joint_state: Any,
        object_names: Sequence[str],
        link_name: str = ATTACHED_LINK,
        surface_sphere_radius: float = 0.001,
        kinematics: Sequence[Kinematics] = (),
    ) -> AttachedObjects:
        """Hold the obstacles ``object_names`` on ``link_name`` (cuRobo's name): spheres fitted
        to their shapes at ``joint_state`` fill the link's reserved spheres, they leave the
        world, and their true shapes join the mesh check (:mod:`curobo_lite.wrap.base.attach`).
        ``kinematics``: other copies of the robot's spheres to update too (a solver's)."""
        held = take_hold(
            self.world_collision,
            [self.kinematics, *kinematics],
            self.attached,
            joint_state,
            object_names,
            link_name,
            surface_sphere_radius,
        )
        self._mesh_check = None  # rebuilt with the objects' shapes
        return held

    def detach_object_from_robot(
        self, link_name: str = ATTACHED_LINK, kinematics: Sequence[Kinematics] = ()
    ) -> None:
        """Let go of what ``link_name`` holds: its spheres are disabled and the objects
        return to the world where they were attached (nothing held: no change)."""
        everyone = [self.kinematics, *kinematics]
        if let_go(self.world_collision, everyone, self.attached, link_name):
            self._mesh_check = None

    def mirror_held(
        self, held: Mapping[str, AttachedObjects], kinematics: Sequence[Kinematics] = ()
    ) -> None:
        """Hold exactly ``held`` (link -> objects, e.g. another planner's :attr:`attached`):
        the links' reserved spheres here and in ``kinematics``, the shapes in the mesh check.
        The world is left as it is (a copy of the other planner's world has the held obstacles
        disabled already)."""
        everyone = [self.kinematics, *kinematics]
        for link in self.attached:
            if link not in held:
                for kin in everyone:
                    kin.set_reserved_spheres(link, None)
        for link, objects in held.items():
            for kin in everyone:
                kin.set_reserved_spheres(link, objects.spheres)
        self.attached = dict(held)
        self._mesh_check = None

    # --- exact checks on the collision meshes (coal) ----------------------------------------------

    @property
    def has_collision_geometry(self) -> bool:
        """The robot file names exact collision shapes (``collision_geometry`` or a URDF)."""
        return self.robot_config.collision_geometry_path is not None

    def mesh_check(self) -> MeshCheck:
        """The exact checker (:class:`~curobo_lite.wrap.base.mesh_check.MeshCheck`): loaded on first
        use, its obstacles refreshed whenever :attr:`world_collision` changed."""
        if self._mesh_check is None:
            if not self.has_collision_geometry:
                raise InputValueError(no_geometry_message(self.robot_config))
            extra = {link: held.shapes for link, held in self.attached.items()}
            self._mesh_check = MeshCheck(self.robot_config, self.kinematics, None, extra)
        if self._mesh_revision != self.world_collision.revision:
            self._mesh_check.update_world(self.world_collision.world)
            self._mesh_revision = self.world_collision.revision
        return self._mesh_check

    def _flat_q(self, q: torch.Tensor, name: str = "q") -> torch.Tensor:
        if not isinstance(q, torch.Tensor) or q.ndim < 1 or q.shape[-1] != self.kinematics.dof:
            shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
            raise InputValueError(
                f"{name}: expected positions [..., {self.kinematics.dof}], received {shape}"
            )
        return q.detach().to(**self.tensor_args.as_kwargs()).reshape(-1, q.shape[-1])

    @torch.no_grad()
    def mesh_report(self, q: torch.Tensor) -> ExactDistance:
        """Exact clearance of ``q [B, D]`` (flattened ``[..., D]``) on the collision meshes:
        :class:`~curobo_lite.geom.exact_collision.ExactDistance` with ``distance [B]`` (numpy,
        m) and the closest (link, obstacle) pair of each configuration."""
        return self.mesh_check().distance(self._flat_q(q))

    @torch.no_grad()
    def mesh_distance(self, q: torch.Tensor) -> torch.Tensor:
        """``[...]`` smallest signed distance (m) from the robot's collision meshes at
        ``q [..., D]`` to any obstacle (coal; negative: penetration depth; ``inf`` with no
        obstacles). Links that no active joint moves are left out, and so are links without
        collision spheres (:class:`~curobo_lite.wrap.base.mesh_check.MeshCheck`). Not
        differentiable."""
        distance = self.mesh_report(q).distance
        return torch.as_tensor(distance, **self.tensor_args.as_kwargs()).reshape(q.shape[:-1])

    @torch.no_grad()
    def validate_mesh(self, q: torch.Tensor, margin: float = 0.0) -> torch.Tensor:
        """``[...]`` bool: ``q [..., D]`` is within the position limits, its collision meshes
        are at least ``margin`` (m) from every obstacle, and its spheres are free of
        self-collision (as in :meth:`validate`)."""
        flat = self._flat_q(q)
        ok = self.in_limits(flat)
        if self.self_collision_model is not None:
            own = self.self_collision_model.distance(
                self.get_link_spheres(flat), max_distance=_CHECK_RANGE
            )
            ok &= own.distance >= 0.0
        ok &= self.meshes_clear(flat, margin)
        return ok.reshape(q.shape[:-1])

    @torch.no_grad()
    def validate_trajectory_mesh(
        self,
        trajectory: Any,
        margin: float = 0.0,
        resolution: float = DEFAULT_SWEEP_RESOLUTION,
    ) -> torch.Tensor:
        """Bool per trajectory (``[B]`` for ``[B, T, D]``, a 0-d tensor for ``[T, D]``; a tensor
        or a :class:`JointState`): every waypoint passes :meth:`validate_mesh`, and the motion
        between waypoints (linear in joint space) keeps the meshes at least ``margin`` from
        the obstacles at samples taken so that no point of the robot moves more than
        ``resolution`` (m, default 1 mm) between two of them near obstacles: the whole motion
        then keeps ``margin - resolution / 2`` (see :mod:`curobo_lite.wrap.base.mesh_check`)."""
        return self.trajectory_mesh_report(trajectory, margin, resolution)[0]

    @torch.no_grad()
    def trajectory_mesh_report(
        self,
        trajectory: Any,
        margin: float = 0.0,
        resolution: float = DEFAULT_SWEEP_RESOLUTION,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ok, min_distance)`` of :meth:`validate_trajectory_mesh`: ``min_distance`` is the
        smallest mesh clearance (m) over the waypoints and the swept samples (``inf`` with no
        obstacles), same shape as ``ok``."""
        q = getattr(trajectory, "position", trajectory)
        if not isinstance(q, torch.Tensor) or q.ndim not in (2, 3):
            shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
            raise InputValueError(
                f"trajectory: expected positions [T, D] or [B, T, D], received {shape}"
            )
        q3 = (q[None] if q.ndim == 2 else q).detach().to(**self.tensor_args.as_kwargs())
        self._flat_q(q3, "trajectory")
        B, T, D = q3.shape
        flat = q3.reshape(B * T, D)
        ok = self.in_limits(flat)
        if self.self_collision_model is not None:
            own = self.self_collision_model.distance(
                self.get_link_spheres(flat), max_distance=_CHECK_RANGE
            )
            ok &= own.distance >= 0.0
        swept_ok, low, _ = self.mesh_check().sweep(q3, margin, resolution)
        ok = ok.reshape(B, T).all(1) & torch.as_tensor(swept_ok, device=ok.device)
        low = torch.as_tensor(low, **self.tensor_args.as_kwargs())
        return (ok[0], low[0]) if q.ndim == 2 else (ok, low)

    # --- queries ----------------------------------------------------------------------------------

    def get_link_spheres(self, q: torch.Tensor) -> torch.Tensor:
        """Collision spheres ``[..., N, 4]`` (centre in the base frame, radius) of
        ``q [..., D]``."""
        return self.kinematics.forward(q).link_spheres

    def get_world_spheres(self, q: torch.Tensor) -> torch.Tensor:
        """The spheres ``[..., N, 4]`` of ``q [..., D]`` as the world checks see them: those of
        links that no active joint moves have radius -1 (disabled) unless the robot file sets
        ``world_collision_fixed_links`` (see :meth:`Kinematics.world_spheres`)."""
        return self.kinematics.world_spheres(self.get_link_spheres(q))

    def collision_distance(
        self, q: torch.Tensor, max_distance: float = float("inf")
    ) -> torch.Tensor:
        """``[...]`` smallest signed distance (m) from the robot at ``q [..., D]`` to any
        obstacle: negative is penetration depth; values beyond ``max_distance`` read as it."""
        fast = 0.0 < max_distance < math.inf and not self.world_collision.num_voxel_worlds
        if fast and not (q.requires_grad and torch.is_grad_enabled()):
            # the per-link kernel (no gradients): the same minimum at ~1/4 of the per-sphere
            # kernel's cost (388 waypoints of an MBM cage plan within 5 cm: 8.4 -> 2 ms CPU)
            return self._world_verdict(self.get_link_spheres(q), max_distance, -math.inf)
        spheres = self.get_world_spheres(q)
        distance = self.world_collision.sphere_distance(spheres, max_distance=max_distance)
        return distance.distance.amin(-1)

    def self_collision_distance(self, q: torch.Tensor) -> torch.Tensor:
        """``[...]`` smallest signed distance (m) between the robot's own spheres that may touch
        (different links, not in ``self_collision_ignore``); negative is penetration."""
        spheres = self.get_link_spheres(q)
        if self.self_collision_model is None:
            return spheres.new_full(spheres.shape[:-2], float("inf"))
        return self.self_collision_model.distance(spheres).distance

    def in_limits(self, q: torch.Tensor) -> torch.Tensor:
        """``[...]`` bool: every joint of ``q [..., D]`` within its position limits."""
        return position_in_limits(self.robot_config, q)

    @torch.no_grad()
    def validate(self, q: torch.Tensor, exact_band: float = 0.0) -> torch.Tensor:
        """``[...]`` bool: ``q [..., D]`` is within the position limits, clear of every obstacle
        and free of self-collision.

        ``exact_band`` (m, default 0: spheres only): a configuration that fails only because
        its spheres reach at most this deep into an obstacle is judged by the exact check on
        the collision meshes instead (:meth:`validate_mesh`; the robot file must name them).
        The spheres over-approximate the links by up to their fit tolerance (1.5 cm on the
        Franka's arm): in an opening a few centimetres wider than the arm, that margin alone
        closes the way that the meshes leave open. Clear or deep cases never reach coal. In a
        world with a voxel grid the band is off (the meshes do not see grids)."""
        flat = q.reshape(-1, q.shape[-1])
        ok, unsure, _, poses = self._sphere_verdict(flat, exact_band)
        if unsure is not None and bool(unsure.any()):
            index = unsure.nonzero()[:, 0]
            ok[index] = self.meshes_clear(flat[index], poses=pose_rows(poses, index))
        return ok.reshape(q.shape[:-1])

    def _sphere_verdict(
        self, q: torch.Tensor, exact_band: float
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, LinkPoses | None]:
        """:meth:`validate`'s verdict on the spheres of ``q [B, D]``: ``ok [B]``, and with a
        band ``unsure [B]`` (fails only by world contact within the band: the meshes decide),
        the smallest world distance ``[B]`` (exact down to ``-exact_band``) and the link
        poses of ``q`` (for the mesh check); ``None`` for those three without a band."""
        state = self.kinematics.forward(q)
        spheres = state.link_spheres
        if self.world_collision.num_voxel_worlds:
            exact_band = 0.0  # the meshes cannot judge a contact with a voxel grid: spheres
        if exact_band <= 0.0:
            return self._valid(q, spheres), None, None, None
        ok, world, own_ok = self._valid(q, spheres, world_range=exact_band)
        poses = (state.link_position, state.link_quaternion)
        return ok, ~ok & own_ok & (world >= -exact_band), world, poses

    def meshes_clear(
        self, q: torch.Tensor, margin: float = 0.0, poses: LinkPoses | None = None
    ) -> torch.Tensor:
        """``[B]`` bool: the collision meshes of ``q [B, D]`` are at least ``margin`` m from
        every obstacle (a pass/fail query: only the pairs whose bounds come within
        ``margin`` are measured, and a row stops at its first failing pair). ``poses``:
        ``(link_position, link_quaternion)`` of ``q`` from :attr:`kinematics`, if at hand."""
        distance = (
            self.mesh_check()
            .distance(q, stop_below=margin, max_distance=margin, poses=poses)
            .distance
        )
        return torch.as_tensor(distance >= margin, device=q.device)

    def _valid(
        self, q: torch.Tensor, spheres: torch.Tensor, world_range: float | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`validate` of ``q [..., D]`` whose spheres ``[..., N, 4]`` are given (on the
        spheres); with ``world_range`` also the smallest world distance ``[...]`` (exact down
        to ``-world_range``) and whether ``q`` is within the limits and free of self-collision
        ``[...]`` (the world alone can then fail it)."""
        world = self._world_verdict(spheres, world_range)
        own_ok = self.in_limits(q)
        if self.self_collision_model is not None:
            own = self.self_collision_model.distance(spheres, max_distance=_CHECK_RANGE)
            own_ok &= own.distance >= 0.0
        ok = own_ok & (world >= 0.0)
        return ok if world_range is None else (ok, world, own_ok)

    def _world_verdict(
        self, spheres: torch.Tensor, world_range: float | None, deep: float | None = None
    ) -> torch.Tensor:
        """``[...]`` smallest world distance (m) of the spheres ``[..., N, 4]`` (link spheres),
        exact down to ``-world_range`` (``None``: to 0) and clamped at ``world_range`` (or
        :data:`_CHECK_RANGE`); deeper values are only bounds. The pass/fail kernel
        (:mod:`curobo_lite.kernels.collision_verdict_kernels`: per link, broad phase, early
        exit) gives the same verdict as the distance kernel at ~1/5 of its cost; a world with
        a voxel grid takes the distance kernel (the verdict kernel sees no grids). ``deep``:
        exact down to this instead (``-inf``: everywhere, no early exit)."""
        reach = _CHECK_RANGE if world_range is None else world_range
        world_spheres = self.kinematics.world_spheres(spheres)
        collision = self.world_collision
        if collision.num_voxel_worlds:
            distance = collision.sphere_distance(world_spheres, max_distance=reach).distance
            return distance.amin(-1)
        if self._verdict_groups is None:
            self._verdict_groups = self.kinematics.sphere_groups.to(torch.int32).contiguous()
        tables = collision.world_tables
        flat = world_spheres.reshape(-1, *world_spheres.shape[-2:])
        if deep is None:  # any deeper: fails either way
            deep = 0.0 if world_range is None else -world_range
        distance = link_world_distance(
            flat, self._verdict_groups, tables, tables.num_active, reach, deep
        )
        return distance.amin(-1).reshape(world_spheres.shape[:-2])

    @torch.no_grad()
    def validate_segments(
        self,
        q_from: torch.Tensor,
        q_to: torch.Tensor,
        resolution: float = 0.02,
        chunk: int = 8192,
        exact_band: float = 0.0,
    ) -> torch.Tensor:
        """``[E]`` bool: the straight joint-space segments ``q_from [E, D] -> q_to [E, D]``
        pass :meth:`validate` at samples no more than ``resolution`` (largest joint step,
        rad) apart, ``q_to`` included and ``q_from`` not (the caller has checked it). All
        segments' samples go through the kernels together, ``chunk`` configurations per call:
        one batched query instead of a Python call per sample or per segment. ``exact_band``:
        as in :meth:`validate`."""
        if q_from.shape != q_to.shape or q_from.ndim != 2:
            raise InputValueError(
                f"q_from, q_to: expected two [E, D] tensors, received {tuple(q_from.shape)} and "
                f"{tuple(q_to.shape)}"
            )
        if not resolution > 0.0:
            raise InputValueError(f"resolution: expected a number > 0, received {resolution!r}")
        E = q_from.shape[0]
        if E == 0:
            return torch.ones(0, dtype=torch.bool, device=q_from.device)
        delta = q_to - q_from
        steps = (delta.abs().amax(-1) / resolution).ceil().clamp(min=1).long()
        edge = torch.repeat_interleave(torch.arange(E, device=q_from.device), steps)
        first = steps.cumsum(0) - steps
        k = torch.arange(edge.shape[0], device=q_from.device) - first[edge] + 1
        t = (k.to(q_from.dtype) / steps[edge].to(q_from.dtype))[:, None]
        samples = q_from[edge] + t * delta[edge]
        verdicts = [self._sphere_verdict(part, exact_band) for part in samples.split(chunk)]
        bad = torch.zeros(E, dtype=torch.int32, device=q_from.device)
        ok = torch.cat([v[0] for v in verdicts])
        if verdicts[0][1] is None:
            bad.index_add_(0, edge, (~ok).to(torch.int32))
            return bad == 0
        unsure = torch.cat([v[1] for v in verdicts])
        world = torch.cat([v[2] for v in verdicts])
        poses = tuple(torch.cat([v[3][i] for v in verdicts]) for i in range(2))
        # the meshes judge the samples the spheres are unsure of, only on the segments that no
        # sample fails for sure, each segment's deepest such sample first: a segment the
        # meshes refuse is mostly refused there, and its other samples need no query
        bad.index_add_(0, edge, (~ok & ~unsure).to(torch.int32))
        for deepest in (True, False):
            index = (unsure & (bad[edge] == 0)).nonzero()[:, 0]
            if deepest and index.numel():
                index = index[torch.argsort(world[index], stable=True)]
                index = index[torch.argsort(edge[index], stable=True)]
                head = torch.ones_like(index, dtype=torch.bool)
                head[1:] = edge[index[1:]] != edge[index[:-1]]
                index = index[head]
            if index.numel():
                clear = self.meshes_clear(samples[index], poses=pose_rows(poses, index))
                unsure[index] = False
                bad.index_add_(0, edge[index], (~clear).to(torch.int32))
        return bad == 0

    @torch.no_grad()
    def validate_trajectory(self, trajectory: Any, swept: bool = True) -> torch.Tensor:
        """``[B]`` bool: every step of ``trajectory [B, H, D]`` (a tensor or a
        :class:`JointState`) passes :meth:`validate`, and with ``swept`` the spheres' motion
        between consecutive steps stays clear of the obstacles too (no tunnelling through a thin
        obstacle on a long step)."""
        q = getattr(trajectory, "position", trajectory)
        if not isinstance(q, torch.Tensor) or q.ndim != 3:
            shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
            raise InputValueError(f"trajectory: expected positions [B, H, D], received {shape}")
        spheres = self.get_link_spheres(q)
        ok = self._valid(q, spheres).all(-1)
        if swept:
            distance = self.world_collision.swept_sphere_distance(
                self.kinematics.world_spheres(spheres), max_distance=_CHECK_RANGE
            )
            ok &= (distance.distance >= 0.0).flatten(1).all(-1)
        return ok

    def offenders(
        self, q: torch.Tensor, top_k: int = 3, kinds: tuple[str, ...] = OFFENDER_KINDS
    ) -> list[Offender]:
        """Why ``q [D]`` (or ``[1, D]``) fails :meth:`validate`, worst first per kind: joints
        outside their limits (value and limit), (link, obstacle) pairs in contact (depth of
        the link's deepest sphere), link pairs in self-contact; up to ``top_k`` of each kind
        of ``kinds`` (``"joint_limit"``, ``"world"``, ``"self"``). Empty when ``q`` is valid.
        One world query per obstacle: for failures, not hot loops (see
        :mod:`curobo_lite.wrap.base.offenders`)."""
        return find_offenders(self, q, top_k, kinds)

    def __repr__(self) -> str:
        return (
            f"RobotWorld(robot={self.robot_config.name!r}, spheres={self.kinematics.num_spheres}, "
            f"obstacles={len(self.world_collision.obstacle_names)}, {self.tensor_args})"
        )


def as_world_config(world: WorldConfig | str | Mapping | None) -> WorldConfig | None:
    """A :class:`WorldConfig` from itself, a cuRobo-layout mapping, a world file or a bundled
    name (``None`` stays ``None``: no obstacles)."""
    return None if world is None else WorldConfig.load(world)


def as_world_collision(
    world: WorldCollision | WorldConfig | str | Mapping | None, tensor_args: TensorDeviceType
) -> WorldCollision:
    """A :class:`WorldCollision` to share: an existing one as is, anything else loaded with
    :func:`as_world_config` onto ``tensor_args``."""
    if isinstance(world, WorldCollision):
        return world
    # the solvers' hot loops must not read values back from the device, and a NaN sphere (from
    # a NaN action) must yield a NaN cost that the rollout flags, not an exception
    return WorldCollision(as_world_config(world), tensor_args, check_finite=False)
