"""Live view of a running MPC loop: the robot, MPC's predicted end-effector path, the
end-effector traces of the particles it sampled and, while the solver follows a plan
(``MpcSolver.follow``, ``ReactivePlanner``), the plan's end-effector path.

Call the view after every control step (it takes the step index, so it fits
:func:`~curobo_lite.sim.run_closed_loop`'s ``on_step``); it redraws at most ``max_rate_hz``
times a second and returns at once otherwise. A redraw copies a few small tensors to the host
(the measured state ``[1, D]``, the MPPI mean ``[H, D]`` and ``num_traces`` sampled action
sequences ``[K, H, D]``), integrates them on the CPU and queues the scene updates; viser sends
them from its own thread, so a slow browser never blocks the loop.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from curobo_lite.kernels import tensor_step
from curobo_lite.types.errors import InputValueError

_BEST_COLOR = (220, 0, 200)
_SAMPLE_COLOR = (90, 160, 255)
_PLAN_COLOR = (0, 170, 80)


class MpcView:
    """Draws an ``MpcSolver``'s state into a :class:`~curobo_lite.viz.Viewer`.

    Args:
        viewer: the viewer to draw into (its world is replaced by the solver's, shared, so
            obstacles moved between steps move on screen too).
        solver: the ``MpcSolver`` (read after each step: ``rollout.start_state``,
            ``mppi.mean_action``, ``mppi.sampled_actions``, ``goal``).
        max_rate_hz: redraws per second at most.
        num_traces: sampled particles drawn (the first ``K`` of the last iteration).

    Attributes:
        call_seconds: seconds spent in each call (what the view added to each control step).
        updates: redraws so far.
        best_path: ``[H, 3]`` the predicted end-effector path last drawn (``None`` before).
        sample_paths: ``[K, H, 3]`` the sampled traces last drawn.
    """

    def __init__(
        self, viewer: Any, solver: Any, max_rate_hz: float = 10.0, num_traces: int = 16
    ) -> None:
        if not (isinstance(max_rate_hz, int | float) and max_rate_hz > 0):
            raise InputValueError(f"max_rate_hz: expected a number > 0, received {max_rate_hz!r}")
        if isinstance(num_traces, bool) or not isinstance(num_traces, int) or num_traces < 0:
            raise InputValueError(f"num_traces: expected an int >= 0, received {num_traces!r}")
        if solver.robot_config.joint_names != viewer.robot_config.joint_names:
            raise InputValueError(
                f"solver: its robot's joints {solver.robot_config.joint_names} differ from the "
                f"viewer's {viewer.robot_config.joint_names}"
            )
        self.viewer = viewer
        self.solver = solver
        self.min_interval = 1.0 / float(max_rate_hz)
        self.num_traces = min(num_traces, solver.mppi.config.num_particles)
        self.call_seconds: list[float] = []
        self.updates = 0
        self.best_path: torch.Tensor | None = None
        self.sample_paths: torch.Tensor | None = None
        self._last_update = -math.inf
        self._lines: dict[str, Any] = {}
        self._goal = None
        self._plan = None  # the followed plan last drawn
        if solver.world_collision is not None:
            viewer.show_world(solver.world_collision)

    def __call__(self, step: int | None = None) -> None:
        """After control step ``step``: redraw if the last redraw is ``1 / max_rate_hz`` old."""
        start = time.perf_counter()
        if start - self._last_update >= self.min_interval:
            self._last_update = start
            self.update()
        self.call_seconds.append(time.perf_counter() - start)

    def overhead_ms(self) -> dict[str, float]:
        """``mean`` and ``max`` milliseconds the view added per control step, and ``updates``."""
        if not self.call_seconds:
            return {"mean": 0.0, "max": 0.0, "updates": 0}
        seconds = torch.tensor(self.call_seconds, dtype=torch.float64)
        return {
            "mean": float(seconds.mean()) * 1e3,
            "max": float(seconds.max()) * 1e3,
            "updates": self.updates,
        }

    @torch.no_grad()
    def predicted_paths(self) -> torch.Tensor:
        """``[1 + K, H, 3]`` end-effector paths from the solver's current start state: row 0
        the MPPI mean (what MPC will execute), then ``K`` sampled particles; on the CPU."""
        solver = self.solver
        model = solver.dynamics_model
        state = solver.rollout.start_state
        cpu = {"device": "cpu", "dtype": torch.float32}
        mean = solver.mppi.mean_action[:1]
        samples = solver.mppi.sampled_actions[0, : self.num_traces]
        actions = torch.cat((mean, samples)).to(**cpu)
        count, horizon, dof = actions.shape
        position = tensor_step(
            actions,
            *(
                getattr(state, field)[:1].to(**cpu).expand(count, dof).contiguous()
                for field in ("position", "velocity", "acceleration")
            ),
            model.traj_dt.to(**cpu),
            model.step_mode,
        )[0]
        ee = self.viewer.kinematics.forward(position.reshape(-1, dof), spheres=False).ee_position
        return ee.reshape(count, horizon, 3)

    def update(self) -> None:
        """Redraw now: robot at the measured state, goal, obstacles and the predicted paths."""
        solver, viewer = self.solver, self.viewer
        if solver.rollout.start_state is None:
            return  # no step taken yet
        paths = self.predicted_paths()
        viewer.set_state(solver.rollout.start_state.position[:1])
        goal = solver.goal.goal_pose if solver.goal is not None else None
        if goal is not None and goal is not self._goal:
            viewer.show_goal(goal)
            self._goal = goal
        if solver.world_collision is viewer.world_collision:
            viewer.sync_world()
        tracked = getattr(solver, "following", None)
        if tracked is not None and tracked is not self._plan and tracked.position.shape[0] > 1:
            self._plan = tracked  # drawn once per plan: its end-effector path
            q = tracked.position[:: max(1, tracked.position.shape[0] // 100)].to("cpu")
            ee = self.viewer.kinematics.forward(q, spheres=False).ee_position
            plan_segments = torch.stack((ee[:-1], ee[1:]), dim=1).numpy()
            self._draw_segments("/mpc/plan", plan_segments, _PLAN_COLOR, 0.004)
        self.best_path, self.sample_paths = paths[0], paths[1:]
        # segments [K, H - 1, 2, 3]: consecutive points of each path
        segments = torch.stack((paths[:, :-1], paths[:, 1:]), dim=2).numpy()
        with viewer.server.atomic():
            self._draw_segments("/mpc/best", segments[0], _BEST_COLOR, 0.006)
            if self.num_traces:
                self._draw_segments(
                    "/mpc/samples", segments[1:].reshape(-1, 2, 3), _SAMPLE_COLOR, 0.002
                )
        self.updates += 1

    def _draw_segments(self, name: str, points, color: tuple, thickness: float) -> None:
        """Move the points of line-segment node ``name`` (made on first use: adding a node
        costs viser far more than updating one)."""
        handle = self._lines.get(name)
        if handle is None or handle.points.shape != points.shape:
            self._lines[name] = self.viewer.server.scene.add_line_segments(
                name, points=points, colors=color, thickness=thickness
            )
        else:
            handle.points = points
