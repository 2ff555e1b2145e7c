"""Shared machinery of the gradient-based solvers (L-BFGS, gradient descent).

The solvers optimize ``B = n_problems * num_seeds`` action sequences ``[B, H, D]`` at once, each
seed on its own: every seed has its own step sizes, history and convergence flag, and a seed that
has converged is frozen (its iterate, cost and best-so-far stop changing) while the others go on.

Convergence of a seed after an iteration:
``|f_k - f_{k-1}| <= convergence_tol * max(1, |f_{k-1}|)`` and ``||pg_k||_inf <=
convergence_tol``, where ``pg`` is the gradient (projected onto the box when ``use_bounds``:
``pg = x - clamp(x - g, lows, highs)``, so a gradient that only pushes against an active bound
counts as zero).

Stall (optional, ``stall_rtol`` or ``stall_atol`` > 0): a seed whose best cost improved by at
most ``stall_atol + stall_rtol * |best|`` since the previous check has converged too; the checks
happen every ``convergence_check_every`` iterations. With ``stop_rule: BEST_SEED`` a problem
stops (all its seeds frozen, ``problem_converged``) as soon as its best seed has converged:
the usual rule for multi-start solves, where only the best seed is kept.

Stop check (optional, an argument of ``optimize``): a caller's test of the seeds' best iterates
at the same checks; a problem stops once one of its seeds passes (it is good enough: e.g. the
goal is reached with a margin and collision-free), however much the cost could still improve.

Host synchronization: an iteration itself never reads a tensor value on the host; the loop
reads the convergence flags once per ``convergence_check_every`` iterations (never with
``fixed_iters``). With ``use_cuda_graph: true`` on a CUDA device, one iteration (rollout,
gradient, line search and update) is captured after a warm-up iteration and replayed for the
other iterations, and for later calls of the same batch shape while the rollout's
``graph_key()`` is unchanged; the convergence bookkeeping runs eagerly between replays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch

from curobo_lite.opt.base import (
    OptResult,
    Rollout,
    check_action_tensor,
    check_rollout_result,
    validate_rollout,
)
from curobo_lite.opt.cuda_graph import GraphedCall, graphs_available
from curobo_lite.opt.options import CheckedOptions, as_bool, as_choice, as_float, as_int, check_keys
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputValueError

STOP_RULES = ("ALL_SEEDS", "BEST_SEED")


@dataclass
class GradientOptimizerConfig(CheckedOptions):
    """Keys shared by the gradient solvers (see :mod:`curobo_lite.opt.lbfgs`)."""

    section: ClassVar[str] = "gradient"

    n_problems: int = 1
    num_seeds: int | None = None
    n_iters: int = 100
    convergence_tol: float = 1e-6
    fixed_iters: bool = False
    use_bounds: bool = True
    seed: int = 0
    stall_rtol: float = 0.0
    stall_atol: float = 0.0
    convergence_check_every: int = 1
    stop_rule: str = "ALL_SEEDS"
    use_cuda_graph: bool = False

    def __post_init__(self) -> None:
        s = self.section
        self.n_problems = as_int(s, "n_problems", self.n_problems, 1)
        self.num_seeds = as_int(s, "num_seeds", self.num_seeds, 1, allow_none=True)
        self.n_iters = as_int(s, "n_iters", self.n_iters, 1)
        self.convergence_tol = as_float(s, "convergence_tol", self.convergence_tol, 0.0)
        self.fixed_iters = as_bool(s, "fixed_iters", self.fixed_iters)
        self.use_bounds = as_bool(s, "use_bounds", self.use_bounds)
        self.seed = as_int(s, "seed", self.seed, 0)
        self.stall_rtol = as_float(s, "stall_rtol", self.stall_rtol, 0.0)
        self.stall_atol = as_float(s, "stall_atol", self.stall_atol, 0.0)
        self.convergence_check_every = as_int(
            s, "convergence_check_every", self.convergence_check_every, 1
        )
        self.stop_rule = as_choice(s, "stop_rule", self.stop_rule, STOP_RULES)
        self.use_cuda_graph = as_bool(s, "use_cuda_graph", self.use_cuda_graph)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GradientOptimizerConfig:
        """Build from a YAML section; unknown keys raise ``ValueError``."""
        check_keys(cls.section, data, [f.name for f in fields(cls)])
        return cls(**dict(data))


#: batch shapes whose graphs an optimizer keeps (each holds its own GPU memory pool)
_GRAPHS_KEPT = 4


class GradientOptimizerBase(ABC):
    """Iteration loop, evaluation, bounds, best-so-far and convergence bookkeeping.

    Subclasses implement :meth:`_prepare` (per-call state for a batch of ``B``) and
    :meth:`_step`.
    """

    def __init__(self, config: GradientOptimizerConfig, rollout: Rollout) -> None:
        H, D = validate_rollout(rollout)
        self.config = config
        self.rollout = rollout
        self.tensor_args = rollout.tensor_args
        self.horizon, self.d_action = H, D
        self._lows = self.tensor_args.to_device(rollout.action_bound_lows)
        self._highs = self.tensor_args.to_device(rollout.action_bound_highs)
        self._gen = torch.Generator(device=self.tensor_args.device)
        #: per batch shape, the fixed inputs and the graphed step (``use_cuda_graph``)
        self._graphs: dict[torch.Size, tuple[tuple[torch.Tensor, ...], GraphedCall]] = {}

    # --- public API ------------------------------------------------------------------------

    def optimize(
        self,
        init_act: torch.Tensor | None = None,
        stop_check: Callable[[torch.Tensor], torch.Tensor] | None = None,
        max_iters: int | None = None,
    ) -> OptResult:
        """Minimize the rollout's ``total`` from ``init_act``.

        Args:
            init_act: ``[B, H, D]`` initial seeds, problem-major (``B = n_problems * n``; when
                ``num_seeds`` is set ``B`` must equal ``n_problems * num_seeds``). ``None``
                draws ``n_problems * num_seeds`` seeds uniformly inside the (finite) action
                bounds from ``seed``. Projected into the bounds when ``use_bounds``.
            stop_check: optional ``best_action [B, H, D] -> [B]`` bool, called every
                ``convergence_check_every`` iterations (without host reads, so the iteration
                stays capturable): a problem stops as soon as one of its seeds' best iterate
                passes it (e.g. the goal is reached without collision), and that
                seed counts as converged.
            max_iters: run at most this many iterations in this call (default ``n_iters``):
                a caller that continues some problems in a second call.

        Returns:
            :class:`OptResult`: ``action`` last iterate ``[B, H, D]``, ``best_action``/
            ``best_cost`` best iterate per seed ``[B, H, D]``/``[B]``, ``n_iters`` run,
            ``converged [B]``, ``problem_converged [n_problems]``; ``debug`` holds
            ``cost_history``, ``best_cost_history``, ``grad_norm_history`` (each
            ``[n_iters, B]``) plus solver-specific entries.
        """
        cfg = self.config
        x = self._initial_act(init_act)
        B = x.shape[0]
        self._prepare(B)
        f, g = self._evaluate(x)
        best_f, best_x = f.clone(), x.clone()
        converged = torch.zeros(B, dtype=torch.bool, device=x.device)
        frozen = converged.clone()  # converged, or a seed of a problem that has stopped
        stopped = converged.clone()  # a seed of a problem the stop check has ended
        stall = cfg.stall_rtol > 0.0 or cfg.stall_atol > 0.0
        best_at_check = best_f.clone()
        hist: dict[str, list[torch.Tensor]] = {
            "cost_history": [],
            "best_cost_history": [],
            "grad_norm_history": [],
        }
        n_run = 0
        if max_iters is not None and (isinstance(max_iters, bool) or max_iters < 1):
            raise InputValueError(
                f"max_iters: expected an integer >= 1, received {excerpt(max_iters)}"
            )
        n_iters = cfg.n_iters if max_iters is None else min(int(max_iters), cfg.n_iters)
        step = self._step
        if graphs_available(x.device, cfg.use_cuda_graph):
            step = self._graphed_step(x, f, g)
        for _ in range(n_iters):
            active = ~frozen
            x_new, f_new, g_new, extra = step(x, f, g, active)
            a3 = active[:, None, None]
            f_prev = f
            x = torch.where(a3, x_new, x)
            f = torch.where(active, f_new, f)
            g = torch.where(a3, g_new, g)
            better = active & (f < best_f)
            best_f = torch.where(better, f, best_f)
            best_x = torch.where(better[:, None, None], x, best_x)
            gnorm = self._projected_grad(x, g).abs().amax(dim=(-2, -1))
            tol = cfg.convergence_tol
            small_df = (f - f_prev).abs() <= tol * torch.clamp(f_prev.abs(), min=1.0)
            converged = converged | (active & small_df & (gnorm <= tol))
            n_run += 1
            check = n_run % cfg.convergence_check_every == 0
            if check and stall:
                gain = best_at_check - best_f
                slack = cfg.stall_atol + cfg.stall_rtol * best_f.abs()
                converged = converged | (active & (gain <= slack))
                best_at_check = best_f.clone()
            if check and stop_check is not None:
                passed = stop_check(best_x) & ~frozen
                converged = converged | passed
                stopped = stopped | self._any_seed(passed)
                frozen = frozen | stopped
            frozen = frozen | converged
            if check and cfg.stop_rule == "BEST_SEED":
                frozen = frozen | self._best_seed_converged(best_f, converged)
            hist["cost_history"].append(f.clone())
            hist["best_cost_history"].append(best_f.clone())
            hist["grad_norm_history"].append(gnorm)
            for k, v in extra.items():
                hist.setdefault(k, []).append(v)
            # the only host read of the loop, once per check
            if check and not cfg.fixed_iters and bool(frozen.all()):
                break
        debug = {k: torch.stack(v) for k, v in hist.items()}
        return OptResult(
            action=x.detach(),
            best_action=best_x.detach(),
            best_cost=best_f.detach(),
            n_iters=n_run,
            converged=converged,
            problem_converged=self._problem_converged(best_f, converged)
            | stopped.view(self.config.n_problems, -1)[:, 0],
            debug=debug,
        )

    def _graphed_step(self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor) -> Callable:
        """:meth:`_step` replayed from a CUDA graph: the iterate, cost, gradient and active
        flags are copied into fixed input buffers before each replay, and the debug entries
        out of the graph's buffers after it.

        One graph per batch shape is kept across calls and replayed again as long as
        :meth:`_graph_key` (the solver's state buffers and the rollout's ``graph_key()``) is
        unchanged; a rollout without ``graph_key`` captures anew on every call."""
        cached = self._graphs.get(x.shape)
        if cached is None:
            if len(self._graphs) >= _GRAPHS_KEPT:  # drop the oldest shape's graph and memory
                self._graphs.pop(next(iter(self._graphs)))
            inputs = (x.clone(), f.clone(), g.clone(), torch.ones_like(f, dtype=torch.bool))
            call = GraphedCall(
                lambda: self._step(*inputs),
                x.device,
                enabled=True,
                warmup_calls=1,
                generators=(self._gen,),
            )
            cached = self._graphs[x.shape] = (inputs, call)
        inputs, call = cached
        key = self._graph_key()

        def step(x, f, g, active):
            for buffer, value in zip(inputs, (x, f, g, active)):
                buffer.copy_(value)
            x_new, f_new, g_new, extra = call(key)
            return x_new, f_new, g_new, {k: v.clone() for k, v in extra.items()}

        return step

    def _graph_key(self) -> Hashable:
        """What a captured :meth:`_step` depends on besides tensor values (see
        :meth:`_graphed_step`)."""
        rollout_key = getattr(self.rollout, "graph_key", None)
        return (self._graph_state(), rollout_key() if rollout_key is not None else object())

    def _graph_state(self) -> tuple:
        """The addresses of the solver state :meth:`_step` reads (subclasses add theirs)."""
        return ()

    def _best_seed_converged(self, best_f: torch.Tensor, converged: torch.Tensor) -> torch.Tensor:
        """``[B]``: True for every seed of a problem whose best seed has converged."""
        P = self.config.n_problems
        best = best_f.view(P, -1).argmin(dim=1, keepdim=True)
        done = converged.view(P, -1).gather(1, best)
        return done.expand(P, best_f.shape[0] // P).reshape(-1)

    def _any_seed(self, flags: torch.Tensor) -> torch.Tensor:
        """``[B]``: True for every seed of a problem where ``flags [B]`` holds for a seed."""
        P = self.config.n_problems
        return flags.view(P, -1).any(dim=1, keepdim=True).expand(P, flags.shape[0] // P).reshape(-1)

    def _problem_converged(self, best_f: torch.Tensor, converged: torch.Tensor) -> torch.Tensor:
        """``[n_problems]``: every seed converged (``ALL_SEEDS``) or the best one
        (``BEST_SEED``)."""
        P = self.config.n_problems
        if self.config.stop_rule == "BEST_SEED":
            return self._best_seed_converged(best_f, converged).view(P, -1)[:, 0]
        return converged.view(P, -1).all(dim=1)

    # --- hooks -----------------------------------------------------------------------------

    @abstractmethod
    def _prepare(self, batch: int) -> None:
        """Reset per-call state for ``batch`` seeds."""

    @abstractmethod
    def _step(
        self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor, active: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """One iteration from ``(x [B, H, D], f [B], g [B, H, D])``.

        Returns the new ``(x, f, g)`` and per-seed debug tensors ``{name: [B]}``; entries of
        inactive seeds are discarded by the caller, and subclasses must leave the internal state
        of inactive seeds unchanged.
        """

    # --- helpers ---------------------------------------------------------------------------

    def _initial_act(self, init_act: torch.Tensor | None) -> torch.Tensor:
        cfg = self.config
        P, H, D = cfg.n_problems, self.horizon, self.d_action
        if init_act is None:
            if cfg.num_seeds is None:
                raise InputValueError(
                    f"init_act: None needs {cfg.section}.num_seeds to be set, received None"
                )
            if not (torch.isfinite(self._lows).all() and torch.isfinite(self._highs).all()):
                raise InputValueError(
                    "init_act: None draws seeds inside the action bounds, which must be finite; "
                    f"received lows={self._lows.tolist()} highs={self._highs.tolist()}"
                )
            self._gen.manual_seed(cfg.seed)
            u = torch.rand(
                P * cfg.num_seeds, H, D, generator=self._gen, **self.tensor_args.as_kwargs()
            )
            return self._lows + u * (self._highs - self._lows)
        if not isinstance(init_act, torch.Tensor) or init_act.dim() != 3:
            shape = tuple(init_act.shape) if isinstance(init_act, torch.Tensor) else None
            raise InputValueError(
                f"init_act: expected a tensor [B, {H}, {D}], received shape {shape}"
            )
        B = init_act.shape[0]
        if cfg.num_seeds is not None and B != P * cfg.num_seeds:
            raise InputValueError(
                f"init_act: expected batch n_problems * num_seeds = {P * cfg.num_seeds}, "
                f"received {B}"
            )
        if B % P != 0:
            raise InputValueError(
                f"init_act: expected a batch divisible by n_problems={P}, received {B}"
            )
        check_action_tensor("init_act", init_act, (B, H, D), self.tensor_args)
        return self._project(init_act.detach().clone())

    def _project(self, x: torch.Tensor) -> torch.Tensor:
        if not self.config.use_bounds:
            return x
        return torch.maximum(torch.minimum(x, self._highs), self._lows)

    def _projected_grad(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        if not self.config.use_bounds:
            return g
        return x - self._project(x - g)

    def _evaluate(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Totals ``[N]`` (non-finite mapped to +inf) and gradients ``[N, H, D]`` at ``x``."""
        N = x.shape[0]
        xr = x.detach().requires_grad_(True)
        with torch.enable_grad():
            result = self.rollout.rollout_fn(xr)
            total = check_rollout_result(result, N, self.horizon)
            if not total.requires_grad:
                raise InputValueError(
                    "rollout.rollout_fn: total does not depend differentiably on act_seq "
                    "(requires_grad is False)"
                )
            (grad,) = torch.autograd.grad(total.sum(), xr)
        total = total.detach()
        total = torch.where(torch.isnan(total), torch.full_like(total, float("inf")), total)
        return total, grad
