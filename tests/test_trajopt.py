"""TrajOptSolver: IK-seeded batched L-BFGS, retiming, interpolation, checks, command line.

Independent references: forward kinematics of the reached configuration against the goal (angle
from ``2 acos |<q1, q2>|`` in float64), finite differences of the interpolated samples in float64
against the robot's limits, closed-form cubic polynomials for the spline, and the seeds' geometry.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import IKSolver
from curobo_lite.wrap.cli.trajopt import main as trajopt_main
from curobo_lite.wrap.trajopt.solver import (
    TrajOptSolver,
    TrajOptSolverConfig,
    cubic_spline_matrix,
    interpolate,
)

F64 = TensorDeviceType(dtype=torch.float64)
N_GOALS = 20


@pytest.fixture(scope="module")
def robot() -> RobotConfig:
    return RobotConfig.load("franka")


@pytest.fixture(scope="module")
def solver() -> TrajOptSolver:
    return TrajOptSolver.from_config("franka", "gradient_trajopt", num_seeds=4)


def random_configs(robot: RobotConfig, n: int, seed: int, inner: float = 1.0) -> torch.Tensor:
    """``[n, D]`` uniform draws inside the position limits (shrunk to the ``inner`` fraction)."""
    low, high = robot.joint_limits.position
    mid, half = (low + high) / 2, (high - low) / 2 * inner
    u = torch.rand(n, robot.dof, generator=torch.Generator().manual_seed(seed))
    return mid - half + 2 * half * u


def fk_pose(robot: RobotConfig, q: torch.Tensor) -> Pose:
    fk = Kinematics(robot).forward(q)
    return Pose(fk.ee_position, fk.ee_quaternion)


def pose_errors(robot: RobotConfig, q: torch.Tensor, goal: Pose) -> tuple[torch.Tensor, ...]:
    """Position (m) and rotation (rad) error of FK(q) to ``goal``, in float64."""
    r64 = robot.to(F64)
    fk = Kinematics(r64, F64).forward(q.double())
    position = (fk.ee_position - goal.position.double()).norm(dim=-1)
    dot = (fk.ee_quaternion * goal.quaternion.double()).sum(-1).abs()
    dot = dot / (fk.ee_quaternion.norm(dim=-1) * goal.quaternion.double().norm(dim=-1))
    return position, 2.0 * torch.acos(dot.clamp(max=1.0))


def assert_limits_hold(robot: RobotConfig, result, tol: float = 1e-4) -> None:
    """Backward and central finite differences of every interpolated trajectory (float64)
    within the position, velocity and acceleration limits (``tol`` relative)."""
    limits = robot.joint_limits
    p = result.interpolated_solution.position.double()
    dt = result.interpolation_dt
    v = torch.diff(p, dim=1) / dt
    a = torch.diff(v, dim=1) / dt
    vc = (p[:, 2:] - p[:, :-2]) / (2 * dt)
    checks = {
        "position": (p, limits.position),
        "velocity": (v, limits.velocity),
        "velocity (central)": (vc, limits.velocity),
        "acceleration": (a, limits.acceleration),
    }
    for name, (x, lim) in checks.items():
        lim = lim.double()
        span = lim[1] - lim[0]
        excess = torch.maximum(x - lim[1], lim[0] - x) / span
        worst = float(excess.max())
        assert worst <= tol, f"{name}: exceeds its limits by {worst:.3g} of the range"
    start = result.solution.position[:, 0]
    torch.testing.assert_close(result.interpolated_solution.position[:, 0], start)


@pytest.fixture(scope="module")
def batch_case(robot, solver):
    q_goal = random_configs(robot, N_GOALS, seed=2024)
    goal = fk_pose(robot, q_goal)
    start = JointState.from_position(robot.retract_config[None].repeat(N_GOALS, 1))
    return goal, solver.solve_batch_pose(start, goal)


@pytest.mark.slow
def test_batched_reachable_goals_are_solved(robot, batch_case):
    goal, result = batch_case
    assert result.success.shape == (N_GOALS,)
    assert result.solution.position.shape == (N_GOALS, 32, 7)
    T = result.interpolated_solution.position.shape[1]
    assert result.interpolated_solution.position.shape == (N_GOALS, T, 7)
    final = result.solution.position[:, -1]
    position, rotation = pose_errors(robot, final, goal)
    reached = (position < 0.005) & (rotation < 0.05)
    assert int(reached.sum()) >= math.ceil(0.95 * N_GOALS), (position, rotation)
    # the solver's own success flags agree with the independent check
    assert bool((reached | ~result.success).all())
    torch.testing.assert_close(result.position_error.double(), position, atol=1e-5, rtol=1e-3)
    # the interpolated trajectory ends where the knots end, and holds there
    last = result.interpolated_last_index
    rows = torch.arange(N_GOALS)
    torch.testing.assert_close(result.interpolated_solution.position[rows, last], final)
    torch.testing.assert_close(result.interpolated_solution.position[:, -1], final)
    # its duration is (H - 1) knots at the optimized dt
    duration = last.double() * result.interpolation_dt
    torch.testing.assert_close(duration, 31 * result.optimized_dt.double(), rtol=0, atol=1e-5)
    assert "success" in repr(result) and f"/{N_GOALS}" in repr(result)


@pytest.mark.slow
def test_batched_limits_hold_along_interpolated_trajectories(robot, batch_case):
    _, result = batch_case
    assert_limits_hold(robot, result)
    # retiming makes the trajectories as fast as the limits allow (within the time margin):
    # the tightest quantity of each trajectory sits near 1 / (1 + margin) of its limit
    limits = robot.joint_limits
    p = result.interpolated_solution.position.double()
    dt = result.interpolation_dt
    v = torch.diff(p, dim=1) / dt
    a = torch.diff(v, dim=1) / dt
    v_ratio = (v.abs() / limits.velocity[1].double()).amax(dim=(1, 2))
    a_ratio = (a.abs() / limits.acceleration[1].double()).amax(dim=(1, 2)).sqrt()
    tightest = torch.maximum(v_ratio, a_ratio)
    assert float(tightest.max()) <= 1.0
    assert float(tightest.median()) > 0.8


def test_single_solve_matches_problem_conventions(robot, solver):
    q_goal = random_configs(robot, 1, seed=7, inner=0.8)
    goal = fk_pose(robot, q_goal)
    start = JointState.from_position(robot.retract_config[None].clone())
    result = solver.solve_pose(start, goal)
    assert result.success.shape == (1,) and bool(result.success[0])
    assert result.status == ["success"]
    position, rotation = pose_errors(robot, result.interpolated_solution.position[:, -1], goal)
    assert float(position[0]) < 0.005 and float(rotation[0]) < 0.05
    assert_limits_hold(robot, result)
    assert result.solve_time > 0 and set(result.timings) == {"ik", "trajopt", "interpolation"}
    plan = result.get_interpolated_plan(0)
    assert plan.position.shape[0] == int(result.interpolated_last_index[0]) + 1
    assert plan.joint_names == robot.joint_names


def test_unreachable_goal_returns_best_attempt(robot, solver):
    goal = Pose.from_list([2.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0])  # 2 m away: beyond the reach
    start = JointState.from_position(robot.retract_config[None].clone())
    result = solver.solve_pose(start, goal)
    assert not bool(result.success[0])
    assert "goal not reached" in result.status[0]
    position, _ = pose_errors(robot, result.solution.position[:, -1], goal)
    assert float(position[0]) > 0.5
    torch.testing.assert_close(result.position_error.double(), position, atol=1e-5, rtol=1e-3)
    # the best attempt still reaches towards the goal: closer than the start
    start_error, _ = pose_errors(robot, start.position, goal)
    assert float(position[0]) < float(start_error[0]) - 0.1
    assert torch.isfinite(result.interpolated_solution.position).all()
    assert_limits_hold(robot, result)


def test_joint_goals_are_reached(robot, solver):
    goal_q = random_configs(robot, 3, seed=11)
    goal_q[0, 3] = robot.joint_limits.position[1, 3]  # on a position limit
    start = JointState.from_position(robot.retract_config[None].repeat(3, 1))
    result = solver.solve_joint(start, JointState.from_position(goal_q))
    assert bool(result.success.all()), result.status
    final = result.interpolated_solution.position[:, -1]
    assert float((final - goal_q).norm(dim=-1).max()) < 0.01
    torch.testing.assert_close(result.goal_state, goal_q)
    # pose errors are reported against the goal configuration's forward kinematics
    position, rotation = pose_errors(robot, final, fk_pose(robot, goal_q))
    torch.testing.assert_close(result.position_error.double(), position, atol=1e-5, rtol=1e-3)
    assert_limits_hold(robot, result)


def goal_repeat(goal: Pose, n: int) -> Pose:
    """Each of ``goal``'s poses ``n`` times in a row (batch ``S * n``)."""
    return Pose(goal.position.repeat_interleave(n, 0), goal.quaternion.repeat_interleave(n, 0))


