"""MotionGen's second try when the roadmap connects none of the IK's goal configurations.

The IK hands the roadmap the distinct solutions nearest the start, and those often share one
posture family: in a narrow place (a thin shelf, a can under a table) the whole family may sit
in a pocket that the arm cannot leave, and the roadmap spends its samples before the optimizer,
aimed at the same goals, fails as well. :class:`GoalRetry` then asks the IK's pose-only phase
for goal configurations of the same pose from more seeds, with the rotation weighted less (the
hand ends at another compromise within the thresholds, the arm in another posture), keeps those
away from the goals already tried and clear on the meshes, and runs one roadmap per new goal,
nearest the start first: with a single goal the roadmap's local, corridor and goal-region
samples all gather about that goal's way out instead of being spread over eight. Only the
problems whose first roadmap failed pay for it.

A goal set (:meth:`MotionGen.plan_goalset`, e.g. an object's grasps) whose one roadmap to every
pose's configurations connects none retries the same way: one pose-only IK over the set's
poses (the wide phase's seeds shared among them, at least the IK's ``dls_seeds`` each, so a
pose whose first IK found nothing gets its chance too), the new goals of all poses nearest the
start first, one roadmap each. A joint goal has no retry: its one configuration is the goal.

Measured on MotionBenchMaker (``benchmarks/mbm.py``, 2026-11-27): bookshelf_thin 23 (a can on a
thin shelf; backing the hand off from any of the IK's eight goals drives link 5 into the shelf
above, and none connects, with 12 288 samples neither, nor each alone) goes from TRAJOPT_FAIL
in 2.5 s to SUCCESS in 2.0-3.4 s (the retry 1.0-1.6 s, load 1-4); it is the only problem of
the 700 that runs it. With the roadmap starved (``max_samples=64``, first 15 per family) it
rescued 2 of 8 failures (table_under_pick 0 and 12; measured before the IK ran its wide
phase first).
"""

from __future__ import annotations

import time

import torch

from curobo_lite.types import Pose
from curobo_lite.wrap.motion.graph_planner import GraphPlanResult
from curobo_lite.wrap.motion.ik_stage import DLS_SEEDS_WIDE, DLS_WIDE_ROTATION_WEIGHT

#: new goal configurations tried, one roadmap each (nearest the start first)
RETRY_GOALS = 3


class GoalRetry:
    """The goal retry of :class:`~curobo_lite.wrap.MotionGen`'s roadmap stage (mixed in; the
    host supplies ``ik_solver``, ``_barriers``, ``_goal_configs``, ``_mesh_clear_goals`` and
    ``_roadmap_path``)."""

    def _retry_goals(
        self, start: torch.Tensor, goal: Pose, tried: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Goal configurations ``[m, D]`` of the ``R`` poses ``goal`` (one pose, or a goal
        set's) for a roadmap from ``start [D]`` that connected none of ``tried [G, D]``, and
        the pose each reaches (``[m]``, index into ``goal``), nearest ``start`` first: distinct
        solutions of one pose-only IK (the IK's wide phase: :data:`DLS_SEEDS_WIDE` seeds in
        all, at least the IK's ``dls_seeds`` per pose, the rotation weighted
        :data:`DLS_WIDE_ROTATION_WEIGHT`), at the full turns ``start`` can reach
        (:meth:`JointBarriers.reachable_goals`), farther than the IK's ``distinct_tolerance``
        from every tried goal and clear on the meshes (:meth:`_mesh_clear_goals`)."""
        config = self.ik_solver.config
        R, D = goal.batch, start.shape[0]
        ik = self.ik_solver.solve_batch(
            goal,
            seed_config=start.expand(R, 1, D),
            rank_config=start.expand(R, D),
            lbfgs_fallback=False,
            dls_seeds=max(-(-DLS_SEEDS_WIDE // R), config.dls_seeds),
            dls_rotation_weight=DLS_WIDE_ROTATION_WEIGHT,
        )
        goals, owners = [], []
        for r, configs in enumerate(self._goal_configs(ik, goal)):
            # at the turns the start can reach (full-turn joints; as they are without)
            found = self._barriers.reachable_goals(configs, start, config.distinct_tolerance)
            if found.shape[0] and tried.shape[0]:
                far = torch.cdist(found, tried.to(found)).amin(dim=1) > config.distinct_tolerance
                found = found[far]
            found = self._mesh_clear_goals(found, goal[r : r + 1])
            goals.append(found)
            owners.append(torch.full((found.shape[0],), r, dtype=torch.long))
        found, owner = torch.cat(goals), torch.cat(owners).to(start.device)
        if R > 1:  # each pose's rows come ranked; across a set's poses, nearest the start first
            order = (found - start).norm(dim=-1).argsort(stable=True)
            found, owner = found[order], owner[order]
        return found, owner

    def _roadmap_retry(
        self, start: torch.Tensor, goal: Pose, tried: torch.Tensor, timings: dict[str, float]
    ) -> tuple[GraphPlanResult | None, int, dict[str, float]]:
        """After the roadmap from ``start [D]`` connected none of ``tried [G, D]`` (its stage
        timings ``timings``): one roadmap to each of the first :data:`RETRY_GOALS` new goals
        of the poses ``goal [R]`` (:meth:`_retry_goals`) until one connects. Returns its path
        (``None`` when none does), the index in ``goal`` of the pose it reaches (-1: none), and
        ``timings`` with the retry's time added to ``roadmap`` (and its own, ``goal_retry``;
        its mesh checks' to ``exact_check``)."""
        t0 = time.perf_counter()
        goals, owner = self._retry_goals(start, goal, tried)
        mesh_time = 0.0
        found, reached = None, -1
        for q, r in zip(goals[:RETRY_GOALS], owner[:RETRY_GOALS].tolist()):
            graph, stage_timings = self._roadmap_path(start, q[None], timings)
            mesh_time += stage_timings.get("exact_check", 0.0)
            if graph.success:
                found, reached = graph, r
                break
        retry = time.perf_counter() - t0
        timings = {**timings, "goal_retry": retry, "roadmap": timings["roadmap"] + retry}
        if "exact_check" in timings:
            timings["exact_check"] += mesh_time
        return found, reached, timings
