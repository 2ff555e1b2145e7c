"""MotionGen's IK stage, mixed into :class:`~curobo_lite.wrap.MotionGen`: per problem its goal
configurations (the distinct collision-free IK solutions, ranked by distance to the start), from
a pose-only damped least-squares phase first, a wider pose-only phase for the problems left
without one, and only then the collision-aware L-BFGS phase, seeded where the pose phase
already reached the pose (:meth:`IKStage._contact_seeds`); at the turns the start can reach
(:mod:`~curobo_lite.wrap.motion.reachable_goals`); and when none is left, why
(:meth:`IKStage._ik_offenders`).
"""

from __future__ import annotations

import torch

from curobo_lite.types import Pose
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.ik.solver import IKResult
from curobo_lite.wrap.motion.checks import ik_offenders, pose_errors

#: the IK's damped least-squares steps before its L-BFGS (``ik={"dls_iterations": 0}``: off)
DLS_ITERATIONS = 16
#: seeds of that phase (the L-BFGS keeps ``num_ik_seeds``): a grasp whose hand spheres leave
#: little room has few collision-free arm postures, and a pose-only seed costs little
DLS_SEEDS = 256
#: with the roadmap on, the pose-only phase runs its first DLS_CHUNK seeds, the rest only for a
#: goal with fewer than DLS_ENOUGH distinct solutions (the roadmap keeps the 8 nearest the start,
#: max_goals; the optimizer alone fares better from the nearest of all 256)
DLS_CHUNK, DLS_ENOUGH = 128, 8
#: seeds of a second pose-only phase for the problems that the first left without a goal
#: configuration: in clutter a grasp may leave a few collision-free arm postures among
#: thousands of pose solutions. It runs before the collision-aware L-BFGS phase (which then
#: runs only where it finds none): ~50 ms against the L-BFGS's 0.1-0.3 s, and on MBM its goals
#: served where the L-BFGS's sat in a pocket no roadmap left (table_under_pick 13). The 10 of
#: 700 MBM problems that reach it (1 thread, load ~4): bookshelf_small 30, cage 28 and 38,
#: table_under_pick 13 0.21 / 0.35 / 0.39 / 1.38 s -> 0.10 / 0.11 / 0.27 / 0.30 s; the four
#: where it finds nothing (bookshelf_thin 98, box 7, cage 15, table_under_pick 18) +35-60 ms
DLS_SEEDS_WIDE = 2048
#: that phase's weight (m per rad) of the rotation error (the first: the thresholds' ratio,
#: 0.1): a grasp out of exact reach ends at another compromise within the thresholds, where
#: the first one's collides (MBM cage 28: 5 collision-free of 2048 seeds against none)
DLS_WIDE_ROTATION_WEIGHT = 0.03