def test_goal_configurations_reach_the_goal(robot, solver):
    """Phase 1: the trajectory optimizer's goal configurations are its IKSolver's solutions."""
    q_goal = random_configs(robot, 3, seed=5)
    goal = fk_pose(robot, q_goal)
    start = robot.retract_config[None].repeat(3, 1)
    configs, reached, result = solver._goal_configs(start, goal, 4)
    # no second IK: the configurations are the IK solver's first-ranked solutions
    assert isinstance(solver.ik_solver, IKSolver)
    picks = torch.arange(4) % solver.config.ik.num_seeds
    assert torch.equal(configs, result.solutions[:, picks])
    assert configs.shape == (3, 4, 7) and reached.shape == (3, 4)
    assert bool(reached[:, 0].all())
    position, rotation = pose_errors(robot, configs[:, 0], goal)
    assert float(position.max()) < 0.005 and float(rotation.max()) < 0.05
    low, high = robot.joint_limits.position
    assert bool(((configs >= low) & (configs <= high)).all())
    # reached solutions are ranked: precise ones (a quarter of both thresholds, by forward
    # kinematics here) first, then by joint distance to the start
    distance = (configs - start[:, None]).norm(dim=-1)
    pos, rot = pose_errors(robot, configs.reshape(-1, 7), goal_repeat(goal, 4))
    precise = ((pos <= 0.25 * 0.005) & (rot <= 0.25 * 0.05)).view(3, 4)
    both = reached[:, 0] & reached[:, 1]
    same_tier = precise[:, 0] == precise[:, 1]
    assert bool((precise[both, 0] | ~precise[both, 1]).all())
    ordered = distance[:, 0] <= distance[:, 1] + 1e-6
    assert bool(ordered[both & same_tier].all())


