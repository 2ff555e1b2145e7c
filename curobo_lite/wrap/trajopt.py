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

The task file's ``trajopt:`` section (keys of :meth:`TrajOptSolverConfig.from_dict`; unknown keys
are an error):

- ``num_seeds`` (int >= 1, default 4): trajectory seeds per problem.
- ``interpolation_dt`` (float > 0, default 0.01): controller period of the interpolated output (s).
- ``interpolation`` (``CUBIC`` | ``LINEAR``, default ``CUBIC``).
- ``position_threshold`` (m, default 0.005), ``rotation_threshold`` (rad, default 0.05),
  ``cspace_threshold`` (rad, default 0.01): success thresholds.
- ``seed_noise`` (rad >= 0, default 0.1): amplitude of the seed perturbations.
- ``seed`` (int >= 0, default 0): seed of every random draw of a solve.
- ``time_margin`` (float >= 0, default 0.05): safety margin of the retiming.
- ``min_dt`` (s > 0, default 0.01): smallest retimed step.
- ``max_retime_iters`` (int >= 0, default 4): corrections after interpolation.
- ``ik``: ``num_seeds`` (int >= 1, default 32), ``cost`` (cost sections, default: the task's
  ``pose_cost`` and a position-only ``bound_cost``), ``lbfgs`` (:class:`LbfgsConfig` keys).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import torch

