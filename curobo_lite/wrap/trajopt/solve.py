"""The phases of one trajectory-optimization solve (the numbered steps of
:mod:`~.solver`): the IK solve for goal configurations, the seeds, the batched
L-BFGS with the per-problem choice of the best seed (sharded over ranks when a process group
is given), retiming, interpolation and the result checks, in that order
(:meth:`TrajOptPhases._solve`).

:class:`TrajOptPhases` is the base of :class:`~curobo_lite.wrap.trajopt.solver.TrajOptSolver`, which
builds the attributes listed on the class and validates the public arguments; the pure pieces
live in :mod:`~curobo_lite.wrap.trajopt.seed`, :mod:`~curobo_lite.wrap.trajopt.timing` and
:mod:`~curobo_lite.wrap.trajopt.checks`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from curobo_lite.debug import active_session, track_scales
from curobo_lite.distributed import all_gather_with_grad
from curobo_lite.opt import Lbfgs, LbfgsConfig
from curobo_lite.opt.lbfgs import lbfgs_for_batch
from curobo_lite.robot import JointLimits, Kinematics, RobotConfig
from curobo_lite.rollout import ArmReacher, Goal
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap.ik.solver import IKResult, IKSolver
from curobo_lite.wrap.trajopt.checks import check_plan, format_range, goal_reached
from curobo_lite.wrap.trajopt.config import TrajOptResult, TrajOptSolverConfig
from curobo_lite.wrap.trajopt.seed import (
    knots_to_actions,
    straight_line_seeds,
)
from curobo_lite.wrap.trajopt.timing import (
    Interpolated,
    backward_differences,
    interpolate_within_limits,
    retime,
)


class TrajOptPhases:
    """The solve pipeline of :class:`~curobo_lite.wrap.trajopt.solver.TrajOptSolver` (which sets
    every attribute below in its ``__init__``)."""

    config: TrajOptSolverConfig
    process_group: Any
    rollout: ArmReacher
    ik_rollout: ArmReacher
    ik_solver: IKSolver
    lbfgs_config: LbfgsConfig
    tensor_args: TensorDeviceType
    robot_config: RobotConfig
    joint_limits: JointLimits
    kinematics: Kinematics
    horizon: int
    dof: int
    plan_dt: float
    progress: Callable[[str], None] | None
    _seed_shard: tuple[int, int]
    _spline: torch.Tensor
    _gen: torch.Generator
    _solvers: dict[tuple[int, int], Lbfgs]
    _seed_profile: torch.Tensor

    # --- phases ----------------------------------------------------------------------------------

    def _report(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def _lbfgs(self, S: int, n: int) -> Lbfgs:
        """The trajectory L-BFGS for ``S`` problems of ``n`` seeds (built once per shape)."""
        return lbfgs_for_batch(self._solvers, self.lbfgs_config, self.rollout, S, n)

    def _goal_configs(
        self, start_position: torch.Tensor, goal_pose: Pose, n_select: int
    ) -> tuple[torch.Tensor, torch.Tensor, IKResult]:
        """Goal configurations for pose goals (phase 1 of the module docstring): the
        :class:`~curobo_lite.wrap.IKSolver`'s ranked solutions on the task's IK rollout (the
        IK is the IK solver's alone; this only picks ``n_select`` of them per problem).

        Args:
            start_position: ``[S, D]`` start configurations (the first IK seed, and the
                configuration the solutions are ranked by distance to).
            goal_pose: goal poses of batch ``S``.
            n_select: configurations to return per problem.

        Returns:
            ``(configs [S, n_select, D], reached [S, n_select] bool, IKResult)``: the IK
            solver's ranking (within the thresholds and collision-free first, precise ones
            first, closest to the start first), cycled when ``n_select`` exceeds its seeds.
        """
        result = self.ik_solver.solve_batch(
            goal_pose, seed_config=start_position[:, None], rank_config=start_position
        )
        picks = torch.arange(n_select, device=start_position.device) % self.config.ik.num_seeds
        return result.solutions[:, picks], result.solutions_success[:, picks], result

    def make_seeds(self, start_position: torch.Tensor, goal_configs: torch.Tensor) -> torch.Tensor:
        """Action seeds ``[S * n, H, D]`` from ``start_position [S, D]`` to ``goal_configs
        [S, n, D]`` (phase 2 of the module docstring), projected into the position limits.

        With POSITION control the action at step ``h`` sets the position of step ``h+1``, so the
        seed's action ``h`` is the interpolated configuration ``h+1`` (the last repeats the goal).
        """
        return straight_line_seeds(
            start_position,
            goal_configs,
            self._seed_profile,
            self.config.seed_noise,
            self.joint_limits.position,
            self._gen,
            self.tensor_args,
        )

    def retime(self, knots: torch.Tensor) -> torch.Tensor:
        """``[B]`` retimed step for knot trajectories ``[B, H, D]`` optimized at the task's
        ``dt`` (phase 4; :func:`~curobo_lite.wrap.trajopt.timing.retime`)."""
        return retime(knots, self.plan_dt, self.joint_limits, self.config, self.tensor_args)

    def interpolate_trajectory(
        self, knots: torch.Tensor, dt: torch.Tensor
    ) -> tuple[Interpolated, torch.Tensor, int]:
        """Interpolate ``knots [B, H, D]`` at step ``dt [B]`` and correct ``dt`` until the samples
        respect the limits with the time margin (phase 5).

        Returns ``(interpolated, dt [B], corrections made)``.
        """
        return interpolate_within_limits(
            knots, dt, self.joint_limits, self.config, self._spline, self.tensor_args
        )

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
            target = goal_config if goal_config is not None else chosen_goal
            check = check_plan(
                knots,
                interp,
                goal_pose,
                target,
                goal_config is not None,
                self.config,
                self.kinematics,
                self.rollout,
                self.tensor_args,
            )
        timings["interpolation"] = time.perf_counter() - t0
        solve_time = time.perf_counter() - t_start
        self._report(
            f"retime + interpolation: dt {format_range(dt)} s, {int(interp.last_index.max()) + 1} "
            f"samples every {self.config.interpolation_dt:g} s, "
            f"{timings['interpolation']:.3f} s; success {int(check.success.sum())}/{S}"
        )
        return TrajOptResult(
            **vars(check),
            solution=solution,
            interpolated_solution=interpolated,
            interpolated_last_index=interp.last_index,
            interpolation_dt=self.config.interpolation_dt,
            optimized_dt=dt,
            solve_time=solve_time,
            goal_state=target,
            timings=timings,
            debug=debug,
        )

    def _ik_phase(
        self, start_position: torch.Tensor, goal_pose: Pose, debug: dict[str, Any]
    ) -> torch.Tensor:
        """Goal configurations ``[S, num_seeds, D]`` for pose goals (IK)."""
        S, n = start_position.shape[0], self.config.num_seeds
        if active_session() is None:
            configs, reached, result = self._goal_configs(start_position, goal_pose, n)
        else:
            # keep the IK's cost terms out of the caller's scale-tracking session
            with track_scales() as ik_session:
                configs, reached, result = self._goal_configs(start_position, goal_pose, n)
            debug["ik_scales"] = ik_session
        debug["ik_success"] = reached[:, 0]
        debug["ik_iterations"] = result.iterations
        self._report(
            f"ik: {S} problem(s) x {self.config.ik.num_seeds} seeds, {result.iterations} "
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
            seeds = knots_to_actions(seed_trajectories, self.joint_limits.position)
        seeds = seeds.view(S, n, self.horizon, self.dof)[:, first:last].reshape(
            -1, self.horizon, self.dof
        )
        best_action, best_cost, n_iters = self._optimize(seeds, start, goal, n_local)
        with torch.no_grad():
            rolled = self.rollout.rollout_fn(best_action)
            metrics = self.rollout.convergence(rolled.state)
            feasible = goal_reached(
                metrics.position_error,
                metrics.rotation_error,
                metrics.cspace_error,
                self.config,
                joint_goal=goal_config is not None,
            )
            feasible &= metrics.limit_violation["position"] <= 1e-6
            if metrics.collision_free is not None:
                feasible &= metrics.collision_free
            feasible = self._gather_seeds(feasible.view(S, n_local))
            # seeds that met the early-stop criteria (stricter) rank before the other feasible
            passed = feasible
            if self.config.early_stop is not None:
                criteria = self.config.early_stop.criteria()
                swept = self.rollout.convergence(
                    rolled.state, swept=True, check_range=criteria.check_range
                )
                passed = self._gather_seeds(criteria.met(swept).view(S, n_local))
                passed = passed & feasible
            cost = self._gather_seeds(best_cost.view(S, n_local))
            positions = self._gather_seeds(
                rolled.state.state_seq.position.view(S, n_local, self.horizon, self.dof)
            )
            # the cheapest seed that met the early-stop criteria, else the cheapest feasible
            # one, else the cheapest of all
            eligible = torch.where(passed.any(dim=1, keepdim=True), passed, feasible)
            eligible = eligible | ~eligible.any(dim=1, keepdim=True)
            seed_index = torch.where(eligible, cost, torch.full_like(cost, math.inf)).argmin(1)
            rows = torch.arange(S, device=seed_index.device)
            knots = torch.cat((start.position[:, None], positions[rows, seed_index, 1:]), 1)
        debug.update(
            seed_index=seed_index,
            trajopt_iterations=n_iters,
            best_cost=cost[rows, seed_index],
        )
        self._report(
            f"trajopt: {S} problem(s) x {n} seeds, {n_iters} iterations, "
            f"{int(feasible.any(dim=1).sum())}/{S} reached"
        )
        return knots, goal_configs[rows, seed_index]

    def _optimize(
        self, seeds: torch.Tensor, start: JointState, goal: Goal, n_local: int
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The trajectory L-BFGS from ``seeds [S * n_local, H, D]``: ``(best_action, best_cost
        [S * n_local], iterations)``, the rollout left on ``(goal, start)``.

        With several problems (one process), the problems still running at the first
        convergence check go on alone in a second call (their batch compacted: L-BFGS restarts
        from their best iterates), so a few hard problems do not keep every easy problem's
        seeds in the loop (a batch of 32 goals: most stop at the first check, a few run 20)."""
        S = len(start)
        cfg = self.lbfgs_config
        self.rollout.update_params(goal, start)
        solver = self._lbfgs(S, n_local)
        stop_check = self._stop_check()
        compact = S > 1 and self.process_group is None and not cfg.fixed_iters
        first_round = cfg.convergence_check_every if compact else None
        result = solver.optimize(seeds, stop_check=stop_check, max_iters=first_round)
        if not compact or result.n_iters >= cfg.n_iters:
            return result.best_action, result.best_cost, result.n_iters
        running = (~result.problem_converged).nonzero().flatten()
        if running.numel() == 0:
            return result.best_action, result.best_cost, result.n_iters
        best_action = result.best_action.view(S, n_local, self.horizon, self.dof).clone()
        best_cost = result.best_cost.view(S, n_local).clone()
        self.rollout.update_params(_goal_subset(goal, running), start[running])
        try:
            rest = self._lbfgs(running.numel(), n_local).optimize(
                best_action[running].reshape(-1, self.horizon, self.dof),
                stop_check=stop_check,
                max_iters=cfg.n_iters - result.n_iters,
            )
        finally:
            self.rollout.update_params(goal, start)
        best_action[running] = rest.best_action.view(-1, n_local, self.horizon, self.dof)
        best_cost[running] = rest.best_cost.view(-1, n_local)
        return (
            best_action.view(-1, self.horizon, self.dof),
            best_cost.view(-1),
            result.n_iters + rest.n_iters,
        )

    def _stop_check(self) -> Callable[[torch.Tensor], torch.Tensor] | None:
        """The optimizer's stop check of ``trajopt.early_stop`` (``None`` when it is off):
        ``[B]`` seeds whose trajectory meets the criteria, clearance swept between knots."""
        if self.config.early_stop is None:
            return None
        criteria = self.config.early_stop.criteria()

        def stop_check(actions: torch.Tensor) -> torch.Tensor:
            state = self.rollout.rollout_state(actions)
            metrics = self.rollout.convergence(state, swept=True, check_range=criteria.check_range)
            return criteria.met(metrics)

        return stop_check

    def _gather_seeds(self, local: torch.Tensor) -> torch.Tensor:
        """``[S, n_local, ...]`` per-rank seed results to ``[S, n, ...]`` (seed order kept)."""
        if local.shape[1] == self.config.num_seeds:
            return local
        # bool is not a collective dtype on every backend: gather flags as bytes
        send = local.to(torch.uint8) if local.dtype == torch.bool else local
        gathered = all_gather_with_grad(send.transpose(0, 1).contiguous(), self.process_group)
        gathered = gathered.transpose(0, 1)
        return gathered.bool() if local.dtype == torch.bool else gathered


def _goal_subset(goal: Goal, problems: torch.Tensor) -> Goal:
    """The goals of ``problems [A]`` (a goal shared by every problem stays shared)."""
    pose, state = goal.goal_pose, goal.goal_state
    if pose is not None and pose.batch > 1:
        pose = pose[problems]
    if state is not None and state.position.shape[0] > 1:
        state = state[problems]
    return Goal(goal_pose=pose, goal_state=state)
