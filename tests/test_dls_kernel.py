"""The Warp damped least-squares step (:mod:`curobo_lite.kernels.dls_kernels`), used by
:func:`curobo_lite.wrap.ik.dls.dls_steps` with the Warp kinematics backend.

References, independent of the kernel:

- one step against the DLS formula written out here with a finite-difference geometric
  Jacobian (positions by central differences, angular velocity from the relative rotation) and
  a dense ``torch.linalg.solve``, in float64, plain, weighted, with a partial goal's row map,
  and with the limit lock;
- many steps against the torch path of ``dls_steps`` (the torch kinematics backend, its own
  Jacobian and batched solve), float32 and float64;
- convergence: reachable targets are reached to 1e-9 m / rad (float64).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.math import quat_to_matrix
from curobo_lite.wrap.ik.dls import dls_steps, pose_error

PANDA_URDF = Path(__file__).parent / "data" / "franka_panda.urdf"


def _kinematics(
    device: str | torch.device, dtype: torch.dtype, backend: str = "warp", finger: bool = False
) -> Kinematics:
    tensor_args = TensorDeviceType(device=torch.device(device), dtype=dtype)
    if finger:  # a prismatic finger that mimics the other one: the Jacobian map's multipliers
        config = RobotConfig.from_urdf(
            PANDA_URDF, "panda_link0", "panda_rightfinger", tensor_args=tensor_args
        )
    else:
        config = RobotConfig.load("franka", tensor_args)
    return Kinematics(config, backend=backend)


def _problem(kinematics: Kinematics, n: int, seed: int, spread: float = 0.4):
    """Seeds ``[n, D]`` within the limits and reachable targets ``spread`` rad away."""
    generator = torch.Generator().manual_seed(seed)
    low, high = kinematics.robot_config.joint_limits.position
    dtype, device = low.dtype, low.device
    unit = torch.rand(n, kinematics.dof, generator=generator, dtype=dtype).to(device)
    seeds = low + (high - low) * (0.1 + 0.8 * unit)
    noise = torch.randn(n, kinematics.dof, generator=generator, dtype=dtype).to(device)
    goal = torch.minimum(torch.maximum(seeds + spread * noise, low), high)
    state = kinematics.forward(goal, spheres=False)
    return seeds, state.ee_position, state.ee_quaternion


def _fd_jacobian(kinematics: Kinematics, q: torch.Tensor, h: float = 1e-6) -> torch.Tensor:
    """``[N, 6, D]`` geometric Jacobian by central differences: linear rows from the position,
    angular rows from the relative rotation ``R(q + h e_d) R(q - h e_d)^T``."""
    columns = []
    for d in range(q.shape[1]):
        step = torch.zeros_like(q)
        step[:, d] = h
        plus = kinematics.forward(q + step, spheres=False)
        minus = kinematics.forward(q - step, spheres=False)
        linear = (plus.ee_position - minus.ee_position) / (2 * h)
        relative = quat_to_matrix(plus.ee_quaternion) @ quat_to_matrix(
            minus.ee_quaternion
        ).transpose(1, 2)
        angular = (
            torch.stack(
                (
                    relative[:, 2, 1] - relative[:, 1, 2],
                    relative[:, 0, 2] - relative[:, 2, 0],
                    relative[:, 1, 0] - relative[:, 0, 1],
                ),
                -1,
            )
            / 2
            / (2 * h)
        )
        columns.append(torch.cat((linear, angular), -1))
    return torch.stack(columns, -1)


def _reference_step(
    kinematics, q, target_position, target_quaternion, damping, max_step, rows, weight, lock
):
    """One DLS step written out (module docstring) from the finite-difference Jacobian."""
    low, high = kinematics.robot_config.joint_limits.position
    jac = _fd_jacobian(kinematics, q)
    error = pose_error(kinematics, q, target_position, target_quaternion)
    if rows is not None:
        error = (rows @ error[..., None])[..., 0]
        jac = rows @ jac
    error = error * weight
    jac = jac * weight[:, None]
    if lock:
        descent = (jac.transpose(1, 2) @ error[..., None])[..., 0]
        held = ((q <= low) & (descent < 0)) | ((q >= high) & (descent > 0))
        jac = jac * (~held)[:, None, :]
    system = jac @ jac.transpose(1, 2) + damping**2 * torch.eye(6, dtype=q.dtype)
    step = (jac.transpose(1, 2) @ torch.linalg.solve(system, error[..., None]))[..., 0]
    scale = (max_step / step.abs().amax(-1, keepdim=True).clamp(min=1e-12)).clamp(max=1.0)
    return torch.minimum(torch.maximum(q + scale * step, low), high)


@pytest.mark.parametrize("case", ["plain", "weighted_locked", "partial_projected", "partial_base"])
def test_one_step_matches_the_written_out_formula(case):
    kinematics = _kinematics("cpu", torch.float64)
    assert kinematics.backend == "warp"
    seeds, position, quaternion = _problem(kinematics, 24, seed=1)
    low, high = kinematics.robot_config.joint_limits.position
    # a few seeds at a limit, so that the lock has something to hold
    seeds[:6, 3] = low[3]
    seeds[6:12, 5] = high[5]
    kwargs: dict = {"damping": 0.05, "max_step": 0.15}
    rows = None
    weight = torch.ones(6, dtype=torch.float64)
    if case == "weighted_locked":
        kwargs.update(rotation_weight=0.1, lock_limits=True)
        weight = torch.tensor([1, 1, 1, 0.1, 0.1, 0.1], dtype=torch.float64)
    if case.startswith("partial"):
        axes = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
        project = case == "partial_projected"
        kwargs.update(axes=axes, project=project)
        driven = torch.cat((axes[3:], axes[:3]))  # the error's order: position first
        rows = driven.diag()[None]
        if project:
            frame = quat_to_matrix(quaternion).transpose(1, 2)
            zero = torch.zeros_like(frame)
            block = torch.cat((torch.cat((frame, zero), 2), torch.cat((zero, frame), 2)), 1)
            rows = driven[None, :, None] * block
    got = dls_steps(kinematics, seeds, position, quaternion, 1, **kwargs)
    expected = _reference_step(
        kinematics,
        seeds,
        position,
        quaternion,
        kwargs["damping"],
        kwargs["max_step"],
        rows,
        weight,
        kwargs.get("lock_limits", False),
    )
    assert torch.allclose(got, expected, atol=1e-6, rtol=0.0), (got - expected).abs().max()
    if case == "weighted_locked":  # the lock decides: without it the step differs
        unlocked = _reference_step(
            kinematics, seeds, position, quaternion, 0.05, 0.15, rows, weight, False
        )
        assert (got - unlocked).abs().max() > 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("finger", [False, True])
def test_steps_match_the_torch_path(device, dtype, finger):
    kinematics = _kinematics(device, dtype, finger=finger)
    seeds, position, quaternion = _problem(kinematics, 64, seed=2, spread=0.3)
    kwargs = {"rotation_weight": 0.1, "lock_limits": True, "max_step": 0.2}
    warp = dls_steps(kinematics, seeds, position, quaternion, 8, **kwargs)
    torch_kinematics = _kinematics(device, dtype, backend="torch", finger=finger)
    reference = dls_steps(torch_kinematics, seeds, position, quaternion, 8, **kwargs)
    tolerance = 1e-9 if dtype == torch.float64 else 2e-3
    assert (warp - reference).abs().max() <= tolerance
    assert torch.equal(seeds, seeds.clone())  # the seeds are not written


def test_reachable_targets_converge():
    kinematics = _kinematics("cpu", torch.float64)
    seeds, position, quaternion = _problem(kinematics, 32, seed=3, spread=0.15)
    solved = dls_steps(kinematics, seeds, position, quaternion, 30, damping=1e-3)
    error = pose_error(kinematics, solved, position, quaternion).abs().amax(-1)
    assert (error < 1e-9).float().mean() >= 0.9
    low, high = kinematics.robot_config.joint_limits.position
    assert ((solved >= low) & (solved <= high)).all()
