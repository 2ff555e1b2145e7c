"""Collision-free inverse kinematics: many seeds per goal, batched L-BFGS, ranked solutions.

:class:`IKSolver` finds joint configurations whose end effector reaches a goal pose, for ``S``
goals at once. Per goal it optimizes ``num_seeds`` configurations in one batch (the caller's
seed configurations first, then the retract configuration, then draws from a scrambled Sobol
sequence inside the position limits) with batched L-BFGS over a horizon-1 rollout whose costs
are the pose error, the position limits and, for a robot with collision spheres, the world and
self-collision penalties. A solution succeeds when it is within ``position_threshold`` m and
``rotation_threshold`` rad of the goal, inside the position limits and collision-free (by the
signed-distance check, not by the penalty). Solutions are ranked (successful ones first, among
them the precise ones — within a quarter of both thresholds — first, nearest the
``rank_config`` — by default the retract configuration — first) and de-duplicated
(``distinct_tolerance`` rad).

Options (keyword arguments of :meth:`IKSolver.from_config`, validated by
:class:`IKSolverConfig`):

- ``num_seeds`` (int >= 1, default 32), ``seed`` (int, default 0: every solve draws the same
  seeds), ``position_threshold`` (m, 0.005), ``rotation_threshold`` (rad, 0.05),
  ``distinct_tolerance`` (rad, 0.05), ``limit_margin`` (fraction of each joint range kept clear
  by the seeds, 0.02), ``stop_after`` (int >= 0, default 0: off): stop a goal's solve once this
  many of its seeds are precise (within a quarter of both thresholds), collision-free and
  within the limits, checked with the L-BFGS convergence checks; ``dls_iterations`` (int >= 0,
  default 0: off): first take this many damped least-squares steps on the pose alone
  (:mod:`curobo_lite.wrap.ik.dls`, quadratic convergence, no collision terms; joints at a
  limit held where descent pushes them out, the error weighed by the thresholds) from every seed
  (``dls_seeds``, default 0: ``num_seeds``; more are cheap in this phase, and the L-BFGS
  phase takes the first ``num_seeds`` of them); ``dls_chunk``, ``dls_enough`` (ints, default
  0: off): the pose phase first runs the first ``dls_chunk`` seeds, and only the goals with
  fewer than ``dls_enough`` distinct successful solutions run the rest (a pose phase step
  costs about as much for 32 seeds as for 128 on a CPU: the whole batch pays it once);
  when every goal then has ``max(1, stop_after)`` precise, collision-free solutions, the solve
  ends there, else the L-BFGS phase runs from the same seeds for the goals left
  (``lbfgs_fallback``, default true; false: the pose phase's result is the answer);
- ``cost``: cost sections (default: :data:`DEFAULT_IK_COST`; given sections replace the
  defaults, so a cost left out is off); ``lbfgs``: :class:`LbfgsConfig` keys, merged over
  :data:`DEFAULT_IK_LBFGS` (``lbfgs={"n_iters": 20}`` keeps the IK's line search and stop rule);
- ``cpu_torch_threads`` (int >= 1 or null, default 1): torch's threads during a solve on a CPU
  device, Warp's row-parallel kernels on torch's own (null: torch's setting;
  :func:`~curobo_lite.kernels.launch.torch_cpu_threads`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.opt import Lbfgs, LbfgsConfig
from curobo_lite.opt.lbfgs import lbfgs_for_batch
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout import ArmReacher, ArmReacherConfig, Goal, ReachCriteria, TaskConfig
from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.rollout.dynamics_model import KinematicModelConfig
from curobo_lite.types import JointState, Pose, TensorDeviceType, check_data_device, check_pose
from curobo_lite.types.checks import parse_number
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.base.offenders import check_within_limits
from curobo_lite.wrap.base.pose_metric import (
    active_metric,
    applied_pose_metric,
    check_pose_metric,
)
from curobo_lite.wrap.ik.config import GOALSET_MIN_SEEDS, IKSolverConfig
from curobo_lite.wrap.ik.dls import dls_steps
from curobo_lite.wrap.ik.ranking import full_turn_joints, nearest_turns, ranking_metrics
from curobo_lite.wrap.ik.result import (
    TIER,
    IKResult,
    distinct_rows,
    goalset_result,
    merge_results,
)

#: largest joint step (rad) of one damped least-squares step of the pose phase: seeds start
#: radians from a solution; with the joints at a limit held, 0.5 rad per step converges about
#: 2.5 times as many MBM seeds within 16 steps as 0.2 (0.8 and more lose some poses at a limit)
DLS_MAX_STEP = 0.5

#: ranking: a solution within this fraction of both thresholds counts as precise
_PRECISE = 0.25


class IKSolver:
    """Batched, collision-free inverse kinematics. Build with :meth:`from_config`.

    Args:
        config: :class:`IKSolverConfig`.
        rollout: a horizon-1 ``teleport_mode`` :class:`ArmReacher` with the IK costs.
        lbfgs_config: the solver's options (default: from ``config.lbfgs``).
    """

    def __init__(
        self, config: IKSolverConfig, rollout: ArmReacher, lbfgs_config: LbfgsConfig | None = None
    ) -> None:
        model = rollout.dynamics_model
        if model.horizon != 1 or not model.config.teleport_mode:
            raise InputValueError(
                "rollout: IK needs a horizon-1 teleport_mode rollout, received horizon "
                f"{model.horizon}, teleport_mode {model.config.teleport_mode}"
            )
        self.config = config
        self.rollout = rollout
        self.robot_config: RobotConfig = rollout.robot_config
        self.tensor_args = rollout.tensor_args
        self.dof = rollout.d_action
        self.lbfgs_config = lbfgs_config or LbfgsConfig.from_dict(config.lbfgs)
        self._solvers: dict[tuple[int, int], Lbfgs] = {}
        self._sobol = torch.quasirandom.SobolEngine(self.dof, scramble=True, seed=config.seed)
        full_turn = full_turn_joints(model.kinematics)
        # read once: no device sync per solve for the robots that have none (most)
        self._full_turn = full_turn if bool(full_turn.any()) else None
        # "precise": within a quarter of both thresholds, in the limits and collision-free; it
        # ranks solutions and, with stop_after, ends the solve
        self._precise = ReachCriteria(
            _PRECISE * config.position_threshold,
            _PRECISE * config.rotation_threshold,
            math.inf,
            0.0,
        )

    @classmethod
    def from_config(
        cls,
        robot: str | RobotConfig = "franka",
        world: WorldCollision | WorldConfig | str | None = None,
        tensor_args: TensorDeviceType | None = None,
        **options: Any,
    ) -> IKSolver:
        """From a robot (bundled name, path or :class:`RobotConfig`), a world (a
        :class:`WorldCollision` to share, a :class:`WorldConfig`, a world file, a bundled name
        or ``None``) and the options of the module docstring."""
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        tensor_args = tensor_args or robot.tensor_args
        config = IKSolverConfig.from_dict(options)
        task = TaskConfig(
            name="ik",
            model={"horizon": 1, "control_space": "POSITION", "teleport_mode": True},
            cost=config.cost,
            source="<IKSolver options>",
        )
        try:
            model = KinematicModelConfig.from_dict(task.model, robot, tensor_args)
        except (TypeError, ValueError) as err:
            raise task.error(err) from None
        if world is None:
            world = WorldCollision(None, tensor_args)
        rollout = ArmReacher(ArmReacherConfig(model=model, cost=task.cost, task=task), world)
        return cls(config, rollout)

    @property
    def cpu_torch_threads(self) -> int | None:
        """torch's threads during a call on a CPU device (applied by the guard of every public
        method)."""
        return self.config.cpu_torch_threads

    @property
    def world_collision(self) -> WorldCollision | None:
        return self.rollout.world_collision

    @exclusive
    def update_world(self, world: WorldConfig | str) -> None:
        """Replace the obstacles (in place, shared with every solver using the same world)."""
        self.rollout.update_world(world)

    # --- solving ---------------------------------------------------------------------------------

    @exclusive
    def solve_single(
        self,
        goal_pose: Pose,
        seed_config: torch.Tensor | None = None,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> IKResult:
        """One goal pose (batch 1); ``seed_config [k, D]`` optional first seeds;
        ``pose_cost_metric``: a partial goal for this call (see :meth:`solve_batch`)."""
        if not isinstance(goal_pose, Pose):
            raise InputTypeError(
                f"goal_pose: expected a Pose of batch 1, received {type(goal_pose).__name__}"
            )
        if goal_pose.batch != 1:
            raise InputValueError(
                f"goal_pose: expected a Pose of batch 1, received {goal_pose.batch}"
            )
        if seed_config is not None and not isinstance(seed_config, torch.Tensor):
            raise InputTypeError(
                f"seed_config: expected a tensor [k, D], received {type(seed_config).__name__}"
            )
        if seed_config is not None and seed_config.ndim == 2:
            seed_config = seed_config[None]
        return self.solve_batch(goal_pose, seed_config, pose_cost_metric=pose_cost_metric)

    @exclusive
    def solve_batch(
        self,
        goal_pose: Pose,
        seed_config: torch.Tensor | None = None,
        rank_config: torch.Tensor | None = None,
        lbfgs_fallback: bool | None = None,
        num_seeds: int | None = None,
        dls_seeds: int | None = None,
        pose_cost_metric: PoseCostMetric | None = None,
        dls_rotation_weight: float | None = None,
    ) -> IKResult:
        """``S`` goal poses at once.

        Args:
            goal_pose: goals of batch ``S``.
            seed_config: optional ``[S, k, D]`` configurations tried first (e.g. the current
                state), ``k <= num_seeds``, within the position limits (a seed outside them
                is an ``InputValueError`` naming the joint, its value and its limits).
            rank_config: ``[S, D]`` or ``[D]`` configuration the successful solutions are ranked
                by joint-space distance to (default: the retract configuration). A revolute
                joint with a full turn of range or more ends at the whole-turn equivalent of
                its solution nearest to it (the same pose), e.g. a UR5e's ``+-2 pi`` joints.
            lbfgs_fallback: this call's ``lbfgs_fallback`` (default: the configured one).
            num_seeds, dls_seeds: this call's seeds per goal of the L-BFGS and of the pose
                phase (default: the configured ones).
            pose_cost_metric: a :class:`PoseCostMetric` for this call: only the axes of its
                ``reach_vec_weight`` (goal frame) are driven and judged, a free axis ends
                where it may (holds need a trajectory: the IK ignores them).
            dls_rotation_weight: this call's weight (m per rad) of the rotation error against
                the position error in the pose phase (default: ``position_threshold /
                rotation_threshold``). A pose out of exact reach ends at another compromise
                within the thresholds under another weight (:mod:`curobo_lite.wrap.ik.dls`).
        """
        weight = self.config.position_threshold / self.config.rotation_threshold
        if dls_rotation_weight is not None:
            weight = parse_number(
                dls_rotation_weight, "dls_rotation_weight", low=0.0, low_open=True
            )
        with applied_pose_metric([self.rollout], pose_cost_metric):
            return self._solve_batch(
                goal_pose, seed_config, rank_config, lbfgs_fallback, num_seeds, dls_seeds, weight
            )

    def _solve_batch(
        self,
        goal_pose: Pose,
        seed_config: torch.Tensor | None,
        rank_config: torch.Tensor | None,
        lbfgs_fallback: bool | None,
        num_seeds: int | None,
        dls_seeds: int | None,
        rotation_weight: float,
    ) -> IKResult:
        t_start = time.perf_counter()
        goal = self._check_pose(goal_pose)
        n = self.config.num_seeds
        if num_seeds is not None:
            n = parse_number(num_seeds, "num_seeds", integer=True, low=1)
        dls = self.config.dls_seeds
        if dls_seeds is not None:
            dls = parse_number(dls_seeds, "dls_seeds", integer=True, low=0)
        S, D = goal.batch, self.dof
        n_dls = max(n, dls)
        seeds = self._seeds(S, seed_config, n_dls if self.config.dls_iterations > 0 else n)
        rank_config = self._check_rank_config(S, rank_config)
        found = None
        todo = torch.arange(S, device=seeds.device)
        if self.config.dls_iterations > 0:
            found = self._pose_phase(goal, seeds, rank_config, t_start, rotation_weight, n)
            done = found.solutions_precise.sum(dim=1) >= max(1, self.config.stop_after)
            if lbfgs_fallback is None:
                lbfgs_fallback = self.config.lbfgs_fallback
            if bool(done.all()) or not lbfgs_fallback:
                return found
            # the goals left run the L-BFGS phase, from the seeds (a pose solution in contact
            # is a worse start for the collision terms than the seed it came from)
            todo = (~done).nonzero()[:, 0]
            goal = Pose(goal.position[todo], goal.quaternion[todo])
        T = todo.shape[0]
        self._set_goal(goal)
        solver = self._solver(T, n)
        result = solver.optimize(
            seeds[todo, :n].reshape(T * n, 1, D), stop_check=self._stop_check(T, n)
        )
        solved = self._ranked(
            result.best_action[:, 0],
            result.best_cost,
            T,
            n,
            rank_config[todo],
            t_start,
            self.config.dls_iterations + result.n_iters,
        )
        if found is None:
            return solved
        # goals the L-BFGS phase did not solve either keep the pose phase's ranking: its
        # seeds reach the pose exactly, the best telling what they touch
        keep = solved.success
        return merge_results(found, solved, todo, keep)

    def _pose_phase(
        self,
        goal: Pose,
        seeds: torch.Tensor,
        rank_config: torch.Tensor,
        t_start: float,
        rotation_weight: float,
        keep: int,
    ) -> IKResult:
        """The pose phase's ranked result for ``goal`` (batch ``S``) from ``seeds [S, m, D]``:
        the first ``dls_chunk`` seeds, then (when on) the rest for the goals with fewer than
        ``dls_enough`` distinct successful solutions; ``keep`` as in :meth:`_ranked`."""
        S, m, D = seeds.shape
        chunk, enough = self.config.dls_chunk, self.config.dls_enough
        first = m if chunk == 0 or enough == 0 else min(m, max(chunk, keep))
        q = self._pose_steps(goal, seeds[:, :first], rotation_weight)
        iterations = self.config.dls_iterations
        found = self._ranked(q, None, S, first, rank_config, t_start, iterations, keep=keep)
        more = [s for s in range(S) if found.distinct_solutions[s].shape[0] < enough]
        if first == m or not more:
            return found
        rows = torch.tensor(more, device=seeds.device)
        goal = Pose(goal.position[rows], goal.quaternion[rows])
        rest = self._pose_steps(goal, seeds[rows, first:], rotation_weight)
        q = torch.cat((q.view(S, first, D)[rows], rest.view(len(more), m - first, D)), 1)
        solved = self._ranked(
            q.view(-1, D), None, len(more), m, rank_config[rows], t_start, iterations, keep=keep
        )
        return merge_results(found, solved, rows, torch.ones_like(rows, dtype=torch.bool))

    def _pose_steps(self, goal: Pose, seeds: torch.Tensor, rotation_weight: float) -> torch.Tensor:
        """``[S * m, D]``: the pose phase's damped least-squares steps from ``seeds [S, m, D]``
        toward ``goal`` (batch ``S``, set as the rollout's goal for the ranking)."""
        S, m, D = seeds.shape
        self._set_goal(goal)
        metric = active_metric(self.rollout.pose_cost_metric, self.tensor_args)
        return dls_steps(
            self.rollout.dynamics_model.kinematics,
            seeds.reshape(S * m, D),
            goal.position.repeat_interleave(m, 0),
            goal.quaternion.repeat_interleave(m, 0),
            self.config.dls_iterations,
            axes=None if metric is None else metric.reach_mask,
            project=True if metric is None else metric.project,
            # a pose reachable only at a joint limit, within the thresholds: converge there
            rotation_weight=rotation_weight,
            lock_limits=True,
            max_step=DLS_MAX_STEP,
        )

    @exclusive
    def solve_goalset(
        self,
        goal_poses: Pose,
        seed_config: torch.Tensor | None = None,
        rank_config: torch.Tensor | None = None,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> IKResult:
        """The best reachable pose of a goal set, e.g. the grasps of one object: one problem,
        ``G`` poses ``goal_poses [G]``, solved together in about the time of one.

        The seeds are shared out: each pose gets :meth:`goalset_seeds` (the L-BFGS's
        ``num_seeds`` and the pose phase's ``dls_seeds`` divided by ``G``, at least
        :data:`GOALSET_MIN_SEEDS`), and the L-BFGS phase runs only when the pose phase reached
        none of the poses. The solution is the best over the set, ranked as within one goal
        (precise first, then nearest ``rank_config``).

        Args:
            goal_poses: the set, a :class:`Pose` of batch ``G``.
            seed_config: optional ``[k, D]`` (or ``[1, k, D]``) first seeds, tried for every
                pose of the set.
            rank_config: ``[D]`` (or ``[1, D]``) configuration to rank by (default: retract).
            pose_cost_metric: a partial goal for every pose of the set (see
                :meth:`solve_batch`).

        Returns:
            An :class:`IKResult` of batch 1 (``solutions`` and ``distinct_solutions``: those
            of the chosen pose) with ``goalset_index [1]`` and ``goalset_success [1, G]``.
        """
        goal = check_pose(goal_poses, "goal_poses", self.tensor_args)
        G, D = goal.batch, self.dof
        rank = self._check_rank_config(1, rank_config)[0]
        if seed_config is not None:
            if not isinstance(seed_config, torch.Tensor):
                raise InputTypeError(
                    f"seed_config: expected a tensor [k, {D}], received "
                    f"{type(seed_config).__name__}"
                )
            if seed_config.ndim == 2:
                seed_config = seed_config[None]
            if seed_config.ndim != 3 or seed_config.shape[0] != 1:
                raise InputValueError(
                    f"seed_config: expected shape [k, {D}] or [1, k, {D}], received "
                    f"{tuple(seed_config.shape)}"
                )
            seed_config = seed_config.expand(G, -1, -1)
        n, dls = self.goalset_seeds(G)
        seeds = dict(
            seed_config=seed_config,
            rank_config=rank,
            num_seeds=n,
            dls_seeds=dls,
            pose_cost_metric=check_pose_metric(pose_cost_metric),
        )
        fallback = self.config.lbfgs_fallback and self.config.dls_iterations > 0
        result = self.solve_batch(goal, lbfgs_fallback=False if fallback else None, **seeds)
        if fallback and not bool(result.success.any()):
            result = self.solve_batch(goal, lbfgs_fallback=True, **seeds)
        return goalset_result(result, rank)

    def goalset_seeds(self, G: int) -> tuple[int, int]:
        """Seeds per pose ``(num_seeds, dls_seeds)`` of a set of ``G`` poses."""
        n = max(min(GOALSET_MIN_SEEDS[0], self.config.num_seeds), -(-self.config.num_seeds // G))
        dls = max(self.config.dls_seeds, self.config.num_seeds)
        return n, max(GOALSET_MIN_SEEDS[1], -(-dls // G))

    def _set_goal(self, goal: Pose) -> None:
        self.rollout.update_params(
            Goal(goal_pose=goal),
            JointState.from_position(
                self.robot_config.retract_config.expand(goal.batch, self.dof).clone()
            ),
        )

    def _ranked(
        self,
        q: torch.Tensor,
        cost: torch.Tensor | None,
        S: int,
        n: int,
        rank_config: torch.Tensor,
        t_start: float,
        iterations: int,
        keep: int | None = None,
    ) -> IKResult:
        """The :class:`IKResult` of the solutions ``q [S * n, D]`` (``cost [S * n]`` ranks the
        failures; ``None``: their pose error); ``keep``: the per-seed tensors hold the best
        ``keep`` of the ``n`` (the distinct solutions come from all)."""
        D = self.dof
        with torch.no_grad():
            low, high = self.robot_config.joint_limits.position.to(q)
            if self._full_turn is not None:
                q = nearest_turns(q.view(S, n, D), rank_config, self._full_turn, low, high)
                q = q.view(S * n, D)
            # clearances only where they can decide: the rows that reach the pose
            thresholds = (self.config.position_threshold, self.config.rotation_threshold)
            metrics = ranking_metrics(self.rollout, q, S, n, thresholds, cost)
            ok = (metrics.position_error <= self.config.position_threshold) & (
                metrics.rotation_error <= self.config.rotation_threshold
            )
            ok &= ((q >= low) & (q <= high)).all(-1)
            free = metrics.collision_free
            if free is not None:
                ok &= free
            # precise solutions (within a quarter of both thresholds) before the others that
            # succeed: a solution at the edge of the thresholds leaves the trajectory
            # optimization no room (it trades a little pose error for smoothness and margins)
            precise = ok & self._precise.met(metrics)
            ok = ok.view(S, n)
            q = q.view(S, n, D)
            distance = (q - rank_config[:, None]).square().sum(-1)
            if cost is None:
                cost = metrics.position_error + metrics.rotation_error
            cost = cost.view(S, n).clamp(max=1e12)
            distance = distance + torch.where(precise.view(S, n), 0.0, TIER)
            key = torch.where(ok, distance, distance.new_full((), 2 * TIER) + cost)
            order = key.argsort(dim=1)
            ranked = q.gather(1, order[..., None].expand(-1, -1, D))
            ranked_ok = ok.gather(1, order)
            pick = order[:, 0] + torch.arange(S, device=order.device) * n
            min_distance = metrics.min_distance
        keep = keep or n
        return IKResult(
            success=ranked_ok[:, 0],
            solution=ranked[:, 0],
            position_error=metrics.position_error[pick],
            rotation_error=metrics.rotation_error[pick],
            min_distance=None if min_distance is None else min_distance[pick],
            solutions=ranked[:, :keep],
            solutions_success=ranked_ok[:, :keep],
            distinct_solutions=[
                distinct_rows(ranked[s][ranked_ok[s]], self.config.distinct_tolerance)
                for s in range(S)
            ],
            solve_time=time.perf_counter() - t_start,
            iterations=iterations,
            solutions_precise=precise.view(S, n).gather(1, order)[:, :keep],
        )

    def _stop_check(self, S: int, n: int) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The optimizer's stop check of ``stop_after`` (``None`` when off): every seed of a
        goal with at least ``stop_after`` precise, collision-free seeds passes."""
        if self.config.stop_after == 0:
            return None
        needed = min(self.config.stop_after, n)

        def stop_check(actions: torch.Tensor) -> torch.Tensor:
            state = self.rollout.rollout_state(actions)
            metrics = self.rollout.convergence(state, check_range=self._precise.check_range)
            met = self._precise.met(metrics).view(S, -1)
            return (met.sum(dim=1, keepdim=True) >= needed).expand_as(met).reshape(-1)

        return stop_check

    def _check_rank_config(self, S: int, rank_config: Any) -> torch.Tensor:
        """``[S, D]`` on this solver's device: the caller's ``[S, D]``/``[D]`` or the retract
        configuration."""
        D = self.dof
        if rank_config is None:
            rank_config = self.robot_config.retract_config
        if not isinstance(rank_config, torch.Tensor):
            raise InputTypeError(
                f"rank_config: expected a tensor [{S}, {D}] or [{D}], received "
                f"{type(rank_config).__name__}"
            )
        check_data_device("rank_config", rank_config)
        if rank_config.shape not in ((D,), (S, D), (1, D)):
            raise InputValueError(
                f"rank_config: expected shape [{S}, {D}] or [{D}], received "
                f"{tuple(rank_config.shape)}"
            )
        rank_config = rank_config.to(**self.tensor_args.as_kwargs()).expand(S, D)
        if not bool(torch.isfinite(rank_config).all()):
            raise InputValueError("rank_config: contains NaN or infinite values")
        return rank_config

    def _check_pose(self, goal_pose: Any) -> Pose:
        return check_pose(goal_pose, "goal_pose", self.tensor_args)

    def _seeds(
        self, S: int, seed_config: torch.Tensor | None, count: int | None = None
    ) -> torch.Tensor:
        """``[S, n, D]``: the caller's seeds, the retract configuration, then Sobol draws
        (``n``: ``count``, default ``num_seeds``)."""
        n, D = count or self.config.num_seeds, self.dof
        low, high = self.robot_config.joint_limits.position.to(**self.tensor_args.as_kwargs())
        margin = self.config.limit_margin * (high - low)
        self._sobol.reset()
        draws = self._sobol.draw(S * n).to(**self.tensor_args.as_kwargs()).view(S, n, D)
        seeds = low + margin + (high - low - 2 * margin) * draws
        first = 0
        if seed_config is not None:
            if not isinstance(seed_config, torch.Tensor):
                raise InputTypeError(
                    f"seed_config: expected a tensor [S, k, D], received "
                    f"{type(seed_config).__name__}"
                )
            check_data_device("seed_config", seed_config)
            seed_config = seed_config.to(**self.tensor_args.as_kwargs())
            if (
                seed_config.ndim != 3
                or seed_config.shape[0] not in (1, S)
                or (seed_config.shape[2] != D or seed_config.shape[1] > n)
            ):
                raise InputValueError(
                    f"seed_config: expected shape [{S}, k <= {n}, {D}], received "
                    f"{tuple(seed_config.shape)}"
                )
            if not bool(torch.isfinite(seed_config).all()):
                raise InputValueError("seed_config: contains NaN or infinite values")
            check_within_limits(self, seed_config, "seed_config")
            first = seed_config.shape[1]
            seeds[:, :first] = torch.maximum(torch.minimum(seed_config, high), low)
        if first < n:
            seeds[:, first] = self.robot_config.retract_config.to(seeds)
        return seeds

    def _solver(self, S: int, n: int) -> Lbfgs:
        return lbfgs_for_batch(self._solvers, self.lbfgs_config, self.rollout, S, n)

    def __repr__(self) -> str:
        return (
            f"IKSolver(robot={self.robot_config.name!r}, num_seeds={self.config.num_seeds}, "
            f"thresholds {self.config.position_threshold:g} m / "
            f"{self.config.rotation_threshold:g} rad, costs={list(self.rollout.costs)})"
        )
