"""The seed API's kernel-backed autograd classes: same numbers as the loop reference, exact
gradients (including AccelerationTensorStepKernel, which cuRobo leaves unimplemented), buffers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from step_reference import reference_step

from curobo_lite.rollout.dynamics_model import integration_utils as iu

B, H, D = 3, 7, 2

CLASSES = [
    # name, mode of the reference, uses start_idx, dof-major layout
    ("CliqueTensorStepKernel", "POSITION_BACKWARD", False, False),
    ("CliqueTensorStepIdxKernel", "POSITION_BACKWARD", True, False),
    ("CliqueTensorStepCentralDifferenceKernel", "POSITION_CENTRAL", False, False),
    ("CliqueTensorStepIdxCentralDifferenceKernel", "POSITION_CENTRAL", True, False),
    ("CliqueTensorStepCoalesceKernel", "POSITION_BACKWARD", False, True),
    ("AccelerationTensorStepKernel", "ACCELERATION", False, False),
    ("AccelerationTensorStepIdxKernel", "ACCELERATION", True, False),
]


def _setup(mode, use_idx, device, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    n_start = 2 if use_idx else B
    act = torch.randn(B, H, D, generator=g, dtype=dtype).to(device)
    starts = [torch.randn(n_start, D, generator=g, dtype=dtype).to(device) for _ in range(3)]
    if mode == "POSITION_CENTRAL":
        traj_dt = torch.full((H,), 0.06, dtype=dtype, device=device)
    else:
        traj_dt = (0.03 + 0.05 * torch.rand(H, generator=g, dtype=dtype)).to(device)
    start_idx = torch.tensor([1, 0, 1], device=device) if use_idx else None
    return act, starts, traj_dt, start_idx


def _call(cls, use_idx, dof_major, act, starts, traj_dt, start_idx, buffers=None):
    """Call the seed class in its own layout; return outputs as [B, H, D]."""
    shape = (B, D, H) if dof_major else (B, H, D)
    if buffers is None:
        buffers = [torch.empty(shape, dtype=act.dtype, device=act.device) for _ in range(5)]
    u = act.transpose(1, 2) if dof_major else act
    args = [u, *starts] + ([start_idx] if use_idx else []) + buffers[:4] + [traj_dt, buffers[4]]
    outputs = cls.apply(*args)
    return [o.transpose(1, 2) for o in outputs] if dof_major else list(outputs)


@pytest.mark.parametrize("name,mode,use_idx,dof_major", CLASSES, ids=[c[0] for c in CLASSES])
def test_matches_reference_and_writes_buffers(name, mode, use_idx, dof_major, device):
    cls = getattr(iu, name)
    act, starts, traj_dt, start_idx = _setup(mode, use_idx, device)
    shape = (B, D, H) if dof_major else (B, H, D)
    buffers = [torch.full(shape, float("nan"), dtype=act.dtype, device=device) for _ in range(5)]
    outputs = _call(cls, use_idx, dof_major, act, starts, traj_dt, start_idx, buffers)
    reference = reference_step(
        act.cpu(),
        *(s.cpu() for s in starts),
        traj_dt.cpu(),
        mode,
        None if start_idx is None else start_idx.cpu(),
    )
    for got, want, buffer in zip(outputs, reference, buffers):
        np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-10, atol=1e-9)
        assert got.data_ptr() == buffer.data_ptr()  # returned in the caller's buffer


@pytest.mark.parametrize("name,mode,use_idx,dof_major", CLASSES, ids=[c[0] for c in CLASSES])
def test_gradcheck_gradgradcheck_jvp(name, mode, use_idx, dof_major):
    cls = getattr(iu, name)
    act, starts, traj_dt, start_idx = _setup(mode, use_idx, "cpu", seed=1)
    inputs = tuple(t.requires_grad_() for t in (act, *starts))

    def step(u, p, v, a):
        return tuple(_call(cls, use_idx, dof_major, u, [p, v, a], traj_dt, start_idx))

    assert torch.autograd.gradcheck(step, inputs)
    assert torch.autograd.gradgradcheck(step, inputs)
    assert torch.autograd.gradcheck(
        step,
        inputs,
        check_forward_ad=True,
        check_backward_ad=False,
        check_undefined_grad=False,
        check_batched_grad=False,
    )


def test_action_gradient_lands_in_out_grad_position():
    act, starts, traj_dt, _ = _setup("ACCELERATION", False, "cpu")
    act.requires_grad_()
    buffers = [torch.empty(B, H, D, dtype=act.dtype) for _ in range(5)]
    outputs = iu.AccelerationTensorStepKernel.apply(act, *starts, *buffers[:4], traj_dt, buffers[4])
    loss = sum((o * (k + 1)).sum() for k, o in enumerate(outputs))
    loss.backward()
    torch.testing.assert_close(buffers[4], act.grad)
    # same gradient as the public entry point
    from curobo_lite.kernels import tensor_step

    act2 = act.detach().clone().requires_grad_()
    outputs2 = tensor_step(act2, *starts, traj_dt, "ACCELERATION")
    sum((o * (k + 1)).sum() for k, o in enumerate(outputs2)).backward()
    torch.testing.assert_close(act.grad, act2.grad)


def test_reusing_buffers_invalidates_stale_graphs():
    act, starts, traj_dt, _ = _setup("POSITION_BACKWARD", False, "cpu")
    act.requires_grad_()
    buffers = [torch.empty(B, H, D, dtype=act.dtype) for _ in range(5)]
    first = iu.CliqueTensorStepKernel.apply(act, *starts, *buffers[:4], traj_dt, buffers[4])
    stale_loss = first[1].square().sum()  # saves the velocity buffer for backward
    iu.CliqueTensorStepKernel.apply(act * 2, *starts, *buffers[:4], traj_dt, buffers[4])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        stale_loss.backward()


def test_seed_class_rejects_bad_buffers_before_writing():
    act, starts, traj_dt, _ = _setup("POSITION_BACKWARD", False, "cpu")
    good = [torch.full((B, H, D), 3.0, dtype=act.dtype) for _ in range(3)]
    bad = torch.full((B, H + 1, D), 3.0, dtype=act.dtype)
    grad_buffer = torch.empty(B, H, D, dtype=act.dtype)
    with pytest.raises(ValueError, match="out_jerk"):
        iu.CliqueTensorStepKernel.apply(act, *starts, *good, bad, traj_dt, grad_buffer)
    assert all(torch.all(b == 3.0) for b in good)


def test_dense_clique_agrees_with_kernel_for_start_at_rest():
    """The dense CliqueTensorStep sees only the start position: it equals the kernel whenever the
    start velocity and acceleration are zero (its documented contract)."""
    g = torch.Generator().manual_seed(4)
    act = torch.randn(B, H, D, generator=g, dtype=torch.float64)
    start = torch.randn(B, D, generator=g, dtype=torch.float64)
    traj_dt = 0.03 + 0.05 * torch.rand(H, generator=g, dtype=torch.float64)
    # block 2 of cuRobo's clique matrix is the dt-scaled backward difference F; the SPEC §2
    # derivatives of a start at rest are F x, F^2 x, F^3 x (block 3 is not F^2)
    fd_1 = iu.build_clique_matrix(H, traj_dt, dtype=torch.float64)[H : 2 * H]
    mask, n_mask = iu.build_start_state_mask(H, iu.TensorDeviceType(dtype=torch.float64))
    dense = iu.CliqueTensorStep.apply(
        act, start, mask, n_mask, fd_1, fd_1 @ fd_1, fd_1 @ fd_1 @ fd_1
    )
    zeros = torch.zeros_like(start)
    buffers = [torch.empty(B, H, D, dtype=torch.float64) for _ in range(5)]
    kernel = iu.CliqueTensorStepKernel.apply(
        act, start, zeros, zeros, *buffers[:4], traj_dt, buffers[4]
    )
    for d, k in zip(dense, kernel):
        torch.testing.assert_close(d, k, rtol=1e-10, atol=1e-8)
