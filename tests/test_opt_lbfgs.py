"""L-BFGS and gradient descent on toy rollouts with known minimizers."""

from __future__ import annotations

import pytest
import torch

from curobo_lite.opt import (
    GradientDescent,
    GradientDescentConfig,
    Lbfgs,
    LbfgsConfig,
    OptResult,
    RolloutResult,
)
from curobo_lite.opt.lbfgs import LbfgsHistory
from curobo_lite.types import TensorDeviceType

F64 = TensorDeviceType(dtype=torch.float64)


class QuadraticRollout:
    """Problem ``p``: ``f(x) = 1/2 (x - x*_p)^T A_p (x - x*_p)`` over the flattened ``[H, D]``."""

    def __init__(self, A, xstar, lows=None, highs=None, tensor_args=F64):
        P, H, D = xstar.shape
        self.A, self.xstar, self.n_problems = A, xstar, P
        self.action_horizon, self.d_action, self.tensor_args = H, D, tensor_args
        big = torch.full((D,), 1e6, dtype=tensor_args.dtype)
        self.action_bound_lows = -big if lows is None else lows
        self.action_bound_highs = big if highs is None else highs

    def rollout_fn(self, act):
        B, H, D = act.shape
        P = self.n_problems
        e = act.reshape(P, B // P, H * D) - self.xstar.reshape(P, 1, H * D)
        per = 0.5 * (e * torch.einsum("pij,pnj->pni", self.A, e)).reshape(B, H, D).sum(-1)
        return RolloutResult(per, per.sum(-1))


def rosenbrock_terms(x):
    """Extended Rosenbrock terms ``[B, N/2]`` of ``x [B, N]`` (independent pairs); its only
    minimum is 0 at ``(1, ..., 1)``."""
    a, b = x[:, 0::2], x[:, 1::2]
    return 100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2


class RosenbrockRollout:
    def __init__(self, H, D, tensor_args=F64):
        self.action_horizon, self.d_action, self.tensor_args = H, D, tensor_args
        self.action_bound_lows = torch.full((D,), -5.0, dtype=tensor_args.dtype)
        self.action_bound_highs = torch.full((D,), 5.0, dtype=tensor_args.dtype)

    def rollout_fn(self, act):
        B, H, D = act.shape
        # D is even, so each step holds D/2 whole pairs.
        per = rosenbrock_terms(act.reshape(B, H * D)).reshape(B, H, D // 2).sum(-1)
        return RolloutResult(per, per.sum(-1))


class MixedRollout:
    """Two problems: problem 0 is ``|x - 0.5|^2`` (easy), problem 1 is Rosenbrock (hard)."""

    def __init__(self, H, D):
        self.action_horizon, self.d_action, self.tensor_args = H, D, F64
        self.action_bound_lows = torch.full((D,), -5.0, dtype=torch.float64)
        self.action_bound_highs = torch.full((D,), 5.0, dtype=torch.float64)

    def rollout_fn(self, act):
        B, H, D = act.shape
        x = act.reshape(2, B // 2, H * D)
        easy = ((x[0] - 0.5) ** 2).sum(-1)
        hard = rosenbrock_terms(x[1]).sum(-1)
        total = torch.cat([easy, hard])
        costs = torch.zeros(B, H, dtype=act.dtype)
        costs = costs + total[:, None] / H
        return RolloutResult(costs, total)


def random_spd(P, N, cond, gen):
    """``P`` SPD matrices ``[P, N, N]`` with eigenvalues log-spaced in ``[1, cond]``."""
    Q, _ = torch.linalg.qr(torch.randn(P, N, N, generator=gen, dtype=torch.float64))
    eig = torch.logspace(0, torch.log10(torch.tensor(float(cond))).item(), N, dtype=torch.float64)
    return Q @ torch.diag_embed(eig.expand(P, N)) @ Q.transpose(-1, -2)


def flat_err(act, xstar, n):
    P = xstar.shape[0]
    return (act.view(P, n, *xstar.shape[1:]) - xstar[:, None]).abs().amax().item()


# --- convergence ---------------------------------------------------------------------------


def test_quadratic_reaches_each_problems_minimizer_in_dim_plus_few_iterations():
    # BFGS with (near-)exact line searches terminates on an N-dim quadratic in N steps; a tight
    # curvature constant c2 plus the interpolating zoom gives near-exact line searches.
    gen = torch.Generator().manual_seed(0)
    P, H, D, n = 3, 4, 2, 2
    N = H * D
    A = random_spd(P, N, 30.0, gen)
    xstar = 2.0 * torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    cfg = LbfgsConfig(
        n_problems=P,
        n_iters=N + 4,
        history=N,
        line_search="WOLFE",
        c2=1e-3,
        line_search_scale=[0.1, 0.5, 1.0, 2.0, 4.0],
        max_zoom_iters=4,
        convergence_tol=1e-9,
    )
    init = torch.randn(P * n, H, D, generator=gen, dtype=torch.float64)
    res = Lbfgs(cfg, QuadraticRollout(A, xstar)).optimize(init)
    assert res.n_iters <= N + 4
    assert flat_err(res.best_action, xstar, n) < 1e-7
    assert res.best_cost.max().item() < 1e-12
    # The minimizers really differ per problem (so each seed found its own).
    assert torch.cdist(xstar.view(P, -1), xstar.view(P, -1)).fill_diagonal_(9).min() > 1.0


@pytest.mark.parametrize("line_search", ["ARMIJO", "WOLFE"])
def test_extended_rosenbrock_reaches_all_ones(line_search):
    gen = torch.Generator().manual_seed(1)
    P, n, H, D = 2, 3, 5, 2
    start = torch.tensor([-1.2, 1.0], dtype=torch.float64).repeat(H).view(1, H, D)
    init = start + 0.3 * torch.randn(P * n, H, D, generator=gen, dtype=torch.float64)
    cfg = LbfgsConfig(
        n_problems=P, n_iters=800, history=10, line_search=line_search, convergence_tol=1e-10
    )
    res = Lbfgs(cfg, RosenbrockRollout(H, D)).optimize(init)
    assert (res.best_action - 1.0).abs().max().item() < 1e-6
    assert bool(res.converged.all()) and bool(res.problem_converged.all())
    assert res.n_iters < 800  # stopped early once every seed converged


def test_lbfgs_beats_gradient_descent_at_equal_iterations():
    gen = torch.Generator().manual_seed(2)
    P, H, D = 2, 5, 2
    A = random_spd(P, H * D, 100.0, gen)
    xstar = torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    init = torch.zeros(P, H, D, dtype=torch.float64)
    iters = 25
    lb = Lbfgs(
        LbfgsConfig(n_problems=P, n_iters=iters, convergence_tol=0.0, fixed_iters=True),
        QuadraticRollout(A, xstar),
    ).optimize(init)
    # 1/L is the best fixed step for gradient descent with the largest eigenvalue L = 100.
    gd = GradientDescent(
        GradientDescentConfig(n_problems=P, n_iters=iters, step_size=1.0 / 100.0),
        QuadraticRollout(A, xstar),
    ).optimize(init)
    assert lb.n_iters == gd.n_iters == iters
    assert (lb.best_cost < 1e-3 * gd.best_cost).all()


def test_gradient_descent_matches_closed_form_iteration():
    gen = torch.Generator().manual_seed(3)
    P, H, D, k, lr = 2, 3, 2, 7, 0.05
    A = random_spd(P, H * D, 10.0, gen)
    xstar = torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    x0 = torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    res = GradientDescent(
        GradientDescentConfig(n_problems=P, n_iters=k, step_size=lr, convergence_tol=0.0),
        QuadraticRollout(A, xstar),
    ).optimize(x0)
    # x_k - x* = (I - lr A)^k (x_0 - x*)
    M = torch.linalg.matrix_power(torch.eye(H * D, dtype=torch.float64) - lr * A, k)
    expect = xstar.view(P, -1) + torch.einsum("pij,pj->pi", M, (x0 - xstar).view(P, -1))
    torch.testing.assert_close(res.action.view(P, -1), expect, rtol=1e-12, atol=1e-12)


# --- bookkeeping ---------------------------------------------------------------------------


@pytest.mark.parametrize("line_search", ["ARMIJO", "WOLFE"])
def test_best_so_far_is_monotone_and_matches_history(line_search):
    ta = TensorDeviceType(dtype=torch.float32)
    gen = torch.Generator().manual_seed(4)
    init = 2.0 * torch.rand(6, 4, 2, generator=gen) - 1.0
    rollout = RosenbrockRollout(4, 2, ta)
    res = Lbfgs(
        LbfgsConfig(n_iters=40, line_search=line_search, convergence_tol=0.0), rollout
    ).optimize(init)
    best = res.debug["best_cost_history"]
    assert (best[1:] <= best[:-1]).all()
    f0 = rollout.rollout_fn(init).total
    expect = torch.minimum(res.debug["cost_history"].min(dim=0).values, f0)
    torch.testing.assert_close(res.best_cost, expect)
    # best_action really has cost best_cost
    torch.testing.assert_close(rollout.rollout_fn(res.best_action).total, res.best_cost)


def test_bounds_are_respected_and_give_clamped_minimizer():
    # Separable (diagonal) quadratic: the box-constrained minimizer is clamp(x*).
    gen = torch.Generator().manual_seed(5)
    P, H, D, n = 2, 3, 2, 2
    diag = 1.0 + 9.0 * torch.rand(P, H * D, generator=gen, dtype=torch.float64)
    A = torch.diag_embed(diag)
    xstar = 3.0 * torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    lows = torch.tensor([-1.0, -0.5], dtype=torch.float64)
    highs = torch.tensor([0.5, 1.0], dtype=torch.float64)
    rollout = QuadraticRollout(A, xstar, lows, highs)
    init = 4.0 * torch.randn(P * n, H, D, generator=gen, dtype=torch.float64)
    for ls in ("ARMIJO", "WOLFE"):
        cfg = LbfgsConfig(n_problems=P, n_iters=60, line_search=ls, convergence_tol=1e-10)
        res = Lbfgs(cfg, rollout).optimize(init)
        for act in (res.action, res.best_action):
            assert (act >= lows).all() and (act <= highs).all()
        target = torch.maximum(torch.minimum(xstar, highs), lows)
        assert bool(res.converged.all())
        # The converged iterate has a projected gradient below tol; the best-so-far may be an
        # earlier iterate whose cost (about 100 here) differs only by rounding.
        assert flat_err(res.action, target, n) < 1e-8
        assert flat_err(res.best_action, target, n) < 1e-6
        assert (xstar != target).any()  # some bounds are active


def test_converged_problem_is_frozen_while_others_continue():
    H, D, n = 3, 2, 2
    gen = torch.Generator().manual_seed(6)
    init = torch.randn(2 * n, H, D, generator=gen, dtype=torch.float64)
    rollout = MixedRollout(H, D)
    cfg = dict(n_problems=2, convergence_tol=1e-9, fixed_iters=True)
    short = Lbfgs(LbfgsConfig(n_iters=12, **cfg), rollout).optimize(init)
    long = Lbfgs(LbfgsConfig(n_iters=60, **cfg), rollout).optimize(init)
    assert short.problem_converged.tolist() == [True, False]
    assert long.n_iters == 60
    # Problem 0 (the easy one) is bit-identical after 12 and 60 iterations...
    for a, b in ((short.action, long.action), (short.best_action, long.best_action)):
        assert torch.equal(a[:n], b[:n])
    assert torch.equal(short.best_cost[:n], long.best_cost[:n])
    torch.testing.assert_close(short.action[:n], torch.full((n, H, D), 0.5, dtype=torch.float64))
    # ...and its cost history is constant from its convergence on.
    hist = long.debug["cost_history"][:, :n]
    assert (hist[12:] == hist[12]).all()
    # Problem 1 kept improving.
    assert (long.best_cost[n:] < short.best_cost[n:]).all()
    # Without fixed_iters the loop stops once every seed converged.
    free = Lbfgs(LbfgsConfig(n_iters=500, n_problems=2, convergence_tol=1e-9), rollout)
    res = free.optimize(init)
    assert bool(res.problem_converged.all()) and res.n_iters < 500
    assert (res.best_action[n:] - 1.0).abs().max() < 1e-6


def _dense_lbfgs_inverse(pairs, g):
    """Reference ``H g``: BFGS updates of ``gamma I`` with the stored pairs, oldest first."""
    N = g.shape[0]
    if not pairs:
        return min(1.0, 1.0 / g.norm().item()) * g
    s_new, y_new = pairs[-1]
    Hm = (s_new @ y_new) / (y_new @ y_new) * torch.eye(N, dtype=g.dtype)
    eye = torch.eye(N, dtype=g.dtype)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        V = eye - rho * torch.outer(y, s)
        Hm = V.T @ Hm @ V + rho * torch.outer(s, s)
    return Hm @ g


def test_history_ring_buffer_wraps_and_matches_dense_reference():
    gen = torch.Generator().manual_seed(7)
    m, B, N = 3, 4, 5
    hist = LbfgsHistory(m, B, N, F64)
    A = random_spd(B, N, 20.0, gen)
    kept: list[list] = [[] for _ in range(B)]
    for step in range(8):  # more pushes than m: every buffer wraps
        s = torch.randn(B, N, generator=gen, dtype=torch.float64)
        y = torch.einsum("bij,bj->bi", A, s)
        mask = torch.tensor([True, step % 2 == 0, step % 3 != 1, step < 2])
        stored = hist.push(s, y, mask)
        assert torch.equal(stored, mask)
        for b in range(B):
            if mask[b]:
                kept[b].append((s[b], y[b]))
        g = torch.randn(B, N, generator=gen, dtype=torch.float64)
        out = hist.apply_inverse_hessian(g)
        for b in range(B):
            ref = _dense_lbfgs_inverse(kept[b][-m:], g[b])
            torch.testing.assert_close(out[b], ref, rtol=1e-10, atol=1e-12)
    assert hist.count.tolist() == [3, 3, 3, 2]


def test_history_skips_nonpositive_curvature():
    hist = LbfgsHistory(2, 2, 3, F64)
    s = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([[-2.0, 0.0, 0.0], [2.0, 0.0, 0.0]], dtype=torch.float64)
    stored = hist.push(s, y, torch.tensor([True, True]))
    assert stored.tolist() == [False, True]
    assert hist.count.tolist() == [0, 1]
    g = torch.tensor([[3.0, 4.0, 0.0], [3.0, 4.0, 0.0]], dtype=torch.float64)
    out = hist.apply_inverse_hessian(g)
    torch.testing.assert_close(out[0], g[0] / 5.0)  # no pairs: min(1, 1/|g|) g
    torch.testing.assert_close(out[1], torch.tensor([1.5, 2.0, 0.0], dtype=torch.float64))


def test_lbfgs_with_short_history_still_converges():
    gen = torch.Generator().manual_seed(8)
    P, H, D = 1, 6, 2
    A = random_spd(P, H * D, 50.0, gen)
    xstar = torch.randn(P, H, D, generator=gen, dtype=torch.float64)
    res = Lbfgs(
        LbfgsConfig(n_iters=200, history=2, convergence_tol=1e-10), QuadraticRollout(A, xstar)
    ).optimize(torch.zeros(2, H, D, dtype=torch.float64))
    assert res.n_iters > 2 and flat_err(res.best_action, xstar, 2) < 1e-7


def test_random_init_inside_bounds_and_reproducible():
    rollout = RosenbrockRollout(3, 2)
    cfg = LbfgsConfig(n_problems=2, num_seeds=3, n_iters=2, seed=11)
    a = Lbfgs(cfg, rollout).optimize(None)
    b = Lbfgs(cfg, rollout).optimize(None)
    assert a.action.shape == (6, 3, 2)
    assert torch.equal(a.action, b.action)
    first = a.debug["cost_history"]
    assert torch.equal(first, b.debug["cost_history"])


def test_best_per_problem_picks_the_lowest_seed():
    res = OptResult(
        action=torch.zeros(4, 1, 1),
        best_action=torch.arange(4.0).view(4, 1, 1),
        best_cost=torch.tensor([3.0, 1.0, 0.5, 2.0]),
        n_iters=1,
    )
    act, cost, idx = res.best_per_problem(2)
    assert idx.tolist() == [1, 0] and cost.tolist() == [1.0, 0.5]
    assert act.view(-1).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="n_problems"):
        res.best_per_problem(3)


# --- configuration and input errors --------------------------------------------------------


def test_from_dict_reads_yaml_section():
    import yaml

    section = yaml.safe_load(
        """
        n_problems: 2
        num_seeds: 4
        n_iters: 30
        history: 6
        line_search: armijo
        line_search_scale: [1.0, 0.1, 0.5]
        c1: 0.001
        c2: 0.5
        step_scale: 0.8
        convergence_tol: 1.0e-5
        fixed_iters: true
        use_bounds: false
        seed: 3
        """
    )
    cfg = LbfgsConfig.from_dict(section)
    assert cfg.line_search == "ARMIJO" and cfg.line_search_scale == [0.1, 0.5, 1.0]
    assert (cfg.n_problems, cfg.num_seeds, cfg.history, cfg.seed) == (2, 4, 6, 3)
    assert cfg.fixed_iters and not cfg.use_bounds
    gd = GradientDescentConfig.from_dict({"step_size": 0.1, "n_iters": 5})
    assert gd.step_size == 0.1 and gd.n_iters == 5


@pytest.mark.parametrize(
    ("data", "exc", "match"),
    [
        ({"histroy": 3}, ValueError, "unknown key.*histroy"),
        ({"history": 0}, ValueError, "lbfgs.history"),
        ({"n_iters": 2.5}, TypeError, "lbfgs.n_iters"),
        ({"line_search": "EXACT"}, ValueError, "lbfgs.line_search"),
        ({"line_search_scale": []}, TypeError, "line_search_scale"),
        ({"line_search_scale": [0.5, -1.0]}, ValueError, r"line_search_scale\[1\]"),
        ({"line_search_scale": [0.5, 0.5]}, ValueError, "distinct"),
        ({"c1": 0.5, "c2": 0.4}, ValueError, "lbfgs.c2"),
        ({"c1": 0.0}, ValueError, "lbfgs.c1"),
        ({"step_scale": 0}, ValueError, "step_scale"),
        ({"convergence_tol": -1e-3}, ValueError, "convergence_tol"),
        ({"fixed_iters": "yes"}, TypeError, "fixed_iters"),
        ({"num_seeds": 0}, ValueError, "num_seeds"),
    ],
)
def test_bad_lbfgs_config_raises(data, exc, match):
    with pytest.raises(exc, match=match):
        LbfgsConfig.from_dict(data)


def test_bad_gradient_descent_config_raises():
    with pytest.raises(ValueError, match="gradient_descent.step_size"):
        GradientDescentConfig.from_dict({"step_size": 0.0})
    with pytest.raises(ValueError, match="unknown key.*history"):
        GradientDescentConfig.from_dict({"history": 3})


def test_bad_inputs_raise_before_running():
    rollout = RosenbrockRollout(3, 2)
    opt = Lbfgs(LbfgsConfig(n_problems=2, num_seeds=2), rollout)
    ok = torch.zeros(4, 3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="n_problems \\* num_seeds = 4"):
        opt.optimize(ok[:2])
    with pytest.raises(TypeError, match="init_act: expected dtype torch.float64"):
        opt.optimize(ok.float())
    with pytest.raises(ValueError, match="init_act: expected shape"):
        opt.optimize(torch.zeros(4, 3, 3, dtype=torch.float64))
    bad = ok.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="init_act: contains NaN"):
        opt.optimize(bad)
    with pytest.raises(ValueError, match="divisible by n_problems=2"):
        Lbfgs(LbfgsConfig(n_problems=2), rollout).optimize(ok[:3])
    with pytest.raises(ValueError, match="num_seeds"):
        Lbfgs(LbfgsConfig(n_problems=2), rollout).optimize(None)
    with pytest.raises(TypeError, match="config: expected LbfgsConfig"):
        Lbfgs(GradientDescentConfig(), rollout)


def test_rollout_without_gradient_is_reported():
    class Detached(RosenbrockRollout):
        def rollout_fn(self, act):
            out = super().rollout_fn(act.detach())
            return RolloutResult(out.costs, out.total)

    with pytest.raises(ValueError, match="does not depend differentiably"):
        Lbfgs(LbfgsConfig(), Detached(3, 2)).optimize(torch.zeros(1, 3, 2, dtype=torch.float64))

    class NoBounds:
        d_action, action_horizon, tensor_args = 2, 3, F64

        def rollout_fn(self, act):
            return None

    with pytest.raises(TypeError, match="action_bound_lows"):
        Lbfgs(LbfgsConfig(), NoBounds())


def test_stall_stop_ends_early_on_an_easy_problem_and_later_on_a_hard_one():
    H, D, n = 3, 2, 4
    gen = torch.Generator().manual_seed(12)
    init = torch.randn(2 * n, H, D, generator=gen, dtype=torch.float64)
    stall = dict(
        n_problems=2,
        n_iters=400,
        convergence_tol=0.0,
        stall_atol=1e-12,
        stall_rtol=1e-6,
        convergence_check_every=4,
        stop_rule="BEST_SEED",
    )
    res = Lbfgs(LbfgsConfig(**stall), MixedRollout(H, D)).optimize(init)
    cost = res.debug["cost_history"]  # [n_iters, B]: constant once a seed is frozen
    changed = cost[1:] != cost[:-1]
    last_easy = int(torch.nonzero(changed[:, :n].any(dim=1)).max()) + 1
    last_hard = int(torch.nonzero(changed[:, n:].any(dim=1)).max()) + 1
    assert last_easy + 8 < last_hard < 400
    assert res.n_iters < 400 and res.n_iters % 4 == 0  # stopped at a check
    assert res.problem_converged.tolist() == [True, True]
    # both problems are at their minimizers (0.5 everywhere; Rosenbrock's all ones)
    best, _, _ = res.best_per_problem(2)
    torch.testing.assert_close(best[0], torch.full((H, D), 0.5, dtype=torch.float64))
    assert float((best[1] - 1.0).abs().max()) < 1e-4
    # the stopped run is the fixed-iteration run cut short: identical up to the stop
    fixed = Lbfgs(
        LbfgsConfig(n_problems=2, n_iters=res.n_iters, convergence_tol=0.0, fixed_iters=True),
        MixedRollout(H, D),
    ).optimize(init)
    hist, ref = res.debug["cost_history"], fixed.debug["cost_history"]
    assert torch.equal(hist[: last_easy + 1, :n], ref[: last_easy + 1, :n])
    # without a stall rule the same problem runs to the iteration limit
    plain = Lbfgs(LbfgsConfig(n_problems=2, n_iters=60, convergence_tol=0.0), MixedRollout(H, D))
    assert plain.optimize(init).n_iters == 60


def test_best_seed_rule_freezes_the_whole_problem():
    H, D, n = 2, 2, 3
    gen = torch.Generator().manual_seed(13)
    init = torch.randn(n, H, D, generator=gen, dtype=torch.float64) * 2.0
    cfg = dict(n_iters=200, convergence_tol=0.0, stall_rtol=1e-3, convergence_check_every=2)
    all_seeds = Lbfgs(LbfgsConfig(**cfg), RosenbrockRollout(H, D)).optimize(init)
    best_seed = Lbfgs(LbfgsConfig(**cfg, stop_rule="BEST_SEED"), RosenbrockRollout(H, D))
    res = best_seed.optimize(init)
    assert res.n_iters <= all_seeds.n_iters
    assert bool(res.problem_converged.all())
    b = int(res.best_cost.argmin())
    assert bool(res.converged[b])  # the best seed converged; the others were frozen with it


def test_stop_check_ends_each_problem_when_one_seed_passes():
    """A problem stops at the first check where one of its seeds' best iterate passes the
    caller's test (here: the Rosenbrock problem within 0.05 of its minimizer), however much its
    cost could still improve; the easy problem (never passing) stops by converging."""
    H, D, n = 3, 2, 4
    gen = torch.Generator().manual_seed(21)
    init = torch.randn(2 * n, H, D, generator=gen, dtype=torch.float64)
    calls = []

    def near_minimizer(best_action):
        calls.append(best_action.clone())
        passed = (best_action - 1.0).abs().amax(dim=(-2, -1)) <= 0.05
        passed[:n] = False  # the easy problem never passes: it stops by converging
        return passed

    cfg = LbfgsConfig(n_problems=2, n_iters=80, convergence_tol=0.0, convergence_check_every=4)
    res = Lbfgs(cfg, MixedRollout(H, D)).optimize(init, stop_check=near_minimizer)
    plain = Lbfgs(cfg, MixedRollout(H, D)).optimize(init)
    # the first check where a Rosenbrock seed was within 0.05 of the minimizer
    errors = [float((x[n:] - 1.0).abs().amax(dim=(-2, -1)).min()) for x in calls]
    first = next(k for k, error in enumerate(errors) if error <= 0.05)
    stop = 4 * (first + 1)
    # the solve ended there (both problems done), the unstopped one ran to the limit
    assert res.n_iters == stop < 80 and plain.n_iters == 80
    assert len(calls) == stop // 4  # only at the checks
    hist, ref = res.debug["cost_history"], plain.debug["cost_history"]
    # identical to the run without a stop check up to the stop ...
    assert torch.equal(hist[:stop, n:], ref[:stop, n:])
    # ... while the unstopped run still improves there (the stop was not a convergence)
    assert float(ref[-1, n:].min()) < 0.5 * float(ref[stop - 1, n:].min())
    passing = (res.best_action[n:] - 1.0).abs().amax(dim=(-2, -1)) <= 0.05
    assert bool(passing.any()) and bool(res.converged[n:][passing].all())
    assert res.problem_converged.tolist() == [True, True]


def test_max_iters_caps_one_call_and_is_checked():
    H, D, n = 3, 2, 4
    gen = torch.Generator().manual_seed(5)
    init = torch.randn(2 * n, H, D, generator=gen, dtype=torch.float64)
    cfg = LbfgsConfig(n_problems=2, n_iters=20, convergence_tol=0.0, fixed_iters=True)
    full = Lbfgs(cfg, MixedRollout(H, D)).optimize(init)
    capped = Lbfgs(cfg, MixedRollout(H, D)).optimize(init, max_iters=3)
    assert capped.n_iters == 3 and full.n_iters == 20
    # the capped call is the first three iterations of the full one
    assert torch.equal(capped.debug["cost_history"], full.debug["cost_history"][:3])
    # a cap above n_iters is n_iters
    assert Lbfgs(cfg, MixedRollout(H, D)).optimize(init, max_iters=50).n_iters == 20
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match="max_iters"):
            Lbfgs(cfg, MixedRollout(H, D)).optimize(init, max_iters=bad)
