"""An MPC step on a CPU replays recorded launches for the measured state's forward kinematics,
its pose error and the command (:func:`curobo_lite.kernels.launch.replayed`): they read the
rollout's start state and the plan, written in place every step. Over a closed loop with a new
goal and a moved obstacle the steps equal those of a solver that launches afresh every time
(the old path) bit for bit, and the pose errors equal numpy's (rotation matrices, float64) on a
fresh forward kinematics."""

from __future__ import annotations

import numpy as np
import torch
from test_mpc_pose_kernel import _matrix

from curobo_lite.geom import WorldConfig
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver
from curobo_lite.wrap.mpc import measured as measured_module
from curobo_lite.wrap.mpc import solver as solver_module

WORLD = {
    "cuboid": {"table": {"dims": [1.26, 1.4, 0.04], "pose": [0.47, 0.0, -0.02, 1, 0, 0, 0]}},
    "sphere": {"ball": {"radius": 0.08, "position": [0.35, 0.1, 0.45]}},
}
GOALS = ([0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0], [0.3, -0.3, 0.5, 0.0, 0.7071, 0.7071, 0.0])


def _numpy_pose_error(solver: MpcSolver, position: torch.Tensor, goal: list) -> np.ndarray:
    fk = solver.kinematics.forward(position.clone(), spheres=False)  # fresh, not replayed
    ee = fk.ee_position[0].double().numpy()
    quat = fk.ee_quaternion[0].double().numpy()
    quat /= np.linalg.norm(quat)  # float32 rounding would read as ~1e-3 rad near the goal
    goal_quat = np.asarray(goal[3:], dtype=np.float64)
    goal_quat /= np.linalg.norm(goal_quat)
    relative = _matrix(quat).T @ _matrix(goal_quat)
    angle = np.arccos(np.clip((np.trace(relative) - 1.0) / 2.0, -1.0, 1.0))
    return np.array([np.linalg.norm(ee - np.asarray(goal[:3])), angle])


def test_replayed_step_launches_equal_fresh_ones(monkeypatch):
    solvers = {}
    for replay in (False, True):
        solver = MpcSolver.from_config(world=WorldConfig.load(WORLD), num_particles=100)
        solver.update_goal(Pose.from_list(GOALS[0]))
        solvers[replay] = solver
    fresh = lambda cache, key, launch, device: launch()  # noqa: E731
    states = {
        replay: JointState.from_position(s.robot_config.retract_config[None].clone())
        for replay, s in solvers.items()
    }
    goal = GOALS[0]
    for step in range(7):
        if step == 3:
            goal = GOALS[1]
            for solver in solvers.values():
                solver.update_goal(Pose.from_list(goal))
        if step == 5:
            for solver in solvers.values():
                solver.world_collision.update_obstacle_pose("ball", [0.3, 0.0, 0.5, 1, 0, 0, 0])
        results = {}
        for replay, solver in solvers.items():
            if not replay:
                monkeypatch.setattr(measured_module, "replayed", fresh)
                monkeypatch.setattr(solver_module, "replayed", fresh)
            results[replay] = solver.step(states[replay])
            monkeypatch.undo()
        got, expected = results[True], results[False]
        assert got.metrics == expected.metrics
        for name in ("position", "velocity", "acceleration", "jerk"):
            assert torch.equal(getattr(got.action, name), getattr(expected.action, name))
        reference = _numpy_pose_error(solvers[True], states[True].position, goal)
        measured = [got.metrics["position_error"], got.metrics["rotation_error"]]
        np.testing.assert_allclose(measured, reference, rtol=1e-4, atol=2e-5)
        assert np.isfinite(got.metrics["world_distance"])
        states = {r: JointState(x.action.position, x.action.velocity) for r, x in results.items()}
    # the replays ran: one recording each of the frames, the pose error and the command
    assert len(solvers[True]._measured._replays) == 2
    assert len(solvers[True]._command_replays) == 1


def test_the_checked_state_is_written_in_place(monkeypatch):
    """The step checks the measured state once and copies it (filtered) into the rollout's
    start state; the same start states and commands as through ``update_start_state``."""
    solvers = {in_place: MpcSolver.from_config(num_particles=60) for in_place in (True, False)}
    state = JointState.from_position(solvers[True].robot_config.retract_config[None].clone())
    address = None
    for step in range(4):
        state = JointState(state.position + 0.01 * step, torch.full_like(state.position, 0.1))
        results = {}
        for in_place, solver in solvers.items():
            if step == 0:
                solver.update_goal(Pose.from_list(GOALS[0]))
            if not in_place:
                monkeypatch.setattr(solver_module, "write_in_place", lambda *args: False)
            results[in_place] = solver.step(state)
            monkeypatch.undo()
        starts = {k: s.rollout.start_state for k, s in solvers.items()}
        for name in ("position", "velocity", "acceleration"):
            assert torch.equal(getattr(starts[True], name), getattr(starts[False], name))
            assert torch.equal(results[True].action.position, results[False].action.position)
        address = address or starts[True].position.data_ptr()
        assert starts[True].position.data_ptr() == address  # kept where a replay reads it