class IKStage:
    """The IK stage of :class:`~curobo_lite.wrap.MotionGen` (which supplies ``ik_solver``,
    ``checker``, ``_unreachable``, ``_exact_band``, ``_mesh_judged_solutions``,
    ``_reachable_configs`` and ``_metric_pose_errors``)."""

    def _ik_offenders(
        self, ik: IKResult, k: int, goal: Pose
    ) -> tuple[list[Offender], torch.Tensor, str]:
        """Why problem ``k``'s IK found no solution (:func:`ik_offenders`), or none that the
        start can reach (:meth:`_barrier_offenders`)."""
        if k in self._unreachable:
            offenders, q = self._unreachable[k]
            return offenders, q, "IK solution nearest the start"
        config = self.ik_solver.config
        thresholds = (config.position_threshold, config.rotation_threshold)
        return ik_offenders(self.checker, ik, k, goal, thresholds)

    def _goal_configs(self, ik: IKResult, goal: Pose) -> list[torch.Tensor]:
        """Per problem of ``ik``: its distinct solutions, or where it failed, the seeds that
        the meshes judge valid (:meth:`_mesh_judged_solutions`)."""
        return [
            ik.distinct_solutions[k]
            if bool(ik.success[k])
            else self._mesh_judged_solutions(ik, k, goal)
            for k in range(goal.batch)
        ]

    def _ik(
        self, goal: Pose, start: torch.Tensor, goalset: bool = False
    ) -> tuple[IKResult, list[torch.Tensor]]:
        """The IK stage of ``S`` problems (:meth:`_ik_solutions`), each problem's goal
        configurations at the turns its start can reach (:mod:`.reachable_goals`)."""
        ik, configs = self._ik_solutions(goal, start, goalset)
        return ik, self._reachable_configs(ik, configs, goal, start, goalset)

    def _ik_solutions(
        self, goal: Pose, start: torch.Tensor, goalset: bool = False
    ) -> tuple[IKResult, list[torch.Tensor]]:
        """The IK of ``S`` problems: the IK result and per problem its goal
        configurations ``[k_s, D]``. With the exact band on, the pose-only phase's seeds that
        the meshes find clear count before any L-BFGS runs; a wider pose-only phase
        (:data:`DLS_SEEDS_WIDE`), then the L-BFGS phase, run for the problems left without a
        goal configuration. ``goalset``: the ``S`` poses are one
        problem's set: they share the seeds (:meth:`IKSolver.goalset_seeds`), and the L-BFGS
        phase runs only when the pose phase reached none of them."""
        seeds = {"seed_config": start[:, None], "rank_config": start}
        if goalset:
            seeds["num_seeds"], seeds["dls_seeds"] = self.ik_solver.goalset_seeds(goal.batch)
        if self._exact_band <= 0.0 or self.ik_solver.config.dls_iterations == 0:
            ik = self.ik_solver.solve_batch(goal, **seeds)
            return ik, self._goal_configs(ik, goal)
        quick = self.ik_solver.solve_batch(goal, lbfgs_fallback=False, **seeds)
        configs = self._goal_configs(quick, goal)
        left = [k for k in range(goal.batch) if configs[k].shape[0] == 0]
        if not left or (goalset and len(left) < goal.batch):
            return quick, configs
        rows = torch.tensor(left, device=start.device)
        seeds["rank_config"] = start[rows]
        seeds["seed_config"] = (
            self._contact_seeds(quick, left, goal, start) if not goalset else (start[rows, None])
        )
        goal_left = Pose(goal.position[rows], goal.quaternion[rows])
        if not goalset:  # the wide pose-only phase first (DLS_SEEDS_WIDE: why)
            more = self.ik_solver.solve_batch(
                goal_left,
                lbfgs_fallback=False,
                dls_seeds=max(DLS_SEEDS_WIDE, self.ik_solver.config.dls_seeds),
                dls_rotation_weight=DLS_WIDE_ROTATION_WEIGHT,
                **seeds,
            )
            for j, found in enumerate(self._goal_configs(more, goal_left)):
                configs[left[j]] = found
            rest = [j for j, k in enumerate(left) if configs[k].shape[0] == 0]
            if not rest:
                return quick, configs
            index = torch.tensor(rest, device=start.device)
            goal_left = Pose(goal_left.position[index], goal_left.quaternion[index])
            seeds["seed_config"] = seeds["seed_config"][index]
            seeds["rank_config"] = seeds["rank_config"][index]
            left = [left[j] for j in rest]
        full = self.ik_solver.solve_batch(goal_left, **seeds)
        for j, k in enumerate(left):
            if bool(full.success[j]):
                configs[k] = full.distinct_solutions[j]
        if len(left) == goal.batch:  # one problem (plan_single): report the full solve
            return full, configs
        return quick, configs

    def _contact_seeds(
        self, quick: IKResult, left: list[int], goal: Pose, start: torch.Tensor
    ) -> torch.Tensor:
        """``[len(left), k, D]`` first seeds of the collision-aware phase for the problems
        ``left``: the start, then the pose-only phase's solutions that reach the pose, the
        shallowest contact first (padded with the start). From a posture that already reaches
        the pose, the collision terms mostly swing the elbow clear; random seeds must find
        the pose and the clearance at once (MBM grasps under a table: 20 collision-free
        solutions against none)."""
        n = self.ik_solver.config.num_seeds
        rows = []
        for k in left:
            reached = self._reaching(quick.solutions[k], goal, k)
            depth = self.checker.collision_distance(reached, max_distance=0.1)
            reached = reached[depth.argsort(descending=True)][: n - 1]
            rows.append(torch.cat((start[k : k + 1], reached)))
        width = max(r.shape[0] for r in rows)
        return torch.stack([torch.cat((r, r[:1].expand(width - r.shape[0], -1))) for r in rows])

    def _reaching(self, candidates: torch.Tensor, goal: Pose, k: int) -> torch.Tensor:
        """The rows of ``candidates [m, D]`` whose end effector is within the IK's position
        and rotation thresholds of problem ``k``'s pose in ``goal``."""
        pose = Pose(goal.position[k : k + 1], goal.quaternion[k : k + 1])
        position, rotation = self._pose_errors(candidates, pose)
        config = self.ik_solver.config
        return candidates[
            (position <= config.position_threshold) & (rotation <= config.rotation_threshold)
        ]

    def _pose_errors(self, q: torch.Tensor, goal: Pose) -> tuple[torch.Tensor, torch.Tensor]:
        """``[n]`` metres and radians from the end effector at ``q [n, D]`` to ``goal`` (along
        the judged axes of the call's pose-cost metric, when it has one)."""
        errors = self._metric_pose_errors(q, goal)
        return pose_errors(self.checker, q, goal) if errors is None else errors
