"""MPPI's sampling and update on flat ``[P, n, H * D]`` views (one Kronecker product for the
knot spline, per-joint factors tiled over the horizon) against the formulas written out
per particle in numpy (float64), with deterministic particles, clamping, and NaN / infinite
costs including a problem without any finite cost."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from curobo_lite.opt import Mppi, MppiConfig, RolloutResult
from curobo_lite.types import TensorDeviceType

P, N, H, D = 2, 23, 9, 5


class _Rollout:
    def __init__(self, tensor_args: TensorDeviceType):
        self.action_horizon, self.d_action, self.tensor_args = H, D, tensor_args
        self.action_bound_lows = tensor_args.to_device([-1.5, -2.0, -1.0, -3.0, -2.5])
        self.action_bound_highs = tensor_args.to_device([1.5, 2.0, 1.0, 3.0, 2.5])

    def rollout_fn(self, act: torch.Tensor) -> RolloutResult:
        costs = act.square().sum(-1)
        return RolloutResult(costs, costs.sum(-1))


def _mppi(device, **options) -> Mppi:
    tensor_args = TensorDeviceType(device=device, dtype=torch.float64)
    config = MppiConfig.from_dict(
        {"n_problems": P, "num_particles": N, "null_act_frac": 0.2, "seed": 4, **options}
    )
    mppi = Mppi(config, _Rollout(tensor_args))
    g = torch.Generator().manual_seed(9)
    mppi.mean_action.copy_(torch.randn(P, H, D, generator=g, dtype=torch.float64))
    if config.cov_type == "DIAG_A":
        mppi.cov_action.copy_(0.2 + torch.rand(P, D, generator=g, dtype=torch.float64))
    else:
        a = torch.randn(P, D, D, generator=g, dtype=torch.float64)
        mppi.cov_action.copy_(a @ a.transpose(1, 2) / D + 0.1 * torch.eye(D, dtype=torch.float64))
    return mppi


def _expected_samples(mppi: Mppi, unit: np.ndarray) -> np.ndarray:
    """``[P, n, H, D]``: particle 0 the mean, 1 .. n_null-1 zero, the others mean + noise
    (``unit [P, n, H, D]`` times the standard deviations or the Cholesky factor), clamped."""
    mean = mppi.mean_action.cpu().numpy()
    cov = mppi.cov_action.cpu().numpy()
    n_null = mppi.config.n_null
    low, high = mppi._lows.cpu().numpy(), mppi._highs.cpu().numpy()
    out = np.zeros((P, N, H, D))
    for p in range(P):
        factor = np.diag(np.sqrt(cov[p])) if cov.ndim == 2 else np.linalg.cholesky(cov[p])
        for i in range(N):
            if i == 0:
                sample = mean[p]
            elif i < n_null:
                sample = np.zeros((H, D))
            else:
                sample = mean[p] + unit[p, i] @ factor.T
            out[p, i] = np.clip(sample, low, high)
    return out


@pytest.mark.parametrize("cov_type", ["DIAG_A", "FULL"])
def test_knot_samples(device, cov_type):
    mppi = _mppi(device, sample_mode="KNOT", n_knots=4, cov_type=cov_type)
    knots = torch.randn(
        (P, N, 4, D), generator=torch.Generator().manual_seed(4), dtype=torch.float64
    )
    spline = mppi._knot_mat.cpu().numpy()  # [H, K], checked in test_opt_mppi
    unit = np.einsum("hk,pnkd->pnhd", spline, knots.numpy())
    act = mppi._sample().cpu().numpy()
    np.testing.assert_allclose(act, _expected_samples(mppi, unit), rtol=0, atol=1e-12)
    assert (act == mppi._highs.cpu().numpy()).any()  # some samples were clamped


@pytest.mark.parametrize("cov_type", ["DIAG_A", "FULL"])
def test_gaussian_samples(device, cov_type):
    mppi = _mppi(device, sample_mode="GAUSSIAN", cov_type=cov_type)
    gen = torch.Generator(device=device).manual_seed(4)
    unit = torch.randn((P, N, H, D), generator=gen, device=device, dtype=torch.float64)
    act = mppi._sample().cpu().numpy()
    np.testing.assert_allclose(act, _expected_samples(mppi, unit.cpu().numpy()), atol=1e-12)


@pytest.mark.parametrize("cov_type", ["DIAG_A", "FULL"])
def test_update_with_bad_costs(device, cov_type):
    mppi = _mppi(device, sample_mode="GAUSSIAN", cov_type=cov_type, beta=0.7)
    act = mppi._sample().clone()
    g = torch.Generator().manual_seed(2)
    cost = 5.0 * torch.rand(P, N, generator=g, dtype=torch.float64)
    cost[0, 3], cost[0, 4], cost[0, 5] = float("nan"), float("inf"), -float("inf")
    cost[1] = float("nan")  # no finite cost: problem 1 keeps its mean and covariance
    mean0, cov0 = mppi.mean_action.cpu().numpy().copy(), mppi.cov_action.cpu().numpy().copy()
    weights, wcost = mppi._update(act, cost.to(device))

    a, c = act.cpu().numpy(), cost.numpy()
    finite = np.isfinite(c[0])
    logits = np.where(finite, -(c[0] - c[0][finite].min()) / 0.7, -np.inf)
    w = np.exp(logits - logits.max())
    w /= w.sum()
    np.testing.assert_allclose(weights[0].cpu().numpy(), w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(weights[1].cpu().numpy(), np.full(N, 1.0 / N), rtol=1e-12)
    assert float(wcost[0]) == pytest.approx(float((w[finite] * c[0][finite]).sum()), rel=1e-12)
    assert float(wcost[1]) == float("inf")
    abar = np.einsum("n,nhd->hd", w, a[0])
    delta = a[0] - abar
    if cov_type == "DIAG_A":
        est = np.einsum("n,nhd->d", w, delta**2) / H + mppi.config.min_cov
    else:
        est = np.einsum("n,nhd,nhe->de", w, delta, delta) / H + mppi.config.min_cov * np.eye(D)
    cfg = mppi.config
    mean = mppi.mean_action.cpu().numpy()
    cov = mppi.cov_action.cpu().numpy()
    np.testing.assert_allclose(
        mean[0], mean0[0] + cfg.step_size_mean * (abar - mean0[0]), atol=1e-12
    )
    np.testing.assert_allclose(cov[0], cov0[0] + cfg.step_size_cov * (est - cov0[0]), atol=1e-12)
    np.testing.assert_array_equal(mean[1], mean0[1])
    np.testing.assert_array_equal(cov[1], cov0[1])