def test_seeds_follow_straight_lines_and_are_reproducible(robot, solver):
    start = robot.retract_config[None].repeat(2, 1)
    goals = random_configs(robot, 2 * 3, seed=3, inner=0.8).view(2, 3, 7)
    solver._gen.manual_seed(0)
    seeds = solver.make_seeds(start, goals).view(2, 3, 32, 7)
    solver._gen.manual_seed(0)
    again = solver.make_seeds(start, goals).view(2, 3, 32, 7)
    torch.testing.assert_close(seeds, again)
    # every seed ends at its goal configuration (action H-2 sets the last knot)
    torch.testing.assert_close(seeds[:, :, -2], goals)
    # the first seed of each problem lies on the segment start -> goal, monotonically
    direction = goals[:, 0] - start
    first = seeds[:, 0] - start[:, None]
    s = (first * direction[:, None]).sum(-1) / direction.square().sum(-1)[:, None]
    torch.testing.assert_close(first, s[..., None] * direction[:, None], atol=1e-5, rtol=0)
    assert bool((s.diff(dim=1) >= -1e-6).all()) and bool((s >= 0).all())
    # the others are perturbed off their lines
    off = seeds[:, 1:] - start[:, None, None]  # [2, 2, H, D]
    d = (goals[:, 1:] - start[:, None])[:, :, None]  # [2, 2, 1, D]
    along = (off * d).sum(-1, keepdim=True) / d.square().sum(-1, keepdim=True) * d
    assert float((off - along).norm(dim=-1).amax(dim=-1).min()) > 1e-3
    low, high = robot.joint_limits.position
    assert bool(((seeds >= low) & (seeds <= high)).all())


