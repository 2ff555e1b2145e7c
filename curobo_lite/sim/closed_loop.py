"""An ideal joint-state tracker and a closed-loop runner.

A tracker is anything with a ``state`` (:class:`JointState` ``[1, D]``) and a
``step(command) -> JointState``: :class:`IdealTracker` here, or the physics plant
:class:`~curobo_lite.sim.MujocoPlant`. Optional extras the runner uses when present:
``last_contacts`` (an object with ``count`` and ``max_penetration``, read after each step) and
``sync_world(world)`` (called after an event, with the solver's obstacles, so obstacle moves
reach the simulated world too) and ``predicted_state(seconds)`` (for latency compensation).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError, InputValueError


class IdealTracker:
    """A robot that reaches every commanded joint state exactly by the next control step.

    Args:
        state: the initial :class:`JointState` ``[1, D]``.
    """

    def __init__(self, state: JointState) -> None:
        self.reset(state)

    def reset(self, state: JointState) -> None:
        self.state = state.detach().clone()

    def step(self, command: JointState) -> JointState:
        """Apply ``command [1, D]``; returns the new measured state (a copy)."""
        if command.position.shape != self.state.position.shape:
            raise InputValueError(
                f"command: expected position shape {tuple(self.state.position.shape)}, received "
                f"{tuple(command.position.shape)}"
            )
        self.state = command.detach().clone()
        return self.state.clone()


@dataclass
class ClosedLoopRecord:
    """What a closed-loop run measured, one row per control step (after the command).

    Attributes:
        position, velocity, acceleration: ``[T, D]`` measured joint states.
        position_error, rotation_error: ``[T]`` end-effector errors of the measured state (m,
            rad) to the goal active at that step.
        solve_time: ``[T]`` seconds per :meth:`MpcSolver.step`.
        control_dt: seconds between rows.
        world_distance, self_distance: ``[T]`` signed clearance (m) of the state the command was
            computed from, to the obstacles and between the robot's own spheres (``None`` for a
            robot without collision spheres).
        step_time: ``[T]`` wall-clock seconds of ``tracker.step`` (the simulation, for a plant).
        contact_count, max_penetration: ``[T]`` robot-obstacle contacts the tracker reported
            during each step and their deepest penetration (m); ``None`` for a tracker without
            ``last_contacts``.
    """

    position: torch.Tensor
    velocity: torch.Tensor
    acceleration: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    solve_time: torch.Tensor
    control_dt: float
    world_distance: torch.Tensor | None = None
    self_distance: torch.Tensor | None = None
    step_time: torch.Tensor | None = None
    contact_count: torch.Tensor | None = None
    max_penetration: torch.Tensor | None = None

    @property
    def time(self) -> torch.Tensor:
        return torch.arange(1, self.position.shape[0] + 1) * self.control_dt

    def __repr__(self) -> str:
        return (
            f"ClosedLoopRecord(steps={self.position.shape[0]}, final position_error="
            f"{float(self.position_error[-1]):.4g} m, final rotation_error="
            f"{float(self.rotation_error[-1]):.4g} rad, median solve_time="
            f"{float(self.solve_time.median()) * 1e3:.2f} ms)"
        )


def run_closed_loop(
    solver,
    tracker: Any,
    goal: Pose,
    steps: int,
    goal_changes: dict[int, Pose] | None = None,
    on_step: Callable[[int], None] | None = None,
    events: dict[int, Callable[[Any], None]] | None = None,
    latency_compensation: float = 0.0,
) -> ClosedLoopRecord:
    """Run ``solver`` (an :class:`~curobo_lite.wrap.MpcSolver`) against ``tracker`` for ``steps``
    control steps towards ``goal``; ``goal_changes`` maps a step index to a new goal pose;
    ``events`` maps a step index to a callable run with the solver before that step (e.g. one
    that moves an obstacle: ``lambda mpc: mpc.world_collision.update_obstacle_pose(...)``; a
    tracker with ``sync_world`` then receives the solver's obstacles);
    ``on_step(i)`` is called after every step (e.g. a progress bar's ``update``).

    ``latency_compensation`` (s, >= 0): the solver plans from
    ``tracker.predicted_state(latency_compensation)``, the state at which a command sent with
    that latency takes effect (a Smith predictor: the measured state plus the motion already
    commanded over the latency); without it a plan made from a late state restarts behind the
    previous command at every step and the arm crawls."""
    if steps < 1:
        raise InputValueError(f"steps: expected >= 1, received {steps}")
    if not latency_compensation >= 0.0:
        raise InputValueError(
            f"latency_compensation: expected seconds >= 0, received {latency_compensation}"
        )
    if latency_compensation > 0.0 and not hasattr(tracker, "predicted_state"):
        raise InputTypeError(
            f"latency_compensation: needs a tracker with predicted_state(seconds), received a "
            f"{type(tracker).__name__}"
        )
    goal_changes = dict(goal_changes or {})
    events = dict(events or {})
    solver.update_goal(goal)
    state = tracker.state.clone()
    rows: dict[str, list] = {
        k: []
        for k in (
            "position",
            "velocity",
            "acceleration",
            "position_error",
            "rotation_error",
            "solve_time",
            "world_distance",
            "self_distance",
            "step_time",
            "contact_count",
            "max_penetration",
        )
    }
    for i in range(steps):
        if i in goal_changes:
            solver.update_goal(goal_changes[i])
        if i in events:
            events[i](solver)
            if hasattr(tracker, "sync_world") and solver.world_collision is not None:
                tracker.sync_world(solver.world_collision.world)
        if latency_compensation > 0.0:
            state = tracker.predicted_state(latency_compensation)
        result = solver.step(state)
        step_start = time.perf_counter()
        state = tracker.step(result.action)
        rows["step_time"].append(time.perf_counter() - step_start)
        contacts = getattr(tracker, "last_contacts", None)
        if contacts is not None:
            rows["contact_count"].append(contacts.count)
            rows["max_penetration"].append(contacts.max_penetration)
        rows["position"].append(state.position[0].cpu())
        rows["velocity"].append(state.velocity[0].cpu())
        rows["acceleration"].append(state.acceleration[0].cpu())
        rows["solve_time"].append(result.solve_time)
        for key in ("world_distance", "self_distance"):
            if key in result.metrics:
                rows[key].append(result.metrics[key])
        error = solver.pose_error(state)
        rows["position_error"].append(error[0])
        rows["rotation_error"].append(error[1])
        if on_step is not None:
            on_step(i)
    return ClosedLoopRecord(
        position=torch.stack(rows["position"]),
        velocity=torch.stack(rows["velocity"]),
        acceleration=torch.stack(rows["acceleration"]),
        position_error=torch.tensor(rows["position_error"]),
        rotation_error=torch.tensor(rows["rotation_error"]),
        solve_time=torch.tensor(rows["solve_time"]),
        control_dt=solver.control_dt,
        world_distance=torch.tensor(rows["world_distance"]) if rows["world_distance"] else None,
        self_distance=torch.tensor(rows["self_distance"]) if rows["self_distance"] else None,
        step_time=torch.tensor(rows["step_time"]),
        contact_count=torch.tensor(rows["contact_count"]) if rows["contact_count"] else None,
        max_penetration=(
            torch.tensor(rows["max_penetration"]) if rows["max_penetration"] else None
        ),
    )
