"""Grasps whose spheres cannot clear the object: plans with the exact band, followed by MPC.

A grasp puts the object between the open fingers a few millimetres from the hand: often no
configuration reaches it with the finger spheres clear of the object (they stand proud of the
meshes), while the meshes are. MotionGen plans such goals with its exact band
(:data:`~curobo_lite.wrap.motion.motion_gen.EXACT_BAND`: spheres up to 15 mm deep where the
exact mesh check passes). The MPC's collision cost sees the spheres only, so it pushes the arm
off such a plan where the plan's spheres are in contact: the arm is held short of the grasp, or
pushed off a narrow passage into a mesh contact elsewhere.

:class:`BandRelief` lets the MPC follow such a plan: per sphere, while the plan time is at a
sample, the sphere's radius in the MPC's rollout is reduced by the deepest contact of that
sphere over the samples the horizon reaches from there (rounded up to ``RELIEF_STEP``). The
cost then charges only contact deeper than the plan's own, sphere by sphere: spheres the plan
keeps clear, and every sphere where the plan is clear, keep their full radius and the margin.
Only the rollout's spheres change (the MPC's measured metrics and MotionGen's checks keep the
robot file's radii).

:func:`plan_with_band` plans with the spheres alone first (a plan that keeps them clear needs no
relief) and with the band only when that fails for want of a sphere-clear goal or start.
:func:`guard_command` is the exact check of what is executed while the spheres are relieved:
a command whose meshes would touch is replaced by a stop where the robot is.
"""

from __future__ import annotations

import math

import torch

from curobo_lite.geom import WorldCollision
from curobo_lite.robot import Kinematics
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.motion.config import MotionGenResult, MotionGenStatus
from curobo_lite.wrap.motion.motion_gen import EXACT_BAND, MotionGen
from curobo_lite.wrap.mpc.tracking import TrackedPlan

# m: reliefs are rounded up to this step (fewer changes of the radii: each one recomputes the
# rollout's per-link bounds)
RELIEF_STEP = 5e-4
MIN_RADIUS = 1e-3  # m: what a relieved sphere keeps at least
# plans made with the band are followed this much slower where their spheres dip (and within
# SLOW_REACH seconds of it): the MPC lags a plan by its speed, and there the plan passes a few
# millimetres from the meshes
BAND_SPEED = 0.5
SLOW_REACH = 0.3
# the failures a plan with the exact band may mend: no goal configuration, or no start, whose
# spheres are clear (the meshes may be)
_BAND_MENDS = (MotionGenStatus.IK_FAIL, MotionGenStatus.INVALID_START_STATE_WORLD_COLLISION)


def plan_with_band(
    motion_gen: MotionGen, start: JointState, goal: Pose, band_first: bool = False
) -> tuple[MotionGenResult, float]:
    """``motion_gen.plan_single(start, goal)`` with its own band (the spheres alone in
    :class:`~curobo_lite.wrap.ReactivePlanner`), and when that fails for want of a sphere-clear
    goal or start (``IK_FAIL``, ``INVALID_START_STATE_WORLD_COLLISION``) once more with
    :data:`EXACT_BAND` (needs the exact check). ``band_first``: with the band at once (a goal
    known to need it: the spheres-only IK that fails takes as long as a plan). Returns the
    result (the first one's when both fail) and the band it was planned with (m)."""
    band = motion_gen.exact_band
    banded = motion_gen.exact_check and motion_gen.roadmap is not None and band < EXACT_BAND
    if not band_first or not banded:
        result = motion_gen.plan_single(start, goal)
        if result.success or result.status not in _BAND_MENDS or not banded:
            return result, band
    roadmap = motion_gen.roadmap.config
    roadmap.exact_band = EXACT_BAND  # (read by every check of the plan: IK, roadmap, trajopt)
    try:
        with_band = motion_gen.plan_single(start, goal)
    finally:
        roadmap.exact_band = band
    if with_band.success or band_first:
        return with_band, EXACT_BAND
    return result, band


@torch.no_grad()
def guard_command(
    checker: RobotWorld, measured: JointState, command: JointState, band: float
) -> JointState | None:
    """A stop at the ``measured [1, D]`` position (zero velocity and acceleration) when the
    ``command [1, D]``'s configuration fails :meth:`RobotWorld.validate` with ``band`` (its
    spheres deeper than ``band`` in an obstacle, or its meshes in contact, or outside the
    limits, or in self-collision); ``None`` when the command is valid."""
    if bool(checker.validate(command.position, band)[0]):
        return None
    return JointState.from_position(measured.position.clone())


