"""Numerical guards (issue 15): quaternions normalized on input, zero quaternions rejected,
near-singular configurations keep IK and trajectory optimization finite, and the step kernels stay
finite and exact over dt schedules from 1e-4 s to 1 s."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from fuzz_targets import planar3, small_task
from step_reference import reference_step

from curobo_lite.kernels.tensor_step import tensor_step
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import InputValueError, JointState, Pose, TensorDeviceType, check_pose
from curobo_lite.wrap import IKSolver, TrajOptSolver
from curobo_lite.wrap.ik.config import DEFAULT_IK_LBFGS

LINKS = (0.5, 0.4, 0.3)  # planar3 link lengths (configs/robot/planar3.yml)


def planar_fk(q: np.ndarray) -> np.ndarray:
    """x, y of planar3's tool: the closed form of the robot file's comment."""
    angles = np.cumsum(q)
    return np.array(
        [
            sum(l * math.cos(a) for l, a in zip(LINKS, angles)),
            sum(l * math.sin(a) for l, a in zip(LINKS, angles)),
        ]
    )


def test_pose_normalizes_quaternions_on_input():
    q = torch.tensor([[2.0, 0.0, 0.0, 2.0], [0.0, 0.0, 3.0, 4.0]], dtype=torch.float64)
    pose = Pose(torch.zeros(2, 3, dtype=torch.float64), q)
    r = 1 / math.sqrt(2)
    expected = torch.tensor([[r, 0, 0, r], [0, 0, 0.6, 0.8]], dtype=torch.float64)
    torch.testing.assert_close(pose.quaternion, expected, rtol=0, atol=1e-15)
    # the rotation is that of the unit quaternion: 90 degrees about z maps x to y
    torch.testing.assert_close(
        pose.rotation_matrix()[0] @ torch.tensor([1.0, 0, 0], dtype=torch.float64),
        torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64),
        atol=1e-12,
        rtol=0,
    )


@pytest.mark.parametrize("scale", [0.0, 1e-12])
def test_zero_quaternion_is_rejected_with_a_named_error(scale):
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0], [scale, 0.0, 0.0, 0.0]])
    # the Pose keeps it; the call it is passed to names its own argument
    pose = Pose(torch.zeros(2, 3), q)
    assert pose.quaternion[1].abs().max() <= scale
    match = r"^goal_pose.quaternion: .*zero norm in row\(s\) \[1\]"
    with pytest.raises(InputValueError, match=match):
        check_pose(pose, "goal_pose", TensorDeviceType())
    with pytest.raises(InputValueError, match="zero norm"):
        Pose.from_list([0.0, 0.0, 0.0, scale, 0.0, 0.0, 0.0])


def test_check_pose_rejects_nan_quaternions():
    pose = Pose(torch.zeros(1, 3), torch.tensor([[math.nan, 0.0, 0.0, 1.0]]))
    with pytest.raises(InputValueError, match="goal_pose: contains NaN"):
        check_pose(pose, "goal_pose", TensorDeviceType())


def test_stretched_planar_arm_keeps_ik_and_trajopt_finite():
    robot = planar3()
    stretched = torch.zeros(1, 3)
    # the positional 2x3 block loses rank when the arm is straight: independent SVD check
    jac = Kinematics(robot).jacobian(stretched)[0, :2].double()
    assert float(torch.linalg.svdvals(jac)[-1]) < 1e-6
    # goals on the boundary of the workspace (fully stretched at 1.2 m) and beyond it (1.3 m)
    reach = sum(LINKS)
    ik = IKSolver.from_config(robot, num_seeds=8, lbfgs={**DEFAULT_IK_LBFGS, "n_iters": 20})
    for distance in (reach, reach + 0.1):
        goal = Pose(torch.tensor([[distance, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
        result = ik.solve_single(goal)
        assert bool(torch.isfinite(result.solution).all())
        assert bool(torch.isfinite(result.position_error).all())
        tip = planar_fk(result.solution[0].double().numpy())
        # at or beyond the boundary the best answer points straight at the goal
        assert abs(math.atan2(tip[1], tip[0])) < 0.05
        assert float(result.position_error[0]) == pytest.approx(
            max(0.0, distance - reach), abs=0.02
        )
    task = TaskConfig.from_dict(small_task("gradient_trajopt"), source="small_trajopt")
    trajopt = TrajOptSolver.from_config(robot, task)
    start = JointState.from_position(stretched.clone())
    result = trajopt.solve_joint(start, JointState.from_position(torch.tensor([[0.4, 0.0, 0.0]])))
    plan = result.interpolated_solution
    for field in (plan.position, plan.velocity, plan.acceleration):
        assert bool(torch.isfinite(field).all())
    goal = Pose(torch.tensor([[reach, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    result = trajopt.solve_pose(JointState.from_position(torch.tensor([[0.0, 0.5, -0.5]])), goal)
    assert bool(torch.isfinite(result.interpolated_solution.position).all())


def test_franka_wrist_flip_keeps_ik_finite():
    robot = RobotConfig.load("franka")
    low, high = robot.joint_limits.position
    # a wrist singularity, found by an independent check: over a grid of joints 2, 4 and 6
    # (the others at zero) the configuration where the 6x7 Jacobian's smallest singular value
    # (torch.linalg.svdvals, float64) is smallest
    grids = [torch.linspace(float(low[i]) + 1e-3, float(high[i]) - 1e-3, 16) for i in (1, 3, 5)]
    grid = torch.stack(torch.meshgrid(*grids, indexing="ij"), -1).reshape(-1, 3)
    q = torch.zeros(grid.shape[0], 7)
    q[:, [1, 3, 5]] = grid
    sigma = torch.linalg.svdvals(Kinematics(robot).jacobian(q).double())[:, -1]
    singular = q[int(sigma.argmin())][None]
    assert float(sigma.min()) < 1e-2 * float(sigma.median())
    state = Kinematics(robot).forward(singular)
    goal = Pose(state.ee_position, state.ee_quaternion)
    ik = IKSolver.from_config(robot, num_seeds=8, lbfgs={**DEFAULT_IK_LBFGS, "n_iters": 30})
    result = ik.solve_single(goal, seed_config=singular)
    assert bool(torch.isfinite(result.solution).all())
    assert float(result.position_error[0]) < 0.005  # the seed itself solves it


MODES = [
    ("POSITION", "BACKWARD"),
    ("POSITION", "CENTRAL"),
    ("VELOCITY", "BACKWARD"),
    ("ACCELERATION", "BACKWARD"),
    ("JERK", "BACKWARD"),
]


@pytest.mark.parametrize("control_space, fd_mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_step_kernels_stay_finite_from_1e_4_to_1_second(control_space, fd_mode, dtype):
    g = torch.Generator().manual_seed(0)
    batch, horizon, dof = 3, 8, 2
    act = (2 * torch.rand(batch, horizon, dof, generator=g) - 1).to(dtype)
    p, v, a = (torch.randn(batch, dof, generator=g).to(dtype) for _ in range(3))
    schedules = [torch.full((horizon,), dt) for dt in (1e-4, 1e-3, 1e-2, 0.1, 1.0)]
    if fd_mode != "CENTRAL":  # CENTRAL needs a uniform dt
        schedules.append(torch.logspace(-4, 0, horizon))
    for dt in schedules:
        out = tensor_step(act, p, v, a, dt.to(dtype), control_space, fd_mode)
        reference = reference_step(
            act,
            p,
            v,
            a,
            dt.double(),
            f"{control_space}_{fd_mode}" if control_space == "POSITION" else control_space,
        )
        for got, want in zip(out, reference):
            assert bool(torch.isfinite(got).all()), f"dt {dt.tolist()}"
            scale = max(1.0, float(np.abs(want).max()))
            tol = 1e-9 if dtype == torch.float64 else 1e-4
            np.testing.assert_allclose(got.double().numpy() / scale, want / scale, atol=tol)
