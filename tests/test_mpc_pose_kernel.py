"""The pose cost's one-kernel path (MPPI rollouts, no gradient) against dense numpy math.

The reference takes the rotation angle from rotation matrices (``acos((tr(R1^T R2) - 1) / 2)``)
and the position error from ``numpy.linalg.norm``, in float64: nothing shared with the kernel's
quaternion formulas.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.rollout.cost import PoseCost
from curobo_lite.types import JointState, Pose, TensorDeviceType


def _matrix(q: np.ndarray) -> np.ndarray:
    """``[..., 4]`` unit ``wxyz`` quaternions to ``[..., 3, 3]`` rotation matrices."""
    w, x, y, z = np.moveaxis(q, -1, 0)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(r, -1) for r in rows], -2)


def _reference(pos, quat, goal_pos, goal_quat, idx, weights, norm, rot, running, ramp):
    """``[B, H]`` cost in float64 numpy (``weights``: ``(weight, terminal, run)``)."""
    horizon = pos.shape[1]
    diff = pos - goal_pos[idx][:, None]
    e_pos = np.linalg.norm(diff, axis=-1)
    if norm == "SQUARED_L2":
        e_pos = e_pos**2
    unit = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    goal_unit = goal_quat / np.linalg.norm(goal_quat, axis=-1, keepdims=True)
    if rot == "GEODESIC":
        relative = np.swapaxes(_matrix(unit), -1, -2) @ _matrix(goal_unit[idx])[:, None]
        cosine = (np.trace(relative, axis1=-2, axis2=-1) - 1.0) / 2.0
        e_rot = np.arccos(np.clip(cosine, -1.0, 1.0))
    else:
        e_rot = 1.0 - np.abs((unit * goal_unit[idx][:, None]).sum(-1))
    weight, terminal, run = weights
    ramp_factor = np.arange(horizon) / (horizon - 1) if ramp else np.ones(horizon)
    w_pos = np.where(np.arange(horizon) == horizon - 1, terminal[0], run[0] * ramp_factor)
    w_rot = np.where(np.arange(horizon) == horizon - 1, terminal[1], run[1] * ramp_factor)
    cost = weight * (w_pos * e_pos + w_rot * e_rot)
    if not running:
        cost[:, :-1] = 0.0
    return cost


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", ["L2", "SQUARED_L2"])
@pytest.mark.parametrize("rot", ["GEODESIC", "ONE_MINUS_DOT"])
def test_fused_pose_cost_matches_numpy(device, dtype, norm, rot):
    tensor_args = TensorDeviceType(device=device, dtype=dtype)
    rng = np.random.default_rng(4)
    batch, horizon, links = 13, 7, 5
    # end-effector frames as the rollout passes them: a strided view of every link's frames
    link_pos = rng.normal(size=(batch, horizon, links, 3))
    link_quat = rng.normal(size=(batch, horizon, links, 4))
    link_quat /= np.linalg.norm(link_quat, axis=-1, keepdims=True)
    pos_t = tensor_args.to_device(link_pos)[:, :, 3]
    quat_t = tensor_args.to_device(link_quat)[:, :, 3]
    goal_pos, goal_quat = rng.normal(size=(3, 3)), rng.normal(size=(3, 4))
    goals = Pose(tensor_args.to_device(goal_pos), tensor_args.to_device(goal_quat))
    tol = {"rtol": 2e-5, "atol": 2e-5} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-9}
    cases = [
        ((2.0, [3.0, 1.5], [0.7, 0.4]), True, True),  # running, ramped
        ((1.0, [3.0, 1.5], [0.7, 0.4]), True, False),
        ((1.0, [3.0, 1.5], [0.0, 0.0]), False, False),  # terminal only
        ((1.0, [0.0, 1.5], [0.0, 0.4]), True, False),  # no position term
        ((1.0, [3.0, 0.0], [0.7, 0.0]), True, False),  # no rotation term
    ]
    for (weight, terminal, run), running, ramp in cases:
        cost = PoseCost.from_dict(
            {
                "weight": weight,
                "terminal_weight": terminal,
                "run_weight": run,
                "run_weight_ramp": ramp,
                "position_norm": norm,
                "rotation_error": rot,
            },
            tensor_args,
        )
        for goal, idx in (
            (goals[1:2], None),
            (goals, torch.tensor(rng.integers(0, 3, size=batch), device=device)),
        ):
            rows = np.zeros(batch, dtype=int) if idx is None else idx.cpu().numpy()
            with torch.no_grad():
                fused = cost(pos_t, quat_t, goal, idx, fused=True)
            expected = _reference(
                link_pos[:, :, 3],
                link_quat[:, :, 3],
                goals.position.double().cpu().numpy()[[1]] if idx is None else goal_pos,
                goals.quaternion.double().cpu().numpy()[[1]] if idx is None else goal_quat,
                rows,
                (weight, terminal, run),
                norm,
                rot,
                running,
                ramp,
            )
            assert fused.shape == (batch, horizon) and fused.dtype == dtype
            np.testing.assert_allclose(fused.double().cpu().numpy(), expected, **tol)


def test_fused_pose_cost_only_without_gradient():
    """With a gradient to take the torch formulas run (autograd); the kernel gives their values
    to rounding, and a disabled cost is zero either way."""
    tensor_args = TensorDeviceType(dtype=torch.float64)
    rng = np.random.default_rng(5)
    pos = tensor_args.to_device(rng.normal(size=(4, 6, 3))).requires_grad_(True)
    quat = torch.nn.functional.normalize(tensor_args.to_device(rng.normal(size=(4, 6, 4))), dim=-1)
    goal = Pose(tensor_args.to_device(rng.normal(size=(1, 3))), quat[0, :1].detach())
    cost = PoseCost.from_dict(
        {"terminal_weight": [2.0, 1.0], "run_weight": [1.0, 1.0]}, tensor_args
    )
    out = cost(pos, quat, goal, fused=True)
    assert out.requires_grad  # the autograd path
    with torch.no_grad():
        fused = cost(pos, quat, goal, fused=True)
    torch.testing.assert_close(fused, out.detach(), rtol=1e-12, atol=1e-12)
    cost.enabled = False
    with torch.no_grad():
        assert not cost(pos, quat, goal, fused=True).any()


def test_rollout_pose_term_is_the_torch_cost():
    """An MPPI-style rollout (no gradient) takes the kernel path; its pose term equals the
    torch cost of the same frames to float32 rounding."""
    tensor_args = TensorDeviceType()
    reacher = ArmReacher.from_task(TaskConfig.load("particle_mpc"), "franka", tensor_args)
    robot = reacher.robot_config
    start = JointState.from_position(robot.retract_config[None].clone())
    fk = reacher.dynamics_model.kinematics.forward(robot.retract_config[None] + 0.3)
    reacher.update_params(Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion)), start)
    generator = torch.Generator().manual_seed(0)
    actions = torch.randn(64, reacher.dynamics_model.horizon, robot.dof, generator=generator)
    with torch.no_grad():
        result = reacher.rollout_fn(actions)
        state = result.state
        expected = reacher.costs["pose_cost"](
            state.ee_position, state.ee_quaternion, reacher.goal.goal_pose
        )
    term = reacher.cost_terms["pose_cost"]
    assert torch.isfinite(term).all() and term[:, -1].abs().max() > 0
    torch.testing.assert_close(term, expected, rtol=1e-5, atol=1e-5)