class BandRelief:
    """The per-sphere radius reductions of one followed plan (see the module docstring).

    Args:
        kinematics: the MPC rollout's :class:`Kinematics` (its ``tables.sphere_local`` radii
            are edited in place).
        world_collision: the obstacles the plan was checked against.
        band: the deepest relief (m): MotionGen's exact band.
    """

    def __init__(self, kinematics: Kinematics, world_collision: WorldCollision, band: float):
        self.kinematics = kinematics
        self.world_collision = world_collision
        self.band = float(band)
        self._tracked: TrackedPlan | None = None
        self._relief: torch.Tensor | None = None  # [T, S] per plan sample
        self._applied = kinematics.tables.sphere_local.new_zeros(kinematics.num_spheres)

    @property
    def active(self) -> bool:
        """Whether a plan's reliefs are in use."""
        return self._tracked is not None

    @torch.no_grad()
    def depth(self, position: torch.Tensor) -> torch.Tensor:
        """``[T, S]`` metres each sphere of the robot file's radii reaches into the obstacles
        at ``position [T, D]`` (0 where clear), at most ``band``."""
        kinematics = self.kinematics
        spheres = kinematics.world_spheres(kinematics.forward(position).link_spheres).clone()
        spheres[..., 3] += self._applied  # the robot file's radii (disabled ones have none)
        distance = self.world_collision.sphere_distance(spheres, max_distance=1e-3).distance
        return (-distance).clamp(0.0, self.band)

    def plan_relief(self, tracked: TrackedPlan) -> torch.Tensor:
        """``[T, S]`` metres each sphere's radius gives up while the plan time is at each of
        ``tracked``'s samples: its deepest contact over the samples the horizon reaches from
        there (the plan holds its end), within ``[0, band]``, rounded up to
        :data:`RELIEF_STEP` (zero for a plan whose spheres are clear), and leaving every
        sphere at least ``MIN_RADIUS`` (a sphere disabled by a negative radius would pay
        nothing at any depth)."""
        depth = self.depth(tracked.position)
        reach = math.ceil(float(tracked.offsets[-1]) / tracked.dt) + 1  # samples in a horizon
        held = torch.cat((depth, depth[-1:].expand(reach - 1, -1)))
        ahead = held.unfold(0, reach, 1).amax(-1)
        relief = torch.ceil(ahead / RELIEF_STEP - 1e-6).clamp(min=0.0) * RELIEF_STEP
        radii = self.kinematics.tables.sphere_local[:, 3] + self._applied  # the robot file's
        return torch.minimum(relief, (radii - MIN_RADIUS).clamp(min=0.0).to(relief))

    @torch.no_grad()
    def slowed(self, plan: JointState, dt: float, speed: float) -> JointState:
        """``plan [T, D]`` (samples ``dt`` s apart) re-timed to run at ``speed`` (0 < speed <= 1)
        within :data:`SLOW_REACH` s of its samples whose spheres dip into an obstacle, at full
        speed elsewhere (ramped over ``SLOW_REACH``), resampled ``dt`` apart; velocities and
        accelerations zero (:meth:`MpcSolver.follow` takes finite differences)."""
        position = plan.position
        steps = position.shape[0]
        if steps < 2:
            return JointState.from_position(position.clone())
        contact = self.depth(position).amax(-1) > 0.0
        reach = max(1, round(SLOW_REACH / dt))
        near = torch.nn.functional.max_pool1d(
            contact.to(position.dtype)[None, None], 2 * reach + 1, stride=1, padding=reach
        )
        ramp = torch.nn.functional.avg_pool1d(
            near, 2 * reach + 1, stride=1, padding=reach, count_include_pad=False
        )[0, 0]
        rate = 1.0 - (1.0 - speed) * ramp  # plan seconds per second, in [speed, 1]
        # the new time of each sample (trapezoid of 1 / rate), then samples dt apart in it
        times = torch.cat((rate.new_zeros(1), (2.0 * dt / (rate[:-1] + rate[1:])).cumsum(0)))
        count = int(math.floor(float(times[-1]) / dt + 1e-6)) + 1
        new_times = torch.arange(count, dtype=times.dtype, device=times.device) * dt
        index = torch.searchsorted(times, new_times, right=True).clamp(1, steps - 1)
        low, high = times[index - 1], times[index]
        fraction = ((new_times - low) / (high - low)).clamp(0.0, 1.0)[:, None]
        resampled = torch.lerp(position[index - 1], position[index], fraction)
        if float(new_times[-1]) < float(times[-1]) - 1e-9:  # end exactly at the plan's end
            resampled = torch.cat((resampled, position[-1:]))
        return JointState.from_position(resampled)

    def start(self, tracked: TrackedPlan) -> bool:
        """Relieve the spheres while ``tracked`` is followed; ``False`` (and nothing changed)
        when its spheres are clear all along."""
        self.stop()
        relief = self.plan_relief(tracked)
        if not bool(relief.any()):
            return False
        self._tracked, self._relief = tracked, relief
        self.update(tracked)
        return True

    def update(self, following: TrackedPlan | None) -> bool:
        """Set the radii for the plan time of ``following`` (the MPC's followed plan; call
        before each MPC step): the radii come back once the MPC follows another plan. Whether
        a radius changed (a captured CUDA graph must capture again: the rollout's per-link
        bounds are computed outside it)."""
        if self._tracked is None:
            return False
        if following is not self._tracked:
            self.stop()
            return True
        index = min(int(self._tracked.time / self._tracked.dt), self._relief.shape[0] - 1)
        return self._set(self._relief[index])

    def stop(self) -> None:
        """Give every sphere its radius back."""
        self._tracked = self._relief = None
        self._restore()

    def _restore(self) -> None:
        if bool(self._applied.any()):
            self._set(torch.zeros_like(self._applied))

    def _set(self, relief: torch.Tensor) -> bool:
        """Radii less ``relief [S]`` (by the change since the last call: reserved spheres that
        hold an object are rewritten in place meanwhile, and disabled ones get no relief);
        whether any changed."""
        change = relief.to(self._applied) - self._applied
        if not bool(change.any()):
            return False
        self.kinematics.tables.sphere_local[:, 3] -= change
        self._applied = relief.to(self._applied).clone()
        return True
