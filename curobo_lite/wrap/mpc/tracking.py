"""A joint plan followed by MPC: its samples, its clock, and the reference it writes each step.

:class:`TrackedPlan` holds a plan ``[T, D]`` (positions, velocities and accelerations ``dt``
seconds apart) and the plan time of the current control step. :meth:`TrackedPlan.write` samples
the plan at that time plus each horizon step's offset (linear interpolation, clamped to the
plan's ends) and copies the samples into the rollout's reference ``[1, H, D]`` in place, so a
captured CUDA graph that reads the reference sees every step's samples without a recapture.

Feed-forward: with acceleration control the plan's accelerations are also the MPPI mean's
nominal part. The mean is kept as the plan's accelerations plus a residual the optimizer
shapes; :meth:`TrackedPlan.write` puts the change of the nominal part since the last step (the
new samples minus the old ones shifted as the mean is shifted) into ``feedforward_delta``,
which :class:`~curobo_lite.wrap.MpcSolver` adds to the mean right after its shift. Without it
the particles, whose spread shrinks near a settled plan, cannot pick up a fast plan's
accelerations within a few steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from curobo_lite.types import JointState, TensorDeviceType, check_joint_state
from curobo_lite.types.errors import InputValueError

# rate (1/s) at which the MPPI mean's nominal part closes the error to the plan (critically
# damped: a time constant of 0.125 s, 3.2 rad/s^2 for 0.05 rad; at 4/s a grasp's approach drifted
# 0.05 rad off the plan, 2 cm into the object, table_pick_0_0000)
FEEDBACK_RATE = 8.0
# joint-space distance (rad) to the plan's sample of now up to which the position error is fed
# back in full, and from which it is not at all (the velocity error always is)
FEEDBACK_REACH = (0.05, 0.1)
# the same distances slow the plan's clock down and widen the collision margin: a clock that
# ran on while the robot lagged 0.25 rad behind a fast stretch (feedback faded out) led the
# pose and tracking costs to cut a corner 12 mm (spheres) into a table under a margin capped
# at the plan's own 0.5 mm clearance, which says nothing about the robot's off the plan
# (MBM table_under_pick_0_0001)
# margins are rounded down to this (m): fewer changes of the cost, each of which rebuilds its
# constants (and a CUDA graph captures again)
MARGIN_STEP = 5e-4


@dataclass
class TrackedPlan:
    """A followed plan.

    Attributes:
        position, velocity, acceleration: ``[T, D]`` the plan's samples.
        dt: seconds between samples.
        offsets: ``[H]`` seconds from the start state to each step of the MPC's horizon
            (from its ``traj_dt [H]``, whose entry 0 is unused).
        time: plan time (s) of the next control step's measured state.
        margins: the world collision margin (m) to use while the plan time is at each sample
            (``[T]`` floats, see :meth:`MpcSolver.follow`), or ``None``: the solver's own.
        off_plan_margin: the margin (m) that ``margins`` widen to as the robot strays from
            the plan (:meth:`margin`).
        strayed_now: joint-space distance (rad) of the position last given to :meth:`observe`
            to the plan's sample of now.
    """

    position: torch.Tensor
    velocity: torch.Tensor
    acceleration: torch.Tensor
    dt: float
    offsets: torch.Tensor
    time: float = 0.0
    margins: list[float] | None = None
    off_plan_margin: float = 0.0
    strayed_now: float = 0.0

    @classmethod
    def from_plan(
        cls,
        plan: JointState,
        dt: float | None,
        dof: int,
        tensor_args: TensorDeviceType,
        traj_dt: torch.Tensor,
        speed: float = 1.0,
    ) -> TrackedPlan:
        """Check ``plan`` (a :class:`JointState` ``[T, D]``, finite) and ``dt`` (s > 0, needed
        when ``T > 1``) and copy them, slowed to ``speed`` (``0 < speed <= 1``: the samples
        ``dt / speed`` apart, velocities times ``speed``, accelerations times ``speed²``). A
        plan whose velocities are all zero while its positions move gets central
        finite-difference velocities (and accelerations likewise)."""
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0.0 < speed <= 1.0:
            raise InputValueError(f"speed: expected a number in (0, 1], received {speed!r}")
        plan = check_joint_state(plan, "plan", dof, tensor_args)
        steps = plan.position.shape[0]
        if dt is None:
            if steps > 1:
                raise InputValueError(
                    f"dt: expected the seconds between the plan's {steps} states, received None"
                )
            dt = 1.0
        if isinstance(dt, bool) or not isinstance(dt, (int, float)) or not math.isfinite(dt):
            raise InputValueError(f"dt: expected a finite number of seconds, received {dt!r}")
        if dt <= 0.0:
            raise InputValueError(f"dt: expected seconds > 0, received {dt!r}")
        position = plan.position.detach().clone()
        velocity = plan.velocity.detach().clone()
        acceleration = plan.acceleration.detach().clone()
        moves = steps > 1 and bool((position[1:] != position[:-1]).any())
        if moves and not bool(velocity.any()):
            velocity = torch.gradient(position, spacing=float(dt), dim=0)[0]
            velocity[-1] = 0.0
        if moves and not bool(acceleration.any()):
            acceleration = torch.gradient(velocity, spacing=float(dt), dim=0)[0]
            acceleration[-1] = 0.0
        return cls(
            position,
            velocity * speed,
            acceleration * speed**2,
            float(dt) / speed,
            torch.cat((traj_dt.new_zeros(1), traj_dt[1:].cumsum(0))).detach(),
        )

    @property
    def duration(self) -> float:
        """Seconds from the plan's first sample to its last."""
        return (self.position.shape[0] - 1) * self.dt

    @property
    def finished(self) -> bool:
        """Whether the plan time has passed the last sample."""
        return self.time >= self.duration

    def sample(self, times: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(position, velocity, acceleration)`` ``[K, D]`` at plan ``times [K]`` (s),
        linearly interpolated and held at the ends (velocity and acceleration 0 past the last
        sample)."""
        last = self.position.shape[0] - 1
        s = (times / self.dt).clamp(0.0, float(last))
        low = s.floor().long().clamp(max=max(last - 1, 0))
        high = (low + 1).clamp(max=last)
        frac = (s - low.to(s.dtype))[:, None]
        position = torch.lerp(self.position[low], self.position[high], frac)
        within = (times <= self.duration)[:, None].to(position.dtype)
        velocity = torch.lerp(self.velocity[low], self.velocity[high], frac) * within
        acceleration = torch.lerp(self.acceleration[low], self.acceleration[high], frac) * within
        return position, velocity, acceleration

    def observe(self, position: torch.Tensor) -> None:
        """Note how far the measured ``position [1, D]`` is from the plan's sample of now
        (``strayed_now``, read by :meth:`margin` and :meth:`advance`)."""
        self.strayed_now = self.strayed(position) if self.position.shape[0] > 1 else 0.0

    def off_plan(self) -> float:
        """0 while the robot is within ``FEEDBACK_REACH[0]`` of the plan's sample of now, 1
        from ``FEEDBACK_REACH[1]`` on, linear between."""
        low, high = FEEDBACK_REACH
        return min(max((self.strayed_now - low) / (high - low), 0.0), 1.0)

    def margin(self) -> float | None:
        """The collision margin at the current plan time (``None`` without ``margins``): the
        plan's, widened towards ``off_plan_margin`` as the robot strays (:meth:`off_plan`;
        rounded down to ``MARGIN_STEP`` as the plan's are)."""
        if self.margins is None:
            return None
        on_plan = self.margins[min(int(self.time / self.dt), len(self.margins) - 1)]
        wanted = on_plan + (max(self.off_plan_margin, on_plan) - on_plan) * self.off_plan()
        return on_plan if wanted == on_plan else math.floor(wanted / MARGIN_STEP) * MARGIN_STEP

    def advance(self, seconds: float) -> None:
        """Move the plan's clock on by ``seconds`` while the robot keeps up, slower as it
        strays, not at all from ``FEEDBACK_REACH[1]`` off (:meth:`off_plan`): the reference
        waits where the tracking's position feedback still reaches the robot."""
        self.time += seconds * (1.0 - self.off_plan())

    def correction(
        self, start: JointState, position: torch.Tensor, velocity: torch.Tensor
    ) -> torch.Tensor:
        """``[H, D]`` accelerations that take the start state's error to the plan's sample of
        now (``position``, ``velocity`` ``[D]``) to zero along the horizon, critically damped
        at ``FEEDBACK_RATE``: ``e(t) = (e0 + (de0 + w e0) t) exp(-w t)``, its second
        derivative (the position error faded out between the ``FEEDBACK_REACH`` distances).
        Added to the plan's accelerations in the MPPI mean's nominal part, it
        closes the loop that the plan's accelerations alone leave open: a robot off the plan
        (by the particles' noise, a plan started at rest under a moving robot) is brought
        back without the particles' spread, which shrinks near a settled plan."""
        w = FEEDBACK_RATE
        error = start.position[0] - position
        # far off the plan the way back may be blocked (the plan goes around what lies between):
        # the position part fades out (a replan's business), the braking part stays
        low, high = FEEDBACK_REACH
        error = error * min(max((high - float(error.norm())) / (high - low), 0.0), 1.0)
        slope = start.velocity[0] - velocity + w * error
        t = self.offsets[:, None]
        return torch.exp(-w * t) * (w * w * (error + slope * t) - 2.0 * w * slope)

    def strayed(self, position: torch.Tensor) -> float:
        """Joint-space distance (rad) of ``position [1, D]`` to the plan's sample of now
        (interpolated as :meth:`sample` does; the index on the host: read every step)."""
        last = self.position.shape[0] - 1
        s = min(max(self.time / self.dt, 0.0), float(last))
        low = min(int(s), max(last - 1, 0))
        reference = torch.lerp(self.position[low], self.position[min(low + 1, last)], s - low)
        return float((position[0] - reference).norm())

    def rest(self, from_time: float | None = None) -> torch.Tensor:
        """``[K, D]`` the plan's samples from ``from_time`` (default: now) to the end, the
        interpolated state at that time first."""
        t = self.time if from_time is None else from_time
        index = min(int(math.floor(t / self.dt)) + 1, self.position.shape[0])
        now = self.sample(self.position.new_tensor([t]))
        return torch.cat((now[0], self.position[index:]))

    def write(self, rollout, shift: int, repeat_tail: bool) -> torch.Tensor:
        """Write the plan at ``time + offsets`` into ``rollout.reference`` (in place when it
        exists: see :meth:`ArmReacher.update_reference`) and return ``feedforward_delta``
        ``[1, H, D]``: the new accelerations minus the previous reference's shifted by
        ``shift`` steps (the tail repeated with ``repeat_tail``, else zero), as the MPPI mean
        is shifted this step. The previous reference of another plan counts (a replan swaps
        the nominal part); one that did not exist counts as zero."""
        position, velocity, acceleration = self.sample(self.time + self.offsets)
        acceleration = acceleration + self.correction(rollout.start_state, position[0], velocity[0])
        reference = rollout.reference
        if reference is None:
            previous = torch.zeros_like(acceleration)
            rollout.update_reference(JointState(position[None], velocity[None], acceleration[None]))
            reference = rollout.reference
        else:
            previous = reference.acceleration[0]
            if shift > 0:
                tail = previous[-1:] if repeat_tail else torch.zeros_like(previous[-1:])
                shifted = previous[shift:]
                previous = torch.cat(
                    (shifted, tail.expand(previous.shape[0] - shifted.shape[0], -1))
                )
            previous = previous.clone()
            reference.position[0].copy_(position)
            reference.velocity[0].copy_(velocity)
            reference.acceleration[0].copy_(acceleration)
        return (acceleration - previous)[None]
