"""Which turn of a full-turn joint a plan can reach: the joint values that block the way.

A joint whose range spans more than a full turn (a UR arm's six joints span ``+-2 pi``) reaches
the same link poses at ``v`` and ``v +- 2 pi``; the IK picks the turn nearest the start. But
along any motion a joint passes through every value between its start and its goal, and some
values of some joints put the robot in self-collision whatever the other joints do: the UR5e's
elbow at ``+-pi`` (the forearm folded onto the upper arm), its shoulder lift between about 0.5
and 2.6 rad (the upper arm down through the base). Such a *barrier* splits the joint's range
into pieces that no motion connects: from an elbow at 4.8 rad (bent as at -1.5) the planner
cannot reach an elbow at 0.5 rad, nor 6.8 (past the limit). A goal configuration beyond a
barrier is unreachable whatever the roadmap samples or the optimizer's seeds: the roadmap spent
its whole budget (seconds) on such goals before the optimizer failed too (user sweep, UR5e,
seed 0: all 7 failures of 80, from starts wound past a barrier; for 5 of them no collision-free
goal configuration lies on the start's side at all).

:class:`JointBarriers` finds each full-turn joint's barriers once per robot by sampling (the
angles of a grid at which every sampled configuration of the other joints self-collides: a
conservative subset, an attached object only adds collisions), and
:meth:`JointBarriers.reachable_goals` moves each goal configuration's full-turn joints to the
nearest turn that no barrier separates from the start, dropping the goals that have none.
"""

from __future__ import annotations

import math

import torch

from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.ik.ranking import full_turn_joints
from curobo_lite.wrap.ik.result import distinct_rows

#: grid step (rad) of the barrier scan
SCAN_STEP = 0.1
#: configurations of the other joints sampled per grid angle: a quick screen, then the angles
#: where all of those self-collide are confirmed on more (a barrier: every one collides)
SCREEN_SAMPLES = 16
CONFIRM_SAMPLES = 256
#: radians beyond the start's and the goals' values that a full-turn joint's roadmap samples
#: reach. User sweep (UR5e, 4 scenes x 20 goals, seeds 0-2, A/B interleaved in one process,
#: load ~3-4): success the same (234/240) with pi / 2, pi or the whole side of the barriers;
#: the motion's duration max 5.7 / 6.6-8.2 / 14-15.7 s, sum 479 / 513 / 531 s; plan time sum
#: 19.1 / 18.7 / 21.3 s. Where the roadmap finds no path in it, the optimizer is not bounded.
SAMPLE_MARGIN = 0.5 * math.pi
#: whole turns tried either way of a joint's value (a range of up to 4 pi holds at most three)
_TURNS = 2


