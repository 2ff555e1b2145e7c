"""Model-predictive control: batched MPPI over the ArmReacher rollout, warm-started by shifting.

Each :meth:`MpcSolver.step` sets the measured state as the rollout's start, shifts the MPPI mean by
the steps consumed since the last call (``mpc.shift_steps``), runs ``mppi.n_iters`` iterations
and returns the state ``shift_steps`` ahead along the optimized plan as the command. The
command is made to respect the position, velocity and acceleration limits (see
:meth:`MpcSolver.enforce_limits`).

Task ``mpc:`` section (unknown keys are an error):

- ``shift_steps`` (int >= 1, default 1): plan steps consumed per control step.
- ``control_dt`` (s > 0, default: the model's first step): period between control steps; must
  equal the plan's ``traj_dt`` over the consumed steps.
- ``limit_tolerance`` (rad or m >= 0, default 0.05): how far the measured state may pass the
  position limits (an overshoot the controller brings back) before :meth:`MpcSolver.step`
  rejects it with an error naming the joint, its value and its limits.
- ``clamp_to_limits`` (bool, default false): clamp a measured state outside the limits into
  them instead of rejecting it.
- ``follow_activation_distance`` (m >= 0, default: unchanged): the world collision cost's
  ``activation_distance`` while a checked plan is followed (:meth:`MpcSolver.follow`): the
  task's margin holds the arm short of a goal that close to an obstacle (inside a shelf).
- ``cpu_overlap`` (true, false or ``auto``, default ``auto``): on a CPU device, each rollout
  shares its Warp kernels (forward kinematics, the world-collision cost) with a helper thread
  while the calling thread does the rest (:mod:`curobo_lite.rollout.overlap`; the same
  results); ``auto`` only while the helper runs beside it (a core the host's other work
  leaves free: the threads would otherwise take turns on one core).
- ``fused_rollout`` (bool, default true): sampled rollouts on a CPU in a few Warp launches
  (:mod:`curobo_lite.rollout.fused_rollout`; the same costs) where the task allows it.
- ``cpu_torch_threads`` (int >= 1 or null, default 1): on a CPU device, torch's intra-op
  threads during :meth:`MpcSolver.step`, restored after it (``null``: torch's setting). At MPC's
  sizes torch's parallel ops gain little and leave their threads spinning on the other cores
  for a while after each op, in the way of the helper thread of ``cpu_overlap``.
- ``use_cuda_graph`` (bool, default false): on a CUDA device, capture the plan update (shift,
  MPPI iterations, the command's integration) once and replay it every step
  (:class:`~curobo_lite.opt.cuda_graph.GraphedCall`); a new goal, :meth:`MpcSolver.update_world`,
  :meth:`MpcSolver.reset` or an edit of the world captures again. No effect on a CPU device (a
  warning says so); not with ``HALTON`` sampling, ``store_rollouts`` or a ``process_group``
  (those run eagerly).

Following a plan: :meth:`MpcSolver.follow` makes the particles track a time-indexed joint
reference (e.g. a :class:`~curobo_lite.wrap.MotionGen` result's ``interpolated_plan``) with the
task's ``tracking_cost`` (:class:`~curobo_lite.rollout.cost.TrackingCost`), on top of the pose
goal and the collision costs: each step samples the plan at its horizon's times into one
reference ``[1, H, D]`` written in place (what a captured CUDA graph reads): no recapture.

Obstacles: ``MpcSolver.from_config(world=...)`` and :meth:`MpcSolver.update_world`; obstacles can
also be moved, added or switched off between steps through :attr:`MpcSolver.world_collision`
(no rebuild). The task's ``primitive_collision_cost`` and ``self_collision_cost`` keep the
particles clear of them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import torch

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.kernels import command_kernels
from curobo_lite.kernels.launch import launch_key, replayed
from curobo_lite.opt import Mppi, MppiConfig, OptResult
from curobo_lite.opt.cuda_graph import GraphedCall
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout import ArmReacher, ArmReacherConfig, Goal, TaskConfig
from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.rollout.graph_buffers import JOINT_FIELDS, write_in_place
from curobo_lite.types import (
    JointState,
    Pose,
    TensorDeviceType,
    check_joint_state,
    check_pose,
)
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.attach import HoldsObjects
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.base.offenders import check_within_limits
from curobo_lite.wrap.base.pose_metric import check_pose_metric
from curobo_lite.wrap.base.robot_world import as_world_collision
from curobo_lite.wrap.mpc.config import MpcResult, MpcSolverConfig
from curobo_lite.wrap.mpc.margin import CollisionMargin, plan_margins
from curobo_lite.wrap.mpc.measured import MeasuredMetrics, step_metrics
from curobo_lite.wrap.mpc.tracking import TrackedPlan


class MpcSolver(HoldsObjects):
    """Reactive reaching with MPPI. Build with :meth:`from_config`.

    Args:
        config: :class:`MpcSolverConfig`.
        rollout: the :class:`ArmReacher` the particles are rolled out with.
        mppi_config: :class:`MppiConfig` (``n_problems`` is 1).
        process_group: optional ``torch.distributed`` group to shard the particles over (every
            rank computes the same command).
    """

    def __init__(
        self,
        config: MpcSolverConfig,
        rollout: ArmReacher,
        mppi_config: MppiConfig,
        process_group: Any = None,
    ) -> None:
        if mppi_config.n_problems != 1:
            raise InputValueError(
                f"mppi.n_problems: MpcSolver controls one robot, expected 1, received "
                f"{mppi_config.n_problems}"
            )
        self.config = config
        self.rollout = rollout
        self.tensor_args = rollout.tensor_args
        self.robot_config: RobotConfig = rollout.robot_config
        self.kinematics = Kinematics(self.robot_config, self.tensor_args)
        self.dynamics_model = rollout.dynamics_model
        horizon = self.dynamics_model.horizon
        if not config.shift_steps < horizon:
            raise InputValueError(
                f"mpc.shift_steps: expected fewer than the horizon {horizon}, received "
                f"{config.shift_steps}"
            )
        plan_dt = float(self.dynamics_model.traj_dt[1 : config.shift_steps + 1].sum())
        control_dt = config.control_dt if config.control_dt is not None else plan_dt
        if abs(control_dt - plan_dt) > 1e-6 * max(1.0, plan_dt):
            raise InputValueError(
                f"mpc.control_dt: expected the plan's time over shift_steps ({plan_dt:g} s), "
                f"received {control_dt:g}"
            )
        self.control_dt = control_dt
        self.mppi = Mppi(mppi_config, rollout, process_group=process_group)
        rollout.cpu_overlap, rollout.fused_rollout = config.cpu_overlap, config.fused_rollout
        self.mppi.update_init_mean(self.dynamics_model.init_action_mean)
        limits = self.robot_config.joint_limits
        self._position_limits = limits.position
        self._velocity_limits = limits.velocity * self.dynamics_model.config.vel_scale
        self._acceleration_limits = limits.acceleration * self.dynamics_model.config.vel_scale
        # (position, velocity, acceleration) x (low, high) [3, 2, D]: the command kernel's
        # limits; [3, 1, D] each for limit_violation
        bounds = torch.stack(
            (self._position_limits, self._velocity_limits, self._acceleration_limits)
        ).contiguous()
        self._bounds = bounds
        self._limit_lows, self._limit_highs = bounds[:, 0, None], bounds[:, 1, None]
        # the command written each step (state [1, D] x 4) and its (clamped, violation) [1, 2]
        D = self.dynamics_model.d_action
        self._command_out = tuple(self.tensor_args.zeros(1, D) for _ in range(4))
        self._command_flags = self.tensor_args.zeros(1, 2)
        mode = self.dynamics_model.step_mode.value
        self._command_mode = mode if command_kernels.integrates(mode) else None
        self._measured = MeasuredMetrics(rollout, self.kinematics)
        self._command_replays: dict[tuple, Any] = {}  # recorded command launches (CPU)
        self.goal: Goal | None = None
        self._tracked: TrackedPlan | None = None
        # the world collision cost's margin and weight (made at the first follow)
        self._margin: CollisionMargin | None = None
        # the change of the followed plan's accelerations in the MPPI mean, written each step
        self._feedforward: torch.Tensor | None = None
        self._steps = 0
        # counts what a captured plan update cannot see: goals, worlds, resets
        self._plan_revision = 0
        capturable = (
            mppi_config.sample_mode != "HALTON"
            and not mppi_config.store_rollouts
            and process_group is None
        )
        self._graphed_plan = GraphedCall(
            self._plan_and_command,
            self.tensor_args.device,
            enabled=config.use_cuda_graph and capturable,
            generators=(self.mppi._gen,),
        )

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        task: str | TaskConfig = "particle_mpc",
        tensor_args: TensorDeviceType | None = None,
        process_group: Any = None,
        world: WorldCollision | WorldConfig | str | Mapping | None = None,
        **mppi_overrides: Any,
    ) -> MpcSolver:
        """Build from a robot (bundled name, path or :class:`RobotConfig`) and a task (bundled
        name, path or :class:`TaskConfig`); ``world`` gives the obstacles (a
        :class:`WorldConfig`, a world file or a bundled name; ``None``: none until
        :meth:`update_world`); ``mppi_overrides`` replace keys of the task's ``mppi`` section
        (e.g. ``num_particles=200, seed=3``)."""
        task = TaskConfig.load(task)
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        mppi_dict = dict(task.mppi or {})
        mppi_dict.update(mppi_overrides)
        try:
            mppi_config = MppiConfig.from_dict(mppi_dict)
            config = MpcSolverConfig.from_dict(task.mpc)
        except (TypeError, ValueError) as err:
            raise task.error(err) from None
        reacher_config = ArmReacherConfig.from_task(
            replace(task, mppi=mppi_dict), robot, tensor_args
        )
        world_collision = as_world_collision(world, reacher_config.model.tensor_args)
        rollout = ArmReacher(reacher_config, world_collision)
        try:
            return cls(config, rollout, mppi_config, process_group)
        except ValueError as err:
            raise task.error(err) from None

    # --- world -----------------------------------------------------------------------------------

    @property
    def world_collision(self) -> WorldCollision | None:
        """The obstacles the particles avoid; edit in place between steps (``add_obstacle``,
        ``remove_obstacle``, ``update_obstacle_pose``, ``enable_obstacle``)."""
        return self.rollout.world_collision

    @exclusive
    def update_world(self, world: WorldConfig | str) -> None:
        """Replace the obstacles; the plan keeps its warm start."""
        self.rollout.update_world(world)
        self._plan_revision += 1

    # --- goals and state -------------------------------------------------------------------------
    @exclusive
    def update_goal(
        self, goal: Pose | JointState, pose_cost_metric: PoseCostMetric | None = None
    ) -> None:
        """Aim at an end-effector pose (batch 1) or a joint configuration ``[1, D]``; the plan
        keeps its warm start. ``pose_cost_metric``: also :meth:`update_pose_cost_metric`
        (``None``: the current metric stays)."""
        check_pose_metric(pose_cost_metric)
        if isinstance(goal, Pose):
            new_goal = Goal(goal_pose=check_pose(goal, "goal", self.tensor_args, batch=1))
        elif isinstance(goal, JointState):
            new_goal = Goal(goal_state=goal.to(self.tensor_args))
        else:
            raise InputTypeError(
                f"goal: expected a Pose or a JointState, received {type(goal).__name__}"
            )
        self._set_goal(new_goal)
        self._stop_following()
        if pose_cost_metric is not None:
            self.update_pose_cost_metric(pose_cost_metric)

    @exclusive
    def update_pose_cost_metric(self, metric: PoseCostMetric | None) -> None:
        """Partial and constrained pose goals (cuRobo's name): reach the goal along the axes of
        ``metric.reach_vec_weight`` (``pose_error`` and the step's metrics judge only those),
        and hold ``metric.hold_vec_weight``'s axes at the goal's values at every step of the
        horizon (a cost added to the running pose cost: keep a cup upright on the way). It
        stays until the next update; ``None`` or :meth:`PoseCostMetric.reset_metric`: the full
        pose again. A bad metric raises before anything changes."""
        self.rollout.update_pose_cost_metric(check_pose_metric(metric))
        self._plan_revision += 1

    def _set_goal(self, goal: Goal) -> None:
        self.rollout.update_params(goal)
        # the rollout's own copy: the metrics read the tensors the captured plan reads
        self.goal = self.rollout.goal
        self._plan_revision += 1

    @exclusive
    def follow(
        self,
        plan: JointState | None,
        dt: float | None = None,
        goal: Pose | None = None,
        speed: float = 1.0,
        checked: bool = True,
    ) -> None:
        """Track ``plan`` (``[T, D]`` states ``dt`` seconds apart, e.g. a
        :class:`~curobo_lite.wrap.MotionGen` result's ``interpolated_plan`` and
        ``interpolation_dt``) from the next step on: the plan's time starts at 0 there and
        advances by ``control_dt`` per step; past the end the plan holds its last state.
        ``goal``: the end-effector goal kept with it (default: the plan's last state's pose by
        forward kinematics). ``speed`` (0 < speed <= 1) slows the plan down: a time-optimal plan
        runs at its joints' limits, where the task's ``bound_cost`` already pushes back, so
        the MPC lags it at full speed. ``checked``: the plan was checked against the world, so
        the world collision margin is ``mpc.follow_activation_distance``, capped at the plan's
        own smallest sphere clearance (the world collision and tracking weights scaled up as it
        narrows: :mod:`~curobo_lite.wrap.mpc.margin`); ``False`` keeps the task's (e.g. a
        "hold here" plan while a replan is pending). The position-bound margin leaves the
        plan's joint span free (a plan may end at a joint limit). ``plan=None`` stops
        following (the goal stays). The collision costs stay on; the task needs a
        ``tracking_cost`` section.
        :meth:`update_goal` alone drops a followed plan. Velocities all zero on a moving plan:
        finite differences. Off the plan its clock slows, the margin widens (TrackedPlan)."""
        if plan is None:
            self._stop_following()
            return
        if self.rollout.costs.get("tracking_cost") is None:
            raise InputValueError(
                "follow: the task has no tracking_cost section (configs/task/particle_mpc.yml "
                "has one)"
            )
        model = self.dynamics_model
        tracked = TrackedPlan.from_plan(
            plan, dt, model.d_action, self.tensor_args, model.traj_dt, speed
        )
        check_within_limits(self, tracked.position, "plan.position", self.config.limit_tolerance)
        if goal is None:
            fk = self.kinematics.forward(tracked.position[-1:], spheres=False)
            goal = Pose(fk.ee_position.clone(), fk.ee_quaternion.clone())
        goal = check_pose(goal, "goal", self.tensor_args, batch=1)
        self._set_goal(Goal(goal_pose=goal))
        self._tracked = tracked
        self._collision_margin(tracked if checked else None)
        self._free_plan_span(tracked.position)

    def _stop_following(self) -> None:
        if self._tracked is not None:
            self._tracked = None
            self.rollout.update_reference(None)
            self._collision_margin(None)
            self._free_plan_span(None)
            self._plan_revision += 1

    def _free_plan_span(self, position: torch.Tensor | None) -> None:
        """The bound cost's margin leaves the followed plan's joint span ``position [T, D]``
        free (``None``: the task's margin): a plan within the limits that ends in the margin
        (a grasp at a joint limit) is tracked to its end, not held back by the margin."""
        cost = self.rollout.costs.get("bound_cost")
        if cost is None:
            return
        span = None if position is None else torch.stack(position.aminmax(dim=0))
        cost.config.free_position = span

    def _collision_margin(self, tracked: TrackedPlan | None) -> None:
        """The world collision cost's activation distance: the task's (``tracked=None``), or
        while the checked plan ``tracked`` is followed, ``follow_activation_distance`` but no
        more than the plan's own smallest sphere clearance over the horizon ahead (its
        ``margins``, set here, read each step): the plan pays nothing where it passes close (a
        grasp a few mm from its object is tracked to its end, not held back by the margin),
        and the margin is back where the plan is clear."""
        margin = self.config.follow_activation_distance
        cost = self.rollout.costs.get("primitive_collision_cost")
        if margin is None or cost is None:
            return
        if self._margin is None:
            self._margin = CollisionMargin(cost, self.rollout.costs.get("tracking_cost"))
        if tracked is not None:
            tracked.margins = plan_margins(self.rollout, tracked, margin)
            tracked.off_plan_margin = margin
        self._margin.set(None if tracked is None else tracked.margin())

    @property
    def following(self) -> TrackedPlan | None:
        """The followed plan (its samples, ``dt`` and the current plan time), or ``None``."""
        return self._tracked

    @exclusive
    def reset(self) -> None:
        """Forget the warm start (the next step starts from the neutral plan) and the filter."""
        self.mppi.reset()
        self.dynamics_model.state_filter.reset()
        if self.rollout.reference is not None:  # the mean lost the plan's accelerations
            self.rollout.reference.acceleration.zero_()
        self._steps = 0
        self._plan_revision += 1

    def _check_state(self, current_state: Any) -> JointState:
        state = check_joint_state(
            current_state,
            "current_state",
            self.dynamics_model.d_action,
            self.tensor_args,
            batch=1,
            exact_batch=True,
        )
        if self.config.clamp_to_limits:
            low, high = self.robot_config.joint_limits.position.to(state.position)
            position = torch.maximum(torch.minimum(state.position, high), low)
            return JointState(position, state.velocity, state.acceleration, state.jerk)
        check_within_limits(
            self,
            state.position,
            "current_state.position",
            self.config.limit_tolerance,
            hint=" (mpc.clamp_to_limits: true clamps it instead)",
        )
        return state

    # --- control ---------------------------------------------------------------------------------
    @exclusive
    @torch.no_grad()
    def step(self, current_state: JointState) -> MpcResult:
        """One control step from the measured ``current_state [1, D]``."""
        t_start = time.perf_counter()
        threads = self.config.cpu_torch_threads
        if threads is None or self.tensor_args.device.type != "cpu":
            return self._step(current_state, t_start)
        restore = torch.get_num_threads()
        if threads != restore:
            torch.set_num_threads(threads)
        try:
            return self._step(current_state, t_start)
        finally:
            if threads != restore:
                torch.set_num_threads(restore)

    def _step(self, current_state: JointState, t_start: float) -> MpcResult:
        state = self._check_state(current_state)
        if self.goal is None:
            raise InputValueError("step: call update_goal(...) first")
        state = self.dynamics_model.filter_robot_state(state)
        # checked above: copied into the rollout's start state without a second check
        if write_in_place(self.rollout.start_state, state, JOINT_FIELDS):
            self.rollout.start_state.joint_names = state.joint_names
        else:
            self.rollout.update_start_state(state)
        tracked = self._tracked
        if tracked is not None:  # the plan at this step's times, in place; the margin here
            tracked.observe(state.position)  # (widened, the clock slowed, off the plan)
            if tracked.margins is not None:
                self._margin.set(tracked.margin())
            shift = self.config.shift_steps if self._steps > 0 else 0
            delta = tracked.write(self.rollout, shift, self.mppi.config.base_action == "REPEAT")
            if self._feedforward is None or self._feedforward.shape != delta.shape:
                self._feedforward = delta
                self._plan_revision += 1
            else:
                self._feedforward.copy_(delta)
        if self._steps == 0:
            result, command, names, values = self._plan_and_command(shift=False)
        elif self._graphed_plan.enabled:
            result, command, names, values = self._graphed_plan(self._plan_key())
        else:  # eager: no capture to key (the key costs ~0.1 ms on a CPU)
            result, command, names, values = self._plan_and_command()
        self._steps += 1
        if tracked is not None:
            tracked.advance(self.control_dt)
        # a replayed graph rewrites its outputs on the next step: copy what the result keeps
        numbers = dict(zip(names, values.tolist()))
        metrics = {
            "position_error": numbers.pop("position_error", float("nan")),
            "rotation_error": numbers.pop("rotation_error", float("nan")),
            **numbers,
        }
        return MpcResult(
            command.clone(), time.perf_counter() - t_start, metrics, result.action.clone()
        )

    def _plan_and_command(
        self, shift: bool = True
    ) -> tuple[OptResult, JointState, list[str], torch.Tensor]:
        """The plan update (the MPPI mean shifted, then optimized), the command ``shift_steps``
        ahead along it from the start state within the limits, and the step's metrics (names,
        values): what ``use_cuda_graph`` captures for every step after the first. It reads the
        measured state from the rollout's start state, which each step writes in place."""
        if shift:
            self.mppi.shift(self.config.shift_steps)
        if self._tracked is not None:
            self.mppi.mean_action.add_(self._feedforward)
        state = self.rollout.start_state
        # the measured state's metrics do not depend on the plan: an overlapped CPU rollout
        # computes them while its helper thread runs forward kinematics (else they follow)
        measured: list[tuple[list[str], list[torch.Tensor]]] = []
        metrics = self._measured.state_metrics
        self.rollout.beside_kinematics = lambda: measured.append(metrics(self.goal, state))
        try:
            result = self.mppi.optimize()
        finally:
            self.rollout.beside_kinematics = None
        if not measured:
            measured.append(metrics(self.goal, state))
        command, flags = self._command(state, self.mppi.mean_action)
        names, values = step_metrics(measured[0], result.best_cost, flags)
        return result, command, names, values

    def _command(self, state: JointState, action: torch.Tensor) -> tuple[JointState, torch.Tensor]:
        """The command ``shift_steps`` ahead along the plan ``action [1, H, D]`` from ``state
        [1, D]``, within the limits (:meth:`enforce_limits`), into the solver's command buffers,
        and its ``[2]`` (clamped 0/1, limit violation): one kernel launch
        (:mod:`curobo_lite.kernels.command_kernels`); the step modes that read more than one
        action (POSITION central difference, teleport) integrate the plan first."""
        model = self.dynamics_model
        start = (state.position, state.velocity, state.acceleration)
        out, flags = self._command_out, self._command_flags
        if self._command_mode is not None:  # the same tensors every step: a recorded launch
            steps, dt = self.config.shift_steps, self.control_dt
            tensors = (*start, action, model.traj_dt, self._bounds, *out, flags)
            replayed(
                self._command_replays,
                (launch_key(*tensors), self._command_mode, steps, dt),
                lambda: command_kernels.integrated_command(
                    self._command_mode, start, action, model.traj_dt, steps, self._bounds, dt,
                    out, flags,
                ),
                action.device,
            )  # fmt: skip
        else:
            plan = model.get_robot_command(state, action, self.config.shift_steps)
            given = (plan.position, plan.velocity, plan.acceleration, plan.jerk)
            command_kernels.limited_command(start, given, self._bounds, self.control_dt, out, flags)
        return JointState(*out, joint_names=self.robot_config.joint_names), flags[0]

    def _plan_key(self) -> tuple:
        """The host-side values the plan update depends on (a change captures again): the
        solver's own revision (goals, worlds, resets) and the rollout's ``graph_key()``."""
        return (self._plan_revision, self.rollout.graph_key())

    def enforce_limits(self, state: JointState, command: JointState) -> tuple[JointState, bool]:
        """Make ``command [1, D]`` respect the acceleration, velocity and position limits,
        consistently with one control step of ``dt = control_dt`` from ``state [1, D]``
        (semi-implicit Euler: ``v = v0 + a dt``, ``x = x0 + v dt``).

        Only the acceleration is chosen; velocity and position follow from it. Per joint it is
        clamped into ``[a_low, a_high]`` intersected with the accelerations whose resulting
        velocity lies within the velocity limits *and* lets the joint stop before its position
        limit when braking at the acceleration limit afterwards: ``x0 + v dt + v^2 / (2 A) <=
        x_high`` with ``A = -a_low`` (and the mirror image at ``x_low`` with ``A = a_high``),
        i.e. ``v <= A (sqrt(dt^2 + 2 (x_high - x0) / A) - dt)``. Braking at the limit keeps
        that condition true, so from a state within the limits that satisfies it (e.g. at rest)
        every later command stays within all three limits. From a state that cannot stop in
        time the acceleration limit wins: the joint brakes at the limit.

        Returns:
            ``(command, clamped)``; ``command`` is returned unchanged when nothing had to move.
        """
        state = check_joint_state(
            state, "state", self.dynamics_model.d_action, self.tensor_args, batch=1,
            exact_batch=True,
        )  # fmt: skip
        given = check_joint_state(
            command, "command", self.dynamics_model.d_action, self.tensor_args, batch=1,
            exact_batch=True,
        )  # fmt: skip
        out = tuple(torch.empty_like(state.position) for _ in range(4))
        flags = torch.empty_like(state.position[:, :2])
        command_kernels.limited_command(
            (state.position, state.velocity, state.acceleration),
            (given.position, given.velocity, given.acceleration, given.jerk),
            self._bounds, self.control_dt, out, flags,
        )  # fmt: skip
        if not bool(flags[0, 0]):
            return command, False
        return JointState(*out, joint_names=self.robot_config.joint_names), True

    def limit_violation(self, state: JointState) -> float:
        """Largest excess of ``state``'s position, velocity or acceleration over the robot's
        limits (each in its own unit; 0 when within)."""
        return float(self._limit_violation(state))

    def _limit_violation(self, state: JointState) -> torch.Tensor:
        values = torch.stack((state.position, state.velocity, state.acceleration))  # [3, B, D]
        excess = torch.maximum(values - self._limit_highs, self._limit_lows - values)
        return excess.amax().clamp(min=0.0)

    @torch.no_grad()
    def pose_error(self, state: JointState) -> tuple[float, float]:
        """``(position error m, rotation error rad)`` of ``state``'s end effector to the pose
        goal (``nan`` for a joint goal)."""
        if self.goal is None or self.goal.goal_pose is None:
            return float("nan"), float("nan")
        position_error, rotation_error = self._measured.pose_error(self.goal, state).tolist()
        return position_error, rotation_error

    def __repr__(self) -> str:
        cfg = self.mppi.config
        return (
            f"MpcSolver(robot={self.robot_config.name!r}, horizon={self.dynamics_model.horizon},"
            f" control_space={self.dynamics_model.control_space.value}, particles="
            f"{cfg.num_particles}, iters/step={cfg.n_iters}, control_dt={self.control_dt:g} s)"
        )
