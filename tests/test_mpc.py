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
REST_SPEED = 0.06  # rad/s: largest joint speed over the last 10 steps counted as "at rest"
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
    for name, values in (
        ("position", record.position),
        ("velocity", record.velocity),
        ("acceleration", record.acceleration),
    ):
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
    record = run_closed_loop(
        solver, IdealTracker(retract_state(solver)), first, 320, goal_changes={120: second}
    )
    # the error is measured to the goal active at each step
    assert float(record.position_error[119]) < 0.05
    assert float(record.position_error[-1]) < POSITION_TOL
    assert_within_limits(solver, record)


def test_same_seed_same_commands():
    torch.set_num_threads(1)
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    runs = []
    for seed in (3, 3, 4):
        mpc = MpcSolver.from_config(
            robot="franka", task="particle_mpc", seed=seed, num_particles=64
        )
        record = run_closed_loop(mpc, IdealTracker(retract_state(mpc)), goal, 5)
        runs.append(record.position)
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_commands_are_clamped_consistently(solver):
    state = retract_state(solver)
    vmax = solver.robot_config.joint_limits.velocity[1]
    too_fast = JointState(
        state.position + 10.0 * solver.control_dt * vmax,
        10.0 * vmax[None],
        torch.zeros_like(vmax)[None],
    )
    command, clamped = solver.enforce_limits(state, too_fast)
    assert clamped
    limits = solver.robot_config.joint_limits
    assert bool((command.acceleration.abs() <= limits.acceleration[1] + LIMIT_TOL).all())
    assert bool((command.velocity.abs() <= vmax + LIMIT_TOL).all())
    torch.testing.assert_close(
        command.position, state.position + command.velocity * solver.control_dt
    )
    torch.testing.assert_close(
        command.velocity, state.velocity + command.acceleration * solver.control_dt
    )


def test_limits_hold_when_the_plan_drives_into_them(solver):
    """Plans that accelerate far beyond the limits, towards the position limits, for 600 steps:
    every command stays within the robot's limits and is one semi-implicit Euler step."""
    limits = solver.robot_config.joint_limits
    dt = solver.control_dt
    g = torch.Generator().manual_seed(1)
    a_max = limits.acceleration[1]
    state = retract_state(solver)
    closest = torch.full((7,), float("inf"))
    fastest = torch.zeros(7)
    for i in range(600):
        direction = 1.0 if (i // 150) % 2 == 0 else -1.0
        plan_a = (direction * 2.0 + torch.randn(1, 7, generator=g)) * a_max
        plan_v = state.velocity + plan_a * dt
        plan = JointState(state.position + plan_v * dt, plan_v, plan_a)
        command, _ = solver.enforce_limits(state, plan)
        for name in ("position", "velocity", "acceleration"):
            low, high = getattr(limits, name)
            value = getattr(command, name)
            assert bool((value >= low - LIMIT_TOL).all() and (value <= high + LIMIT_TOL).all()), (
                i,
                name,
            )
        torch.testing.assert_close(command.velocity, state.velocity + command.acceleration * dt)
        torch.testing.assert_close(command.position, state.position + command.velocity * dt)
        gap = torch.minimum(
            command.position - limits.position[0], limits.position[1] - command.position
        )[0]
        closest = torch.minimum(closest, gap)
        fastest = torch.maximum(fastest, command.velocity[0].abs() / limits.velocity[1])
        state = command
    # the plans did push every joint to its velocity limit and up against a position limit
    assert bool((fastest > 0.99).all())
    assert bool((closest < 0.02).all())


def test_a_state_that_cannot_stop_in_time_brakes_at_the_acceleration_limit(solver):
    limits = solver.robot_config.joint_limits
    dt = solver.control_dt
    state = retract_state(solver)
    state.position[0, 0] = limits.position[1, 0] - 0.01
    state.velocity[0, 0] = 2.0  # stopping distance 2^2 / (2 * 15) = 0.13 rad > 0.01 rad
    plan = JointState(
        state.position + state.velocity * dt, state.velocity.clone(), torch.zeros(1, 7)
    )
    command, clamped = solver.enforce_limits(state, plan)
    assert clamped
    assert float(command.acceleration[0, 0]) == pytest.approx(float(limits.acceleration[0, 0]))
    assert float(command.velocity[0, 0]) == pytest.approx(
        2.0 + float(limits.acceleration[0, 0]) * dt
    )
    # joints at rest with a zero plan keep their state
    torch.testing.assert_close(command.position[0, 1:], state.position[0, 1:])
    torch.testing.assert_close(command.velocity[0, 1:], torch.zeros(6))


def test_limit_violation_metric(solver):
    limits = solver.robot_config.joint_limits
    state = retract_state(solver)
    assert solver.limit_violation(state) == 0.0
    fast = state.clone()
    fast.velocity[0, 2] = float(limits.velocity[1, 2]) + 0.3
    assert solver.limit_violation(fast) == pytest.approx(0.3, abs=1e-5)
    low = state.clone()
    low.position[0, 3] = float(limits.position[0, 3]) - 0.2
    assert solver.limit_violation(low) == pytest.approx(0.2, abs=1e-5)


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
    assert result.metrics["limit_violation"] == 0.0


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
    code = main(
        [
            "mpc",
            "--robot",
            "franka",
            "--goal",
            "0.45",
            "0.2",
            "0.45",
            "0",
            "1",
            "0",
            "0",
            "--steps",
            "5",
            "--plot",
            str(plot),
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "median step time" in out and "final position error" in out
    assert plot.stat().st_size > 1000
