"""Batched L-BFGS with a parallel line search.

Every seed (``B = n_problems * num_seeds`` of them, problem-major) runs its own L-BFGS: its own
curvature history (a ring buffer of the last ``history`` pairs ``s = x_{k+1} - x_k``,
``y = g_{k+1} - g_k``), its own step sizes and its own convergence flag (see
:mod:`curobo_lite.opt.gradient_base`). The inverse-Hessian product is batched over seeds
(compact form, see :class:`LbfgsHistory`); a pair with non-positive curvature
(``s.y <= eps |s| |y|``) is not stored for that seed. With no pairs yet, the inverse Hessian
is ``min(1, 1/||g||_2) I`` (the first trial step has length at most ``step_scale``);
afterwards the usual ``(s.y / y.y) I`` of the newest pair.

Line search (cuRobo style, documented choice): all step sizes
``alpha_k = step_scale * trial * line_search_scale[k]`` are evaluated **in parallel** in one
batched rollout of ``B * K`` trajectories (layout ``[n_problems, num_seeds, K]``, still
problem-major) that also gives their gradients; ``trial`` is a per-seed factor, 1 after a
successful step and multiplied by 0.1 after a failed one (a sequential backtracking across
iterations on top of the parallel one). With ``use_bounds`` every trial point is projected into
the box (projected search path) and the sufficient-decrease test uses ``g.(x(alpha) - x)``.

- ``ARMIJO``: take the largest ``alpha_k`` with ``f(x(alpha)) <= f(x) + c1 g.(x(alpha) - x)``
  (backtracking from the largest scale, evaluated at once). None: the seed does not move.
- ``WOLFE``: take the largest ``alpha_k`` that also satisfies the strong curvature condition
  ``|g(alpha).p| <= c2 |g.p|``. Otherwise the candidates are scanned in increasing order for a
  bracket (Nocedal & Wright, Alg. 3.5), then up to ``max_zoom_iters`` batched steps (one rollout
  of ``B`` each) look for a strong-Wolfe point: inside a bracket by safeguarded quadratic
  interpolation (Alg. 3.6), and for seeds whose candidates all decreased the cost with a still
  negative slope by extrapolating (secant root of the slope, within 1.1x to 10x the largest
  step). When the budget runs out the best Armijo point found is taken (none: no move). On a
  quadratic both the interpolation and the extrapolation are exact, so a small ``c2`` gives
  exact line searches.

YAML section ``lbfgs:`` (keys of :meth:`LbfgsConfig.from_dict`; unknown keys are an error):

- ``n_problems`` (int >= 1, default 1): independent problems.
- ``num_seeds`` (int >= 1 or null, default null): seeds per problem; null infers it from the
  batch of ``init_act`` (which must then be divisible by ``n_problems``).
- ``n_iters`` (int >= 1, default 100): maximum iterations.
- ``history`` (int >= 1, default 10): curvature pairs kept per seed.
- ``line_search`` (``"ARMIJO"`` or ``"WOLFE"``, default ``"WOLFE"``).
- ``line_search_scale`` (list of floats > 0, default ``[0.01, 0.05, 0.1, 0.25, 0.5, 0.75,
  1.0]``): step sizes tried in parallel (sorted; duplicates are an error).
- ``c1`` (float in (0, 1), default 1e-4), ``c2`` (float in (c1, 1), default 0.9): Armijo and
  curvature constants.
- ``step_scale`` (float > 0, default 1.0): multiplies every trial step.
- ``max_zoom_iters`` (int >= 0, default 3): zoom steps of the ``WOLFE`` search.
- ``convergence_tol`` (float >= 0, default 1e-6): see :mod:`curobo_lite.opt.gradient_base`;
  the loop stops once every seed has converged unless ``fixed_iters``.
- ``fixed_iters`` (bool, default false): always run ``n_iters`` iterations (no early exit, so
  no host sync on the convergence flags; converged seeds stay frozen all the same).
- ``stall_rtol``, ``stall_atol`` (floats >= 0, default 0: off), ``convergence_check_every``
  (int >= 1, default 1), ``stop_rule`` (``"ALL_SEEDS"`` or ``"BEST_SEED"``, default
  ``"ALL_SEEDS"``): stall-based convergence and per-problem stopping, see
  :mod:`curobo_lite.opt.gradient_base`.
- ``use_bounds`` (bool, default true): project iterates and trial points into the rollout's
  action bounds; the search direction is zeroed on coordinates pushing against an active bound.
- ``seed`` (int >= 0, default 0): seed of the uniform draw when ``optimize(None)``.
- ``use_cuda_graph`` (bool, default false): on a CUDA device, replay the iterations from a
  captured graph, kept across calls of the same batch shape (see
  :mod:`curobo_lite.opt.gradient_base`); no effect on a CPU device (a warning says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import torch

from curobo_lite.opt.base import Rollout
from curobo_lite.opt.cuda_graph import capturing
from curobo_lite.opt.gradient_base import GradientOptimizerBase, GradientOptimizerConfig
from curobo_lite.opt.options import as_choice, as_float, as_int
from curobo_lite.types.base import TensorDeviceType
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError

LINE_SEARCHES = ("ARMIJO", "WOLFE")
_FAIL_SHRINK = 0.1


@dataclass
class LbfgsConfig(GradientOptimizerConfig):
    """L-BFGS parameters (see the module docstring for every key)."""

    section: ClassVar[str] = "lbfgs"

    history: int = 10
    line_search: str = "WOLFE"
    line_search_scale: Sequence[float] = field(
        default_factory=lambda: [0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0]
    )
    c1: float = 1e-4
    c2: float = 0.9
    step_scale: float = 1.0
    max_zoom_iters: int = 3

    def __post_init__(self) -> None:
        super().__post_init__()
        s = self.section
        self.history = as_int(s, "history", self.history, 1)
        self.line_search = as_choice(s, "line_search", self.line_search, LINE_SEARCHES)
        scales = self.line_search_scale
        if isinstance(scales, (str, bytes)) or not isinstance(scales, Sequence) or not scales:
            raise InputTypeError(
                f"{s}.line_search_scale: expected a non-empty list of numbers, "
                f"received {excerpt(scales)}"
            )
        vals = sorted(
            as_float(s, f"line_search_scale[{i}]", v, 0.0, low_open=True)
            for i, v in enumerate(scales)
        )
        if len(set(vals)) != len(vals):
            raise InputValueError(
                f"{s}.line_search_scale: expected distinct values, received {scales}"
            )
        self.line_search_scale = vals
        self.c1 = as_float(s, "c1", self.c1, 0.0, 1.0, low_open=True, high_open=True)
        self.c2 = as_float(s, "c2", self.c2, 0.0, 1.0, low_open=True, high_open=True)
        if self.c2 <= self.c1:
            raise InputValueError(
                f"{s}.c2: expected c1 < c2 < 1 with c1={self.c1}, received {self.c2}"
            )
        self.step_scale = as_float(s, "step_scale", self.step_scale, 0.0, low_open=True)
        self.max_zoom_iters = as_int(s, "max_zoom_iters", self.max_zoom_iters, 0)


class LbfgsHistory:
    """Per-seed ring buffers of curvature pairs and the batched inverse-Hessian product.

    ``H_k g`` uses the compact representation of Byrd, Nocedal & Schnabel (1994, eq. 2.6),
    which equals the two-loop recursion: the Gram matrices ``S^T Y`` and ``Y^T Y`` are kept up
    to date by each push (one row and column per stored pair), so a product is two weighted
    sums over the history, two ``m x m`` triangular solves and a handful of small ops, whatever
    ``m`` is: no Python loop over the pairs, no host synchronization, the same buffers every
    call (ready for CUDA-graph capture).

    Args:
        history: pairs kept per seed (``m``).
        batch: seeds ``B``.
        n: flattened variable size ``N`` (``H * D``).
        tensor_args: device and dtype of the buffers ``s, y [B, m, N]`` (ring order) and
            ``sty, yty [B, m, m]`` (``(i, j) = s_i . y_j``, ``y_i . y_j``, ring order).
    """

    def __init__(self, history: int, batch: int, n: int, tensor_args: TensorDeviceType) -> None:
        self.m = history
        self.s = tensor_args.zeros(batch, history, n)
        self.y = tensor_args.zeros(batch, history, n)
        self.sty = tensor_args.zeros(batch, history, history)
        self.yty = tensor_args.zeros(batch, history, history)
        self.ptr = torch.zeros(batch, dtype=torch.long, device=tensor_args.device)
        self.count = torch.zeros(batch, dtype=torch.long, device=tensor_args.device)
        self._rows = torch.arange(batch, device=tensor_args.device)
        self._slots = torch.arange(history, device=tensor_args.device)
        self._eye = torch.eye(history, **tensor_args.as_kwargs())
        self._upper = torch.ones(history, history, dtype=torch.bool, device=tensor_args.device)
        self._upper = self._upper.triu()
        self._eps = torch.finfo(tensor_args.dtype).eps

    def reset(self, mask: torch.Tensor | None = None) -> None:
        """Forget every pair of the seeds in ``mask [B]`` (all seeds when ``None``)."""
        if mask is None:
            self.count.zero_()
            self.ptr.zero_()
            return
        self.count.masked_fill_(mask, 0)
        self.ptr.masked_fill_(mask, 0)

    def push(self, s: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Store ``(s, y) [B, N]`` for seeds in ``mask [B]`` whose curvature is positive.

        Returns the ``[B]`` bool of seeds whose pair was stored.
        """
        sy = (s * y).sum(-1)
        norms = s.norm(dim=-1) * y.norm(dim=-1)
        ok = mask & (sy > self._eps * norms) & torch.isfinite(sy) & (norms > 0)
        idx, rows, ok2 = self.ptr, self._rows, ok[:, None]
        self.s[rows, idx] = torch.where(ok2, s, self.s[rows, idx])
        self.y[rows, idx] = torch.where(ok2, y, self.y[rows, idx])
        # the new pair's row and column of the Gram matrices
        slot = ok2 & (self._slots == idx[:, None])  # [B, m]
        s_y = (self.y * s[:, None]).sum(-1)  # s_new . y_j
        y_s = (self.s * y[:, None]).sum(-1)  # s_j . y_new
        y_y = (self.y * y[:, None]).sum(-1)
        self.sty.copy_(torch.where(slot[:, :, None], s_y[:, None, :], self.sty))
        self.sty.copy_(torch.where(slot[:, None, :], y_s[:, :, None], self.sty))
        self.yty.copy_(torch.where(slot[:, :, None], y_y[:, None, :], self.yty))
        self.yty.copy_(torch.where(slot[:, None, :], y_y[:, :, None], self.yty))
        self.ptr.copy_(torch.where(ok, (self.ptr + 1) % self.m, self.ptr))
        self.count.copy_(torch.where(ok, torch.clamp(self.count + 1, max=self.m), self.count))
        return ok

    def apply_inverse_hessian(self, g: torch.Tensor) -> torch.Tensor:
        """``H_k g`` for ``g [B, N]`` over each seed's valid pairs (``gamma g`` with none)."""
        m, rows = self.m, self._rows[:, None]
        # chronological order, oldest first: ring slot (ptr + k) % m; the first m - count are
        # unused (their rows and columns are zeroed, their R diagonal set to 1: decoupled)
        order = (self.ptr[:, None] + self._slots) % m  # [B, m]
        valid = (self._slots >= m - self.count[:, None]).to(g.dtype)  # [B, m]
        vv = valid[:, :, None] * valid[:, None, :]
        sty = self.sty[rows[..., None], order[:, :, None], order[:, None, :]] * vv
        yty = self.yty[rows[..., None], order[:, :, None], order[:, None, :]] * vv
        a = (self.s * g[:, None]).sum(-1).gather(1, order) * valid  # S^T g, [B, m]
        c = (self.y * g[:, None]).sum(-1).gather(1, order) * valid  # Y^T g
        d = torch.diagonal(sty, dim1=1, dim2=2)  # s_i . y_i
        R = torch.where(self._upper, sty, 0.0) + self._eye * (1.0 - valid)[:, None, :]
        y_new, sy_new = yty[:, -1, -1], d[:, -1]
        gamma_pair = sy_new / torch.where(y_new > 0, y_new, torch.ones_like(y_new))
        gamma_init = torch.clamp(1.0 / g.norm(dim=-1).clamp(min=self._eps), max=1.0)
        gamma = torch.where(self.count > 0, gamma_pair, gamma_init)[:, None]  # [B, 1]
        p = torch.linalg.solve_triangular(R, a[..., None], upper=True)[..., 0]
        rhs = d * p + gamma * (yty @ p[..., None])[..., 0] - gamma * c
        top = torch.linalg.solve_triangular(R.transpose(1, 2), rhs[..., None], upper=False)
        # back to ring order, then H g = gamma g + S top - gamma Y p
        top_ring = torch.zeros_like(p).scatter_(1, order, top[..., 0])
        p_ring = torch.zeros_like(p).scatter_(1, order, p)
        return (
            gamma * g
            + (self.s * top_ring[..., None]).sum(1)
            - gamma * (self.y * p_ring[..., None]).sum(1)
        )


