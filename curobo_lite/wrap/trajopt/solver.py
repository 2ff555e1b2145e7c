"""Trajectory optimization to an end-effector pose or a joint configuration.

:class:`TrajOptSolver` plans a smooth, limit-respecting joint trajectory from rest at a start
configuration to a goal, for ``S`` problems at once:

1. **Goal configurations** (pose goals only): a batched inverse-kinematics solve, L-BFGS over a
   horizon-1 ``teleport_mode`` rollout (position = action) with the pose cost and a joint
   position bound cost, ``ik.num_seeds`` seeds per problem (the start configuration, the retract
   configuration and uniform draws inside the joint limits). Per problem the solutions within the
   thresholds are ranked by their joint-space distance to the start, the others after them by
   cost; the best ``num_seeds`` become the trajectory seeds' end points.
2. **Seeds**: a straight line in joint space from the start to each goal configuration, timed by
   the quintic minimum-jerk law ``s(t) = 10t³ - 15t⁴ + 6t⁵`` (it starts and ends at rest, which the
   stop cost wants), plus a random perturbation that vanishes at both ends
   (``seed_noise * n_d * sin(pi t)`` with ``n ~ N(0, I)`` per seed; the first seed of every
   problem is left unperturbed). Draws come from a generator seeded with ``seed`` on every solve.
3. **Trajectory optimization**: batched L-BFGS (:class:`~curobo_lite.opt.Lbfgs`) over the task's
   :class:`~curobo_lite.rollout.ArmReacher` (``S * num_seeds`` seeds in one batch, each
   converging on its own). Every seed's best iterate is rolled out again; per problem the seed
   with the lowest cost among those that reach the goal within the thresholds is kept (the lowest
   cost overall when none does).
4. **Retiming**: as in cuRobo, the trajectory's step ``dt`` is rescaled by
   ``(1 + time_margin) * max(max|v|/v_lim, sqrt(max|a|/a_lim), cbrt(max|j|/j_lim))`` computed on
   the optimized knots (backward differences from rest), bounded below by ``min_dt``; the duration
   is then rounded up to a whole number of ``interpolation_dt`` steps.
5. **Interpolation** to the controller rate ``interpolation_dt``: ``CUBIC`` (default) is the
   clamped cubic spline through the knots (zero velocity at both ends, continuous acceleration;
   velocity, acceleration and jerk are its exact derivatives); ``LINEAR`` connects the knots by
   straight segments (velocity is the segment slope, acceleration and jerk are backward
   differences of the sampled velocity). The interpolated trajectory is checked: where its
   velocity, acceleration or jerk ratio (same formula, on the spline's derivatives, on the knot
   accelerations and on backward differences of the sampled positions) exceeds
   ``1 / (1 + time_margin)``, ``dt`` grows by that factor and the interpolation is redone (at most
   ``max_retime_iters`` times; a cubic spline scales exactly, so one pass suffices).
6. **Checks**: a problem succeeds when its goal is reached (pose goals: position error
   ``<= position_threshold`` m and rotation error ``<= rotation_threshold`` rad at the last step;
   joint goals: ``||q_T - q_goal||_2 <= cspace_threshold`` rad) and every interpolated sample is
   within the position, velocity and acceleration limits (by the spline's derivatives and by
   backward differences of the samples), and, when the robot has collision spheres, free of
   collisions: every interpolated step's swept spheres keep clear of the world's obstacles and
   the sphere pairs that may touch keep apart (``collision_free``, ``min_distance``).

Obstacles: pass ``world=`` to :meth:`TrajOptSolver.from_config` (a
:class:`~curobo_lite.geom.WorldConfig`, a world file or a bundled name) and change them with
:meth:`TrajOptSolver.update_world`. The task's ``primitive_collision_cost`` and
``self_collision_cost`` drive the optimization (and the IK, unless ``ik.cost`` is given).

Trajectories start from rest: a start state with non-zero velocity or acceleration is a
``ValueError`` (retiming scales time uniformly, which keeps only a resting start consistent).

The task file's ``trajopt:`` section is described by :class:`TrajOptSolverConfig`.

The code: this module holds the solver (construction, the public solves and the phases'
order); :mod:`~curobo_lite.wrap.trajopt.seed` the IK task and the seeds,
:mod:`~curobo_lite.wrap.trajopt.timing` retiming and interpolation,
:mod:`~curobo_lite.wrap.trajopt.checks` the result and argument checks,
:mod:`~curobo_lite.wrap.trajopt.config` the options and the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import torch

from curobo_lite.distributed import get_rank, get_world_size, shard_range
from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.opt import Lbfgs, LbfgsConfig
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout import ArmReacher, ArmReacherConfig, TaskConfig
from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.rollout.dynamics_model import KinematicModelConfig
from curobo_lite.types import (
    JointState,
    Pose,
    StateType,
    TensorDeviceType,
    check_joint_state,
    check_pose,
)
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.base.offenders import check_within_limits
from curobo_lite.wrap.base.pose_metric import applied_pose_metric
from curobo_lite.wrap.base.robot_world import as_world_collision
from curobo_lite.wrap.ik.config import IKSolverConfig
from curobo_lite.wrap.ik.solver import IKSolver
from curobo_lite.wrap.trajopt.checks import (
    check_goal_configs,
    check_joint_goal,
    check_seed_trajectories,
)
from curobo_lite.wrap.trajopt.config import (
    INTERPOLATIONS,
    IkConfig,
    TrajOptResult,
    TrajOptSolverConfig,
    merge_sections,
)
from curobo_lite.wrap.trajopt.seed import ik_task, min_jerk_profile
from curobo_lite.wrap.trajopt.solve import TrajOptPhases
from curobo_lite.wrap.trajopt.timing import (
    Interpolated,
    backward_differences,
    cubic_spline_matrix,
    interpolate,
    limit_excess,
    limit_ratio,
    time_scale,
)

# the pieces moved to trajopt_config / trajopt_timing stay importable from here
__all__ = [
    "INTERPOLATIONS",
    "IkConfig",
    "Interpolated",
    "TrajOptResult",
    "TrajOptSolver",
    "TrajOptSolverConfig",
    "backward_differences",
    "cubic_spline_matrix",
    "interpolate",
    "limit_excess",
    "limit_ratio",
    "time_scale",
]

# A start state whose |velocity| or |acceleration| exceeds this counts as moving.
_REST_TOL = 1e-6


class TrajOptSolver(TrajOptPhases):
    """Batched trajectory optimization with IK seeding, retiming and interpolation.

    Build with :meth:`from_config`. ``progress`` (a callable taking one line of text, default
    ``None``) receives a line after every phase of a solve.
    """

    def __init__(
        self,
        config: TrajOptSolverConfig,
        rollout: ArmReacher,
        lbfgs_config: LbfgsConfig,
        ik_rollout: ArmReacher,
        ik_lbfgs_config: LbfgsConfig,
        process_group: Any = None,
    ) -> None:
        model = rollout.dynamics_model
        if model.control_space is not StateType.POSITION or model.config.teleport_mode:
            raise InputValueError(
                "model.control_space: trajectory optimization needs POSITION control with "
                "teleport_mode false (the knots are the optimized positions), received "
                f"{model.control_space.value} teleport_mode={model.config.teleport_mode}"
            )
        if model.config.state_finite_difference_mode != "BACKWARD":
            raise InputValueError(
                "model.state_finite_difference_mode: the retiming and checks use backward "
                f"differences; expected BACKWARD, received "
                f"{model.config.state_finite_difference_mode}"
            )
        dt = model.traj_dt[1:]
        if not bool(torch.allclose(dt, dt[0].expand_as(dt), rtol=1e-6, atol=0.0)):
            raise InputValueError(
                "model.dt_traj_params: the spline interpolation needs a uniform schedule "
                f"(base_ratio 1 or max_dt = base_dt), received traj_dt {model.traj_dt.tolist()}"
            )
        world_size = get_world_size(process_group)
        if world_size > config.num_seeds:
            raise InputValueError(
                f"trajopt.num_seeds: expected at least one seed per rank ({world_size} ranks), "
                f"received {config.num_seeds}"
            )
        self.config = config
        self.process_group = process_group
        self._seed_shard = shard_range(config.num_seeds, get_rank(process_group), world_size)
        self.rollout = rollout
        self.ik_rollout = ik_rollout
        self.lbfgs_config = lbfgs_config
        # the goal-configuration solve is the IK solver's, on the trajopt's IK rollout
        self.ik_solver = IKSolver(
            IKSolverConfig(
                num_seeds=config.ik.num_seeds,
                seed=config.seed,
                position_threshold=config.position_threshold,
                rotation_threshold=config.rotation_threshold,
                stop_after=config.ik.stop_after,
            ),
            ik_rollout,
            ik_lbfgs_config,
        )
        self.tensor_args = rollout.tensor_args
        self.robot_config: RobotConfig = rollout.robot_config
        self.joint_limits = self.robot_config.joint_limits
        self.kinematics = Kinematics(self.robot_config, self.tensor_args)
        self.horizon = rollout.action_horizon
        self.dof = rollout.d_action
        self.plan_dt = float(dt[0])
        self.progress: Callable[[str], None] | None = None
        self._spline = cubic_spline_matrix(self.horizon, self.tensor_args)
        self._gen = torch.Generator(device=self.tensor_args.device)
        self._solvers: dict[tuple[int, int], Lbfgs] = {}
        self._seed_profile = min_jerk_profile(self.horizon, self.tensor_args)

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        task: str | TaskConfig = "gradient_trajopt",
        num_seeds: int | None = 4,
        tensor_args: TensorDeviceType | None = None,
        process_group: Any = None,
        world: WorldCollision | WorldConfig | str | Mapping | None = None,
        use_cuda_graph: bool | None = None,
        **overrides: Any,
    ) -> TrajOptSolver:
        """Build from a robot (bundled name, path or :class:`RobotConfig`) and a task file.

        Args:
            world: obstacles (a :class:`WorldConfig`, a world file or a bundled name; ``None``:
                none until :meth:`update_world`), shared by the trajectory and IK rollouts.
            num_seeds: trajectory seeds per problem (``None``: the task's ``trajopt.num_seeds``).
            tensor_args: device and dtype (default: the robot's).
            process_group: a ``torch.distributed`` group to shard the seeds over: every rank
                builds the same seeds, optimizes its contiguous share, and the best seed per
                problem is chosen from all ranks' results, so every rank returns the same
                result. ``None`` (or no initialized group): single process.
            use_cuda_graph: ``use_cuda_graph`` of both L-BFGS solves, the trajectory's and
                its IK's (``None``: as the task's ``lbfgs`` and ``trajopt.ik.lbfgs`` say).
            overrides: keys of the ``trajopt`` section (e.g. ``interpolation_dt=0.02``,
                ``ik={"num_seeds": 16}``), plus ``model``, ``cost`` and ``lbfgs`` mappings
                merged into those sections of the task (one level deep).
        """
        task = TaskConfig.load(task)
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        if not isinstance(tensor_args, TensorDeviceType):
            raise InputTypeError(
                f"tensor_args: expected TensorDeviceType, received {type(tensor_args).__name__}"
            )
        sections = {key: getattr(task, key) for key in ("model", "cost", "lbfgs")}
        trajopt = dict(task.trajopt or {})
        for key, value in overrides.items():
            if key in sections:
                sections[key] = merge_sections(sections[key], value, key)
            elif key == "ik":
                trajopt["ik"] = merge_sections(trajopt.get("ik"), value, "ik")
            else:
                trajopt[key] = value
        if use_cuda_graph is not None:
            graph = {"use_cuda_graph": use_cuda_graph}
            sections["lbfgs"] = merge_sections(sections["lbfgs"], graph, "lbfgs")
            trajopt["ik"] = merge_sections(trajopt.get("ik"), {"lbfgs": graph}, "ik")
        if num_seeds is not None:
            trajopt["num_seeds"] = num_seeds
        task = replace(task, trajopt=trajopt, **sections)
        try:
            config = TrajOptSolverConfig.from_dict(trajopt)
            lbfgs_config = LbfgsConfig.from_dict(task.lbfgs or {})
            ik_lbfgs_config = LbfgsConfig.from_dict(config.ik.lbfgs)
        except (TypeError, ValueError) as err:
            raise task.error(err) from None
        world_collision = as_world_collision(world, tensor_args)
        rollout = ArmReacher(ArmReacherConfig.from_task(task, robot, tensor_args), world_collision)
        ik = ik_task(task, config.ik)
        try:
            model = KinematicModelConfig.from_dict(ik.model, robot, tensor_args)
        except (TypeError, ValueError) as err:
            raise ik.error(err) from None
        ik_rollout = ArmReacher(
            ArmReacherConfig(model=model, cost=ik.cost, task=ik), world_collision
        )
        try:
            return cls(config, rollout, lbfgs_config, ik_rollout, ik_lbfgs_config, process_group)
        except ValueError as err:
            raise task.error(err) from None

    # --- public API --------------------------------------------------------------------------

    @property
    def cpu_torch_threads(self) -> int | None:
        """torch's threads during a call on a CPU device (the task's
        ``trajopt.cpu_torch_threads``; applied by the guard of every public method)."""
        return self.config.cpu_torch_threads

    @property
    def world_collision(self) -> WorldCollision | None:
        """The obstacles every rollout of this solver checks against (edit them in place with
        its ``add_obstacle``, ``update_obstacle_pose``, ``enable_obstacle``...)."""
        return self.rollout.world_collision

    @exclusive
    def update_world(self, world: WorldConfig | str) -> None:
        """Replace the obstacles (a :class:`WorldConfig`, a world file or a bundled name)."""
        self.rollout.update_world(world)
        if self.ik_rollout.world_collision is not self.rollout.world_collision:
            self.ik_rollout.attach_world(self.rollout.world_collision)

    @exclusive
    def solve_pose(
        self,
        start_state: JointState,
        goal_pose: Pose,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> TrajOptResult:
        """Plan from ``start_state [1, D]`` (or ``[D]``) at rest to the pose ``goal_pose`` (batch
        1). Returns a :class:`TrajOptResult` of batch 1. A start outside the position limits
        is an ``InputValueError`` naming the joint, its value and its limits (every
        ``solve_*``). ``pose_cost_metric`` (every pose ``solve_*``): a
        :class:`PoseCostMetric` for this call: the goal reached along its weighted axes (IK
        and trajectory alike), its held axes held along the plan (checked on every
        interpolated sample: ``hold_error``)."""
        start = self._check_start(start_state)
        if start.position.shape[0] != 1:
            raise InputValueError(
                f"start_state: solve_pose expects one start state [1, {self.dof}], received "
                f"{tuple(start.position.shape)}; use solve_batch_pose for several problems"
            )
        goal = self._check_pose(goal_pose, 1)
        with self._metric(pose_cost_metric):
            return self._solve(start, goal_pose=goal)

    def _metric(self, metric: PoseCostMetric | None) -> AbstractContextManager[None]:
        """The block in which both rollouts follow ``metric`` (:func:`applied_pose_metric`)."""
        return applied_pose_metric([self.rollout, self.ik_rollout], metric)

    @exclusive
    def solve_batch_pose(
        self,
        start_state: JointState,
        goal_pose: Pose,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> TrajOptResult:
        """Plan ``S`` problems at once: ``start_state [S, D]`` (or ``[1, D]``, shared) at rest
        to ``goal_pose`` of batch ``S``. Returns a :class:`TrajOptResult` of batch ``S``."""
        start = self._check_start(start_state)
        if not isinstance(goal_pose, Pose):
            raise InputTypeError(f"goal_pose: expected a Pose, received {type(goal_pose).__name__}")
        n = goal_pose.batch
        if start.position.shape[0] not in (1, n):
            raise InputValueError(
                f"start_state: expected batch 1 or {n} (that of goal_pose), received "
                f"{start.position.shape[0]}"
            )
        goal = self._check_pose(goal_pose, n)
        if start.position.shape[0] == 1 and n > 1:
            start = JointState(start.position.expand(n, -1).clone())
        with self._metric(pose_cost_metric):
            return self._solve(start, goal_pose=goal)

    @exclusive
    def solve_joint(self, start_state: JointState, goal_state: JointState) -> TrajOptResult:
        """Plan from ``start_state [S, D]`` (or ``[1, D]``) at rest to the joint configurations
        ``goal_state [S, D]`` (``[D]`` or ``[1, D]`` for one); only ``goal_state.position`` is
        used. Returns a :class:`TrajOptResult` of batch ``S``."""
        start = self._check_start(start_state)
        goal, n = check_joint_goal(goal_state, len(start), self.dof, self.tensor_args)
        if len(start) != n:
            start = JointState(start.position.expand(n, -1).clone())
        return self._solve(start, goal_config=goal.expand(n, -1).clone())

    @exclusive
    def solve_from_configs(
        self,
        start_state: JointState,
        goal_configs: torch.Tensor,
        goal_pose: Pose | None = None,
        seed_trajectories: torch.Tensor | None = None,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> TrajOptResult:
        """Plan ``S`` problems towards given goal configurations (no IK phase), e.g. the
        solutions of an :class:`~curobo_lite.wrap.IKSolver`.

        Args:
            start_state: ``[S, D]`` at rest (``[1, D]`` is shared).
            goal_configs: ``[S, n, D]`` configurations the ``n`` seeds of each problem are
                aimed at (``n`` is cycled or cut to ``num_seeds``).
            goal_pose: the pose goals (batch ``S``); ``None`` plans to ``goal_configs[:, 0]``
                as a joint goal.
            seed_trajectories: optional ``[S, n, H, D]`` position knots (index 0 the start) to
                start the optimization from instead of straight lines, e.g. a geometric
                planner's path resampled to the horizon.
            pose_cost_metric: as in :meth:`solve_pose` (pose goals only).
        """
        start = self._check_start(start_state)
        configs = check_goal_configs(
            goal_configs, self.config.num_seeds, self.dof, self.tensor_args
        )
        S = configs.shape[0]
        if len(start) not in (1, S):
            raise InputValueError(f"start_state: expected batch 1 or {S}, received {len(start)}")
        if len(start) != S:
            start = JointState(start.position.expand(S, -1).clone())
        if seed_trajectories is not None:
            seed_trajectories = check_seed_trajectories(
                seed_trajectories,
                S,
                self.config.num_seeds,
                self.horizon,
                self.dof,
                self.tensor_args,
            )
        if goal_pose is None:
            return self._solve(
                start, goal_config=configs[:, 0].clone(), seed_trajectories=seed_trajectories
            )
        goal = self._check_pose(goal_pose, S)
        with self._metric(pose_cost_metric):
            return self._solve(
                start, goal_pose=goal, goal_configs=configs, seed_trajectories=seed_trajectories
            )

    # --- validation ----------------------------------------------------------------------------

    def _check_start(self, start_state: Any) -> JointState:
        start = check_joint_state(
            start_state,
            "start_state",
            self.dof,
            self.tensor_args,
            at_rest="trajectory optimization plans from rest",
            rest_tolerance=_REST_TOL,
        )
        check_within_limits(self, start.position, "start_state.position")
        return JointState.from_position(start.position.clone(), self.robot_config.joint_names)

    def _check_pose(self, goal_pose: Any, batch: int) -> Pose:
        return check_pose(goal_pose, "goal_pose", self.tensor_args, batch)

    def __repr__(self) -> str:
        return (
            f"TrajOptSolver(robot={self.robot_config.name!r}, horizon={self.horizon}, "
            f"plan_dt={self.plan_dt:g}, num_seeds={self.config.num_seeds}, ik_seeds="
            f"{self.config.ik.num_seeds}, interpolation={self.config.interpolation} every "
            f"{self.config.interpolation_dt:g} s)"
        )
