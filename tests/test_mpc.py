"""MPC in closed loop with the ideal tracker: reaching, limits, goal changes, determinism."""

from __future__ import annotations

import pytest
import torch

from curobo_lite.robot import Kinematics
from curobo_lite.sim import IdealTracker, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

POSITION_TOL = 0.01  # m
ROTATION_TOL = 0.05  # rad
REST_SPEED = 0.15  # rad/s: largest joint speed over the last 10 steps counted as "at rest"
LIMIT_TOL = 1e-5


@pytest.fixture(scope="module")
def solver() -> MpcSolver:
    torch.set_num_threads(1)
    return MpcSolver.from_config(robot="franka", task="particle_mpc")


def reachable_goals(solver: MpcSolver, n: int, seed: int) -> list[Pose]:
    """End-effector poses of random configurations inside the limits around the retract pose."""
    robot = solver.robot_config
    g = torch.Generator().manual_seed(seed)
    low, high = robot.joint_limits.position
    q = robot.retract_config + 0.5 * (2 * torch.rand(n, 7, generator=g) - 1)
    q = torch.maximum(torch.minimum(q, high - 0.1), low + 0.1)
    fk = Kinematics(robot).forward(q)
    return [Pose(fk.ee_position[i : i + 1], fk.ee_quaternion[i : i + 1]) for i in range(n)]


def retract_state(solver: MpcSolver) -> JointState:
    return JointState.from_position(solver.robot_config.retract_config[None].clone())


def assert_within_limits(solver: MpcSolver, record) -> None:
    limits = solver.robot_config.joint_limits
    for name, values in (("position", record.position), ("velocity", record.velocity),
                         ("acceleration", record.acceleration)):
        low, high = getattr(limits, name)
        assert bool((values >= low - LIMIT_TOL).all() and (values <= high + LIMIT_TOL).all()), name


@pytest.mark.slow
def test_reaches_goals_at_rest_within_limits(solver):
    for goal in reachable_goals(solver, 3, seed=0):
        solver.reset()
        record = run_closed_loop(solver, IdealTracker(retract_state(solver)), goal, 220)
        assert float(record.position_error[-1]) < POSITION_TOL
        assert float(record.rotation_error[-1]) < ROTATION_TOL
        assert float(record.velocity[-10:].abs().max()) < REST_SPEED
        assert_within_limits(solver, record)
        # the tracker's states are the commands: check them against finite differences too
        dt = solver.control_dt
        velocity_fd = torch.diff(record.position, dim=0) / dt
        torch.testing.assert_close(velocity_fd, record.velocity[1:], rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_goal_change_mid_run_is_followed(solver):
    first, second = reachable_goals(solver, 2, seed=7)
    solver.reset()
    record = run_closed_loop(solver, IdealTracker(retract_state(solver)), first, 320,
                             goal_changes={120: second})
    # the error is measured to the goal active at each step
    assert float(record.position_error[119]) < 0.05
    assert float(record.position_error[-1]) < POSITION_TOL
    assert_within_limits(solver, record)


def test_same_seed_same_commands():
    torch.set_num_threads(1)
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    runs = []
    for seed in (3, 3, 4):
        mpc = MpcSolver.from_config(robot="franka", task="particle_mpc", seed=seed,
                                    num_particles=64)
        record = run_closed_loop(mpc, IdealTracker(retract_state(mpc)), goal, 5)
        runs.append(record.position)
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_commands_are_clamped_consistently(solver):
    state = retract_state(solver)
    vmax = solver.robot_config.joint_limits.velocity[1]
    too_fast = JointState(state.position + 10.0 * solver.control_dt * vmax, 10.0 * vmax[None],
                          torch.zeros_like(vmax)[None])
    command, clamped = solver.enforce_limits(state, too_fast)
    assert clamped
    limits = solver.robot_config.joint_limits
    assert bool((command.acceleration.abs() <= limits.acceleration[1] + LIMIT_TOL).all())
    assert bool((command.velocity.abs() <= vmax + LIMIT_TOL).all())
    torch.testing.assert_close(command.position, state.position + command.velocity
                               * solver.control_dt)
    torch.testing.assert_close(command.velocity, state.velocity + command.acceleration
                               * solver.control_dt)


def test_bad_inputs_are_rejected_and_solver_stays_usable(solver):
    solver.reset()
    solver.update_goal(Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"current_state.*\[1, 7\].*\(1, 6\)"):
        solver.step(JointState.from_position(torch.zeros(1, 6)))
    with pytest.raises(ValueError, match="NaN"):
        solver.step(JointState.from_position(torch.full((1, 7), float("nan"))))
    with pytest.raises(TypeError, match="goal.*Pose or a JointState"):
        solver.update_goal([0.4, 0.0, 0.4])
    with pytest.raises(ValueError, match="batch 1"):
        solver.update_goal(Pose.from_list([0.45, 0.2, 0.45]).repeat(2))
    result = solver.step(retract_state(solver))
    assert result.action.position.shape == (1, 7)
    assert torch.isfinite(result.action.position).all()
    assert result.solve_time > 0 and "position_error" in result.metrics


def test_task_errors_name_the_file(tmp_path):
    import yaml

    from curobo_lite.rollout import TaskConfig

    data = TaskConfig.load("particle_mpc").to_dict()
    data["mpc"]["shift"] = 2
    path = tmp_path / "bad_mpc.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="bad_mpc.yml.*mpc.*shift"):
        MpcSolver.from_config(robot="franka", task=str(path))


def test_cli_runs_and_plots(tmp_path, capsys):
    from curobo_lite.cli import main

    plot = tmp_path / "mpc.png"
    code = main(["mpc", "--robot", "franka", "--goal", "0.45", "0.2", "0.45", "0", "1", "0", "0",
                 "--steps", "5", "--plot", str(plot), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "median step time" in out and "final position error" in out
    assert plot.stat().st_size > 1000