def test_cubic_spline_reproduces_clamped_cubics():
    """A cubic with zero slope at both ends is its own clamped spline: the interpolation must
    return it and its derivatives exactly."""
    H, L = 8, 7.0
    dt = torch.tensor([0.05, 0.03], dtype=torch.float64)
    idt = 0.01
    c0 = torch.tensor([[0.3, -1.0], [0.0, 2.0]], dtype=torch.float64)  # [B, D]
    c1 = torch.tensor([[1.5, -0.7], [2.0, 0.4]], dtype=torch.float64)
    tau = torch.arange(H, dtype=torch.float64)
    s = lambda x: 3 * (x / L) ** 2 - 2 * (x / L) ** 3  # noqa: E731
    knots = c0[:, None] + c1[:, None] * s(tau)[None, :, None]
    out = interpolate(knots, dt, idt, "CUBIC", cubic_spline_matrix(H, F64))
    assert out.last_index.tolist() == [35, 21]
    for b in range(2):
        n = int(out.last_index[b])
        t = torch.arange(n + 1, dtype=torch.float64) * idt
        x = t / dt[b]  # knot coordinate
        ds = 6 * x / L**2 - 6 * x**2 / L**3
        dds = torch.full_like(x, 6 / L**2) - 12 * x / L**3
        ddds = -12 / L**3
        st = out.state[b, : n + 1]
        torch.testing.assert_close(st.position, c0[b] + c1[b] * s(x)[:, None])
        torch.testing.assert_close(st.velocity, c1[b] * ds[:, None] / dt[b])
        torch.testing.assert_close(st.acceleration, c1[b] * dds[:, None] / dt[b] ** 2)
        torch.testing.assert_close(
            st.jerk[:-1], (c1[b] * ddds / dt[b] ** 3).expand(n, 2).contiguous()
        )
    # the shorter trajectory holds its final knot at rest after its end
    tail = out.state[1, 22:]
    torch.testing.assert_close(tail.position, knots[1, -1].expand_as(tail.position))
    assert float(tail.velocity.abs().max()) == 0.0 and float(tail.acceleration.abs().max()) == 0


def test_linear_interpolation_is_piecewise_linear():
    knots = torch.tensor([[[0.0], [1.0], [3.0], [3.0]]], dtype=torch.float64)
    out = interpolate(knots, torch.tensor([0.04], dtype=torch.float64), 0.01, "LINEAR")
    p = out.state.position[0, :, 0]
    assert out.last_index.tolist() == [12]
    torch.testing.assert_close(p[::4], knots[0, :, 0])
    torch.testing.assert_close(p[2], torch.tensor(0.5, dtype=torch.float64))
    torch.testing.assert_close(p[6], torch.tensor(2.0, dtype=torch.float64))
    torch.testing.assert_close(out.state.velocity[0, 5, 0], torch.tensor(50.0, dtype=torch.float64))
    with pytest.raises(ValueError, match="mode: expected one of"):
        interpolate(knots, torch.tensor([0.04], dtype=torch.float64), 0.01, "QUINTIC")