class Lbfgs(GradientOptimizerBase):
    """Batched L-BFGS solver over a :class:`~curobo_lite.opt.base.Rollout`.

    ``OptResult.debug`` adds ``step_history [n_iters, B]`` (accepted step size, 0 when the line
    search failed) to the histories of :meth:`GradientOptimizerBase.optimize`.
    """

    def __init__(self, config: LbfgsConfig, rollout: Rollout) -> None:
        if not isinstance(config, LbfgsConfig):
            raise InputTypeError(f"config: expected LbfgsConfig, received {type(config).__name__}")
        super().__init__(config, rollout)
        self._scales = self.tensor_args.to_device(config.line_search_scale)
        self.history: LbfgsHistory | None = None
        self._trial: torch.Tensor | None = None

    def _prepare(self, batch: int) -> None:
        n = self.horizon * self.d_action
        h = self.history
        if h is None or h.s.shape[0] != batch:
            self.history = LbfgsHistory(self.config.history, batch, n, self.tensor_args)
        else:
            self.history.reset()
        # reset in place for the same batch: a graphed step keeps reading the same buffers
        if self._trial is None or self._trial.shape[0] != batch:
            self._trial = torch.ones(batch, **self.tensor_args.as_kwargs())
        else:
            self._trial.fill_(1.0)

    def _graph_state(self) -> tuple:
        h = self.history
        return (id(h), h.s.data_ptr(), self._trial.data_ptr())

    def _direction(self, x: torch.Tensor, g: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """Descent direction ``p [B, H, D]``; falls back to steepest descent when needed."""
        B = x.shape[0]
        p = -self.history.apply_inverse_hessian(g.reshape(B, -1)).view_as(g)
        pg = self._projected_grad(x, g)
        if self.config.use_bounds:
            blocked = ((x <= self._lows) & (p < 0)) | ((x >= self._highs) & (p > 0))
            p = torch.where(blocked, torch.zeros_like(p), p)
        gp = (g * p).sum(dim=(-2, -1))
        bad = ~(gp < 0)
        self.history.reset(bad & active)
        return torch.where(bad[:, None, None], -pg, p)

    def _step(
        self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor, active: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        p = self._direction(x, g, active)
        x_new, f_new, g_new, alpha = self._line_search(x, f, g, p)
        found = alpha > 0
        B = x.shape[0]
        self.history.push((x_new - x).reshape(B, -1), (g_new - g).reshape(B, -1), active & found)
        trial = torch.where(found, torch.ones_like(self._trial), self._trial * _FAIL_SHRINK)
        # in place: a captured CUDA graph reads and writes the buffer it saw at capture
        self._trial.copy_(torch.where(active, trial, self._trial))
        return x_new, f_new, g_new, {"step_history": alpha}

    def _line_search(
        self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor, p: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Return the accepted ``(x, f, g, alpha [B])``; ``alpha = 0`` (no move) on failure."""
        cfg = self.config
        B, H, D = x.shape
        K = self._scales.shape[0]
        rows = torch.arange(B, device=x.device)
        alphas = self._scales[None, :] * (cfg.step_scale * self._trial)[:, None]  # [B, K]
        xc = self._project(x[:, None] + alphas[:, :, None, None] * p[:, None])
        fc, gc = self._evaluate(xc.reshape(B * K, H, D))
        fc, gc = fc.view(B, K), gc.view(B, K, H, D)
        armijo = fc <= f[:, None] + cfg.c1 * (g[:, None] * (xc - x[:, None])).sum(dim=(-2, -1))
        ks = torch.arange(K, device=x.device)
        gp = (g * p).sum(dim=(-2, -1))
        dphi = (gc * p[:, None]).sum(dim=(-2, -1))
        ok = armijo
        if cfg.line_search == "WOLFE":
            ok = armijo & (dphi.abs() <= cfg.c2 * gp.abs()[:, None])
        k = torch.where(ok, ks, -1).amax(dim=1)
        found = k >= 0
        k = k.clamp(min=0)
        fz = found[:, None, None]
        acc = _Accepted(
            x=torch.where(fz, xc[rows, k], x),
            f=torch.where(found, fc[rows, k], f),
            g=torch.where(fz, gc[rows, k], g),
            alpha=torch.where(found, alphas[rows, k], torch.zeros_like(f)),
        )
        if cfg.line_search == "WOLFE":
            state = _WolfeSearch(x, f, g, gp, cfg.c1, cfg.c2, acc, searching=~found)
            for j in range(K):
                state.scan_point(
                    alphas[:, j], xc[:, j], fc[:, j], gc[:, j], dphi[:, j], armijo[:, j]
                )
            self._zoom(state, x, f, g, p)
        return acc.x, acc.f, acc.g, acc.alpha

    def _zoom(
        self,
        state: _WolfeSearch,
        x: torch.Tensor,
        f: torch.Tensor,
        g: torch.Tensor,
        p: torch.Tensor,
    ) -> None:
        """Up to ``max_zoom_iters`` batched steps: extrapolate seeds without a bracket yet,
        interpolate inside the bracket for the others; then accept the best Armijo point."""
        c1 = self.config.c1
        for _ in range(self.config.max_zoom_iters):
            scan, zoom = state.searching.clone(), state.zoom.clone()
            # the early exit reads the host; under CUDA-graph capture every zoom step runs
            # (a step with no seed scanning or zooming changes nothing)
            if not capturing(x.device) and not bool((scan | zoom).any()):
                break
            trial = torch.where(zoom, state.interpolate(), state.extrapolate())
            trial = torch.where(scan | zoom, trial, torch.zeros_like(trial))
            xj = self._project(x + trial[:, None, None] * p)
            fj, gj = self._evaluate(xj)
            dj = (gj * p).sum(dim=(-2, -1))
            arm = fj <= f + c1 * (g * (xj - x)).sum(dim=(-2, -1))
            state.zoom_point(zoom, trial, xj, fj, gj, dj, arm)
            state.scan_point(trial, xj, fj, gj, dj, arm, mask=scan)
        state.finish()


def _sel(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """``where(mask, new, old)`` with ``mask [B]`` broadcast over trailing dimensions."""
    return torch.where(mask.view(-1, *([1] * (new.dim() - 1))), new, old)


@dataclass
class _Accepted:
    """Per-seed result of a line search: point, cost, gradient, step (0 = no move)."""

    x: torch.Tensor
    f: torch.Tensor
    g: torch.Tensor
    alpha: torch.Tensor

    def take(
        self, mask: torch.Tensor, a: torch.Tensor, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor
    ) -> None:
        self.x, self.f, self.g = _sel(mask, x, self.x), _sel(mask, f, self.f), _sel(mask, g, self.g)
        self.alpha = _sel(mask, a, self.alpha)


class _WolfeSearch:
    """Batched strong-Wolfe bracketing and zoom state (Nocedal & Wright, Alg. 3.5/3.6).

    ``lo`` is the best Armijo point so far (starting at ``alpha = 0``), ``hi`` the other end of
    the bracket, ``prev`` the point before ``lo`` (for extrapolation). ``searching`` seeds have
    no bracket yet, ``zoom`` seeds have one.
    """

    def __init__(
        self,
        x: torch.Tensor,
        f: torch.Tensor,
        g: torch.Tensor,
        gp: torch.Tensor,
        c1: float,
        c2: float,
        acc: _Accepted,
        searching: torch.Tensor,
    ) -> None:
        zero = torch.zeros_like(f)
        self.c2gp = c2 * gp.abs()
        self.acc = acc
        self.lo_a, self.lo_f, self.lo_d, self.lo_x, self.lo_g = zero, f, gp, x, g
        self.prev_a, self.prev_d = zero, gp
        self.hi_a, self.hi_f, self.hi_d = zero, f, gp
        self.searching = searching
        self.zoom = torch.zeros_like(searching)

    def _set_hi(self, mask: torch.Tensor, a: torch.Tensor, f: torch.Tensor, d: torch.Tensor):
        self.hi_a, self.hi_f, self.hi_d = (
            _sel(mask, a, self.hi_a),
            _sel(mask, f, self.hi_f),
            _sel(mask, d, self.hi_d),
        )

    def _set_lo(self, mask, a, x, f, g, d) -> None:
        self.lo_a, self.lo_f, self.lo_d = (
            _sel(mask, a, self.lo_a),
            _sel(mask, f, self.lo_f),
            _sel(mask, d, self.lo_d),
        )
        self.lo_x, self.lo_g = _sel(mask, x, self.lo_x), _sel(mask, g, self.lo_g)

    def _sort_point(
        self, seeds: torch.Tensor, a, x, f, g, d, arm
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sort the trial points of ``seeds``: one failing the sufficient-decrease test
        (``arm``) or no lower than ``lo`` becomes the bracket's ``hi``; of the others, one
        meeting the curvature condition is accepted. Returns ``(to_hi, accepted, rest)``."""
        to_hi = seeds & (~arm | (f >= self.lo_f))
        self._set_hi(to_hi, a, f, d)
        rest = seeds & ~to_hi
        accepted = rest & (d.abs() <= self.c2gp)
        self.acc.take(accepted, a, x, f, g)
        return to_hi, accepted, rest & ~accepted

    def scan_point(self, a, x, f, g, d, arm, mask: torch.Tensor | None = None) -> None:
        """A new, larger step for the seeds still without a bracket."""
        s = self.searching if mask is None else self.searching & mask
        up, wolfe, s = self._sort_point(s, a, x, f, g, d, arm)
        down = s & (d >= 0)
        self._set_hi(down, self.lo_a, self.lo_f, self.lo_d)
        self.prev_a, self.prev_d = _sel(s, self.lo_a, self.prev_a), _sel(s, self.lo_d, self.prev_d)
        self._set_lo(s, a, x, f, g, d)
        self.zoom = self.zoom | up | down
        self.searching = self.searching & ~(up | wolfe | down)

    def zoom_point(self, mask, a, x, f, g, d, arm) -> None:
        """A step inside the bracket for the seeds in ``mask``."""
        _, done, keep = self._sort_point(mask, a, x, f, g, d, arm)
        flip = keep & (d * (self.hi_a - self.lo_a) >= 0)
        self._set_hi(flip, self.lo_a, self.lo_f, self.lo_d)
        self._set_lo(keep, a, x, f, g, d)
        self.zoom = self.zoom & ~done

    def interpolate(self) -> torch.Tensor:
        """Minimizer of the quadratic through ``f(lo), f'(lo), f(hi)``, kept 10% inside."""
        width = self.hi_a - self.lo_a
        denom = 2.0 * (self.hi_f - self.lo_f - self.lo_d * width)
        safe = torch.where(denom > 0, denom, torch.ones_like(denom))
        quad = self.lo_a - self.lo_d * width * width / safe
        trial = torch.where((denom > 0) & torch.isfinite(quad), quad, self.lo_a + 0.5 * width)
        margin = 0.1 * width.abs()
        lower = torch.minimum(self.lo_a, self.hi_a) + margin
        upper = torch.maximum(self.lo_a, self.hi_a) - margin
        return torch.minimum(torch.maximum(trial, lower), upper)

    def extrapolate(self) -> torch.Tensor:
        """Secant root of the slope through ``prev`` and ``lo``, within ``[1.1, 10] * lo``."""
        dd = self.lo_d - self.prev_d
        safe = torch.where(dd > 0, dd, torch.ones_like(dd))
        sec = self.lo_a - self.lo_d * (self.lo_a - self.prev_a) / safe
        trial = torch.where((dd > 0) & torch.isfinite(sec), sec, 4.0 * self.lo_a)
        return torch.minimum(torch.maximum(trial, 1.1 * self.lo_a), 10.0 * self.lo_a)

    def finish(self) -> None:
        """Budget spent: take ``lo`` (the best Armijo point; none when it is still 0)."""
        rest = (self.searching | self.zoom) & (self.lo_a > 0)
        self.acc.take(rest, self.lo_a, self.lo_x, self.lo_f, self.lo_g)


def lbfgs_for_batch(
    solvers: dict[tuple[int, int], Lbfgs],
    config: LbfgsConfig,
    rollout: Rollout,
    n_problems: int,
    num_seeds: int,
) -> Lbfgs:
    """The :class:`Lbfgs` over ``rollout`` for ``n_problems`` problems of ``num_seeds`` seeds:
    the one ``solvers`` holds for that shape, else a new one with ``config``'s other options,
    kept in ``solvers`` (a solver's buffers are sized for its batch, so it is built once per
    shape)."""
    key = (n_problems, num_seeds)
    if key not in solvers:
        solvers[key] = Lbfgs(replace(config, n_problems=n_problems, num_seeds=num_seeds), rollout)
    return solvers[key]
