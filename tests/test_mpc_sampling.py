"""KNOT sampling: every particle's unit draw is the spline matrix times its knots (one product
for all particles), checked against a per-particle numpy product of the same knots."""

from __future__ import annotations

import numpy as np
import torch

from curobo_lite.opt import Mppi, MppiConfig, RolloutResult
from curobo_lite.types import TensorDeviceType


class _ZeroRollout:
    def __init__(self, horizon: int, dof: int, tensor_args: TensorDeviceType):
        self.action_horizon, self.d_action, self.tensor_args = horizon, dof, tensor_args
        self.action_bound_lows = tensor_args.to_device([-1.0] * dof)
        self.action_bound_highs = tensor_args.to_device([1.0] * dof)

    def rollout_fn(self, act: torch.Tensor) -> RolloutResult:
        costs = act.new_zeros(act.shape[:2])
        return RolloutResult(costs, costs.sum(-1))


def test_knot_draws_are_the_spline_of_each_particles_knots(device):
    tensor_args = TensorDeviceType(device=device, dtype=torch.float64)
    config = MppiConfig.from_dict(
        {"n_problems": 3, "num_particles": 17, "sample_mode": "KNOT", "n_knots": 4, "seed": 2}
    )
    mppi = Mppi(config, _ZeroRollout(9, 5, tensor_args))
    for _ in range(2):  # the buffer is rewritten, not accumulated
        draws = mppi._draw_standard().cpu().numpy()
        knots = mppi._knots.cpu().numpy()  # [P, n, K, D]
        spline = mppi._knot_mat.cpu().numpy()  # [H, K]
        for p in range(3):
            for i in range(17):
                np.testing.assert_allclose(draws[p, i], spline @ knots[p, i], rtol=0, atol=1e-12)
    assert np.abs(draws).max() > 0.5
