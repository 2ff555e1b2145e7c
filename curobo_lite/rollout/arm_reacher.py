"""ArmReacher: dynamics model + forward kinematics + costs, the rollout every solver calls.

Batching: the rollout holds ``S`` start states (one per problem) and goals for them. A call
``rollout_fn(act_seq [B, H, D])`` with ``B`` a multiple of ``S`` treats the batch as problem-major
(``act_seq.view(S, B // S, H, D)``): trajectory ``b`` starts from state ``b // (B // S)`` and aims
at that problem's goal (or the single goal when only one is given).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.debug import active_session, track
from curobo_lite.geom import SelfCollisionModel, WorldCollision, WorldConfig
from curobo_lite.opt.base import RolloutResult
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout.convergence import (
    COLLISION_CHECK_RANGE,
    ConvergenceMetrics,
    ReachCriteria,
    collision_distances,
    smallest_clearance,
)
from curobo_lite.rollout.cost import (
    BoundCost,
    CostBase,
    CSpaceGoalCost,
    PoseCost,
    PoseCostMetric,
    PrimitiveCollisionCost,
    SelfCollisionCost,
    TrackingCost,
    build_costs,
)
from curobo_lite.rollout.cost.collision_cost import RowPass
from curobo_lite.rollout.dynamics_model import (
    KinematicModel,
    KinematicModelConfig,
    KinematicModelState,
)
from curobo_lite.rollout.fused_rollout import FusedRollout, fused_reason
from curobo_lite.rollout.goal import Goal, owned_goal
from curobo_lite.rollout.graph_buffers import (
    JOINT_FIELDS,
    POSE_FIELDS,
    tensor_addresses,
    write_in_place,
)
from curobo_lite.rollout.overlap import overlapped_terms, worth_sharing
from curobo_lite.rollout.task import TaskConfig
from curobo_lite.types import JointState, TensorDeviceType, check_joint_state
from curobo_lite.types.base import Forwarded
from curobo_lite.types.errors import InputTypeError, InputValueError

# the goal and convergence names stay importable from here, where they lived before
__all__ = [
    "COLLISION_CHECK_RANGE",
    "ArmReacher",
    "ArmReacherConfig",
    "ConvergenceMetrics",
    "Goal",
    "ReachCriteria",
    "smallest_clearance",
]


@dataclass
class ArmReacherConfig:
    """A dynamics-model config plus the ``cost`` section of a task."""

    model: KinematicModelConfig
    cost: dict[str, Any] = field(default_factory=dict)
    task: TaskConfig | None = None

    @classmethod
    def from_task(
        cls,
        task: str | TaskConfig,
        robot: str | RobotConfig,
        tensor_args: TensorDeviceType | None = None,
    ) -> ArmReacherConfig:
        """From a task (bundled name, path or :class:`TaskConfig`) and a robot (bundled name,
        path or :class:`RobotConfig`)."""
        task = TaskConfig.load(task)
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        try:
            model = KinematicModelConfig.from_dict(task.model, robot, tensor_args)
        except (ValueError, TypeError) as err:
            raise task.error(err) from None
        return cls(model=model, cost=task.cost, task=task)


class ArmReacher:
    """Reach an end-effector pose and/or a joint configuration under limits, smoothness and,
    when the robot has collision spheres, without collisions.

    Protocol attributes for the solvers: ``d_action``, ``action_horizon``,
    ``action_bound_lows/highs [D]``, ``tensor_args``, ``rollout_fn``.

    Args:
        config: the dynamics model and cost sections.
        world: obstacles for ``primitive_collision_cost`` and the collision checks: a
            :class:`WorldCollision` (shared as is, so several rollouts see the same world and
            its run-time edits), a :class:`WorldConfig`, a world file or bundled name, or
            ``None`` (no obstacles until :meth:`update_world`).
    """

    #: equal actions give equal costs (MPPI rolls its zero-action copies out once)
    deterministic_rollout = True

    def __init__(
        self, config: ArmReacherConfig, world: WorldCollision | WorldConfig | str | None = None
    ) -> None:
        self.config = config
        self.dynamics_model = KinematicModel(config.model)
        self.tensor_args = self.dynamics_model.tensor_args
        robot = self.dynamics_model.robot_config
        self.robot_config = robot
        try:
            self.costs: dict[str, CostBase] = build_costs(
                config.cost,
                joint_limits=robot.joint_limits,
                tensor_args=self.tensor_args,
                retract_config=robot.retract_config,
                cspace_weights=robot.cspace_weights,
            )
        except (ValueError, TypeError) as err:
            if config.task is not None:
                raise config.task.error(err) from None
            raise
        kinematics = self.dynamics_model.kinematics
        self.has_spheres = kinematics.num_spheres > 0
        self.self_collision_model: SelfCollisionModel | None = None
        if self.has_spheres and kinematics.self_collision_pairs.numel():
            self.self_collision_model = SelfCollisionModel.from_kinematics(kinematics)
        for cost in self.costs.values():
            if isinstance(cost, SelfCollisionCost):
                cost.attach_robot(self.self_collision_model)
        self.world_collision: WorldCollision | None = None
        if world is not None:
            self.attach_world(world)
        self.goal: Goal | None = None
        self.start_state: JointState | None = None
        # the tracking cost's reference [1, H, D] (None: tracking_cost is skipped)
        self.reference: JointState | None = None
        self.cost_terms: dict[str, torch.Tensor] = {}
        self.last_invalid: torch.Tensor | None = None
        self._index_cache: dict[tuple[int, int], torch.Tensor] = {}
        #: CPU rollouts without a gradient share their Warp kernels with a helper thread
        #: (:mod:`~.overlap`): True always, "auto" while it pays, False never (mpc.cpu_overlap)
        self.cpu_overlap: bool | str = False
        #: run once by the next overlapped rollout beside its forward kinematics (MpcSolver)
        self.beside_kinematics: Callable[[], Any] | None = None
        #: rollouts without a gradient take the fused path where it serves them
        #: (:mod:`curobo_lite.rollout.fused_rollout`, :meth:`fused_reason`); False: never
        self.fused_rollout = True
        self._fused = FusedRollout(self.dynamics_model)

    @classmethod
    def from_task(
        cls,
        task: str | TaskConfig,
        robot: str | RobotConfig,
        tensor_args: TensorDeviceType | None = None,
    ) -> ArmReacher:
        return cls(ArmReacherConfig.from_task(task, robot, tensor_args))

    # the world -----------------------------------------------------------------------------------
    def attach_world(self, world: WorldCollision | WorldConfig | str) -> WorldCollision:
        """Use ``world`` for the collision costs and checks; a :class:`WorldCollision` is shared
        as is, anything else is loaded into a new one. Returns the one in use."""
        if not isinstance(world, WorldCollision):
            world = WorldCollision(WorldConfig.load(world), self.tensor_args, check_finite=False)
        if world.tensor_args.device != self.tensor_args.device or (
            world.tensor_args.dtype != self.tensor_args.dtype
        ):
            raise InputTypeError(
                f"world: expected a WorldCollision on {self.tensor_args}, received one on "
                f"{world.tensor_args}"
            )
        self.world_collision = world
        for cost in self.costs.values():
            if isinstance(cost, PrimitiveCollisionCost):
                cost.attach_world(world)
        return world

    def update_world(self, world: WorldConfig | str) -> None:
        """Replace the obstacles (in place: every rollout sharing the world sees the change)."""
        if self.world_collision is None:
            self.attach_world(world)
            return
        self.world_collision.update_world(WorldConfig.load(world))

    # protocol attributes: the dynamics model's -------------------------------------------------
    d_action = Forwarded[int]("dynamics_model")
    action_horizon = Forwarded[int]("dynamics_model")
    action_bound_lows = Forwarded[torch.Tensor]("dynamics_model")
    action_bound_highs = Forwarded[torch.Tensor]("dynamics_model")

    @property
    def n_problems(self) -> int:
        return 0 if self.start_state is None else self.start_state.position.shape[0]

    # problem data ------------------------------------------------------------------------------
    def update_start_state(self, start_state: JointState) -> None:
        """Set the start state(s) ``[S, D]`` (one per problem) without touching the goal.

        A start state of the same shape as the current one is copied into its tensors, so the
        tensors keep their addresses (what a captured CUDA graph of the rollout reads)."""
        start_state = check_joint_state(start_state, "start_state", self.d_action, self.tensor_args)
        if self.goal is not None:
            self._check_goal_batch(self.goal, start_state.position.shape[0])
        if write_in_place(self.start_state, start_state, JOINT_FIELDS):
            self.start_state.joint_names = start_state.joint_names
        else:
            self.start_state = start_state.detach().clone()

    def _check_goal_batch(self, goal: Goal, n_problems: int) -> None:
        for name, batch in (
            ("goal_pose", None if goal.goal_pose is None else goal.goal_pose.batch),
            ("goal_state", None if goal.goal_state is None else goal.goal_state.position.shape[0]),
        ):
            if batch is not None and batch not in (1, n_problems):
                raise InputValueError(
                    f"goal.{name}: expected batch 1 or {n_problems} (one per start state), "
                    f"received {batch}"
                )

    def update_params(self, goal: Goal, start_state: JointState | None = None) -> None:
        """Set the goal (and optionally the start states) for the next rollouts."""
        if not isinstance(goal, Goal):
            raise InputTypeError(f"goal: expected a Goal, received {type(goal).__name__}")
        if goal.goal_pose is not None:
            goal.goal_pose = goal.goal_pose.to(self.tensor_args)
        if goal.goal_state is not None:
            if goal.goal_state.dof != self.d_action:
                raise InputValueError(
                    f"goal.goal_state: expected {self.d_action} dof, received {goal.goal_state.dof}"
                )
            goal.goal_state = goal.goal_state.to(self.tensor_args)
        n_problems = (
            start_state.position.reshape(-1, self.d_action).shape[0]
            if (start_state is not None)
            else self.n_problems
        )
        if n_problems:
            self._check_goal_batch(goal, n_problems)
        self.goal = owned_goal(self.goal, goal)
        if start_state is not None:
            self.update_start_state(start_state)

    def update_pose_cost_metric(self, metric: PoseCostMetric | None) -> None:
        """Reach and hold the pose goal as ``metric`` says (cuRobo's :class:`PoseCostMetric`:
        partial goals, held axes, an approach waypoint) in every pose cost, which the
        convergence checks then judge by; ``None``: the full pose again. Checked before any
        cost changes."""
        if metric is not None and not isinstance(metric, PoseCostMetric):
            raise InputTypeError(
                f"pose_cost_metric: expected a PoseCostMetric or None, received "
                f"{type(metric).__name__}"
            )
        for cost in self.costs.values():
            if isinstance(cost, PoseCost):
                cost.update_metric(metric)
        self._metric = metric

    @property
    def pose_cost_metric(self) -> PoseCostMetric | None:
        """The metric of :meth:`update_pose_cost_metric` (``None``: the full pose)."""
        return getattr(self, "_metric", None)

    def update_reference(self, reference: JointState | None) -> None:
        """Set the joint reference ``[1, H, D]`` that ``tracking_cost`` pulls the trajectories
        towards (one row per step of the horizon), or ``None`` to stop tracking. A reference
        of the same shape as the current one is copied into its tensors (the addresses a
        captured CUDA graph of the rollout reads)."""
        if reference is None:
            self.reference = None
            return
        if not isinstance(reference, JointState):
            raise InputTypeError(
                f"reference: expected a JointState or None, received {type(reference).__name__}"
            )
        shape = (1, self.action_horizon, self.d_action)
        if tuple(reference.position.shape) != shape:
            raise InputValueError(
                f"reference: expected position of shape {list(shape)}, received "
                f"{list(reference.position.shape)}"
            )
        reference = reference.to(self.tensor_args)
        if not write_in_place(self.reference, reference, JOINT_FIELDS):
            self.reference = reference.detach().clone()

    def graph_key(self) -> tuple:
        """What a captured CUDA graph of :meth:`rollout_fn` depends on besides tensor values:
        the addresses and shapes of the start state, the goal and the time steps, the world's
        identity, revision and grid builds, which costs run and with which configuration (a cost's
        ``update_weight`` replaces its configuration; a field assignment increments its
        ``revision``), and whether spheres are needed. Equal keys: a graph captured under one
        replays correctly under the other."""
        world = self.world_collision
        start, goal = self.start_state, self.goal
        return (
            None if world is None else (id(world), world.revision, world.grid_builds),
            self.needs_spheres(),
            active_session() is not None,
            tensor_addresses(start, JOINT_FIELDS),
            None if goal is None else tensor_addresses(goal.goal_pose, POSE_FIELDS),
            None if goal is None else tensor_addresses(goal.goal_state, JOINT_FIELDS),
            tensor_addresses(self.dynamics_model, ("traj_dt",)),
            tensor_addresses(self.reference, JOINT_FIELDS),
            tuple(
                (name, id(cost), id(cost.config), cost.config.revision, cost.enabled)
                for name, cost in self.costs.items()
            ),
            tuple(c.metric_revision for c in self.costs.values() if isinstance(c, PoseCost)),
        )

    def _problem_index(self, batch: int) -> torch.Tensor:
        """``[B]`` problem of each trajectory (problem-major batches)."""
        n_problems = self.n_problems
        key = (batch, n_problems)
        index = self._index_cache.get(key)
        if index is None:
            if batch % n_problems != 0:
                raise InputValueError(
                    f"act_seq: expected a batch that is a multiple of the {n_problems} start "
                    f"states, received {batch}"
                )
            index = torch.arange(batch, device=self.tensor_args.device) // (batch // n_problems)
            self._index_cache[key] = index
        return index

    def _goal_index(self, goal_batch: int, problem_index: torch.Tensor) -> torch.Tensor | None:
        return None if goal_batch == 1 else problem_index

    # rollouts ----------------------------------------------------------------------------------
    def rollout_fn(self, act_seq: torch.Tensor) -> RolloutResult:
        """Evaluate ``act_seq [B, H, D]``.

        Returns:
            :class:`RolloutResult` with ``costs [B, H]`` (sum of the enabled terms),
            ``total [B]`` and ``state`` (:class:`KinematicModelState`). A trajectory whose cost
            is not finite (e.g. a NaN in its actions) gets ``total = inf`` and is flagged in
            ``last_invalid [B]``; the model's buffers are fully rewritten on every call, so it
            does not leak into later calls.
        """
        if self.start_state is None or self.goal is None:
            raise InputValueError("rollout_fn: call update_params(goal, start_state) first")
        problem_index = self._problem_index(act_seq.shape[0])
        costs = None
        if self.fused_rollout and self.fused_reason() is None:
            self.dynamics_model._check_rollout_inputs(self.start_state, act_seq)
            state, terms, costs = self._fused.rollout(
                act_seq,
                self.start_state,
                problem_index,
                self.goal,
                self.reference,
                self.costs,
                share=self._overlaps(act_seq),
                beside=self.beside_kinematics,
            )
            self.beside_kinematics = None
        elif self._overlaps(act_seq):
            state_seq = self.dynamics_model.get_state_from_action(
                self.start_state, act_seq, problem_index
            )
            state, terms = overlapped_terms(
                self.dynamics_model,
                state_seq,
                self.needs_spheres(rollout=True),
                self.costs,
                lambda state, names: self._cost_terms(state, problem_index, names),
                self._frames_pass,
                self.beside_kinematics,
            )
            self.beside_kinematics = None
        else:
            spheres = self.needs_spheres(rollout=True)
            state = self.dynamics_model.forward(
                self.start_state, act_seq, problem_index, spheres=spheres
            )
            terms = self._cost_terms(state, problem_index)
        if costs is None:
            costs = (
                torch.stack(list(terms.values())).sum(0)
                if terms
                else act_seq.new_zeros(act_seq.shape[:2])
            )
        total = costs.sum(-1)
        invalid = ~torch.isfinite(total)
        total = total.masked_fill(invalid, float("inf"))
        self.cost_terms = terms
        self.last_invalid = invalid
        return RolloutResult(costs=costs, total=total, state=state)

    @torch.no_grad()
    def rollout_state(self, act_seq: torch.Tensor) -> KinematicModelState:
        """The states of ``act_seq [B, H, D]`` (with collision spheres when the robot has
        them) without the costs: for checks such as :meth:`convergence`."""
        if self.start_state is None:
            raise InputValueError("rollout_state: call update_params(goal, start_state) first")
        problem_index = self._problem_index(act_seq.shape[0])
        return self.dynamics_model.forward(
            self.start_state, act_seq, problem_index, spheres=self.has_spheres
        )

    def needs_spheres(self, rollout: bool = False) -> bool:
        """Whether an enabled cost reads the collision spheres (world costs only while an
        obstacle is enabled): otherwise forward kinematics skips them. ``rollout``: for a
        :meth:`rollout_fn` call now, where a world cost that reads the link frames instead
        (no gradient, :meth:`PrimitiveCollisionCost.reads_frames`) needs none."""
        if not self.has_spheres:
            return False
        for cost in self.costs.values():
            if not cost.enabled:
                continue
            if isinstance(cost, SelfCollisionCost) and cost.model is not None:
                return True
            if isinstance(cost, PrimitiveCollisionCost):
                world = cost.world_collision
                if world is not None and world.num_enabled:
                    if not (rollout and self._frames_serve(cost)):
                        return True
        return False

    def _frames_pass(self, cost: CostBase, state: KinematicModelState) -> RowPass | None:
        """The world cost read from ``state``'s link frames in parts threads can share
        (:meth:`PrimitiveCollisionCost.frames_pass`), or ``None`` for any other cost."""
        if isinstance(cost, PrimitiveCollisionCost) and self._frames_serve(cost):
            return cost.frames_pass(state.kinematics, self.dynamics_model.kinematics)
        return None

    def _frames_serve(self, cost: PrimitiveCollisionCost) -> bool:
        """Whether ``cost`` reads the link frames instead of the spheres this call (no
        gradient, no scale tracking: :meth:`PrimitiveCollisionCost.reads_frames`)."""
        return active_session() is None and cost.reads_frames(self.dynamics_model.kinematics)

    def fused_reason(self) -> str | None:
        """Why :meth:`rollout_fn` would not take the fused path now (``None``: it would, when
        :attr:`fused_rollout` is on): :func:`~curobo_lite.rollout.fused_rollout.fused_reason`."""
        return fused_reason(
            self.dynamics_model, self.costs, torch.is_grad_enabled(), active_session() is not None
        )

    def _overlaps(self, act_seq: torch.Tensor) -> bool:
        """Whether :meth:`rollout_fn` overlaps (:mod:`curobo_lite.rollout.overlap`): on a CPU,
        no gradient, no scale tracking, a helper that pays (``overlap.worth_sharing``)."""
        return (
            self.cpu_overlap
            and self.tensor_args.device.type == "cpu"
            and not torch.is_grad_enabled()
            and active_session() is None
            and worth_sharing(act_seq.shape[0] * act_seq.shape[1], self.cpu_overlap == "auto")
        )

    def _cost_terms(
        self,
        state: KinematicModelState,
        problem_index: torch.Tensor,
        names: Collection[str] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Every enabled cost term ``[B, H]`` (of the costs ``names`` only, when given).

        Under :func:`curobo_lite.debug.track_scales`, each term's output is tracked as ``name``
        (its forward scale) and the inputs it reads as ``name.<input>`` (the backward record of
        those is the gradient flowing through that term alone: which term pulls hardest).
        """
        terms: dict[str, torch.Tensor] = {}
        goal = self.goal
        tracking = active_session() is not None
        for name, cost in self.costs.items():
            if not cost.enabled or (names is not None and name not in names):
                continue
            if isinstance(cost, PoseCost):
                if goal.goal_pose is None:
                    continue
                ee_position, ee_quaternion = state.ee_position, state.ee_quaternion
                if tracking:
                    ee_position = track(f"{name}.ee_position", ee_position)
                    ee_quaternion = track(f"{name}.ee_quaternion", ee_quaternion)
                value = cost.forward(
                    ee_position,
                    ee_quaternion,
                    goal.goal_pose,
                    self._goal_index(goal.goal_pose.batch, problem_index),
                    fused=not tracking,  # one kernel when no gradient is taken
                )
            elif isinstance(cost, PrimitiveCollisionCost) and self._frames_serve(cost):
                value = cost.forward_frames(state.kinematics, self.dynamics_model.kinematics)
            elif isinstance(cost, (PrimitiveCollisionCost, SelfCollisionCost)):
                spheres = state.kinematics.link_spheres
                if spheres is None:
                    continue
                if isinstance(cost, PrimitiveCollisionCost):
                    spheres = self.dynamics_model.kinematics.world_spheres(spheres)
                if tracking:
                    spheres = track(f"{name}.link_spheres", spheres)
                value = cost.forward(spheres)
            elif isinstance(cost, CSpaceGoalCost) and goal.goal_state is None:
                continue
            elif isinstance(cost, TrackingCost) and self.reference is None:
                continue
            else:
                joint_state = state.state_seq
                if tracking:
                    joint_state = JointState(
                        *(
                            track(f"{name}.{field}", getattr(joint_state, field))
                            for field in ("position", "velocity", "acceleration", "jerk")
                        ),
                        joint_names=joint_state.joint_names,
                    )
                if isinstance(cost, TrackingCost):
                    value = cost.forward(joint_state, self.reference)
                elif isinstance(cost, CSpaceGoalCost):
                    value = cost.forward(
                        joint_state,
                        goal.goal_state.position,
                        self._goal_index(goal.goal_state.position.shape[0], problem_index),
                    )
                else:
                    value = cost.forward(joint_state)
            terms[name] = track(name, value) if tracking else value
        return terms

    @torch.no_grad()
    def convergence(
        self,
        state: KinematicModelState,
        swept: bool = False,
        check_range: float = COLLISION_CHECK_RANGE,
    ) -> ConvergenceMetrics:
        """Errors at the last step, limit violations and clearances of a rolled-out batch
        (``swept``: the world clearance of the segments between steps, not only the steps;
        ``check_range``: clearances beyond it read as at least it, see
        :meth:`collision_distances`)."""
        batch = state.state_seq.position.shape[0]
        problem_index = self._problem_index(batch)
        position_error = rotation_error = cspace_error = None
        goal = self.goal
        if goal is not None and goal.goal_pose is not None:
            pose_cost = next((c for c in self.costs.values() if isinstance(c, PoseCost)), None)
            if pose_cost is None:
                pose_cost = PoseCost.from_dict({}, self.tensor_args)
            position_error, rotation_error = pose_cost.errors(
                state.ee_position,
                state.ee_quaternion,
                goal.goal_pose,
                self._goal_index(goal.goal_pose.batch, problem_index),
            )
        if goal is not None and goal.goal_state is not None:
            target = goal.goal_state.position
            target = target[problem_index] if target.shape[0] > 1 else target.expand(batch, -1)
            cspace_error = (state.state_seq.position[:, -1] - target).norm(dim=-1)
        bound_cost = next((c for c in self.costs.values() if isinstance(c, BoundCost)), None)
        if bound_cost is None:
            bound_cost = BoundCost.from_dict(
                {}, self.tensor_args, joint_limits=self.robot_config.joint_limits
            )
        violation = bound_cost.violation(state.state_seq)
        spheres = state.kinematics.link_spheres
        if spheres is None and self.has_spheres:
            spheres = self.dynamics_model.kinematics.forward(state.state_seq.position).link_spheres
        world_distance, self_distance = self.collision_distances(spheres, swept, check_range)
        return ConvergenceMetrics(
            position_error, rotation_error, cspace_error, violation, world_distance, self_distance
        )

    @torch.no_grad()
    def collision_distances(
        self,
        link_spheres: torch.Tensor | None,
        swept: bool = False,
        check_range: float = COLLISION_CHECK_RANGE,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """``(world_distance [B], self_distance [B])``: the smallest signed distances along
        trajectories of spheres ``[B, H, N, 4]`` (``None`` where there is nothing to check).
        ``swept`` checks the segments between consecutive steps against the world too.
        Distances are exact up to ``check_range`` (metres) and at least ``check_range``
        beyond it: a stop check that only asks "at least 5 mm clear" passes a small range
        and skips every far sphere and link pair."""
        return collision_distances(
            self.dynamics_model.kinematics,
            self.world_collision,
            self.self_collision_model,
            link_spheres,
            swept,
            check_range,
        )

    def __repr__(self) -> str:
        enabled = [name for name, c in self.costs.items() if c.enabled]
        return (
            f"ArmReacher(robot={self.robot_config.name!r}, model={self.dynamics_model!r}, "
            f"costs={enabled}, n_problems={self.n_problems})"
        )
