"""Issue #30 item 5: while MPC follows a plan, the live viewer shows the plan (``/mpc/plan``) and
the MPC's predicted path (``/mpc/best``); both checked against forward kinematics written out
with the torch backend."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("viser", reason="the viewer needs viser: pip install '.[viz]'")

from curobo_lite.robot import Kinematics  # noqa: E402
from curobo_lite.sim import IdealTracker  # noqa: E402
from curobo_lite.types import JointState  # noqa: E402
from curobo_lite.viz import Viewer  # noqa: E402
from curobo_lite.wrap import MpcSolver  # noqa: E402


def test_viewer_draws_the_followed_plan_and_the_predicted_path():
    solver = MpcSolver.from_config("franka", num_particles=64, seed=1)
    robot = solver.robot_config
    start = robot.retract_config[None]
    # a straight joint-space plan of 60 states, 20 ms apart
    offset = torch.tensor([0.3, 0.2, -0.2, 0.3, 0.1, -0.1, 0.2])
    plan = JointState.from_position(start + torch.linspace(0.0, 1.0, 60)[:, None] * offset)
    solver.follow(plan, 0.02)
    tracker = IdealTracker(JointState.from_position(start.clone()))
    reference = Kinematics(robot, backend="torch")
    with Viewer(robot, port=0) as viewer:
        view = viewer.mpc_callback(solver, max_rate_hz=1e6, num_traces=0)
        state = tracker.state
        for step in range(3):
            result = solver.step(state)
            view(step)
            state = tracker.step(result.action)
        handles = viewer.server.scene._handle_from_node_name
        assert {"/mpc/plan", "/mpc/best"} <= set(handles)
        drawn = torch.as_tensor(handles["/mpc/plan"].points)  # [K, 2, 3] segments
        # the plan's end-effector path: every point lies on it, first to last state (the plan
        # is a joint-space line: its path sampled densely)
        dense = start + torch.linspace(0.0, 1.0, 4000)[:, None] * offset
        ee = reference.forward(dense).ee_position
        points = torch.cat((drawn[:, 0], drawn[-1:, 1])).to(ee)
        torch.testing.assert_close(points[0], ee[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(points[-1], ee[-1], atol=1e-5, rtol=0)
        nearest = torch.cdist(points, ee).amin(dim=1)
        assert float(nearest.max()) < 1e-5
        # the predicted path starts where the robot is and has one point per horizon step
        assert view.best_path.shape == (solver.dynamics_model.horizon, 3)
        torch.testing.assert_close(
            view.best_path[0], reference.forward(solver.rollout.start_state.position[:1])
            .ee_position[0], atol=1e-5, rtol=0
        )  # fmt: skip
