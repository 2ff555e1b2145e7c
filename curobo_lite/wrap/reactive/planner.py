"""Reactive control: a global plan (:class:`MotionGen`) tracked by MPC, replanned when the world
changes under it.

:class:`ReactivePlanner` holds a :class:`~curobo_lite.wrap.MotionGen` and a
:class:`~curobo_lite.wrap.MpcSolver` that share one :class:`~curobo_lite.geom.WorldCollision`.
Each :meth:`ReactivePlanner.step`:

1. plans when it has to (a new goal; the rest of the plan blocked; the robot strayed; a retry
   while a replan is pending) with ``MotionGen.plan_single`` from the measured position (at
   rest: MotionGen plans from rest; the MPC blends the robot's motion into the plan);
2. after every change of the world (:meth:`update_world`, :meth:`move_obstacle`, or an edit of
   :attr:`world_collision` in place: its revision is watched) checks the rest of the plan,
   swept, against the new world (``RobotWorld.validate_segments``, joint steps of at most
   ``check_resolution`` rad, with MotionGen's exact band when its exact check is on) and
   replans when it is blocked;
3. replans when the measured state is farther than ``max_deviation`` (rad, joint-space norm)
   from every remaining sample of the plan (the MPC strayed, e.g. pushed off by an obstacle),
   at the earliest ``retry_interval`` steps after the last plan; and when the robot came to
   rest (every joint slower than ``rest_speed`` rad/s) farther than ``stall_deviation`` rad
   from the plan's sample of now (the MPC held off it in a local minimum of its costs; the
   plan's clock waits for a robot off the plan, :meth:`MpcSolver.follow`);
4. runs one MPC step that tracks the plan (:meth:`MpcSolver.follow`) with its collision costs.

When the rest of the plan is blocked, or planning fails (e.g. the goal is blocked for now, or
the measured state sits in an obstacle's margin), the plan is dropped and MPC alone brakes and
holds the measured position (a one-sample plan, the task's collision margin and costs on, the
MPPI spread restored so that it finds the way out of an obstacle's margin) until a plan is
found; a new plan is tried after ``retry_interval`` steps, the
wait doubling with each failure in a row (up to 16 times).

A goal or start with no sphere-clear configuration (a grasp: the finger spheres in the object,
the meshes clear) is planned with MotionGen's exact band and followed at half speed where its
spheres dip, the MPC's spheres relieved as deep as the plan's, each command guarded by the
exact mesh check (:mod:`~curobo_lite.wrap.reactive.band_relief`).

By default replans run inside :meth:`step` (synchronously): that step takes the planning time
too (0.1-0.7 s on a CPU, 5 to 35 periods of a 50 Hz loop). With ``background_planning`` a
second MotionGen, on its own copy of the obstacles, plans beside the loop: in a child process
(:mod:`~curobo_lite.wrap.reactive.background_process`; the default on a CPU, where a thread
would share the interpreter lock with the MPC) or on a worker thread
(:mod:`~curobo_lite.wrap.reactive.background`; the default on a GPU). The step that needs a
plan asks for one and returns at once, the MPC brakes and holds the measured position
(``plan_pending`` in the result) until the plan arrives, and a later step follows it, after
checking it against the world of that moment (a world edited meanwhile gets the usual swept
check of the rest; a blocked plan is replanned).

Options (keyword arguments of :meth:`ReactivePlanner.from_config`,
:class:`ReactivePlannerConfig`): ``max_deviation`` (rad, 0.3), ``check_resolution`` (rad,
0.02), ``retry_interval`` (steps, 10), ``plan_speed`` (0.7: MotionGen's time-optimal plans are
followed this much slower, off the joint limits where the MPC's bound cost pushes back),
``use_plan`` (true; false: MPC alone, for comparisons), ``background_planning`` (false: plan
inside the step; true: beside it, see above; call :meth:`ReactivePlanner.close` when done),
``background_worker`` (``"auto"``: a process on a CPU, a thread on a GPU; ``"process"``
(CPU only), ``"thread"``),
``motion_gen`` (a dict of :meth:`MotionGen.from_config` options), ``mpc`` (a dict of MPPI
overrides for :meth:`MpcSolver.from_config`, e.g. ``{"num_particles": 200}``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import JointState, Pose, TensorDeviceType, check_pose
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.attach import ATTACHED_LINK, AttachedObjects, solver_kinematics
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.base.robot_world import as_world_collision, as_world_config
from curobo_lite.wrap.motion.config import MotionGenResult, MotionGenStatus
from curobo_lite.wrap.motion.motion_gen import EXACT_BAND, MotionGen
from curobo_lite.wrap.mpc.solver import MpcSolver
from curobo_lite.wrap.reactive.background import BackgroundPlanner, PlanJob
from curobo_lite.wrap.reactive.background_process import ProcessPlanner
from curobo_lite.wrap.reactive.band_relief import (
    BAND_SPEED,
    BandRelief,
    guard_command,
    plan_with_band,
)
from curobo_lite.wrap.reactive.config import ReactivePlannerConfig, ReactiveStepResult


class ReactivePlanner:
    """MotionGen plans, MPC tracks, the plan is re-checked when the world changes. Build with
    :meth:`from_config`.

    Args:
        config: :class:`ReactivePlannerConfig`.
        motion_gen: the global planner.
        mpc: the tracking controller; its world must be ``motion_gen``'s (one shared
            :class:`WorldCollision`).
        background: the planner beside the loop (``background_planning``): a MotionGen on a
            world of its own (served by a worker thread) or a :class:`ProcessPlanner`.
    """

    def __init__(
        self,
        config: ReactivePlannerConfig,
        motion_gen: MotionGen,
        mpc: MpcSolver,
        background: MotionGen | ProcessPlanner | None = None,
    ):
        if mpc.world_collision is not motion_gen.world_collision:
            raise InputValueError(
                "mpc: expected an MpcSolver sharing motion_gen's WorldCollision (build both "
                "with world=motion_gen.world_collision), received one with its own world"
            )
        if (background is None) == config.background_planning:
            raise InputValueError(
                f"background: expected a MotionGen or ProcessPlanner exactly when "
                f"background_planning is on ({config.background_planning}), received "
                f"{type(background).__name__}"
            )
        if isinstance(background, MotionGen):
            if background.world_collision is motion_gen.world_collision:
                raise InputValueError(
                    "background: expected a MotionGen with a world of its own (the control "
                    "thread edits motion_gen's while the worker plans), received one sharing it"
                )
            background = BackgroundPlanner(background)  # served by a worker thread
        self.config = config
        self.motion_gen = motion_gen
        self.mpc = mpc
        self.goal: Pose | None = None
        self.last_plan: MotionGenResult | None = None
        self.replans = 0
        self._plan_status: MotionGenStatus | None = None
        self._needs_plan = ""  # the reason of the next plan ("" none)
        self._braking = ""  # the reason of the plan made once the robot is at rest ("" none)
        self._steps_since_attempt = 0
        self._failures = 0  # failed plans in a row
        self._checked_revision = self.world_collision.revision
        self._band = motion_gen.exact_band if motion_gen.exact_check else 0.0
        self._plan_band = self._band  # the band of the followed plan's checks
        self._goal_band = False
        self._relief = BandRelief(
            mpc.rollout.dynamics_model.kinematics, self.world_collision, EXACT_BAND
        )
        self._background = background

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        world: WorldCollision | WorldConfig | str | Mapping | None = None,
        task: str | TaskConfig = "particle_mpc",
        tensor_args: TensorDeviceType | None = None,
        **options: Any,
    ) -> ReactivePlanner:
        """From a robot (bundled name, path or :class:`RobotConfig`), a world (a
        :class:`WorldConfig`, a world file, a bundled name or a :class:`WorldCollision` to
        share), the MPC task (its ``tracking_cost`` section weighs the plan) and the options of
        the module docstring."""
        config = ReactivePlannerConfig.from_dict(options)
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        world_collision = as_world_collision(world, tensor_args)
        # plans whose spheres stay clear: the MPC's collision costs see the spheres too, and a
        # plan through MotionGen's exact band (spheres up to 15 mm deep, meshes clear) would
        # hold the MPC's margin against its own reference
        options = dict(config.motion_gen)
        options["roadmap"] = {"exact_band": 0.0, **options.get("roadmap", {})}
        motion_gen = MotionGen.from_config(robot, world_collision, tensor_args, **options)
        mpc = MpcSolver.from_config(robot, task, tensor_args, world=world_collision, **config.mpc)
        background = None
        if config.background_planning:
            worker = config.background_worker
            if worker == "auto":
                worker = "process" if tensor_args.device.type == "cpu" else "thread"
            if worker == "process":
                background = ProcessPlanner(robot, world_collision.world, tensor_args, options)
            else:
                own_world = WorldCollision(world_collision.world, tensor_args)
                background = MotionGen.from_config(robot, own_world, tensor_args, **options)
        return cls(config, motion_gen, mpc, background)

    # --- world and goal -------------------------------------------------------------------------

    @property
    def world_collision(self) -> WorldCollision:
        """The obstacles MotionGen and the MPC share (edits in place are seen at the next
        step)."""
        return self.motion_gen.world_collision

    @exclusive
    def update_world(self, world: WorldConfig | str | Mapping) -> None:
        """Replace the obstacles; the next step checks the rest of the plan against them."""
        self.world_collision.update_world(as_world_config(world))

    @exclusive
    def move_obstacle(self, name: str, pose: Sequence[float] | torch.Tensor | Pose) -> None:
        """Move obstacle ``name`` to ``pose`` (``[x, y, z, qw, qx, qy, qz]`` or a one-row
        :class:`Pose`); the next step checks the rest of the plan."""
        self.world_collision.update_obstacle_pose(name, pose)

    @exclusive
    def attach_objects_to_robot(
        self,
        joint_state: Any,
        object_names: Sequence[str],
        surface_sphere_radius: float = 0.001,
        link_name: str = ATTACHED_LINK,
    ) -> AttachedObjects:
        """Hold the world's obstacles ``object_names`` on ``link_name`` from ``joint_state``
        on (cuRobo's name; :mod:`curobo_lite.wrap.base.attach`): MotionGen, the MPC and the
        background planner all carry them, and they leave the shared world. The next step
        checks the rest of the plan with them held, and replans when it is blocked."""
        checker = self.motion_gen.checker
        return checker.attach_objects_to_robot(
            joint_state, object_names, link_name, surface_sphere_radius, self._robot_copies()
        )

    @exclusive
    def detach_object_from_robot(self, link_name: str = ATTACHED_LINK) -> None:
        """Let go of what ``link_name`` holds: the objects return to the world where they were
        attached, and the next step checks the rest of the plan against them."""
        checker = self.motion_gen.checker
        checker.detach_object_from_robot(link_name, self._robot_copies())

    def _robot_copies(self) -> list:
        """Every copy of the robot's spheres in MotionGen and the MPC besides the checker's
        (the background planner mirrors them with each job)."""
        checker = self.motion_gen.checker
        copies = {id(k): k for k in self.motion_gen._others(checker)}
        copies.update({id(k): k for k in solver_kinematics(self.mpc, depth=8)})
        copies.pop(id(checker.kinematics), None)
        return list(copies.values())

    @property
    def attached(self) -> dict[str, AttachedObjects]:
        """What the robot holds (link -> objects)."""
        return self.motion_gen.checker.attached

    @exclusive
    def set_goal(self, goal: Pose) -> None:
        """Aim at the end-effector pose ``goal`` (batch 1): the next step plans to it."""
        goal = check_pose(goal, "goal", self.mpc.tensor_args, batch=1)
        self.mpc.update_goal(goal)  # MPC alone until the plan exists
        self.goal = goal
        self._goal_band = False  # the goal's last plan needed the exact band
        self._needs_plan = "goal"
        self._braking = ""

    # what run_closed_loop (curobo_lite.sim) reads of a solver
    update_goal = set_goal

    @property
    def control_dt(self) -> float:
        """Seconds between control steps (the MPC's)."""
        return self.mpc.control_dt

    def pose_error(self, state: JointState) -> tuple[float, float]:
        """``(position error m, rotation error rad)`` of ``state``'s end effector to the goal."""
        return self.mpc.pose_error(state)

    @property
    def plan(self) -> JointState | None:
        """The plan being tracked, ``[T, D]`` (``None``: MPC alone, holding)."""
        tracked = self.mpc.following
        if tracked is None or tracked.position.shape[0] == 1:
            return None
        return JointState(tracked.position, tracked.velocity, tracked.acceleration)

    # --- control --------------------------------------------------------------------------------

    @exclusive
    def step(self, state: JointState) -> ReactiveStepResult:
        """One control step from the measured ``state [1, D]``: plan or replan when needed,
        then one MPC step; returns the command and the step's metrics."""
        t_start = time.perf_counter()
        measured = self.mpc._check_state(state)  # the argument is named first
        position = measured.position
        if self.goal is None:
            raise InputValueError("step: call set_goal(pose) first")
        if self._background is not None and self._background.closed:
            raise InputValueError("step: the planner was closed (close() stops its worker)")
        pending = self.plan_pending
        if pending and (finished := self._background.poll()) is not None:
            self._adopt(*finished)
            pending = False
        reason = ""
        # every joint slower than rest_speed (read once: a device sync on CUDA)
        at_rest = float(measured.velocity.abs().max()) < self.config.rest_speed
        if self.config.use_plan and (not pending or self._needs_plan):
            # while a plan is made: only a new goal
            reason = self._replan_reason(position, at_rest)
        if reason in ("blocked", "deviation") and not at_rest and not self._braking:
            # MotionGen plans from rest: a plan from a moving robot is overshot (braking onto
            # it, off it, through what it goes around); brake first, plan at rest
            self._hold(position)
            self._braking, self._steps_since_attempt, reason = reason, 0, ""
        if reason:
            self._replan(position, reason)
            pending = self._background is not None
        else:
            self._steps_since_attempt += 1
        if self._relief.update(self.mpc.following):
            self.mpc._plan_revision += 1  # the radii changed: a captured plan captures again
        result = self.mpc.step(state)
        stop = None
        if self._relief.active:  # the exact check guards what the relieved spheres allow
            stop = guard_command(self.motion_gen.checker, measured, result.action, self._plan_band)
        metrics = result.metrics
        tracked = self.mpc.following
        clearance = min(
            metrics.get("world_distance", math.inf), metrics.get("self_distance", math.inf)
        )
        return ReactiveStepResult(
            action=result.action if stop is None else stop,
            position_error=metrics["position_error"],
            rotation_error=metrics["rotation_error"],
            clearance=clearance if math.isfinite(clearance) else float("nan"),
            replanned=bool(reason),
            replan_reason=reason,
            plan_status=self._plan_status,
            following=tracked is not None and tracked.position.shape[0] > 1,
            tracking_error=metrics.get("tracking_error", float("nan")),
            plan_time=float("nan") if tracked is None else tracked.time - self.mpc.control_dt,
            solve_time=time.perf_counter() - t_start,
            mpc=result,
            plan_pending=pending,
            guarded=stop is not None,
        )

    def _replan_reason(self, position: torch.Tensor, at_rest: bool) -> str:
        """Why this step must plan (``""``: it need not), from the measured ``position [1, D]``
        and whether the robot is at rest (every joint slower than ``rest_speed``)."""
        if self._needs_plan:
            return self._needs_plan
        if self._braking:  # plan once at rest (or after max_brake_steps)
            waited = self._steps_since_attempt >= self.config.max_brake_steps
            return self._braking if at_rest or waited else ""
        tracked = self.mpc.following
        if tracked is None or tracked.position.shape[0] == 1:  # a replan pending: retry
            # each failed attempt doubles the wait (a plan takes ~100 control periods on a CPU)
            wait = self.config.retry_interval * 2 ** min(self._failures - 1, 4)
            return "retry" if self._steps_since_attempt >= wait else ""
        revision = self.world_collision.revision
        if revision != self._checked_revision:
            self._checked_revision = revision
            if not self._rest_is_free(position, tracked):
                return "blocked"
        if self._steps_since_attempt < self.config.retry_interval:
            return ""  # a fresh plan starts at rest where the moving robot was: let it settle
        rest = tracked.rest()
        if float((rest - position).norm(dim=-1).min()) > self.config.max_deviation:
            return "deviation"
        # the MPC came to rest off the plan (held in a local minimum of its costs, e.g. against
        # the object of a grasp, the plan's clock waiting for it): a plan from rest, here
        if at_rest and tracked.strayed(position) > self.config.stall_deviation:
            return "stalled"
        return ""

    @torch.no_grad()
    def _rest_is_free(self, position: torch.Tensor, tracked) -> bool:
        """Whether the rest of the plan, from the measured position through the plan's
        remaining samples, is free in the current world (swept: straight joint segments
        checked every ``check_resolution`` rad)."""
        rest = tracked.rest()
        path = torch.cat((position, rest))
        # keep the samples at least check_resolution apart (the plan's 10 ms samples are dense)
        keep = [0]
        for k in range(1, path.shape[0]):
            if float((path[k] - path[keep[-1]]).abs().max()) >= self.config.check_resolution:
                keep.append(k)
        if keep[-1] != path.shape[0] - 1:
            keep.append(path.shape[0] - 1)
        path = path[keep]
        checker = self.motion_gen.checker
        band = self._plan_band
        if not bool(checker.validate(path[:1], band)[0]):
            return False
        if path.shape[0] == 1:
            return True
        free = checker.validate_segments(
            path[:-1], path[1:], self.config.check_resolution, exact_band=band
        )
        return bool(free.all())

    def _replan(self, position: torch.Tensor, reason: str) -> None:
        """Plan from ``position`` (at rest) to the goal; follow the plan, or drop the old one
        and let MPC alone drive (a replan pending) when planning fails."""
        self.replans += 1
        self._needs_plan = ""
        self._braking = ""
        self._steps_since_attempt = 0
        self._checked_revision = self.world_collision.revision
        if reason == "blocked" or self._background is not None:
            # brake first: the motion under way heads into the obstacle, or goes on while the
            # worker plans from where the robot is now
            self._hold(position)
        if self._background is not None:
            world = self.world_collision
            self._background.submit(
                position, self.goal, world.world, world.revision, dict(self.attached)
            )
            return
        start = JointState.from_position(position.clone())
        result, band = plan_with_band(self.motion_gen, start, self.goal, self._goal_band)
        self._goal_band = result.success and band > self._band  # replans: the band at once
        self._take(result, band, position)

    def _adopt(self, job: PlanJob, result: MotionGenResult) -> None:
        """Take a background plan: the world may have changed since its snapshot (the next
        check of :meth:`_replan_reason` then sweeps the rest against the world of now)."""
        self._steps_since_attempt = 0
        self._checked_revision = job.revision
        band = self._band
        if result.success and bool(self._relief.depth(result.interpolated_plan.position).any()):
            band = EXACT_BAND  # its spheres dip: the worker planned it with the band
        self._take(result, band, job.start)

    def _take(self, result: MotionGenResult, band: float, position: torch.Tensor) -> None:
        """Follow a successful plan (made with exact ``band`` m: its spheres are relieved where
        they dip, see :mod:`~curobo_lite.wrap.reactive.band_relief`); hold ``position [1, D]``
        after a failed one."""
        self.last_plan = result
        self._plan_status = result.status
        if result.success:
            self._failures = 0
            self._plan_band = band
            plan, dt = result.interpolated_plan, result.interpolation_dt
            if band > self._band:  # slower where the spheres dip
                plan = self._relief.slowed(plan, dt, BAND_SPEED)
            self.mpc.follow(plan, dt, self.goal, speed=self.config.plan_speed)
            if band > self._band:
                self._relief.start(self.mpc.following)
            else:
                self._relief.stop()
        else:
            self._failures += 1
            self._hold(position)

    def _hold(self, position: torch.Tensor) -> None:
        """MPC alone: brake and hold ``position [1, D]`` with the task's collision margin."""
        if self.mpc.following is not None and self.mpc.following.position.shape[0] == 1:
            return  # holding already
        self.mpc.follow(JointState.from_position(position.clone()), None, self.goal, checked=False)
        self._relief.stop()
        band = self._plan_band  # where a banded plan left the spheres dipping, meshes clear:
        if band > self._band and bool(self.motion_gen.checker.validate(position, band)[0]):
            self._relief.start(self.mpc.following)  # relieved, they hold the hand still
        mppi = self.mpc.mppi
        mppi.cov_action.copy_(mppi._init_cov)  # explore again: the spread shrank on the plan

    # --- background planning ----------------------------------------------------------------------

    @property
    def plan_pending(self) -> bool:
        """A background plan was asked for and not taken yet (``background_planning``)."""
        return self._background is not None and self._background.pending

    def wait_for_plan(self, timeout: float | None = None) -> bool:
        """Block until the pending background plan is made (the next :meth:`step` takes it):
        ``True``, or ``False`` after ``timeout`` seconds. ``True`` when none is pending; e.g.
        to start moving only once the first plan exists."""
        return self._background is None or self._background.wait(timeout)

    @exclusive
    def close(self) -> None:
        """Stop the background planner's worker, thread or process (after a plan under way)."""
        if self._background is not None:
            self._background.close()

    def __repr__(self) -> str:
        return (
            f"ReactivePlanner(robot={self.mpc.robot_config.name!r}, max_deviation="
            f"{self.config.max_deviation:g} rad, replans={self.replans}, following="
            f"{self.mpc.following is not None}, use_plan={self.config.use_plan}, "
            f"background_planning={self.config.background_planning})"
        )