class JointBarriers:
    """The self-collision barriers of a robot's full-turn joints, found on first use.

    Args:
        checker: the robot (its self-collision spheres and position limits).
        seed: seed of the sampled configurations.
    """

    def __init__(self, checker: RobotWorld, seed: int = 0) -> None:
        self.checker = checker
        self.seed = seed
        self.full_turn = full_turn_joints(checker.kinematics)  # [D] bool
        self._active = bool(self.full_turn.any())  # read once (a device sync on CUDA)
        self._scan: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def active(self) -> bool:
        """Whether the robot has full-turn joints (else goals are never moved)."""
        return self._active

    def scan(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(angles [D, A], blocked [D, A])``: per joint a grid over its position range
        (:data:`SCAN_STEP` apart at most) and whether the grid angle is a barrier: every one
        of :data:`CONFIRM_SAMPLES` configurations (the other joints uniform within their
        limits) self-collides there. Only full-turn joints are scanned (the others' rows are
        all ``False``). Computed once (about 25 000 self-collision queries on a UR5e)."""
        if self._scan is not None:
            return self._scan
        low, high = self.checker.robot_config.joint_limits.position
        D = low.shape[0]
        span = float((high - low).max())
        A = int(math.ceil(span / SCAN_STEP)) + 1
        unit = torch.linspace(0.0, 1.0, A, dtype=low.dtype, device=low.device)
        angles = low[:, None] + (high - low)[:, None] * unit[None]  # [D, A]
        blocked = torch.zeros(D, A, dtype=torch.bool, device=low.device)
        if self.checker.self_collision_model is not None and self.active:
            generator = torch.Generator().manual_seed(self.seed)
            joints = self.full_turn.nonzero()[:, 0].tolist()
            for j in joints:
                blocked[j] = self._all_collide(j, angles[j], SCREEN_SAMPLES, generator)
                candidates = blocked[j].nonzero()[:, 0]
                if candidates.numel():
                    blocked[j, candidates] = self._all_collide(
                        j, angles[j, candidates], CONFIRM_SAMPLES, generator
                    )
        self._scan = (angles, blocked)
        return self._scan

    def _all_collide(
        self, joint: int, values: torch.Tensor, samples: int, generator: torch.Generator
    ) -> torch.Tensor:
        """``[V]`` bool: every one of ``samples`` configurations (uniform within the limits)
        with ``joint`` at each of ``values [V]`` self-collides."""
        low, high = self.checker.robot_config.joint_limits.position
        unit = torch.rand(samples, low.shape[0], generator=generator, dtype=low.dtype)
        q = (low + (high - low) * unit.to(low.device))[None].repeat(values.shape[0], 1, 1)
        q[:, :, joint] = values[:, None]
        distance = self.checker.self_collision_distance(q.reshape(-1, low.shape[0]))
        return (distance.view(values.shape[0], samples) < 0.0).all(-1)

    def piece(self, start: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(low [D], high [D])``: per joint the part of its range that a motion from
        ``start [D]`` can reach, between the barriers nearest the start's value on either
        side (the position limits where there is none); ``None`` without full-turn joints.
        Every configuration a plan passes lies in this box: the roadmap samples it only."""
        if not self.active:
            return None
        angles, blocked = self.scan()
        low, high = self.checker.robot_config.joint_limits.position.to(start)
        angles, blocked = angles.to(start), blocked.to(start.device)
        below = torch.where(blocked & (angles < start[:, None]), angles, -math.inf).amax(-1)
        above = torch.where(blocked & (angles > start[:, None]), angles, math.inf).amin(-1)
        return torch.maximum(low, below), torch.minimum(high, above)

    def sample_box(
        self, start: torch.Tensor, goals: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(low [D], high [D])``: the box of a roadmap's samples from ``start [D]`` to
        ``goals [G, D]``: the start's part of the range (:meth:`piece`), each full-turn joint
        narrowed to :data:`SAMPLE_MARGIN` beyond the start's and the goals' values (a wrist
        sampled over ``+-2 pi`` thins the roadmap out where the way is, and its first path
        winds joints round: motions of 15 s where 3 s do); ``None`` without full-turn
        joints."""
        piece = self.piece(start)
        if piece is None:
            return piece
        values = torch.cat((start[None], goals))
        full = self.full_turn.to(start.device)
        low = torch.where(full, torch.maximum(piece[0], values.amin(0) - SAMPLE_MARGIN), piece[0])
        high = torch.where(full, torch.minimum(piece[1], values.amax(0) + SAMPLE_MARGIN), piece[1])
        return low, high

    def turn_options(
        self, goals: torch.Tensor, start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(options [G, D, T], inside [G, D, T], open [G, D, T])``: per goal configuration
        of ``goals [G, D]`` and joint, its value moved by ``-2 .. 2`` whole turns (the middle
        option: the value itself; a joint that does not turn fully has its value as every
        option), whether each lies within the
        position limits, and whether no barrier (:meth:`scan`) lies between it and the value
        of ``start [D]``."""
        D = self.full_turn.shape[0]
        if goals.ndim != 2 or goals.shape[1] != D:
            raise InputValueError(f"goals: expected [G, {D}], received {tuple(goals.shape)}")
        if start.shape != (D,):
            raise InputValueError(f"start: expected [{D}], received {tuple(start.shape)}")
        angles, blocked = self.scan()
        low, high = self.checker.robot_config.joint_limits.position.to(goals)
        turns = torch.arange(-_TURNS, _TURNS + 1, dtype=goals.dtype, device=goals.device)
        full_turn = self.full_turn.to(goals.device)
        turns = torch.where(full_turn[:, None], turns[None], 0.0)  # [D, T]
        options = goals[:, :, None] + 2.0 * math.pi * turns[None]  # [G, D, T]
        inside = (options >= low[:, None]) & (options <= high[:, None])
        # a barrier angle between the start's value and the option's blocks it
        lo = torch.minimum(options, start[:, None])[..., None]
        hi = torch.maximum(options, start[:, None])[..., None]
        grid = angles.to(goals)[None, :, None]  # [1, D, 1, A]
        crossed = (blocked.to(goals.device)[None, :, None] & (grid >= lo) & (grid <= hi)).any(-1)
        return options, inside, ~crossed

    def reachable_turns(
        self, goals: torch.Tensor, start: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(q [G, D], reachable [G])``: the goal configurations ``goals [G, D]`` with each
        full-turn joint at the turn nearest ``start [D]`` that lies within the limits and
        that no barrier separates from the start's value (:meth:`turn_options`);
        ``reachable`` is ``False`` where some joint has no such turn (those rows keep their
        values)."""
        options, inside, open_ = self.turn_options(goals, start)
        ok = inside & open_
        cost = torch.where(ok, (options - start[:, None]).abs(), math.inf)
        best = cost.argmin(-1, keepdim=True)  # [G, D, 1]
        reachable = ok.any(-1).all(-1)
        moved = options.gather(-1, best)[..., 0]
        return torch.where(reachable[:, None], moved, goals), reachable

    def reachable_goals(
        self, goals: torch.Tensor, start: torch.Tensor, tolerance: float
    ) -> torch.Tensor:
        """``[m, D]``: the goal configurations ``goals [G, D]`` (ranked) that a motion from
        ``start [D]`` can reach, their full-turn joints at the reachable turn nearest the
        start (:meth:`reachable_turns`): first those the turn left as they were, then the
        moved ones, each in rank order, rows within ``tolerance`` of a kept one dropped.
        ``goals`` as they are when the robot has no full-turn joints; empty when none is
        reachable."""
        if not self.active or goals.shape[0] == 0:
            return goals
        q, reachable = self.reachable_turns(goals, start)
        moved = (q != goals).any(-1)
        order = torch.cat(
            ((reachable & ~moved).nonzero()[:, 0], (reachable & moved).nonzero()[:, 0])
        )
        return distinct_rows(q[order], tolerance)
