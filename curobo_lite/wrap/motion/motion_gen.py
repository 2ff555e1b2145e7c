"""Motion generation among obstacles: "move the gripper from here to there without hitting
anything".

:class:`MotionGen` answers it with a pipeline in the spirit of cuRobo's MotionGen:

1. **Start check**: the start state must be at rest, within the position limits and free of
   world and self-collision (else ``INVALID_START_STATE_*``, no exception, and
   :attr:`MotionGenResult.offenders` names the joints, links and obstacles at fault).
2. **IK** (pose goals; :mod:`curobo_lite.wrap.motion.ik_stage`):
   :class:`~curobo_lite.wrap.IKSolver`, collision-free, ranked by distance to the start:
   first damped least-squares steps on the pose alone from every seed
   (``ik={"dls_iterations": 16}``, :mod:`curobo_lite.wrap.ik.dls`), kept where collision-free;
   only when none is, the collision-aware L-BFGS solve, which stops as soon as one seed is
   precise (``ik={"stop_after": 1}``); no solution gives ``IK_FAIL`` (the offenders: what
   kept the best seed from being valid, its pose error or its contacts). A robot whose
   joints turn fully (a UR arm's ``+-2 pi``) gets each solution at the turns its start can
   reach: no joint may pass a value where the robot always self-collides, such as an elbow
   folded at ``pi`` (:mod:`curobo_lite.wrap.motion.reachable_goals`; ``IK_FAIL`` naming the
   joint and its barrier when none is left). A joint goal
   (:meth:`MotionGen.plan_single_js`) skips the IK: the goal configuration is checked like an
   IK solution (``INVALID_GOAL_STATE`` with its offenders). A goal set
   (:meth:`MotionGen.plan_goalset`, several poses such as the grasps of one object) shares the
   IK's seeds among its poses, and the later stages aim at all of them at once
   (:mod:`curobo_lite.wrap.motion.goals`).
3. **Roadmap** (``enable_roadmap``, default on): a lazy roadmap in joint space from the start
   to the distinct IK solutions (:class:`~curobo_lite.wrap.motion.roadmap.RoadmapPlanner`: approach
   chains that back the hand out along its axis, batched samples and checks, shortcuts), every
   segment judged on the spheres and, with the exact check, on the meshes; the path is timed
   segment by segment (:func:`~curobo_lite.wrap.motion.path_timing.time_polyline`: minimum-jerk, at
   rest at each waypoint, within the velocity/acceleration/jerk limits), so the plan never
   leaves the checked segments. Options: ``roadmap`` (:class:`RoadmapConfig` keys, e.g.
   ``{"time_limit": 2.0}``). When it connects none of the goals (of one pose or of a goal
   set), other goal configurations of the pose(s) get one roadmap each
   (:mod:`curobo_lite.wrap.motion.goal_retry`). When it finds no path, the optimizer takes over:
4. **Trajectory optimization**: :class:`~curobo_lite.wrap.TrajOptSolver` with seeds aimed at
   several distinct IK solutions (straight lines in joint space, minimum-jerk timed), all in
   one batch; the optimizer's collision costs bend them around obstacles; retimed to the
   velocity/acceleration/jerk limits, interpolated to ``interpolation_dt`` and re-checked
   (limits, swept collision) on the interpolated plan.
5. **Geometric fallback** when no seed succeeds: OMPL's RRTConnect (plus its simplifier) in
   joint space with curobo_lite's batched collision checks
   (:class:`~.graph_planner.OmplPlanner`) from the start to whichever distinct
   IK solution it connects first; its path, resampled to the horizon, seeds a second
   trajectory optimization
   (``GRAPH_FAIL`` when OMPL finds no path, ``FINETUNE_FAIL`` when the seeded optimization
   still fails).

Options (keyword arguments of :meth:`MotionGen.from_config`, :class:`MotionGenConfig`): ``task``
(the trajopt task, default ``gradient_trajopt``), ``num_trajopt_seeds`` (4), ``num_ik_seeds``
(32), ``interpolation_dt`` (s, 0.01), ``enable_roadmap`` (true), ``roadmap``
(:class:`~curobo_lite.wrap.motion.roadmap.RoadmapConfig` keys), ``enable_graph`` (default: OMPL
installed and the roadmap off), ``graph_planner`` (``RRTConnect``), ``graph_time_limit`` (s,
5.0), ``graph_resolution`` (rad, 0.02), ``use_cuda_graph`` (false: on a CUDA device, every
L-BFGS solve, the IK's and the trajectory's, replays its iterations from graphs kept across
plans), ``ik`` (more :class:`IKSolverConfig` options), ``trajopt`` (more ``trajopt`` section
keys, e.g. ``position_threshold``), ``approach_distance`` (m, 0.08: half the trajectory seeds
come in along the hand's z axis from this far behind the goal, as grasps are approached; 0:
straight lines only), ``cpu_torch_threads`` (1: on a CPU device torch's ops run on one
thread during a call, Warp's row-parallel kernels still on torch's threads; null: torch's
setting).

Exact check (``exact_check``; default on when the robot file names its collision meshes,
``collision_geometry``, and coal imports): a roadmap path's segments are judged on the meshes
as they are chosen (a refused segment is removed and the search goes on), and an optimized
plan that passed on the spheres is checked once more on the meshes
(:meth:`RobotWorld.trajectory_mesh_report`: every interpolated waypoint and the motion
between them, ``exact_check_resolution`` m, default 1 mm); a clearance below
``exact_check_margin`` (m, default 0) turns ``SUCCESS`` into ``FINAL_PLAN_MESH_COLLISION``.
The result's ``mesh_min_distance`` is that clearance, ``timings["exact_check"]`` its cost; the
optimizer is unchanged (it sees the spheres).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import torch

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout import TaskConfig
from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.types import (
    JointState,
    Pose,
    TensorDeviceType,
    check_joint_state,
)
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.attach import HoldsObjects
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.base.mesh_check import coal_available
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.base.robot_world import RobotWorld, as_world_collision, as_world_config
from curobo_lite.wrap.ik.solver import IKSolver
from curobo_lite.wrap.motion.checks import start_offenders, start_status
from curobo_lite.wrap.motion.config import MotionGenConfig, MotionGenResult, MotionGenStatus
from curobo_lite.wrap.motion.goals import MotionGenGoals, cycle_rows
from curobo_lite.wrap.motion.graph_planner import OmplPlanner, resample_path
from curobo_lite.wrap.motion.ik_stage import (
    DLS_CHUNK,
    DLS_ENOUGH,
    DLS_ITERATIONS,
    DLS_SEEDS,
    IKStage,
)
from curobo_lite.wrap.motion.joint_barriers import JointBarriers
from curobo_lite.wrap.motion.pose_metric import MetricStages
from curobo_lite.wrap.motion.reachable_goals import ReachableGoals
from curobo_lite.wrap.motion.roadmap import RoadmapConfig, RoadmapPlanner
from curobo_lite.wrap.motion.roadmap_stage import RoadmapStage
from curobo_lite.wrap.trajopt.approach_seeds import (
    approach_seed_paths,
    retreat_configs,
    straight_seed_paths,
)
from curobo_lite.wrap.trajopt.seed import min_jerk_profile
from curobo_lite.wrap.trajopt.solver import TrajOptResult, TrajOptSolver

#: with the exact check on: a start, IK solution or roadmap configuration whose spheres reach
#: at most this deep (m) into an obstacle is judged on the meshes instead (the Franka's arm
#: spheres stand up to 15 mm proud of its meshes); ``roadmap={"exact_band": 0}``: spheres only
EXACT_BAND = 0.015


class MotionGen(MotionGenGoals, IKStage, RoadmapStage, MetricStages, ReachableGoals, HoldsObjects):
    """Collision-free motion generation for one robot in one (editable) world.

    Build with :meth:`from_config`; the IK, the trajectory optimizer, the collision checker
    and the geometric planner share one :class:`WorldCollision`, so :meth:`update_world` (or
    editing :attr:`world_collision` in place) reaches all of them without a rebuild.
    """

    def __init__(
        self,
        config: MotionGenConfig,
        ik_solver: IKSolver,
        trajopt: TrajOptSolver,
        checker: RobotWorld,
    ) -> None:
        self.config = config
        self.ik_solver = ik_solver
        self.trajopt = trajopt
        self.checker = checker
        self.robot_config: RobotConfig = trajopt.robot_config
        self.tensor_args = trajopt.tensor_args
        self.dof = trajopt.dof
        self.exact_check = config.exact_check
        if self.exact_check is None:
            self.exact_check = checker.has_collision_geometry and coal_available()
        if self.exact_check:
            try:
                checker.mesh_check()  # load the meshes now, not in the first plan's time
            except InputValueError:
                if config.exact_check:  # asked for: say why it cannot run
                    raise
                self.exact_check = False  # the default: a URDF without <collision> elements
        self._mesh_time = 0.0  # seconds of the roadmap's segment checks on the meshes
        self._barriers = JointBarriers(checker)
        if self._barriers.active:
            self._barriers.scan()  # now (~0.25 s on a UR5e), not in the first plan's time
        self._unreachable: dict[int, tuple[list[Offender], torch.Tensor]] = {}
        self.roadmap: RoadmapPlanner | None = None
        if config.enable_roadmap:
            band = EXACT_BAND if self.exact_check else 0.0
            options = {"exact_band": band, **config.roadmap}
            self.roadmap = RoadmapPlanner(checker, RoadmapConfig.from_dict(options), self._barriers)
        self.graph_planner: OmplPlanner | None = None
        if config.enable_graph:
            self.graph_planner = OmplPlanner(
                checker,
                planner=config.graph_planner,
                resolution=config.graph_resolution,
                time_limit=config.graph_time_limit,
            )

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        world: WorldConfig | str | Mapping | None = None,
        tensor_args: TensorDeviceType | None = None,
        **options: Any,
    ) -> MotionGen:
        """From a robot (bundled name, path or :class:`RobotConfig`), a world (a
        :class:`WorldConfig`, a cuRobo-layout dict, a world file or a bundled name) and the
        options of the module docstring."""
        config = MotionGenConfig.from_dict(options)
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        world_collision = as_world_collision(world, tensor_args)
        ik_options = {
            "num_seeds": config.num_ik_seeds,
            "stop_after": 1,
            "dls_iterations": DLS_ITERATIONS,
            "dls_seeds": DLS_SEEDS,
            "dls_chunk": DLS_CHUNK if config.enable_roadmap else 0,
            "dls_enough": DLS_ENOUGH,
            **config.ik,
        }
        trajopt_options = {"interpolation_dt": config.interpolation_dt, **config.trajopt}
        if config.use_cuda_graph:
            ik_options["lbfgs"] = {**ik_options.get("lbfgs", {}), "use_cuda_graph": True}
            trajopt_options["use_cuda_graph"] = True
        ik_solver = IKSolver.from_config(robot, world_collision, tensor_args, **ik_options)
        trajopt = TrajOptSolver.from_config(
            robot,
            TaskConfig.load(config.task),
            num_seeds=config.num_trajopt_seeds,
            tensor_args=tensor_args,
            world=world_collision,
            **trajopt_options,
        )
        checker = RobotWorld(robot, world_collision, tensor_args)
        return cls(config, ik_solver, trajopt, checker)

    @property
    def cpu_torch_threads(self) -> int | None:
        """torch's threads during a call on a CPU device (``cpu_torch_threads`` option; the
        guard of every public method applies it, :mod:`curobo_lite.wrap.base.exclusive`)."""
        return self.config.cpu_torch_threads

    @property
    def world_collision(self) -> WorldCollision:
        """The shared obstacles (edit in place: ``add_obstacle``, ``update_obstacle_pose``...)."""
        return self.checker.world_collision

    @exclusive
    def update_world(self, world: WorldConfig | str | Mapping) -> None:
        """Replace the obstacles of every stage (no rebuild)."""
        self.world_collision.update_world(as_world_config(world))

    # --- planning --------------------------------------------------------------------------------

    @exclusive
    def plan_single(
        self,
        start_state: JointState,
        goal_pose: Pose,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> MotionGenResult:
        """Plan from ``start_state [1, D]`` (at rest) to the end-effector pose ``goal_pose``
        (batch 1). ``pose_cost_metric``: partial and constrained poses for this call
        (:class:`PoseCostMetric`, :mod:`~curobo_lite.wrap.motion.pose_metric`)."""
        if not isinstance(goal_pose, Pose) or goal_pose.batch != 1:
            received = goal_pose.batch if isinstance(goal_pose, Pose) else type(goal_pose).__name__
            raise InputValueError(f"goal_pose: expected a Pose of batch 1, received {received}")
        return self.plan_batch(start_state, goal_pose, pose_cost_metric)[0]

    @exclusive
    def plan_batch(
        self,
        start_state: JointState,
        goal_pose: Pose,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> list[MotionGenResult]:
        """Plan ``S`` problems: ``start_state [S, D]`` (or ``[1, D]``, shared) to ``goal_pose``
        of batch ``S``; the IK and the first trajectory optimization of all problems run in
        one batch, the geometric fallback per failed problem. ``pose_cost_metric``: as in
        :meth:`plan_single`, for every problem."""
        with self._metric_applied(pose_cost_metric):
            return self._plan_batch(start_state, goal_pose)

    def _plan_batch(self, start_state: JointState, goal_pose: Pose) -> list[MotionGenResult]:
        t_start = time.perf_counter()
        goal = self.ik_solver._check_pose(goal_pose)
        S = goal.batch
        start = self._check_start_shape(start_state, S)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        start_status = self._metric_start_status(start, goal, self._start_status(start))
        timings["start_check"] = time.perf_counter() - t0
        results: list[MotionGenResult | None] = [None] * S
        valid = [s for s in range(S) if start_status[s] is None]
        for s in range(S):
            if start_status[s] is MotionGenStatus.INVALID_PARTIAL_POSE_COST_METRIC:
                offenders = self._metric_offenders(start, s, goal)
            elif start_status[s] is not None:
                offenders = start_offenders(self.checker, start, s, start_status[s])
            if start_status[s] is not None:
                results[s] = self._failure(
                    start_status[s], t_start, timings, offenders, start.position[s], "start state"
                )
        if not valid:
            return results
        index = torch.tensor(valid, device=self.tensor_args.device)
        sub_goal = Pose(goal.position[index], goal.quaternion[index])
        sub_start = start.position[index]
        t0 = time.perf_counter()
        ik, goal_configs = self._ik(sub_goal, sub_start)
        timings["ik"] = time.perf_counter() - t0
        solved = [k for k in range(len(valid)) if goal_configs[k].shape[0] > 0]
        for k in range(len(valid)):
            if k not in solved:
                goal_k = Pose(sub_goal.position[k : k + 1], sub_goal.quaternion[k : k + 1])
                results[valid[k]] = self._failure(
                    MotionGenStatus.IK_FAIL, t_start, timings, *self._ik_offenders(ik, k, goal_k)
                )
        if self._roadmap_on:
            solved = self._roadmap_plans(
                solved, valid, sub_start, sub_goal, goal_configs, results, t_start, timings
            )
        if not solved:
            return results
        rows = torch.tensor(solved, device=self.tensor_args.device)
        first = self._optimize(
            sub_start[rows],
            [goal_configs[k] for k in solved],
            Pose(sub_goal.position[rows], sub_goal.quaternion[rows]),
            timings,
        )
        for j, k in enumerate(solved):
            s = valid[k]
            stage_timings = dict(timings)
            if bool(first.success[j]) or self.graph_planner is None:
                status = (
                    MotionGenStatus.SUCCESS
                    if bool(first.success[j])
                    else (MotionGenStatus.TRAJOPT_FAIL)
                )
                results[s] = self._from_trajopt(first, j, status, t_start, stage_timings, 1)
                continue
            results[s] = self._graph_fallback(
                sub_start[rows[j]],
                goal_configs[k],
                Pose(sub_goal.position[rows[j : j + 1]], sub_goal.quaternion[rows[j : j + 1]]),
                first,
                j,
                t_start,
                stage_timings,
            )
        return results

    def _check_start_shape(self, start_state: Any, batch: int) -> JointState:
        # a moving start is a status (INVALID_START_STATE_NOT_AT_REST), not an error
        start = check_joint_state(start_state, "start_state", self.dof, self.tensor_args, batch)
        if start.position.shape[0] != batch:
            start = JointState(
                start.position.expand(batch, -1).clone(),
                start.velocity.expand(batch, -1).clone(),
                start.acceleration.expand(batch, -1).clone(),
                start.jerk.expand(batch, -1).clone(),
            )
        return start

    def _single_start_failure(
        self, start: JointState, t_start: float, timings: dict[str, float]
    ) -> MotionGenResult | None:
        """The start check of one problem (timed into ``timings``): its failure result, or
        ``None`` when ``start [1, D]`` is valid."""
        t0 = time.perf_counter()
        status = self._start_status(start)[0]
        timings["start_check"] = time.perf_counter() - t0
        if status is None:
            return None
        offenders = start_offenders(self.checker, start, 0, status)
        return self._failure(status, t_start, timings, offenders, start.position[0], "start state")

    def _start_status(self, start: JointState) -> list[MotionGenStatus | None]:
        """Per start state ``None`` (valid) or the ``INVALID_START_STATE_*`` reason."""
        return start_status(self.checker, start, self._exact_band)

    def _optimize(
        self,
        start: torch.Tensor,
        goal_configs: list[torch.Tensor],
        goal: Pose,
        timings: dict[str, float],
    ) -> TrajOptResult:
        """One batched trajectory optimization of ``R`` problems: from ``start [R, D]`` to
        each problem's goal configurations (``[k, D]``, cycled to ``num_trajopt_seeds``) and
        ``goal [R]``, seeded by :meth:`_seed_paths`; its time goes into ``timings``."""
        n = self.config.num_trajopt_seeds
        configs = torch.stack([cycle_rows(c, n) for c in goal_configs])
        t0 = time.perf_counter()
        result = self.trajopt.solve_from_configs(
            JointState.from_position(start),
            configs,
            goal,
            seed_trajectories=self._seed_paths(start, configs),
        )
        timings["trajopt"] = time.perf_counter() - t0
        return result

    def _seed_paths(self, start: torch.Tensor, configs: torch.Tensor) -> torch.Tensor | None:
        """``[S, n, H, D]`` seed knots: even seeds straight to their goal configuration, odd
        ones in along the hand's axis from ``approach_distance`` behind it
        (:mod:`curobo_lite.wrap.trajopt.approach_seeds`); ``None`` (straight lines) when
        ``approach_distance`` is 0 or there is one seed."""
        n = configs.shape[1]
        distance = self._approach_distance(self.config.approach_distance)
        if distance <= 0.0 or n < 2:
            return None
        profile = min_jerk_profile(self.trajopt.horizon, self.tensor_args)
        paths = straight_seed_paths(start, configs, profile)
        odd = configs[:, 1::2]
        retreat = retreat_configs(self.checker.kinematics, odd, distance)
        paths[:, 1::2] = approach_seed_paths(start, odd, retreat, profile)
        return paths

    def _graph_fallback(
        self,
        start: torch.Tensor,
        configs: torch.Tensor,
        goal_pose: Pose | None,
        previous: TrajOptResult,
        index: int,
        t_start: float,
        timings: dict[str, float],
    ) -> MotionGenResult:
        """OMPL from ``start [D]`` to whichever of the goal configurations ``configs [n, D]``
        (the distinct IK solutions, or the joint goal) it connects first, then a trajopt
        seeded with that path."""
        t0 = time.perf_counter()
        graph = self.graph_planner.plan(start, configs)
        timings["graph"] = time.perf_counter() - t0
        if not graph.success:
            result = self._from_trajopt(
                previous, index, MotionGenStatus.GRAPH_FAIL, t_start, timings, 1
            )
            return result
        horizon = self.trajopt.horizon
        seed = resample_path(graph.path, horizon)[None, None]
        t0 = time.perf_counter()
        retry = self.trajopt.solve_from_configs(
            JointState.from_position(start[None]),
            graph.path[None, -1:],
            goal_pose,
            seed_trajectories=seed,
        )
        timings["finetune"] = time.perf_counter() - t0
        status = (
            MotionGenStatus.SUCCESS if bool(retry.success[0]) else (MotionGenStatus.FINETUNE_FAIL)
        )
        result = self._from_trajopt(retry, 0, status, t_start, timings, 2)
        result.used_graph = True
        return result

    def _from_trajopt(
        self,
        result: TrajOptResult,
        index: int,
        status: MotionGenStatus,
        t_start: float,
        timings: dict[str, float],
        attempts: int,
    ) -> MotionGenResult:
        plan = result.get_interpolated_plan(index)
        min_distance = float("nan")
        if result.min_distance is not None:
            min_distance = float(result.min_distance[index])
        status, mesh_min_distance = self._exact_check(plan, status, timings)
        return MotionGenResult(
            success=status is MotionGenStatus.SUCCESS,
            status=status,
            interpolated_plan=plan,
            interpolation_dt=result.interpolation_dt,
            solve_time=time.perf_counter() - t_start,
            timings=timings,
            position_error=float(result.position_error[index]),
            rotation_error=float(result.rotation_error[index]),
            min_distance=min_distance,
            mesh_min_distance=mesh_min_distance,
            attempts=attempts,
            goal_config=result.goal_state[index],
            trajopt_result=result,
        )

    def _failure(
        self,
        status: MotionGenStatus,
        t_start: float,
        timings: dict[str, float],
        offenders: list[Offender] | None = None,
        offenders_config: torch.Tensor | None = None,
        offenders_at: str = "",
    ) -> MotionGenResult:
        return MotionGenResult(
            success=False,
            status=status,
            interpolated_plan=None,
            interpolation_dt=self.trajopt.config.interpolation_dt,
            solve_time=time.perf_counter() - t_start,
            timings=dict(timings),
            offenders=list(offenders or []),
            offenders_config=None if offenders_config is None else offenders_config.detach(),
            offenders_at=offenders_at,
        )

    def __repr__(self) -> str:
        graph = self.config.graph_planner if self.graph_planner is not None else "off"
        roadmap = "on" if self.roadmap is not None else "off"
        return (
            f"MotionGen(robot={self.robot_config.name!r}, obstacles="
            f"{len(self.world_collision.obstacle_names)}, ik_seeds={self.config.num_ik_seeds}, "
            f"trajopt_seeds={self.config.num_trajopt_seeds}, roadmap={roadmap}, "
            f"graph_fallback={graph}, exact_check={'on' if self.exact_check else 'off'}, "
            f"{self.tensor_args})"
        )