def test_retime_is_tight_under_the_time_margin(robot, solver):
    """The retimed step keeps every knot's finite-difference velocity/acceleration/jerk within
    limits / (1 + margin) (by cuRobo's scaling rule), and is at most one rounding step longer
    than needed."""
    H, margin = 32, solver.config.time_margin
    s = torch.linspace(0, 1, H, dtype=torch.float64)
    profile = 10 * s**3 - 15 * s**4 + 6 * s**5
    knots = robot.retract_config.double().expand(2, H, 7).clone()
    knots[0, :, 0] += 2.5 * profile  # a long move of joint 1
    knots[1, :, 3] -= 0.3 * profile  # a short move of joint 4
    dt = solver.retime(knots.float()).double()

    def scale(k: torch.Tensor, step: float) -> float:
        v = torch.diff(k, dim=0, prepend=k[:1]) / step
        a = torch.diff(v, dim=0, prepend=torch.zeros_like(v[:1])) / step
        j = torch.diff(a, dim=0, prepend=torch.zeros_like(a[:1])) / step
        lim = robot.joint_limits
        r = [
            (v.abs() / lim.velocity[1].double()).max(),
            (a.abs() / lim.acceleration[1].double()).max().sqrt(),
            (j.abs() / lim.jerk[1].double()).max() ** (1 / 3),
        ]
        return float(max(r))

    step = solver.config.interpolation_dt / (H - 1)
    for b in range(2):
        assert scale(knots[b], float(dt[b])) <= 1 / (1 + margin) + 1e-5
        assert scale(knots[b], float(dt[b]) - step) > 1 / (1 + margin) - 1e-5
        n = float(dt[b]) * (H - 1) / solver.config.interpolation_dt
        assert abs(n - round(n)) < 1e-4  # whole controller steps


