"""MPPI on toy rollouts: analytic optima, hand-computed updates, samplers, configuration."""

from __future__ import annotations

import math

import pytest
import torch

from curobo_lite.opt import Mppi, MppiConfig, RolloutResult
from curobo_lite.opt.sample_lib import (
    HaltonGenerator,
    first_primes,
    gaussian_transform,
    knot_interpolation_matrix,
)
from curobo_lite.types import TensorDeviceType

F64 = TensorDeviceType(dtype=torch.float64)


class IntegratorRollout:
    """Single integrator per problem ``p``: ``x_{h+1} = x_h + u_h dt`` from ``x0_p``; cost
    ``sum_h |x_{h+1} - target_p|^2 + lam |u_h|^2``."""

    def __init__(self, x0, target, H, dt=0.1, lam=0.1, bound=10.0, tensor_args=F64):
        P, D = x0.shape
        self.x0, self.target, self.n_problems = x0, target, P
        self.action_horizon, self.d_action, self.tensor_args = H, D, tensor_args
        self.dt, self.lam = dt, lam
        self.action_bound_lows = torch.full((D,), -bound, dtype=tensor_args.dtype)
        self.action_bound_highs = torch.full((D,), bound, dtype=tensor_args.dtype)

    def rollout_fn(self, act):
        B, H, D = act.shape
        P = self.n_problems
        u = act.view(P, B // P, H, D)
        x = self.x0[:, None, None] + self.dt * torch.cumsum(u, dim=2)
        c = ((x - self.target[:, None, None]) ** 2).sum(-1) + self.lam * (u**2).sum(-1)
        return RolloutResult(c.reshape(B, H), c.reshape(B, H).sum(-1), state=x)

    def optimum(self):
        """Least-squares optimum ``[P, H, D]``: ``[L; sqrt(lam) I] u = [target - x0; 0]``."""
        P, D = self.x0.shape
        H = self.action_horizon
        L = self.dt * torch.tril(torch.ones(H, H, dtype=torch.float64))
        A = torch.cat([L, math.sqrt(self.lam) * torch.eye(H, dtype=torch.float64)])
        out = []
        for p in range(P):
            rhs = torch.cat([(self.target[p] - self.x0[p]).expand(H, D), torch.zeros(H, D)])
            out.append(torch.linalg.lstsq(A, rhs.double()).solution)
        return torch.stack(out)


class PointCostRollout:
    """``costs[b, h] = w_p * sum_d (a[b, h, d] - c_p[d])^2`` with per-problem ``w_p, c_p``."""

    def __init__(self, H, D, centers, weights, bound=10.0, nan_mask=None):
        self.action_horizon, self.d_action, self.tensor_args = H, D, F64
        self.centers, self.weights = centers, weights  # [P, D], [P]
        self.action_bound_lows = torch.full((D,), -bound, dtype=torch.float64)
        self.action_bound_highs = torch.full((D,), bound, dtype=torch.float64)
        self.nan_mask = nan_mask

    def rollout_fn(self, act):
        B, H, D = act.shape
        P = self.centers.shape[0]
        a = act.view(P, B // P, H, D)
        c = self.weights[:, None, None] * ((a - self.centers[:, None, None]) ** 2).sum(-1)
        c = c.reshape(B, H)
        if self.nan_mask is not None:
            c = torch.where(self.nan_mask[:, None], torch.full_like(c, float("nan")), c)
        return RolloutResult(c, c.sum(-1))


def _integrator_problem(P=3, H=8, D=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(P, D, generator=gen, dtype=torch.float64)
    target = x0 + torch.randn(P, D, generator=gen, dtype=torch.float64)
    return IntegratorRollout(x0, target, H)


# --- convergence ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cov_type", "sample_mode"),
    [("DIAG_A", "GAUSSIAN"), ("FULL", "GAUSSIAN"), ("DIAG_A", "HALTON")],
)
def test_several_problems_each_converge_to_their_lstsq_optimum(cov_type, sample_mode):
    rollout = _integrator_problem()
    u_star = rollout.optimum()
    cfg = MppiConfig(
        n_problems=3,
        num_particles=300,
        n_iters=40,
        init_cov=1.0,
        cov_type=cov_type,
        beta=0.05,
        step_size_mean=0.8,
        step_size_cov=0.3,
        sample_mode=sample_mode,
        null_act_frac=0.01,
        seed=1,
    )
    res = Mppi(cfg, rollout).optimize()
    assert res.action.shape == (3, 8, 2)
    err = (res.action - u_star).abs().amax(dim=(1, 2))
    assert (err < 0.1).all(), err
    # The three optima are far apart compared with the tolerance.
    gaps = torch.cdist(u_star.view(3, -1), u_star.view(3, -1)) + 10 * torch.eye(3)
    assert gaps.min() > 1.0
    j_mean = rollout.rollout_fn(res.action).total
    j_star = rollout.rollout_fn(u_star).total
    assert ((j_mean - j_star) / j_star < 5e-3).all()
    # best sampled trajectory: its recorded cost is right and close to optimal
    torch.testing.assert_close(rollout.rollout_fn(res.best_action).total, res.best_cost)
    assert ((res.best_cost - j_star) / j_star < 2e-2).all()
    hist = res.debug["best_cost_history"]
    assert hist.shape == (40, 3) and (hist[1:] <= hist[:-1]).all()


# --- the update rule by hand ---------------------------------------------------------------


@pytest.mark.parametrize("cov_type", ["DIAG_A", "FULL"])
def test_weighted_update_equals_hand_computed_softmax_average(cov_type):
    H, D, n = 2, 2, 4
    centers = torch.tensor([[0.3, -0.2], [-1.0, 0.5]], dtype=torch.float64)
    weights = torch.tensor([1.0, 2.5], dtype=torch.float64)
    rollout = PointCostRollout(H, D, centers, weights)
    beta, sm, sc, min_cov, c0 = 0.7, 0.6, 0.4, 1e-3, 0.5
    cfg = MppiConfig(
        n_problems=2,
        num_particles=n,
        n_iters=1,
        init_cov=c0,
        cov_type=cov_type,
        beta=beta,
        step_size_mean=sm,
        step_size_cov=sc,
        min_cov=min_cov,
        store_rollouts=True,
        seed=5,
    )
    m0 = torch.tensor([[[0.1, 0.2], [0.3, 0.4]], [[-0.5, 0.0], [0.2, -0.1]]], dtype=torch.float64)
    mppi = Mppi(cfg, rollout)
    res = mppi.optimize(m0)
    act = res.debug["rollouts"][0]["act"].tolist()  # [P][n][H][D]
    for p in range(2):
        J = [
            sum(
                weights[p].item() * (act[p][i][h][d] - centers[p][d].item()) ** 2
                for h in range(H)
                for d in range(D)
            )
            for i in range(n)
        ]
        e = [math.exp(-(j - min(J)) / beta) for j in J]
        w = [v / sum(e) for v in e]
        abar = [[sum(w[i] * act[p][i][h][d] for i in range(n)) for d in range(D)] for h in range(H)]
        for h in range(H):
            for d in range(D):
                expect = (1 - sm) * m0[p, h, d].item() + sm * abar[h][d]
                assert res.action[p, h, d].item() == pytest.approx(expect, rel=1e-12, abs=1e-12)
        cov = res.debug["cov"][p]
        for d in range(D):
            for e_ in range(D) if cov_type == "FULL" else [d]:
                est = sum(
                    w[i] * (act[p][i][h][d] - abar[h][d]) * (act[p][i][h][e_] - abar[h][e_])
                    for i in range(n)
                    for h in range(H)
                ) / H + (min_cov if d == e_ else 0.0)
                prior = c0 if d == e_ else 0.0
                expect = (1 - sc) * prior + sc * est
                got = cov[d, e_] if cov_type == "FULL" else cov[d]
                assert got.item() == pytest.approx(expect, rel=1e-12, abs=1e-12)


def test_gamma_discounts_per_step_costs():
    H, D = 3, 1
    rollout = PointCostRollout(H, D, torch.zeros(1, D, dtype=torch.float64), torch.ones(1))
    cfg = MppiConfig(num_particles=5, gamma=0.5, store_rollouts=True)
    res = Mppi(cfg, rollout).optimize()
    act = res.debug["rollouts"][0]["act"][0, :, :, 0]
    expect = (act**2 * torch.tensor([1.0, 0.5, 0.25], dtype=torch.float64)).sum(-1)
    torch.testing.assert_close(res.debug["rollouts"][0]["cost"][0], expect)


def test_nan_costs_get_zero_weight():
    H, D, n = 2, 1, 6
    nan_mask = torch.tensor([False, True, False, False, True, False])
    rollout = PointCostRollout(
        H, D, torch.zeros(1, D, dtype=torch.float64), torch.ones(1), nan_mask=nan_mask
    )
    res = Mppi(MppiConfig(num_particles=n, store_rollouts=True), rollout).optimize()
    w = res.debug["rollouts"][0]["weights"][0]
    assert (w[nan_mask] == 0).all() and w.sum().item() == pytest.approx(1.0)
    assert torch.isfinite(res.action).all() and torch.isfinite(res.debug["cov"]).all()


def test_null_particles_are_the_mean_and_the_zero_action():
    rollout = _integrator_problem(P=1, H=4)
    cfg = MppiConfig(
        num_particles=8, null_act_frac=0.25, squash=False, store_rollouts=True, init_cov=2.0
    )
    mean = torch.full((1, 4, 2), 0.7, dtype=torch.float64)
    res = Mppi(cfg, rollout).optimize(mean)
    act = res.debug["rollouts"][0]["act"][0]
    assert torch.equal(act[0], mean[0])  # particle 0: the mean itself
    assert torch.equal(act[1], torch.zeros(4, 2, dtype=torch.float64))  # particle 1: zero action
    assert (act[2:] != mean[0]).any(dim=(1, 2)).all()  # the rest are random


# --- randomness, bounds, samplers -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["GAUSSIAN", "HALTON", "KNOT"])
def test_same_seed_same_results_different_seed_different_samples(mode):
    rollout = _integrator_problem(P=2, H=6)

    def run(seed):
        cfg = MppiConfig(
            n_problems=2,
            num_particles=32,
            n_iters=3,
            sample_mode=mode,
            seed=seed,
            store_rollouts=True,
        )
        return Mppi(cfg, rollout).optimize()

    a, b, c = run(7), run(7), run(8)
    assert torch.equal(a.action, b.action) and torch.equal(a.best_cost, b.best_cost)
    for ra, rb, rc in zip(a.debug["rollouts"], b.debug["rollouts"], c.debug["rollouts"]):
        assert torch.equal(ra["act"], rb["act"])
        assert not torch.allclose(ra["act"], rc["act"])


def test_reset_replays_the_same_run():
    rollout = _integrator_problem(P=2, H=6)
    mppi = Mppi(MppiConfig(n_problems=2, num_particles=32, n_iters=3, seed=3), rollout)
    first = mppi.optimize()
    second = mppi.optimize()
    assert not torch.equal(first.action, second.action)  # continued from the updated mean
    mppi.reset()
    assert torch.equal(mppi.optimize().action, first.action)


def test_samples_respect_bounds_when_squash_is_on():
    rollout = _integrator_problem(P=2, H=5)
    lows = torch.tensor([-0.3, -1.0], dtype=torch.float64)
    highs = torch.tensor([0.5, 0.2], dtype=torch.float64)
    rollout.action_bound_lows, rollout.action_bound_highs = lows, highs
    for squash in (True, False):
        cfg = MppiConfig(
            n_problems=2,
            num_particles=64,
            n_iters=2,
            init_cov=4.0,
            squash=squash,
            store_rollouts=True,
            cov_type="FULL",
        )
        res = Mppi(cfg, rollout).optimize()
        acts = torch.stack([r["act"] for r in res.debug["rollouts"]])
        inside = ((acts >= lows) & (acts <= highs)).all()
        assert bool(inside) == squash  # without squash, variance 4 leaves the box
        if squash:
            assert ((res.action >= lows) & (res.action <= highs)).all()


def test_halton_unscrambled_is_the_radical_inverse():
    h = HaltonGenerator(3, F64, scramble=False)
    pts = h.draw(5)
    expect = torch.tensor(
        [
            [1 / 2, 1 / 3, 1 / 5],
            [1 / 4, 2 / 3, 2 / 5],
            [3 / 4, 1 / 9, 3 / 5],
            [1 / 8, 4 / 9, 4 / 5],
            [5 / 8, 7 / 9, 1 / 25],
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(pts, expect, rtol=0, atol=1e-15)
    torch.testing.assert_close(h.draw(1), torch.tensor([[3 / 8, 2 / 9, 6 / 25]]).double())
    assert first_primes(10) == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]


def test_scrambled_halton_is_stratified_and_has_gaussian_moments():
    ndims, n = 12, 2 * 3 * 5 * 7 * 4  # n divisible by the first four bases
    h = HaltonGenerator(ndims, F64, seed=3)
    u = h.draw(n)
    assert ((u >= 0) & (u < 1)).all()
    bases = first_primes(ndims)
    for d in range(4):  # every interval [j/b, (j+1)/b) gets exactly n/b points
        counts = torch.bincount((u[:, d] * bases[d]).floor().long(), minlength=bases[d])
        assert (counts == n // bases[d]).all()
    # Far better than i.i.d. uniforms (std of the mean 1/sqrt(12 n) ~ 0.0067).
    assert (u.mean(0) - 0.5).abs().max() < 2e-3
    z = gaussian_transform(u)
    assert z.mean(0).abs().max() < 0.02
    assert (z.var(0) - 1.0).abs().max() < 0.06
    corr = torch.corrcoef(z.T) - torch.eye(ndims, dtype=torch.float64)
    assert corr.abs().max() < 0.1
    # Different seeds scramble differently; the sequence continues across draws.
    assert not torch.equal(HaltonGenerator(ndims, F64, seed=4).draw(n), u)
    h.reset()
    torch.testing.assert_close(torch.cat([h.draw(100), h.draw(n - 100)]), u)


def test_mppi_halton_samples_have_the_sampling_moments():
    rollout = _integrator_problem(P=1, H=3)
    cfg = MppiConfig(
        num_particles=840,
        init_cov=[4.0, 0.25],
        sample_mode="HALTON",
        squash=False,
        store_rollouts=True,
    )
    mean = torch.tensor([[[1.0, -2.0]] * 3], dtype=torch.float64)
    act = Mppi(cfg, rollout).optimize(mean).debug["rollouts"][0]["act"][0]  # [n, H, D]
    torch.testing.assert_close(act.mean(0), mean[0], atol=0.05, rtol=0)
    var = act.var(0)
    torch.testing.assert_close(var[:, 0], torch.full((3,), 4.0).double(), atol=0.25, rtol=0)
    torch.testing.assert_close(var[:, 1], torch.full((3,), 0.25).double(), atol=0.02, rtol=0)


def test_knot_samples_are_smooth_with_unit_variance():
    H = 25
    rollout = _integrator_problem(P=1, H=H)

    def samples(mode):
        cfg = MppiConfig(
            num_particles=400,
            init_cov=1.0,
            sample_mode=mode,
            n_knots=5,
            squash=False,
            store_rollouts=True,
        )
        return Mppi(cfg, rollout).optimize().debug["rollouts"][0]["act"][0]  # [n, H, D]

    knot, gauss = samples("KNOT"), samples("GAUSSIAN")
    d2 = lambda a: (a[:, 2:] - 2 * a[:, 1:-1] + a[:, :-2]).pow(2).mean()  # noqa: E731
    assert d2(gauss) > 4.0  # i.i.d. unit normals: E[(second difference)^2] = 6
    assert d2(knot) < 0.02 * d2(gauss)
    assert (knot.var(0) - 1.0).abs().max() < 0.25  # unit marginal variance at every step


def test_knot_matrix_interpolates_at_the_knots():
    M = knot_interpolation_matrix(4, 10, F64)  # knots at steps 0, 3, 6, 9
    assert M.shape == (10, 4)
    torch.testing.assert_close(M[[0, 3, 6, 9]], torch.eye(4, dtype=torch.float64))
    torch.testing.assert_close(M.norm(dim=1), torch.ones(10, dtype=torch.float64))
    with pytest.raises(ValueError, match="n_knots"):
        knot_interpolation_matrix(11, 10)


# --- MPC helpers -----------------------------------------------------------------------------


def test_shift_moves_the_mean_and_repeats_the_last_action():
    rollout = _integrator_problem(P=2, H=6)
    mppi = Mppi(MppiConfig(n_problems=2, num_particles=8, cov_type="FULL"), rollout)
    mean = torch.arange(24, dtype=torch.float64).view(2, 6, 2) / 10.0
    mppi.update_init_mean(mean)
    cov = mppi.cov_action.clone()
    mppi.shift(2)
    assert torch.equal(mppi.mean_action[:, :4], mean[:, 2:])
    assert torch.equal(mppi.mean_action[:, 4:], mean[:, 5:6].expand(2, 2, 2))
    assert torch.equal(mppi.cov_action, cov)
    mppi.shift(0)
    assert torch.equal(mppi.mean_action[:, :4], mean[:, 2:])
    mppi.shift(10)
    assert torch.equal(mppi.mean_action, mean[:, 5:6].expand(2, 6, 2))
    mppi.reset()  # back to the init mean
    assert torch.equal(mppi.mean_action, mean)
    with pytest.raises(ValueError, match="steps"):
        mppi.shift(-1)


def _curobo_wrap_mpc_shift(act_seq: torch.Tensor, shift_steps: int) -> torch.Tensor:
    """Reference: cuRobo v0.7.8 ``WrapMpc._shift`` as documented there: roll the plan left by
    ``shift_steps`` along the horizon, then overwrite the wrapped-around tail with the entry just
    before it (the plan's original last action)."""
    out = act_seq.roll(-shift_steps, 1)
    out[:, -shift_steps:, :] = out[:, -shift_steps - 1 : -shift_steps, :].clone()
    return out


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_shift_follows_curobo_rule_not_the_init_mean(steps):
    H = 6
    rollout = _integrator_problem(P=3, H=H)
    mppi = Mppi(MppiConfig(n_problems=3, num_particles=8), rollout)
    gen = torch.Generator().manual_seed(7)
    init = torch.rand(3, H, 2, generator=gen, dtype=torch.float64)
    plan = torch.rand(3, H, 2, generator=gen, dtype=torch.float64) + 2.0  # differs from init
    mppi.update_init_mean(init)
    mppi.mean_action.copy_(plan)  # as after an optimize() call
    mppi.shift(steps)
    expected = _curobo_wrap_mpc_shift(plan.clone(), steps)
    assert torch.equal(mppi.mean_action, expected)
    assert not torch.isin(mppi.mean_action, init).any()  # the init action never enters


@pytest.mark.parametrize("steps", [1, 4, 9])
def test_null_base_action_fills_the_tail_with_the_init_action(steps):
    """cuRobo's ``base_action: NULL``: the freed steps take the optimizer's init action."""
    H = 6
    rollout = _integrator_problem(P=2, H=H)
    mppi = Mppi(
        MppiConfig.from_dict({"n_problems": 2, "num_particles": 8, "base_action": "NULL"}), rollout
    )
    gen = torch.Generator().manual_seed(8)
    init = torch.rand(2, H, 2, generator=gen, dtype=torch.float64) - 3.0
    plan = torch.rand(2, H, 2, generator=gen, dtype=torch.float64) + 2.0
    mppi.update_init_mean(init)
    mppi.mean_action.copy_(plan)
    mppi.shift(steps)
    k = min(steps, H)
    # reference: the plan's entries k .. H-1 move to the front, the init action's last k
    # steps (the same time indices) fill the end
    for h in range(H):
        want = plan[:, h + k] if h + k < H else init[:, h]
        assert torch.equal(mppi.mean_action[:, h], want), h


def test_base_action_is_checked():
    with pytest.raises(ValueError, match="base_action"):
        MppiConfig.from_dict({"base_action": "RANDOM"})
    assert MppiConfig().base_action == "REPEAT"


def test_update_init_mean_broadcasts_and_clamps():
    rollout = _integrator_problem(P=2, H=3)
    mppi = Mppi(MppiConfig(n_problems=2, num_particles=4), rollout)
    mppi.update_init_mean(torch.full((3, 2), 12.0, dtype=torch.float64))  # bounds are +-10
    assert torch.equal(mppi.mean_action, torch.full((2, 3, 2), 10.0, dtype=torch.float64))


# --- configuration and input errors --------------------------------------------------------


def test_from_dict_reads_yaml_section():
    import yaml

    section = yaml.safe_load(
        """
        n_problems: 2
        num_particles: 64
        n_iters: 3
        init_cov: [0.1, 0.2]
        cov_type: full
        beta: 0.5
        step_size_mean: 1.0
        step_size_cov: 0.0
        null_act_frac: 0.1
        sample_mode: knot
        n_knots: 3
        squash: false
        seed: 9
        gamma: 0.98
        store_rollouts: true
        """
    )
    cfg = MppiConfig.from_dict(section)
    assert (cfg.cov_type, cfg.sample_mode, cfg.init_cov) == ("FULL", "KNOT", (0.1, 0.2))
    assert cfg.n_null == 6 and not cfg.squash and cfg.store_rollouts
    mppi = Mppi(cfg, _integrator_problem(P=2, H=4))
    torch.testing.assert_close(
        mppi.cov_action[0], torch.diag(torch.tensor([0.1, 0.2], dtype=torch.float64))
    )


@pytest.mark.parametrize(
    ("data", "exc", "match"),
    [
        ({"num_particle": 10}, ValueError, "unknown key.*num_particle"),
        ({"num_particles": 1}, ValueError, "mppi.num_particles"),
        ({"num_particles": "10"}, TypeError, "mppi.num_particles"),
        ({"n_iters": True}, TypeError, "mppi.n_iters"),
        ({"cov_type": "DIAG"}, ValueError, "mppi.cov_type"),
        ({"beta": 0.0}, ValueError, "mppi.beta"),
        ({"beta": float("nan")}, ValueError, "mppi.beta"),
        ({"step_size_mean": 0.0}, ValueError, "step_size_mean"),
        ({"step_size_cov": 1.5}, ValueError, "step_size_cov"),
        ({"init_cov": -1.0}, ValueError, "mppi.init_cov"),
        ({"init_cov": [0.1, 0.0]}, ValueError, r"init_cov\[1\]"),
        ({"null_act_frac": 1.0}, ValueError, "null_act_frac"),
        ({"num_particles": 2, "null_act_frac": 0.9}, ValueError, "no random particle"),
        ({"sample_mode": "SOBOL"}, ValueError, "mppi.sample_mode"),
        ({"gamma": 0.0}, ValueError, "mppi.gamma"),
        ({"squash": 1}, TypeError, "mppi.squash"),
        ({"seed": -1}, ValueError, "mppi.seed"),
        ({"cov_type": "FULL", "min_cov": 0.0}, ValueError, "mppi.min_cov"),
    ],
)
def test_bad_config_raises(data, exc, match):
    with pytest.raises(exc, match=match):
        MppiConfig.from_dict(data)


def test_bad_construction_and_inputs_raise():
    rollout = _integrator_problem(P=2, H=4)
    with pytest.raises(ValueError, match="init_cov: expected 2 values"):
        Mppi(MppiConfig(init_cov=[1.0, 1.0, 1.0]), rollout)
    with pytest.raises(ValueError, match="n_knots: expected at most the horizon 4"):
        Mppi(MppiConfig(sample_mode="KNOT", n_knots=5), rollout)
    with pytest.raises(TypeError, match="config: expected MppiConfig"):
        Mppi({"n_iters": 1}, rollout)
    mppi = Mppi(MppiConfig(n_problems=2, num_particles=4), rollout)
    with pytest.raises(ValueError, match=r"init_mean: expected shape \(2, 4, 2\)"):
        mppi.optimize(torch.zeros(1, 4, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="init_mean: expected dtype torch.float64"):
        mppi.optimize(torch.zeros(2, 4, 2))
    bad_bounds = _integrator_problem(P=2, H=4)
    bad_bounds.action_bound_lows = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="action_bound_lows: expected a tensor of shape"):
        Mppi(MppiConfig(), bad_bounds)

    class WrongTotal(IntegratorRollout):
        def rollout_fn(self, act):
            out = super().rollout_fn(act)
            return RolloutResult(out.costs, out.total[:-1])

    wrong = WrongTotal(rollout.x0, rollout.target, 4)
    with pytest.raises(ValueError, match=r"expected total of shape \(8,\)"):
        Mppi(MppiConfig(n_problems=2, num_particles=4), wrong).optimize()


def test_stored_rollout_states_are_those_of_their_iteration():
    """The arm rollout rewrites its state and frame buffers on every call: the states kept with
    ``store_rollouts`` must still be each iteration's own (checked against a fresh rollout of
    that iteration's stored actions)."""
    from curobo_lite.robot import Kinematics
    from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
    from curobo_lite.types import JointState, Pose

    tensor_args = TensorDeviceType()
    task = TaskConfig.load("particle_mpc")
    rollout = ArmReacher.from_task(task, "franka", tensor_args)
    robot = rollout.robot_config
    fk = Kinematics(robot, tensor_args).forward(robot.retract_config[None] + 0.3)
    start = JointState.from_position(robot.retract_config[None].clone())
    rollout.update_params(Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion)), start)
    options = dict(task.mppi, num_particles=16, n_iters=3, store_rollouts=True)
    with torch.no_grad():
        stored = Mppi(MppiConfig.from_dict(options), rollout).optimize().debug["rollouts"]
        fresh = []
        for record in stored:
            act = record["act"].reshape(-1, rollout.action_horizon, rollout.d_action)
            state = rollout.rollout_state(act)
            fresh.append((state.state_seq.position.clone(), state.ee_position.clone()))
    assert not torch.equal(fresh[0][0], fresh[-1][0])  # the iterations differ
    for record, (position, ee_position) in zip(stored, fresh):
        torch.testing.assert_close(record["state"].state_seq.position, position)
        torch.testing.assert_close(record["state"].ee_position, ee_position)
