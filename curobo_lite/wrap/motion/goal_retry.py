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

#: the retry's pose-only IK: seeds and rotation weight (m per rad; MotionGen's wide IK phase
#: uses the same: a grasp out of exact reach ends at other compromises within the thresholds)
RETRY_DLS_SEEDS = 2048
RETRY_ROTATION_WEIGHT = 0.03
#: new goal configurations tried, one roadmap each (nearest the start first)
RETRY_GOALS = 3


class GoalRetry:
    """The goal retry of :class:`~curobo_lite.wrap.MotionGen`'s roadmap stage (mixed in; the
    host supplies ``ik_solver``, ``_barriers``, ``_goal_configs``, ``_mesh_clear_goals`` and
    ``_roadmap_path``)."""

    def _retry_goals(self, start: torch.Tensor, goal: Pose, tried: torch.Tensor) -> torch.Tensor:
        """``[m, D]`` goal configurations of ``goal`` (batch 1) for a roadmap from ``start [D]``
        that connected none of ``tried [G, D]``: distinct solutions of a pose-only IK from
        :data:`RETRY_DLS_SEEDS` seeds (the rotation weighted :data:`RETRY_ROTATION_WEIGHT`),
        ranked by distance to ``start``, at the full turns ``start`` can reach
        (:meth:`JointBarriers.reachable_goals`), farther than the IK's ``distinct_tolerance``
        from every tried goal and clear on the meshes (:meth:`_mesh_clear_goals`)."""
        config = self.ik_solver.config
        ik = self.ik_solver.solve_batch(
            goal,
            seed_config=start[None, None],
            rank_config=start[None],
            lbfgs_fallback=False,
            dls_seeds=max(RETRY_DLS_SEEDS, config.dls_seeds),
            dls_rotation_weight=RETRY_ROTATION_WEIGHT,
        )
        # at the turns the start can reach (full-turn joints; as they are without)
        found = self._barriers.reachable_goals(
            self._goal_configs(ik, goal)[0], start, config.distinct_tolerance
        )
        if found.shape[0] and tried.shape[0]:
            far = torch.cdist(found, tried.to(found)).amin(dim=1) > config.distinct_tolerance
            found = found[far]
        return self._mesh_clear_goals(found, goal)

    def _roadmap_retry(
        self, start: torch.Tensor, goal: Pose, tried: torch.Tensor, timings: dict[str, float]
    ) -> tuple[GraphPlanResult | None, dict[str, float]]:
        """After the roadmap from ``start [D]`` connected none of ``tried [G, D]`` (its stage
        timings ``timings``): one roadmap to each of the first :data:`RETRY_GOALS` new goals
        (:meth:`_retry_goals`) until one connects. Returns its path (``None`` when none does)
        and ``timings`` with the retry's time added to ``roadmap`` (and its own, ``goal_retry``;
        its mesh checks' to ``exact_check``)."""
        t0 = time.perf_counter()
        goals = self._retry_goals(start, goal, tried)
        mesh_time = 0.0
        found = None
        for q in goals[:RETRY_GOALS]:
            graph, stage_timings = self._roadmap_path(start, q[None], timings)
            mesh_time += stage_timings.get("exact_check", 0.0)
            if graph.success:
                found = graph
                break
        retry = time.perf_counter() - t0
        timings = {**timings, "goal_retry": retry, "roadmap": timings["roadmap"] + retry}
        if "exact_check" in timings:
            timings["exact_check"] += mesh_time
        return found, timings