def test_bad_inputs_raise_clear_errors(robot, solver, tmp_path):
    start = JointState.from_position(robot.retract_config[None].clone())
    goal = Pose.from_list([0.4, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"start_state: expected position shape \[S, 7\]"):
        solver.solve_pose(JointState.from_position(torch.zeros(1, 6)), goal)
    with pytest.raises(TypeError, match="start_state: expected a JointState"):
        solver.solve_pose(robot.retract_config[None], goal)
    with pytest.raises(ValueError, match="start_state: .*NaN"):
        solver.solve_pose(JointState.from_position(torch.full((1, 7), float("nan"))), goal)
    moving = JointState(robot.retract_config[None].clone(), velocity=torch.full((1, 7), 0.1))
    with pytest.raises(ValueError, match="start_state: trajectory optimization plans from rest"):
        solver.solve_pose(moving, goal)
    with pytest.raises(TypeError, match="goal_pose: expected a Pose"):
        solver.solve_pose(start, [0.4, 0.0, 0.4])
    with pytest.raises(ValueError, match="goal_pose: expected batch 1, received 2"):
        solver.solve_pose(start, goal.repeat(2))
    with pytest.raises(ValueError, match="goal_pose: contains NaN"):
        solver.solve_pose(start, Pose(torch.full((1, 3), float("nan"))))
    with pytest.raises(ValueError, match="start_state: expected batch 1 or 3"):
        solver.solve_batch_pose(
            JointState.from_position(robot.retract_config.repeat(2, 1)), goal.repeat(3)
        )
    with pytest.raises(ValueError, match=r"goal_state: expected position shape \[S, 7\]"):
        solver.solve_joint(start, JointState.from_position(torch.zeros(1, 3)))
    with pytest.raises(ValueError, match="trajopt: unknown key"):
        TrajOptSolver.from_config("franka", interpolation_period=0.01)
    with pytest.raises(ValueError, match="trajopt.interpolation: expected one of"):
        TrajOptSolver.from_config("franka", interpolation="QUINTIC")
    with pytest.raises(ValueError, match="trajopt.interpolation_dt"):
        TrajOptSolverConfig.from_dict({"interpolation_dt": 0.0})
    with pytest.raises(ValueError, match=r"trajopt.ik: unknown key"):
        TrajOptSolverConfig.from_dict({"ik": {"seeds": 3}})
    task = yaml.safe_load(Path(_task_file()).read_text())
    task["lbfgs"]["n_iter"] = 3
    path = tmp_path / "bad_task.yml"
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(ValueError, match=r"bad_task.yml: lbfgs: unknown key\(s\) \['n_iter'\]"):
        TrajOptSolver.from_config("franka", str(path))
    task["lbfgs"].pop("n_iter")
    task["model"]["control_space"] = "ACCELERATION"
    path.write_text(yaml.safe_dump(task))
    with pytest.raises(ValueError, match="model.control_space: trajectory optimization needs"):
        TrajOptSolver.from_config("franka", str(path))


def _task_file() -> str:
    from curobo_lite.config_files import resolve_config_file

    return str(resolve_config_file("task", "gradient_trajopt"))


def test_cli_solves_saves_and_plots(robot, tmp_path, capsys):
    q_goal = random_configs(robot, 1, seed=21, inner=0.8)
    pose = fk_pose(robot, q_goal)
    goal = [f"{x:.6f}" for x in pose.position[0].tolist() + pose.quaternion[0].tolist()]
    save, plot, scales = tmp_path / "traj.yml", tmp_path / "traj.png", tmp_path / "scales.png"
    argv = ["--goal", *goal, "--save", str(save), "--plot", str(plot)]
    assert trajopt_main([*argv, "--track-scales", str(scales), "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    for text in ("ik:", "trajopt:", "result: SUCCESS", "position error", "solve time", "pose_cost"):
        assert text in out
    data = yaml.safe_load(save.read_text())
    assert data["joint_names"] == robot.joint_names and data["dt"] == 0.01
    positions = torch.tensor(data["positions"], dtype=torch.float64)
    velocities = torch.tensor(data["velocities"], dtype=torch.float64)
    accelerations = torch.tensor(data["accelerations"], dtype=torch.float64)
    assert positions.shape == velocities.shape == accelerations.shape
    assert positions.shape[1] == 7 and positions.shape[0] > 10
    torch.testing.assert_close(positions[0], robot.retract_config.double(), atol=1e-6, rtol=0)
    # velocities are consistent with the positions (trapezoid rule over each sample step)
    step = (velocities[1:] + velocities[:-1]) / 2 * data["dt"]
    torch.testing.assert_close(positions.diff(dim=0), step, atol=2e-4, rtol=0)
    position, _ = pose_errors(robot, positions[-1:].float(), pose)
    assert float(position[0]) < 0.005
    for png in (plot, scales):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_bad_arguments_before_writing(tmp_path, capsys):
    missing = tmp_path / "no_such_dir" / "traj.yml"
    with pytest.raises(SystemExit) as err:
        trajopt_main(["--goal", "0.4", "0", "0.4", "0", "1", "0", "0", "--save", str(missing)])
    assert err.value.code == 2
    assert "--save: directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        trajopt_main(["--joint-goal", "0.1", "0.2", "--plot", str(tmp_path / "p.png")])
    assert err.value.code == 2
    assert "goal_state" in capsys.readouterr().err
    assert not (tmp_path / "p.png").exists()


def test_config_typos_that_would_exhaust_memory_are_refused():
    # found by `make fuzz`: a time_margin of 1e9 retimed a plan into 5e11 samples
    from curobo_lite.wrap.trajopt.config import TrajOptSolverConfig
    from curobo_lite.wrap.trajopt.timing import MAX_INTERPOLATED_SAMPLES, interpolate

    with pytest.raises(ValueError, match=r"time_margin: .*\[0, 10\], received 1000000000"):
        TrajOptSolverConfig(time_margin=1e9)
    knots = torch.zeros(1, 4, 2)
    dt = torch.tensor([MAX_INTERPOLATED_SAMPLES * 0.01])  # 3 segments of that: 3x the cap
    with pytest.raises(ValueError, match=f"more than {MAX_INTERPOLATED_SAMPLES}"):
        interpolate(knots, dt, 0.01, "LINEAR")


def test_early_stop_ends_when_the_goal_is_reached_with_clearance(robot):
    """``trajopt.early_stop``: among obstacles the solve stops at the first check where a seed
    is within 1 mm / 0.01 rad of the goal and 5 mm clear of the wall; checked by forward
    kinematics in float64 and coal on the same spheres, against a solve without it."""
    from collision_reference import coal_sphere_box_distance

    wall = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
    goal = Pose.from_list([0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0])
    start = JointState.from_position(robot.retract_config[None].clone())
    world = {"cuboid": {"wall": wall}}
    early = TrajOptSolver.from_config("franka", world=world).solve_pose(start, goal)
    plain = TrajOptSolver.from_config("franka", world=world, early_stop=None).solve_pose(
        start, goal
    )
    assert bool(early.success[0]) and bool(plain.success[0])
    stopped_at = early.debug["trajopt_iterations"]
    assert stopped_at % 4 == 0 and stopped_at < plain.debug["trajopt_iterations"]
    knots = early.solution.position[0]
    position, rotation = pose_errors(robot, knots[-1:], goal)
    assert float(position[0]) <= 0.001 and float(rotation[0]) <= 0.01
    spheres = Kinematics(robot).forward(knots).link_spheres
    clearance = coal_sphere_box_distance(
        spheres.reshape(-1, 4).double().numpy(), [(wall["pose"], wall["dims"])]
    )
    assert float(clearance.min()) >= 0.005 - 1e-5
    with pytest.raises(ValueError, match="trajopt.early_stop: unknown key"):
        TrajOptSolver.from_config("franka", early_stop={"clearence": 0.01})


@pytest.mark.slow
def test_batch_continues_only_the_problems_still_running(robot, solver, monkeypatch):
    """Problems that stop at the first convergence check leave the batch: the later rollouts
    carry only the seeds of the problems still running; the early ones reach their goals and
    no problem claims success it does not have (independent float64 FK)."""
    near = robot.retract_config[None] + 0.05  # reached at once: stops at the first check
    # two goals that take 12-16 iterations alone (and end short of the thresholds)
    q_goal = torch.cat((near, near + 0.02, random_configs(robot, 12, seed=77)[10:]))
    goal = fk_pose(robot, q_goal)
    start = JointState.from_position(robot.retract_config[None].repeat(4, 1))
    batches = []
    rollout_fn = solver.rollout.rollout_fn

    def spy(act_seq):
        batches.append(act_seq.shape[0])
        return rollout_fn(act_seq)

    monkeypatch.setattr(solver.rollout, "rollout_fn", spy)
    result = solver.solve_batch_pose(start, goal)
    monkeypatch.undo()
    full = 4 * solver.config.num_seeds
    line_search = len(solver.lbfgs_config.line_search_scale)
    assert batches[0] == full  # the first evaluation: every seed of every problem
    # every seed's line search runs until the first check only; the far goals run past it
    # with their own seeds alone (x the line-search steps)
    check = solver.lbfgs_config.convergence_check_every
    assert result.debug["trajopt_iterations"] > check
    assert batches.count(full * line_search) == check
    assert 2 * solver.config.num_seeds * line_search in batches
    position, rotation = pose_errors(robot, result.solution.position[:, -1], goal)
    reached = (position < 0.005) & (rotation < 0.05)
    assert bool(reached[:2].all()) and bool(result.success[:2].all()), (position, rotation)
    assert bool((reached | ~result.success).all())
