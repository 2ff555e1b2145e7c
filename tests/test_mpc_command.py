"""The MPC step's command kernel (curobo_lite.kernels.command_kernels) against references
written out here: the torch formula the solver used before (integrate the plan with the step
kernels, then ~35 torch ops of the braking-distance clamp), a hand-computed semi-implicit Euler
step, and the braking-distance bound itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from curobo_lite.kernels import StepMode, tensor_step
from curobo_lite.kernels import command_kernels as ck
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver

D = 7
DT = 0.02


def reference_limit(x0, v0, a0, command, bounds, dt):
    """The solver's former torch clamp (MpcSolver._limited_command before the kernel):
    ``(position, velocity, acceleration, jerk, clamped, violation)``."""
    (x_low, x_high), (v_low, v_high), (a_low, a_high) = bounds
    cx, cv, ca, cj = command
    brake = torch.stack((-a_low, a_high))[:, None]
    finite = torch.isfinite(brake)
    brake = torch.where(finite, brake, torch.ones_like(brake))
    room = torch.stack((x_high - x0, x0 - x_low)).clamp(min=0.0)
    v_stop = brake * (torch.sqrt(dt * dt + 2.0 * room / brake) - dt)
    v_stop = torch.where(finite, v_stop, torch.full_like(v_stop, float("inf")))
    v_max = torch.minimum(v_high, v_stop[0])
    v_min = torch.maximum(v_low, -v_stop[1])
    a_max = torch.minimum(a_high, (v_max - v0) / dt)
    a_min = torch.maximum(a_low, (v_min - v0) / dt)
    acceleration = torch.minimum(torch.maximum(ca, a_min), a_max)
    acceleration = torch.minimum(torch.maximum(acceleration, a_low), a_high)
    velocity = v0 + acceleration * dt
    position = x0 + velocity * dt
    clamped = ~(
        torch.isclose(position, cx, rtol=1e-5, atol=1e-6).all()
        & torch.isclose(velocity, cv, rtol=1e-4, atol=1e-5).all()
    )
    jerk = torch.where(clamped, (acceleration - a0) / dt, cj)
    out = [torch.where(clamped, new, old) for new, old in ((position, cx), (velocity, cv))]
    out += [torch.where(clamped, acceleration, ca), jerk]
    values = torch.stack(out[:3])  # [3, 1, D]
    excess = torch.maximum(values - bounds[:, 1, None], bounds[:, 0, None] - values)
    return (*out, bool(clamped), float(excess.amax().clamp(min=0.0)))


def franka_like_bounds(device, dtype):
    position = torch.tensor([[-2.9, -1.76, -2.9, -3.07, -2.9, -0.02, -2.9]])
    position = torch.cat((position, torch.tensor([[2.9, 1.76, 2.9, -0.07, 2.9, 3.75, 2.9]])))
    velocity = torch.tensor([2.17, 2.17, 2.17, 2.17, 2.61, 2.61, 2.61])
    acceleration = torch.tensor([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    bounds = torch.stack(
        (position, torch.stack((-velocity, velocity)), torch.stack((-acceleration, acceleration)))
    )
    return bounds.to(device=device, dtype=dtype).contiguous()


def random_states(n, bounds, generator):
    """``n`` start states: inside the position limits, some near them and fast towards them,
    some beyond the velocity limits, some at rest."""
    (x_low, x_high), (v_low, v_high), _ = bounds.cpu().double()
    u = torch.rand(n, D, generator=generator, dtype=torch.float64)
    x0 = x_low + (x_high - x_low) * u
    near = torch.rand(n, generator=generator) < 0.3
    x0[near] = (x_high - 0.01 * torch.rand(D, generator=generator, dtype=torch.float64))[None]
    v0 = v_high * (2.4 * torch.rand(n, D, generator=generator, dtype=torch.float64) - 1.2)
    v0[near] = v0[near].abs()  # towards the limit
    v0[: n // 8] = 0.0
    a0 = 5.0 * torch.randn(n, D, generator=generator, dtype=torch.float64)
    return x0, v0, a0


def _to(device, dtype, *tensors):
    return [t.to(device=device, dtype=dtype).contiguous() for t in tensors]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["ACCELERATION", "JERK", "VELOCITY", "POSITION_BACKWARD"])
def test_integrated_command_matches_the_step_kernels_and_the_torch_clamp(device, dtype, mode):
    bounds = franka_like_bounds(device, dtype)
    g = torch.Generator().manual_seed(hash(mode) % 1000)
    H = 30
    traj_dt = torch.full((H,), DT, dtype=torch.float64)
    traj_dt[15:] = torch.linspace(DT, 0.08, 16, dtype=torch.float64)[1:]
    traj_dt = _to(device, dtype, traj_dt)[0]
    clamped_seen = set()
    for trial in range(24):
        x0, v0, a0 = _to(device, dtype, *(t[:1] for t in random_states(8, bounds, g)))
        scale = {"ACCELERATION": 20.0, "JERK": 400.0, "VELOCITY": 3.0, "POSITION_BACKWARD": 0.05}
        noise = scale[mode] * torch.randn(1, H, D, generator=g, dtype=torch.float64)
        if trial % 3 == 0:  # from rest mid-range, small plans: mostly unclamped
            x0 = bounds[0].mean(0)[None].clone()
            v0, a0 = torch.zeros_like(x0), torch.zeros_like(x0)
            noise = noise * 0.01
        act = noise + x0.cpu().double()[:, None] if mode == "POSITION_BACKWARD" else noise
        act = _to(device, dtype, act)[0]
        steps = 1 + trial % 3
        plan = tensor_step(act, x0, v0, a0, traj_dt, StepMode(mode))
        command = tuple(p[:, steps] for p in plan)
        ref = reference_limit(x0, v0, a0, command, bounds, DT)
        out = tuple(torch.full_like(x0, float("nan")) for _ in range(4))
        flags = torch.full_like(x0[:, :2], float("nan"))
        ck.integrated_command(mode, (x0, v0, a0), act, traj_dt, steps, bounds, DT, out, flags)
        tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {}
        assert bool(flags[0, 0]) == ref[4], (trial, flags, ref[4])
        clamped_seen.add(ref[4])
        for got, want in zip(out, ref[:4]):
            # atol on the jerk: the backward difference divides rounding by dt^2 in JERK/POSITION
            torch.testing.assert_close(
                got, want, **(tol if got is not out[3] else {"atol": 1e-2, "rtol": 1e-4})
            )
        assert float(flags[0, 1]) == pytest.approx(ref[5], abs=1e-5)
    assert clamped_seen == {True, False}


def test_one_acceleration_step_by_hand_and_the_braking_bound(device):
    """A plan within every limit: the command is one semi-implicit Euler step done by hand; a
    plan driving into the position limit: the command still stops before it (x + v^2 / (2 A) <=
    x_high with A the braking limit) and the acceleration is within its limits."""
    dtype = torch.float64
    bounds = franka_like_bounds(device, dtype)
    x0 = torch.zeros(1, D, dtype=dtype, device=device) + bounds[0].mean(0)
    v0 = torch.full((1, D), 0.3, dtype=dtype, device=device)
    a0 = torch.zeros(1, D, dtype=dtype, device=device)
    act = torch.zeros(1, 5, D, dtype=dtype, device=device)
    act[0, 0] = torch.linspace(-1.0, 1.0, D)
    traj_dt = torch.full((5,), DT, dtype=dtype, device=device)
    out = tuple(torch.empty_like(x0) for _ in range(4))
    flags = torch.empty_like(x0[:, :2])
    ck.integrated_command("ACCELERATION", (x0, v0, a0), act, traj_dt, 1, bounds, DT, out, flags)
    u = act[0, 0].cpu()
    v1 = 0.3 + u * DT
    torch.testing.assert_close(out[1][0].cpu(), v1)
    torch.testing.assert_close(out[0][0].cpu(), x0[0].cpu() + v1 * DT)
    torch.testing.assert_close(out[2][0].cpu(), u)
    torch.testing.assert_close(out[3][0].cpu(), u / DT)
    assert flags.tolist() == [[0.0, 0.0]]

    # 2 cm below the upper limit at 0.5 rad/s (it can stop: 0.25 / 15 < 0.02), accelerating on
    x0 = bounds[0, 1][None] - 0.02
    v0 = torch.full((1, D), 0.5, dtype=dtype, device=device)
    act[0, 0] = bounds[2, 1]
    ck.integrated_command("ACCELERATION", (x0, v0, a0), act, traj_dt, 1, bounds, DT, out, flags)
    brake = -bounds[2, 0]
    stop = out[0] + out[1].clamp(min=0.0) ** 2 / (2.0 * brake)
    assert bool((stop <= bounds[0, 1] + 1e-9).all())
    assert bool((out[2] >= bounds[2, 0] - 1e-9).all() and (out[2] <= bounds[2, 1] + 1e-9).all())
    torch.testing.assert_close(out[1], v0 + out[2] * DT)
    torch.testing.assert_close(out[0], x0 + out[1] * DT)
    assert float(flags[0, 0]) == 1.0 and float(flags[0, 1]) == 0.0


def test_given_command_with_infinite_limits():
    """Continuous joints (infinite position limits) and an infinite acceleration limit: the
    bound is the velocity limit alone, as in the torch formula."""
    dtype = torch.float64
    bounds = franka_like_bounds("cpu", dtype)
    bounds[0, :, :2] = torch.tensor([[-float("inf")] * 2, [float("inf")] * 2], dtype=dtype)
    bounds[2, :, 2] = torch.tensor([-float("inf"), float("inf")], dtype=dtype)
    g = torch.Generator().manual_seed(5)
    for _ in range(20):
        x0, v0, a0 = _to(
            "cpu",
            dtype,
            *(t[:1] for t in random_states(4, bounds.nan_to_num(posinf=3.0, neginf=-3.0), g)),
        )
        ca = 30.0 * torch.randn(1, D, generator=g, dtype=dtype)
        cv = v0 + ca * DT
        command = (x0 + cv * DT, cv, ca, torch.randn(1, D, generator=g, dtype=dtype))
        ref = reference_limit(x0, v0, a0, command, bounds, DT)
        out = tuple(torch.empty_like(x0) for _ in range(4))
        flags = torch.empty_like(x0[:, :2])
        ck.limited_command((x0, v0, a0), command, bounds, DT, out, flags)
        assert bool(flags[0, 0]) == ref[4]
        for got, want in zip(out, ref[:4]):
            torch.testing.assert_close(got, want)
        assert float(flags[0, 1]) == pytest.approx(ref[5], abs=1e-12)


def test_mpc_step_command_and_metrics_match_the_torch_reference(device):
    """MpcSolver.step's command and its limit metrics against the former path: the plan's mean
    integrated by KinematicModel.get_robot_command, then the torch clamp."""
    torch.manual_seed(0)
    solver = MpcSolver.from_config(
        robot="franka", task="particle_mpc", num_particles=64,
        tensor_args=TensorDeviceType(device=device),
    )  # fmt: skip
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    solver.update_goal(goal)
    retract = solver.robot_config.retract_config[None].clone()
    state = JointState.from_position(retract)
    state.velocity[:] = 1.5  # fast: some steps clamp
    bounds = solver._bounds
    clamped_seen = set()
    for _ in range(6):
        result = solver.step(state)
        start = solver.rollout.start_state
        plan = solver.dynamics_model.get_robot_command(start, result.plan, 1)
        ref = reference_limit(
            start.position, start.velocity, start.acceleration,
            (plan.position, plan.velocity, plan.acceleration, plan.jerk), bounds, solver.control_dt,
        )  # fmt: skip
        for name, want in zip(("position", "velocity", "acceleration", "jerk"), ref[:4]):
            torch.testing.assert_close(getattr(result.action, name), want)
        assert result.metrics["limit_clamped"] == float(ref[4])
        assert result.metrics["limit_violation"] == pytest.approx(ref[5], abs=1e-6)
        clamped_seen.add(ref[4])
        state = JointState(
            result.action.position, result.action.velocity * 1.3,
            result.action.acceleration,
        )  # fmt: skip
    assert True in clamped_seen


def _rotation(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_measured_pose_errors_against_rotation_matrices(device):
    """MpcSolver.pose_error and the step's position/rotation_error metrics (one pose-kernel
    launch) against numpy: the distance of the hand to the goal and the angle of R1^T R2."""
    solver = MpcSolver.from_config(
        robot="franka", task="particle_mpc", num_particles=32,
        tensor_args=TensorDeviceType(device=device),
    )  # fmt: skip
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0], solver.tensor_args)
    solver.update_goal(goal)
    g = torch.Generator().manual_seed(3)
    retract = solver.robot_config.retract_config.cpu()
    for i in range(4):
        q = (retract + 0.4 * torch.randn(7, generator=g))[None].to(device)
        state = JointState.from_position(q)
        fk = solver.kinematics.forward(q, spheres=False)
        p = fk.ee_position[0].double().cpu().numpy()
        r = _rotation(fk.ee_quaternion[0].double().cpu().numpy())
        r_goal = _rotation(np.array([0.0, 1.0, 0.0, 0.0]))
        angle = np.arccos(np.clip((np.trace(r.T @ r_goal) - 1.0) / 2.0, -1.0, 1.0))
        distance = np.linalg.norm(p - np.array([0.45, 0.2, 0.45]))
        position_error, rotation_error = solver.pose_error(state)
        assert position_error == pytest.approx(distance, abs=1e-5)
        assert rotation_error == pytest.approx(angle, abs=2e-3)  # arccos near 0 / pi in float32
        if i == 0:
            metrics = solver.step(state).metrics
            assert metrics["position_error"] == pytest.approx(distance, abs=1e-5)
            assert metrics["rotation_error"] == pytest.approx(angle, abs=2e-3)
