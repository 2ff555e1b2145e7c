"""MotionGen's goal configurations at the turns the start can reach (full-turn joints).

Mixed into :class:`~curobo_lite.wrap.MotionGen`: after the IK, each problem's goal
configurations go through :meth:`JointBarriers.reachable_goals` (each full-turn joint at the
nearest turn that no self-collision barrier separates from the start; the others dropped).
Where none is left, the IK runs once more from seeds inside the part of the joint space the
start can reach (:meth:`JointBarriers.piece`): its random seeds are drawn over the whole
``+-2 pi`` range, and in a tight place its few collision-free solutions may all lie past a
barrier. When that finds none either, the problem fails at once as ``IK_FAIL``, its offenders
naming the joint and the barrier, instead of the roadmap spending its samples (seconds) and
the optimizer failing after it (UR5e user sweep, a start with the elbow at 4.8 rad: the
goal pose's only collision-free postures bend the elbow the other way).
"""

from __future__ import annotations

import torch

from curobo_lite.types import Pose
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.ik.solver import IKResult

#: seeds of the IK's second try inside the start's part of the joint space (pose phase; the
#: L-BFGS phase takes the first ``num_ik_seeds`` of them)
REACHABLE_RETRY_SEEDS = 256


class ReachableGoals:
    """The turn-aware goal choice of :class:`~curobo_lite.wrap.MotionGen` (which supplies
    ``_barriers``, ``ik_solver``, ``robot_config`` and ``_goal_configs``)."""

    def _reachable_configs(
        self,
        ik: IKResult,
        configs: list[torch.Tensor],
        goal: Pose,
        start: torch.Tensor,
        goalset: bool,
    ) -> list[torch.Tensor]:
        """Per problem ``k`` of ``goal`` (batch ``S``, from ``start [S, D]``): its goal
        configurations ``configs[k] [G_k, D]`` that the start can reach, at the reachable
        turns; for a problem with goals but none reachable, those of a second IK from seeds
        in the start's part of the joint space (one pose at a time, not for a goal set: its
        other poses may be reachable), else none: ``self._unreachable[k]`` then holds the
        offenders (:meth:`_barrier_offenders`) and that goal, its IK's first."""
        self._unreachable: dict[int, tuple[list[Offender], torch.Tensor]] = {}
        barriers = self._barriers
        if not barriers.active:
            return configs
        tolerance = self.ik_solver.config.distinct_tolerance
        kept = []
        for k, found in enumerate(configs):
            reachable = barriers.reachable_goals(found, start[k], tolerance)
            if found.shape[0] and reachable.shape[0] == 0 and not goalset:
                pose = Pose(goal.position[k : k + 1], goal.quaternion[k : k + 1])
                retry = self._piece_seeded_configs(pose, start[k])
                reachable = barriers.reachable_goals(retry, start[k], tolerance)
            if found.shape[0] and reachable.shape[0] == 0:
                self._unreachable[k] = (self._barrier_offenders(found[0], start[k]), found[0])
            kept.append(reachable)
        return kept

    def _piece_seeded_configs(self, goal: Pose, start: torch.Tensor) -> torch.Tensor:
        """``[m, D]`` goal configurations of ``goal`` (batch 1) from an IK whose seeds are
        the start and :data:`REACHABLE_RETRY_SEEDS` configurations drawn uniformly in the
        start's part of the joint space (seeded: the same problem, the same seeds)."""
        low, high = self._barriers.piece(start)
        generator = torch.Generator().manual_seed(self._barriers.seed)
        unit = torch.rand(
            REACHABLE_RETRY_SEEDS - 1, start.shape[0], generator=generator, dtype=start.dtype
        )
        seeds = torch.cat((start[None], low + (high - low) * unit.to(start.device)))
        ik = self.ik_solver.solve_batch(
            goal,
            seed_config=seeds[None],
            rank_config=start[None],
            dls_seeds=REACHABLE_RETRY_SEEDS,
            lbfgs_fallback=True,
        )
        return self._goal_configs(ik, goal)[0]

    def _barrier_offenders(
        self, q: torch.Tensor, start: torch.Tensor, exact: bool = False
    ) -> list[Offender]:
        """Why the goal configuration ``q [D]`` cannot be reached from ``start [D]``: per joint
        with no reachable turn (:meth:`JointBarriers.turn_options`; ``exact``: a joint goal,
        whose own value counts, not its turns), an offender of kind ``"barrier"``
        (``value``: the goal's value, ``limit``: the barrier passed on the way there, the one
        nearest the start; ``depth``: how far past it the goal lies). Empty when every joint
        can get there."""
        barriers = self._barriers
        if not barriers.active:
            return []
        angles, blocked = barriers.scan()
        options, inside, open_ = barriers.turn_options(q[None], start)
        own = options.shape[-1] // 2  # the option of no whole turn: the value itself
        names = self.robot_config.joint_names
        offenders = []
        for j in range(q.shape[0]):
            if bool(open_[0, j, own] if exact else (inside & open_)[0, j].any()):
                continue
            s, v = float(start[j]), float(q[j])
            lo, hi = min(s, v), max(s, v)
            between = angles[j][blocked[j] & (angles[j] >= lo) & (angles[j] <= hi)]
            if between.numel() == 0:  # q[j] itself is outside the limits: not a barrier
                continue
            barrier = float(between.min() if v > s else between.max())
            others = sorted(
                {round(float(x), 2) for x in options[0, j][inside[0, j]]} - {round(v, 2)}
            )
            message = (
                f"{names[j]} would pass {barrier:.2f} rad on its way from {s:.2f} to {v:.2f} "
                "rad (the links self-collide there whatever the other joints do)"
            )
            if others and not exact:
                message += f"; its other turns within the limits ({others}) lie past one too"
            offenders.append(
                Offender("barrier", names[j], "start", abs(v - barrier), message, v, barrier)
            )
        return offenders
