"""The Warp kernel classes against cuRobo 0.7.8's CUDA kernels (``tensor_step_kernel.cu``).

The loops below are our own numpy transcriptions of the arithmetic those CUDA kernels perform
(read from the v0.7.8 source; the constants and stencils are theirs), for a uniform ``dt`` and
horizons they support. cuRobo's Python passes the position kernels ``1 / dt`` as ``traj_dt`` and
the acceleration kernels ``dt``; our classes take seconds everywhere (SPEC §1).

What is asserted (and summarised in the README):

- POSITION, backward difference (``CliqueTensorStep[Idx]Kernel``): identical for a start at rest;
  with a moving start identical except ``a_1``, ``j_1``, ``j_2``, where cuRobo extrapolates ghost
  points from the kernel's ``traj_dt`` (which is ``1/dt``) and we use the start state's own
  velocity and acceleration (SPEC §2). The action gradient is identical (both exact adjoints).
- POSITION, central difference: cuRobo's action is ``[B, H-4, D]`` and its output lags ours by one
  step; at rest ``ours(u') == cuRobo(u)`` for ``h >= 1`` with ``u' = [p, u, u_last, u_last, *]``.
  Index 0 differs: we report the start state, cuRobo a stencil over its ghost points.
- ACCELERATION: identical to cuRobo's semi-implicit Euler kernel (``use_rk2=False``), non-uniform
  ``dt`` included; cuRobo's *default* path (``use_rk2=True``) integrates
  ``v_h = v_{h-1} + ½ a_h dt`` and differs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from curobo_lite.rollout.dynamics_model import integration_utils as iu

F64 = torch.float64


def _case(b, h, d, seed, n_act=None):
    g = np.random.default_rng(seed)
    u = g.standard_normal((b, n_act or h, d))
    p, v, a = (g.standard_normal((b, d)) for _ in range(3))
    return u, p, v, a


# ------------------------------------------------------------------------------------------------
# transcriptions of the CUDA kernels (one (b, d) column at a time, like the CUDA threads)
# ------------------------------------------------------------------------------------------------
def cuda_position_backward_difference(u, p, v, a, inv_dt):
    """``compute_backward_difference``; ``inv_dt`` is what cuRobo passes as ``traj_dt[0]``."""
    b, h, d = u.shape
    k = inv_dt
    out = np.zeros((4, b, h, d))
    for bi in range(b):
        for di in range(d):
            sp, sv, sa = p[bi, di], v[bi, di], a[bi, di]
            col = u[bi, :, di]
            out[:3, bi, 0, di] = (sp, sv, sa)
            for hi in range(1, h):
                if hi == 1:
                    x = [
                        sp - 2.0 * (sv - 0.5 * sa * k) * k,
                        sp - (sv - 0.5 * sa * k) * k,
                        sp,
                        col[0],
                    ]
                elif hi == 2:
                    x = [sp - (sv - 0.5 * sa * k) * k, sp, col[0], col[1]]
                elif hi == 3:
                    x = [sp, col[0], col[1], col[2]]
                else:
                    x = [col[hi - 4 + i] for i in range(4)]
                out[0, bi, hi, di] = x[3]
                out[1, bi, hi, di] = (-x[2] + x[3]) * k
                out[2, bi, hi, di] = (x[1] - 2 * x[2] + x[3]) * k * k
                out[3, bi, hi, di] = (-x[0] + 3 * x[1] - 3 * x[2] + x[3]) * k * k * k
    return out


def cuda_position_backward_difference_grad(g_p, g_v, g_a, g_j, inv_dt):
    """``backward_position_clique_loop_backward_difference_kernel2``: gradient of ``u``."""
    b, h, d = g_p.shape
    k = inv_dt
    pad = [np.concatenate((g, np.zeros((b, 3, d))), axis=1) for g in (g_v, g_a, g_j)]
    gv, ga, gj = pad
    out = np.zeros((b, h, d))  # cuRobo's buffer: the last row is never written (stays zero)
    for hi in range(1, h):
        out[:, hi - 1] = (
            g_p[:, hi]
            + (gv[:, hi] - gv[:, hi + 1]) * k
            + (ga[:, hi] - 2 * ga[:, hi + 1] + ga[:, hi + 2]) * k * k
            + (gj[:, hi] - 3 * gj[:, hi + 1] + 3 * gj[:, hi + 2] - gj[:, hi + 3]) * k * k * k
        )
    return out


def cuda_position_central_difference(u, p, v, a, inv_dt, horizon):
    """``compute_central_difference`` with ``u`` ``[B, H-4, D]`` (needs ``H >= 8``)."""
    b, _, d = u.shape
    k = inv_dt
    dt = 1.0 / k  # the kernel's "dt_inv"
    c12, c23, c43 = 0.083333333, 0.666666667, 1.333333333
    out = np.zeros((4, b, horizon, d))
    for bi in range(b):
        for di in range(d):
            sp, sv, sa = p[bi, di], v[bi, di], a[bi, di]  # start jerk 0
            g3 = (3.0 / 2) * (-1 * sa * dt * dt) - 3.0 * dt * sv + sp
            g2 = -2.0 * sa * dt * dt - 2.0 * dt * sv + sp
            g1 = -(3.0 / 2) * sa * dt * dt - dt * sv + sp
            c = u[bi, :, di]
            for hi in range(horizon):
                if 3 < hi < horizon - 4:
                    x = [c[hi - 4], c[hi - 3], c[hi - 2], c[hi - 1], c[hi]]
                elif hi == 0:
                    x = [g3, g2, g1, sp, c[0]]
                elif hi == 1:
                    x = [g2, g1, sp, c[0], c[1]]
                elif hi == 2:
                    x = [g1, sp, c[0], c[1], c[2]]
                elif hi == 3:
                    x = [sp, c[0], c[1], c[2], c[3]]
                elif hi == horizon - 4:
                    x = [c[hi - 4], c[hi - 3], c[hi - 2], c[hi - 1], c[hi - 1]]
                elif hi == horizon - 3:
                    x = [c[hi - 4], c[hi - 3], c[hi - 2], c[hi - 2], c[hi - 2]]
                elif hi == horizon - 2:
                    x = [c[hi - 4], c[hi - 3], c[hi - 3], c[hi - 3], c[hi - 3]]
                else:
                    x = [c[hi - 4]] * 5
                out[0, bi, hi, di] = x[2]
                out[1, bi, hi, di] = (c12 * x[0] - c23 * x[1] + c23 * x[3] - c12 * x[4]) * k
                out[2, bi, hi, di] = (
                    -c12 * x[0] + c43 * x[1] - 2.5 * x[2] + c43 * x[3] - c12 * x[4]
                ) * (k * k)
                out[3, bi, hi, di] = (-0.5 * x[0] + x[1] - x[3] + 0.5 * x[4]) * (k * k * k)
    return out


def cuda_acceleration(u, p, v, a, dt, rk2):
    """``acceleration_loop_kernel`` (``rk2=False``) / ``acceleration_loop_rk2_kernel``."""
    b, h, d = u.shape
    out = np.zeros((4, b, h, d))
    out[0, :, 0], out[1, :, 0], out[2, :, 0] = p, v, a
    for hi in range(1, h):
        pos, vel, acc = out[0, :, hi - 1], out[1, :, hi - 1], out[2, :, hi - 1]
        new_acc = u[:, hi - 1]
        out[2, :, hi] = new_acc
        out[3, :, hi] = (new_acc - acc) / dt[hi]
        if rk2:
            out[0, :, hi] = pos + vel * dt[hi] + 0.5 * dt[hi] * dt[hi] * new_acc
            out[1, :, hi] = vel + 0.5 * dt[hi] * new_acc
        else:
            out[1, :, hi] = vel + new_acc * dt[hi]
            out[0, :, hi] = pos + out[1, :, hi] * dt[hi]
    return out


# ------------------------------------------------------------------------------------------------
# our kernel classes
# ------------------------------------------------------------------------------------------------
def ours(cls, u, p, v, a, dt, start_idx=None, grads=None):
    t = [torch.tensor(x, dtype=F64) for x in (u, p, v, a)]
    act = t[0].clone().requires_grad_(grads is not None)
    buffers = [torch.empty(act.shape, dtype=F64) for _ in range(5)]
    idx = [] if start_idx is None else [torch.tensor(start_idx)]
    out = cls.apply(act, *t[1:], *idx, *buffers[:4], torch.tensor(dt, dtype=F64), buffers[4])
    if grads is None:
        return np.stack([o.detach().numpy() for o in out])
    loss = sum((o * torch.tensor(g, dtype=F64)).sum() for o, g in zip(out, grads, strict=True))
    (grad,) = torch.autograd.grad(loss, act)
    return grad.numpy()


@pytest.mark.parametrize("h", [2, 3, 4, 5, 9])
def test_backward_difference_equals_cuda_kernel(h):
    b, d, dt = 3, 2, 0.04
    u, p, v, a = _case(b, h, d, seed=h)
    dts = np.full(h, dt)
    zero = np.zeros_like(p)
    np.testing.assert_allclose(
        ours(iu.CliqueTensorStepKernel, u, p, zero, zero, dts),
        cuda_position_backward_difference(u, p, zero, zero, 1 / dt),
        rtol=1e-10,
        atol=1e-8,
    )
    # moving start: equal except where cuRobo's ghost points enter (a_1, j_1, j_2)
    mine = ours(iu.CliqueTensorStepKernel, u, p, v, a, dts)
    cuda = cuda_position_backward_difference(u, p, v, a, 1 / dt)
    keep = np.ones_like(mine, dtype=bool)
    keep[2, :, 1:2] = keep[3, :, 1:3] = False
    np.testing.assert_allclose(mine[keep], cuda[keep], rtol=1e-10, atol=1e-8)
    # the Idx variant reads start state start_idx[b]
    idx = np.array([1, 0, 1], dtype=np.int32)
    np.testing.assert_allclose(
        ours(iu.CliqueTensorStepIdxKernel, u, p[:2], zero[:2], zero[:2], dts, start_idx=idx),
        cuda_position_backward_difference(u, p[idx], zero, zero, 1 / dt),
        rtol=1e-10,
        atol=1e-8,
    )


@pytest.mark.parametrize("h", [2, 4, 7])
def test_backward_difference_gradient_equals_cuda_kernel(h):
    b, d, dt = 2, 3, 0.05
    u, p, v, a = _case(b, h, d, seed=10 + h)
    grads = [np.random.default_rng(h + k).standard_normal((b, h, d)) for k in range(4)]
    np.testing.assert_allclose(
        ours(iu.CliqueTensorStepKernel, u, p, v, a, np.full(h, dt), grads=grads),
        cuda_position_backward_difference_grad(*grads, 1 / dt),
        rtol=1e-10,
        atol=1e-8,
    )


@pytest.mark.parametrize("h", [8, 9, 12])
def test_central_difference_equals_cuda_kernel_at_rest(h):
    b, d, dt = 2, 2, 0.05
    u, p, _, _ = _case(b, h, d, seed=20 + h, n_act=h - 4)
    zero = np.zeros_like(p)
    cuda = cuda_position_central_difference(u, p, zero, zero, 1 / dt, h)
    last = u[:, -1:]
    u_ours = np.concatenate((p[:, None], u, last, last, last), axis=1)  # [B, H, D]
    mine = ours(iu.CliqueTensorStepCentralDifferenceKernel, u_ours, p, zero, zero, np.full(h, dt))
    # the five-point constants are float literals in the CUDA source (0.083333333f, ...)
    np.testing.assert_allclose(mine[:, :, 1:], cuda[:, :, 1:], rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(mine[0, :, 0], cuda[0, :, 0])  # both report p at index 0


@pytest.mark.parametrize("uniform", [True, False])
def test_acceleration_equals_cuda_semi_euler_kernel(uniform):
    b, h, d = 3, 7, 2
    u, p, v, a = _case(b, h, d, seed=30)
    rng = np.random.default_rng(31)
    dts = np.full(h, 0.03) if uniform else 0.01 + 0.05 * rng.random(h)
    mine = ours(iu.AccelerationTensorStepKernel, u, p, v, a, dts)
    np.testing.assert_allclose(mine, cuda_acceleration(u, p, v, a, dts, rk2=False), rtol=1e-10)
    idx = np.array([2, 0, 1], dtype=np.int32)
    np.testing.assert_allclose(
        ours(iu.AccelerationTensorStepIdxKernel, u, p, v, a, dts, start_idx=idx),
        cuda_acceleration(u, p[idx], v[idx], a[idx], dts, rk2=False),
        rtol=1e-10,
    )
    # cuRobo's default (use_rk2=True) kernel is a different integrator: documented, not followed
    rk2 = cuda_acceleration(u, p, v, a, dts, rk2=True)
    assert not np.allclose(mine[1], rk2[1])
    np.testing.assert_allclose(mine[2:], rk2[2:], rtol=1e-10)  # same accelerations and jerks