from curobo_lite.debug import active_session, track_scales
from curobo_lite.distributed import all_gather_with_grad, get_rank, get_world_size, shard_range
from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.opt import Lbfgs, LbfgsConfig, OptResult
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout import ArmReacher, ArmReacherConfig, Goal, TaskConfig
from curobo_lite.rollout.arm_reacher import smallest_clearance
from curobo_lite.rollout.dynamics_model import KinematicModelConfig
from curobo_lite.types import (
    JointState,
    Pose,
    StateType,
    TensorDeviceType,
    check_joint_state,
    check_pose,
    quat_angle_error,
)
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.robot_world import as_world_collision
from curobo_lite.wrap.trajopt_config import (
    INTERPOLATIONS,
    IkConfig,
    TrajOptResult,
    TrajOptSolverConfig,
)
from curobo_lite.wrap.trajopt_timing import (
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


# --------------------------------------------------------------------------------------------------
# the solver


def _merge_sections(base: dict[str, Any] | None, override: Any, name: str) -> dict[str, Any]:
    if not isinstance(override, Mapping):
        raise InputTypeError(
            f"{name}: expected a mapping to merge, received {type(override).__name__}"
        )
    merged = dict(base or {})
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


class TrajOptSolver:
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
        self.ik_lbfgs_config = ik_lbfgs_config
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
        self._solvers: dict[tuple[str, int, int], Lbfgs] = {}
        self._seed_profile = self._min_jerk_profile()

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        task: str | TaskConfig = "gradient_trajopt",
        num_seeds: int | None = 4,
        tensor_args: TensorDeviceType | None = None,
        process_group: Any = None,
        world: WorldCollision | WorldConfig | str | Mapping | None = None,
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
                sections[key] = _merge_sections(sections[key], value, key)
            elif key == "ik":
                trajopt["ik"] = _merge_sections(trajopt.get("ik"), value, "ik")
            else:
                trajopt[key] = value
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
        ik_cost = config.ik.cost
        if ik_cost is None:
            ik_cost = {
                "pose_cost": task.cost.get("pose_cost") or {},
                "bound_cost": {
                    "bound_weight": [1000.0, 0.0, 0.0, 0.0],
                    "activation_distance": [0.01, 0.0, 0.0, 0.0],
                },
            }
            # collision-free goal configurations: the task's collision terms, without sweeping
            # (a horizon-1 rollout has no segments)
            for name in ("primitive_collision_cost", "self_collision_cost"):
                if task.cost.get(name) is not None:
                    section = dict(task.cost[name])
                    section.pop("use_sweep", None)
                    ik_cost[name] = section
        ik_task = TaskConfig(
            name=f"{task.name}.ik",
            model={"horizon": 1, "control_space": "POSITION", "teleport_mode": True},
            cost=ik_cost,
            source=f"{task.source} (trajopt.ik)",
        )
        try:
            model = KinematicModelConfig.from_dict(ik_task.model, robot, tensor_args)
        except (TypeError, ValueError) as err:
            raise ik_task.error(err) from None
        ik_rollout = ArmReacher(
            ArmReacherConfig(model=model, cost=ik_task.cost, task=ik_task), world_collision
        )
        try:
            return cls(config, rollout, lbfgs_config, ik_rollout, ik_lbfgs_config, process_group)
        except ValueError as err:
            raise task.error(err) from None

    # --- public API --------------------------------------------------------------------------

    @property
    def world_collision(self) -> WorldCollision | None:
        """The obstacles every rollout of this solver checks against (edit them in place with
        its ``add_obstacle``, ``update_obstacle_pose``, ``enable_obstacle``...)."""
        return self.rollout.world_collision

    def update_world(self, world: WorldConfig | str) -> None:
        """Replace the obstacles (a :class:`WorldConfig`, a world file or a bundled name)."""
        self.rollout.update_world(world)
        if self.ik_rollout.world_collision is not self.rollout.world_collision:
            self.ik_rollout.attach_world(self.rollout.world_collision)

    def solve_pose(self, start_state: JointState, goal_pose: Pose) -> TrajOptResult:
        """Plan from ``start_state [1, D]`` (or ``[D]``) at rest to the pose ``goal_pose`` (batch
        1). Returns a :class:`TrajOptResult` of batch 1."""
        start = self._check_start(start_state)
        if start.position.shape[0] != 1:
            raise InputValueError(
                f"start_state: solve_pose expects one start state [1, {self.dof}], received "
                f"{tuple(start.position.shape)}; use solve_batch_pose for several problems"
            )
        goal = self._check_pose(goal_pose, 1)
        return self._solve(start, goal_pose=goal)

    def solve_batch_pose(self, start_state: JointState, goal_pose: Pose) -> TrajOptResult:
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
        return self._solve(start, goal_pose=goal)

    def solve_joint(self, start_state: JointState, goal_state: JointState) -> TrajOptResult:
        """Plan from ``start_state [S, D]`` (or ``[1, D]``) at rest to the joint configurations
        ``goal_state [S, D]`` (``[D]`` or ``[1, D]`` for one); only ``goal_state.position`` is
        used. Returns a :class:`TrajOptResult` of batch ``S``."""
        start = self._check_start(start_state)
        if not isinstance(goal_state, JointState):
            raise InputTypeError(f"goal_state: expected a JointState, received {type(goal_state)}")
        goal = goal_state.position
        if goal.ndim == 1:
            goal = goal.unsqueeze(0)
        if goal.ndim != 2 or goal.shape[1] != self.dof:
            raise InputValueError(
                f"goal_state: expected position shape [S, {self.dof}], received "
                f"{tuple(goal_state.position.shape)}"
            )
        goal = goal.to(**self.tensor_args.as_kwargs())
        if not bool(torch.isfinite(goal).all()):
            raise InputValueError("goal_state: position contains NaN or infinite values")
        n = max(goal.shape[0], start.position.shape[0])
        for name, batch in (("goal_state", goal.shape[0]), ("start_state", len(start))):
            if batch not in (1, n):
                raise InputValueError(
                    f"{name}: expected batch 1 or {n} (start and goal batches must match), "
                    f"received {batch}"
                )
        if len(start) != n:
            start = JointState(start.position.expand(n, -1).clone())
        return self._solve(start, goal_config=goal.expand(n, -1).clone())

    def solve_from_configs(
        self,
        start_state: JointState,
        goal_configs: torch.Tensor,
        goal_pose: Pose | None = None,
        seed_trajectories: torch.Tensor | None = None,
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
        """
        start = self._check_start(start_state)
        if not isinstance(goal_configs, torch.Tensor) or goal_configs.ndim != 3:
            raise InputValueError(
                f"goal_configs: expected a tensor [S, n, {self.dof}], received "
                f"{getattr(goal_configs, 'shape', type(goal_configs).__name__)}"
            )
        S, n = goal_configs.shape[0], self.config.num_seeds
        if goal_configs.shape[2] != self.dof or goal_configs.shape[1] < 1:
            raise InputValueError(
                f"goal_configs: expected shape [S, n >= 1, {self.dof}], received "
                f"{tuple(goal_configs.shape)}"
            )
        if len(start) not in (1, S):
            raise InputValueError(f"start_state: expected batch 1 or {S}, received {len(start)}")
        if len(start) != S:
            start = JointState(start.position.expand(S, -1).clone())
        configs = goal_configs.to(**self.tensor_args.as_kwargs())
        if not bool(torch.isfinite(configs).all()):
            raise InputValueError("goal_configs: contains NaN or infinite values")
        configs = configs[:, torch.arange(n, device=configs.device) % configs.shape[1]]
        if seed_trajectories is not None:
            expected = (S, n, self.horizon, self.dof)
            seeds = seed_trajectories.to(**self.tensor_args.as_kwargs())
            if seeds.ndim != 4 or seeds.shape[0] != S or seeds.shape[2:] != expected[2:]:
                raise InputValueError(
                    f"seed_trajectories: expected shape [{S}, n, {self.horizon}, {self.dof}], "
                    f"received {tuple(seed_trajectories.shape)}"
                )
            if not bool(torch.isfinite(seeds).all()):
                raise InputValueError("seed_trajectories: contains NaN or infinite values")
            seed_trajectories = seeds[:, torch.arange(n, device=seeds.device) % seeds.shape[1]]
        if goal_pose is None:
            return self._solve(
                start, goal_config=configs[:, 0].clone(), seed_trajectories=seed_trajectories
            )
        goal = self._check_pose(goal_pose, S)
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
        return JointState.from_position(start.position.clone(), self.robot_config.joint_names)

    def _check_pose(self, goal_pose: Any, batch: int) -> Pose:
        return check_pose(goal_pose, "goal_pose", self.tensor_args, batch)

    # --- phases ----------------------------------------------------------------------------------

    def _report(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def _lbfgs(self, kind: str, config: LbfgsConfig, rollout: ArmReacher, S: int, n: int) -> Lbfgs:
        key = (kind, S, n)
        solver = self._solvers.get(key)
        if solver is None:
            solver = Lbfgs(replace(config, n_problems=S, num_seeds=n), rollout)
            self._solvers[key] = solver
        return solver

    def _uniform_configs(self, shape: tuple[int, ...], margin: float) -> torch.Tensor:
        """Uniform draws inside the position limits shrunk by ``margin`` of the range."""
        low, high = self.joint_limits.position
        span = high - low
        u = torch.rand(*shape, self.dof, generator=self._gen, **self.tensor_args.as_kwargs())
        return low + span * (margin + (1.0 - 2.0 * margin) * u)

    def solve_ik(
        self, start_position: torch.Tensor, goal_pose: Pose, n_select: int
    ) -> tuple[torch.Tensor, torch.Tensor, OptResult]:
        """Goal configurations for pose goals (phase 1 of the module docstring).

        Args:
            start_position: ``[S, D]`` start configurations (also the first IK seed).
            goal_pose: goal poses of batch ``S``.
            n_select: configurations to return per problem.

        Returns:
            ``(configs [S, n_select, D], reached [S, n_select] bool, OptResult)``: ranked
            solutions (within the thresholds first, closest to the start first).
        """
        S, n_ik = start_position.shape[0], self.config.ik.num_seeds
        seeds = self._uniform_configs((S, n_ik), 0.02)
        low, high = self.joint_limits.position
        seeds[:, 0] = torch.maximum(torch.minimum(start_position, high), low)
        if n_ik > 1:
            seeds[:, 1] = self.robot_config.retract_config
        start = JointState.from_position(start_position)
        self.ik_rollout.update_params(Goal(goal_pose=goal_pose), start)
        solver = self._lbfgs("ik", self.ik_lbfgs_config, self.ik_rollout, S, n_ik)
        result = solver.optimize(seeds.reshape(S * n_ik, 1, self.dof))
        q = result.best_action[:, 0]
        with torch.no_grad():
            state = self.ik_rollout.rollout_fn(result.best_action).state
            metrics = self.ik_rollout.convergence(state)
        reached = (metrics.position_error <= self.config.position_threshold) & (
            metrics.rotation_error <= self.config.rotation_threshold
        )
        reached = reached.view(S, n_ik)
        q = q.view(S, n_ik, self.dof)
        distance = ((q - start_position[:, None]).square() * self.robot_config.cspace_weights).sum(
            -1
        )
        cost = result.best_cost.view(S, n_ik)
        # reached solutions first (nearest the start first), the rest after them by cost
        order_key = torch.where(
            reached, distance, distance.new_full((), 1e6) + cost.clamp(max=1e12)
        )
        order = order_key.argsort(dim=1)
        picks = order[:, torch.arange(n_select, device=order.device) % n_ik]
        configs = q.gather(1, picks[..., None].expand(-1, -1, self.dof))
        return configs, reached.gather(1, picks), result

    def _min_jerk_profile(self) -> torch.Tensor:
        """``[H]`` fraction of the way at each step (``s = 10t³ - 15t⁴ + 6t⁵``, ``t = h/(H-1)``)."""
        t = torch.linspace(0.0, 1.0, self.horizon, **self.tensor_args.as_kwargs())
        return t**3 * (10.0 - 15.0 * t + 6.0 * t * t)

    def make_seeds(self, start_position: torch.Tensor, goal_configs: torch.Tensor) -> torch.Tensor:
        """Action seeds ``[S * n, H, D]`` from ``start_position [S, D]`` to ``goal_configs
        [S, n, D]`` (phase 2 of the module docstring), projected into the position limits.

        With POSITION control the action at step ``h`` sets the position of step ``h+1``, so the
        seed's action ``h`` is the interpolated configuration ``h+1`` (the last repeats the goal).
        """
        S, n, D = goal_configs.shape
        s = self._seed_profile
        path = start_position[:, None, None] + s[None, None, :, None] * (
            goal_configs[:, :, None] - start_position[:, None, None]
        )  # [S, n, H, D], path[..., 0, :] = start
        noise = torch.randn(S, n, 1, D, generator=self._gen, **self.tensor_args.as_kwargs())
        noise[:, 0] = 0.0
        bump = torch.sin(
            math.pi * torch.linspace(0.0, 1.0, self.horizon, **self.tensor_args.as_kwargs())
        )
        path = path + self.config.seed_noise * noise * bump[None, None, :, None]
        act = torch.cat((path[:, :, 1:], path[:, :, -1:]), dim=2)
        low, high = self.joint_limits.position
        return torch.maximum(torch.minimum(act, high), low).reshape(S * n, self.horizon, D)

    def retime(self, knots: torch.Tensor) -> torch.Tensor:
        """``[B]`` retimed step for knot trajectories ``[B, H, D]`` optimized at the task's
        ``dt`` (phase 4): cuRobo's scale factor with ``time_margin``, at least ``min_dt``, the
        duration rounded up to whole ``interpolation_dt`` steps."""
        cfg = self.config
        plan_dt = torch.full((knots.shape[0],), self.plan_dt, **self.tensor_args.as_kwargs())
        v, a, j = backward_differences(knots, plan_dt)
        scale = time_scale(v, a, j, self.joint_limits) * (1.0 + cfg.time_margin)
        return self._round_dt(torch.clamp(plan_dt * scale, min=cfg.min_dt))

    def _round_dt(self, dt: torch.Tensor) -> torch.Tensor:
        idt, segments = self.config.interpolation_dt, self.horizon - 1
        n = torch.ceil(segments * dt / idt - 1e-6).clamp(min=1)
        return n * idt / segments

    def _interpolated_scale(self, interp: Interpolated) -> torch.Tensor:
        """``[B]`` time-scale factor of an interpolated batch (spline derivatives, knot
        accelerations and backward differences of the samples)."""
        limits = self.joint_limits
        state = interp.state
        scale = time_scale(state.velocity, state.acceleration, state.jerk, limits)
        idt = torch.full(
            (state.position.shape[0],), self.config.interpolation_dt, **self.tensor_args.as_kwargs()
        )
        v, a, _ = backward_differences(state.position, idt)
        scale = torch.maximum(scale, time_scale(v, a, None, limits))
        if interp.knot_acceleration is not None:
            scale = torch.maximum(scale, time_scale(None, interp.knot_acceleration, None, limits))
        return scale

    def interpolate_trajectory(
        self, knots: torch.Tensor, dt: torch.Tensor
    ) -> tuple[Interpolated, torch.Tensor, int]:
        """Interpolate ``knots [B, H, D]`` at step ``dt [B]`` and correct ``dt`` until the samples
        respect the limits with the time margin (phase 5).

        Returns ``(interpolated, dt [B], corrections made)``.
        """
        cfg = self.config
        target = 1.0 / (1.0 + cfg.time_margin)
        iterations = 0
        while True:
            interp = interpolate(knots, dt, cfg.interpolation_dt, cfg.interpolation, self._spline)
            scale = self._interpolated_scale(interp)
            over = scale > target * (1.0 + 1e-6)
            if iterations >= cfg.max_retime_iters or not bool(over.any()):
                return interp, dt, iterations
            grown = self._round_dt(dt * scale / target)
            dt = torch.where(over, torch.maximum(grown, dt), dt)
            iterations += 1

    # --- the solve -------------------------------------------------------------------------------

    def _solve(
        self,
        start: JointState,
        goal_pose: Pose | None = None,
        goal_config: torch.Tensor | None = None,
        goal_configs: torch.Tensor | None = None,
        seed_trajectories: torch.Tensor | None = None,
    ) -> TrajOptResult:
        """Phases 1-6 for ``S`` problems: a pose goal (``goal_pose``, batch ``S``) or a joint
        goal (``goal_config [S, D]``). Given ``goal_configs [S, n, D]`` (pose goals) the IK
        phase is skipped; given ``seed_trajectories [S, n, H, D]`` they replace the straight
        seeds."""
        t_start = time.perf_counter()
        S, n, D = len(start), self.config.num_seeds, self.dof
        self._gen.manual_seed(self.config.seed)
        timings: dict[str, float] = {}
        debug: dict[str, Any] = {}
        t0 = time.perf_counter()
        if goal_pose is not None:
            if goal_configs is None:
                goal_configs = self._ik_phase(start.position, goal_pose, debug)
                timings["ik"] = time.perf_counter() - t0
            goal = Goal(goal_pose=goal_pose)
        else:
            goal_configs = goal_config[:, None].expand(S, n, D)
            fk = self.kinematics.forward(goal_config, spheres=False)
            goal_pose = Pose(fk.ee_position, fk.ee_quaternion)
            goal = Goal(goal_state=JointState.from_position(goal_config))

        t0 = time.perf_counter()
        knots, chosen_goal = self._trajopt_phase(
            start, goal, goal_configs, goal_config, debug, seed_trajectories
        )
        timings["trajopt"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        with torch.no_grad():
            dt = self.retime(knots)
            interp, dt, debug["retime_iterations"] = self.interpolate_trajectory(knots, dt)
            names = self.robot_config.joint_names
            solution = JointState(knots, *backward_differences(knots, dt), joint_names=names)
            istate = interp.state
            interpolated = JointState(
                istate.position, istate.velocity, istate.acceleration, istate.jerk, names
            )
            violation = self._violations(interp)
            final = knots[:, -1]
            fk = self.kinematics.forward(final, spheres=False)
            position_error = (fk.ee_position - goal_pose.position).norm(dim=-1)
            rotation_error = quat_angle_error(fk.ee_quaternion, goal_pose.quaternion, eps=0.0)
            target = goal_config if goal_config is not None else chosen_goal
            cspace_error = (final - target).norm(dim=-1)
            if goal_config is not None:
                goal_ok = cspace_error <= self.config.cspace_threshold
            else:
                goal_ok = (position_error <= self.config.position_threshold) & (
                    rotation_error <= self.config.rotation_threshold
                )
            limits_ok = torch.ones_like(goal_ok)
            for name in ("position", "velocity", "acceleration"):
                limits_ok &= violation[name] <= 0.0
            world_distance, self_distance = self.rollout.collision_distances(
                self.kinematics.forward(istate.position).link_spheres, swept=True
            )
            min_distance = smallest_clearance(world_distance, self_distance)
            collision_free = None if min_distance is None else min_distance >= 0.0
            success = goal_ok & limits_ok
            if collision_free is not None:
                success &= collision_free
        timings["interpolation"] = time.perf_counter() - t0
        solve_time = time.perf_counter() - t_start
        self._report(
            f"retime + interpolation: dt {_fmt_range(dt)} s, {int(interp.last_index.max()) + 1} "
            f"samples every {self.config.interpolation_dt:g} s, "
            f"{timings['interpolation']:.3f} s; success {int(success.sum())}/{S}"
        )
        return TrajOptResult(
            success=success,
            position_error=position_error,
            rotation_error=rotation_error,
            cspace_error=cspace_error,
            solution=solution,
            interpolated_solution=interpolated,
            interpolated_last_index=interp.last_index,
            interpolation_dt=self.config.interpolation_dt,
            optimized_dt=dt,
            solve_time=solve_time,
            goal_state=target,
            limit_violation=violation,
            status=_status(goal_ok, violation, collision_free),
            collision_free=collision_free,
            min_distance=min_distance,
            world_distance=world_distance,
            self_distance=self_distance,
            timings=timings,
            debug=debug,
        )

    def _ik_phase(
        self, start_position: torch.Tensor, goal_pose: Pose, debug: dict[str, Any]
    ) -> torch.Tensor:
        """Goal configurations ``[S, num_seeds, D]`` for pose goals (IK)."""
        S, n = start_position.shape[0], self.config.num_seeds
        if active_session() is None:
            configs, reached, result = self.solve_ik(start_position, goal_pose, n)
        else:
            # keep the IK's cost terms out of the caller's scale-tracking session
            with track_scales() as ik_session:
                configs, reached, result = self.solve_ik(start_position, goal_pose, n)
            debug["ik_scales"] = ik_session
        debug["ik_success"] = reached[:, 0]
        debug["ik_iterations"] = result.n_iters
        self._report(
            f"ik: {S} problem(s) x {self.config.ik.num_seeds} seeds, {result.n_iters} "
            f"iterations, {int(reached[:, 0].sum())}/{S} reached"
        )
        return configs

    def _trajopt_phase(
        self,
        start: JointState,
        goal: Goal,
        goal_configs: torch.Tensor,
        goal_config: torch.Tensor | None,
        debug: dict[str, Any],
        seed_trajectories: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Batched L-BFGS from the seeds; returns the chosen knots ``[S, H, D]`` (index 0 the
        start) and the goal configuration each was seeded towards ``[S, D]``."""
        S, n = len(start), self.config.num_seeds
        # every rank builds all seeds (same generator) and optimizes its own share of them
        first, last = self._seed_shard
        n_local = last - first
        if seed_trajectories is None:
            seeds = self.make_seeds(start.position, goal_configs)
        else:
            # knots 1..H-1 are the actions (POSITION control), the last repeats the goal
            low, high = self.joint_limits.position
            act = torch.cat((seed_trajectories[:, :, 1:], seed_trajectories[:, :, -1:]), dim=2)
            seeds = torch.maximum(torch.minimum(act, high), low)
        seeds = seeds.view(S, n, self.horizon, self.dof)[:, first:last].reshape(
            -1, self.horizon, self.dof
        )
        self.rollout.update_params(goal, start)
        solver = self._lbfgs("trajopt", self.lbfgs_config, self.rollout, S, n_local)
        result = solver.optimize(seeds)
        with torch.no_grad():
            rolled = self.rollout.rollout_fn(result.best_action)
            metrics = self.rollout.convergence(rolled.state)
            feasible = self._reached(metrics, goal_config)
            feasible &= metrics.limit_violation["position"] <= 1e-6
            if metrics.collision_free is not None:
                feasible &= metrics.collision_free
            feasible = self._gather_seeds(feasible.view(S, n_local))
            cost = self._gather_seeds(result.best_cost.view(S, n_local))
            positions = self._gather_seeds(
                rolled.state.state_seq.position.view(S, n_local, self.horizon, self.dof)
            )
            # the cheapest feasible seed; the cheapest of all where none is feasible
            eligible = feasible | ~feasible.any(dim=1, keepdim=True)
            seed_index = torch.where(eligible, cost, torch.full_like(cost, math.inf)).argmin(1)
            rows = torch.arange(S, device=seed_index.device)
            knots = torch.cat((start.position[:, None], positions[rows, seed_index, 1:]), 1)
        debug.update(
            seed_index=seed_index,
            trajopt_iterations=result.n_iters,
            best_cost=cost[rows, seed_index],
        )
        self._report(
            f"trajopt: {S} problem(s) x {n} seeds, {result.n_iters} iterations, "
            f"{int(feasible.any(dim=1).sum())}/{S} reached"
        )
        return knots, goal_configs[rows, seed_index]

    def _gather_seeds(self, local: torch.Tensor) -> torch.Tensor:
        """``[S, n_local, ...]`` per-rank seed results to ``[S, n, ...]`` (seed order kept)."""
        if local.shape[1] == self.config.num_seeds:
            return local
        # bool is not a collective dtype on every backend: gather flags as bytes
        send = local.to(torch.uint8) if local.dtype == torch.bool else local
        gathered = all_gather_with_grad(send.transpose(0, 1).contiguous(), self.process_group)
        gathered = gathered.transpose(0, 1)
        return gathered.bool() if local.dtype == torch.bool else gathered

    def _reached(self, metrics: Any, goal_config: torch.Tensor | None) -> torch.Tensor:
        cfg = self.config
        if goal_config is None:
            return (metrics.position_error <= cfg.position_threshold) & (
                metrics.rotation_error <= cfg.rotation_threshold
            )
        return metrics.cspace_error <= cfg.cspace_threshold

    def _violations(self, interp: Interpolated) -> dict[str, torch.Tensor]:
        """Largest excess over the limits of the interpolated samples: the spline's derivatives
        and the backward differences of the sampled positions."""
        state, limits = interp.state, self.joint_limits
        idt = torch.full(
            (state.position.shape[0],), self.config.interpolation_dt, **self.tensor_args.as_kwargs()
        )
        v, a, _ = backward_differences(state.position, idt)
        out = {"position": limit_excess(state.position, limits.position)}
        out["velocity"] = torch.maximum(
            limit_excess(state.velocity, limits.velocity), limit_excess(v, limits.velocity)
        )
        out["acceleration"] = torch.maximum(
            limit_excess(state.acceleration, limits.acceleration),
            limit_excess(a, limits.acceleration),
        )
        out["jerk"] = limit_excess(state.jerk, limits.jerk)
        return out

    def __repr__(self) -> str:
        return (
            f"TrajOptSolver(robot={self.robot_config.name!r}, horizon={self.horizon}, "
            f"plan_dt={self.plan_dt:g}, num_seeds={self.config.num_seeds}, ik_seeds="
            f"{self.config.ik.num_seeds}, interpolation={self.config.interpolation} every "
            f"{self.config.interpolation_dt:g} s)"
        )


def _status(
    goal_ok: torch.Tensor,
    violation: dict[str, torch.Tensor],
    collision_free: torch.Tensor | None = None,
) -> list[str]:
    """Per problem ``"success"`` or the reasons of the failure."""
    status = []
    for b in range(goal_ok.shape[0]):
        reasons = [] if bool(goal_ok[b]) else ["goal not reached"]
        bad = [q for q in ("position", "velocity", "acceleration") if violation[q][b] > 0]
        if bad:
            reasons.append("limits violated: " + ", ".join(bad))
        if collision_free is not None and not bool(collision_free[b]):
            reasons.append("in collision")
        status.append("; ".join(reasons) if reasons else "success")
    return status


def _fmt_range(t: torch.Tensor) -> str:
    lo, hi = float(t.min()), float(t.max())
    return f"{lo:.4f}" if math.isclose(lo, hi) else f"{lo:.4f}..{hi:.4f}"
