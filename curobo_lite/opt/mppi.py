"""Batched MPPI (model-predictive path integral) over a rollout.

Every iteration samples ``num_particles`` action sequences per problem around the current mean,
evaluates them in one rollout call of ``B = n_problems * num_particles`` trajectories
(problem-major), and moves the mean and covariance towards the softmax-weighted sample
statistics:

    w_i   = softmax_i(-(J_i - min_j J_j) / beta)                 (per problem)
    mean <- (1 - step_size_mean) * mean + step_size_mean * sum_i w_i a_i
    cov  <- (1 - step_size_cov)  * cov  + step_size_cov  * (sum_i w_i (a_i - abar)(a_i - abar)^T
                                                              averaged over the horizon + min_cov)

with ``abar = sum_i w_i a_i``. ``J`` is the rollout's ``total`` (or the ``gamma``-discounted sum of
its per-step ``costs`` when ``gamma < 1``). Trajectories whose cost is NaN/inf get zero weight; a
problem with no finite cost keeps its mean and covariance. The whole iteration is vectorized over
problems and particles.

Sharding (``process_group``): every rank draws the same full particle set (same seed), rolls out
only its contiguous share of each problem's particles (:func:`shard_range`), and the per-particle
costs are all-gathered; every rank then applies the identical update. The result does not depend
on the number of ranks (up to floating-point differences of the rollout), and all ranks agree.

YAML section ``mppi:`` (keys of :meth:`MppiConfig.from_dict`; unknown keys are an error):

- ``n_problems`` (int >= 1, default 1): independent problems solved together.
- ``num_particles`` (int >= 2, default 256): samples per problem and iteration.
- ``n_iters`` (int >= 1, default 1): iterations per :meth:`Mppi.optimize` call.
- ``init_cov`` (float > 0 or list of ``D`` floats > 0, default 0.5): initial per-dimension
  variance of the sampling distribution (a variance, not a standard deviation).
- ``cov_type`` (``"DIAG_A"`` or ``"FULL"``, default ``"DIAG_A"``): ``DIAG_A`` keeps one variance
  per action dimension ``[n_problems, D]``; ``FULL`` a full ``D x D`` covariance per problem.
  Both are shared over the horizon (steps are sampled independently).
- ``beta`` (float > 0, default 1.0): softmax temperature; smaller is greedier.
- ``step_size_mean`` (float in (0, 1], default 0.9), ``step_size_cov`` (float in [0, 1], default
  0.1): smoothing of the mean and covariance updates (0 freezes the covariance).
- ``min_cov`` (float >= 0, > 0 for ``FULL``; default 1e-6): variance added to every covariance
  estimate, so the sampling distribution never collapses.
- ``null_act_frac`` (float in [0, 1), default 0.0): ``n_null = round(null_act_frac *
  num_particles)`` particles per problem are deterministic: particle 0 is the current mean itself
  (noise-free), particles ``1 .. n_null - 1`` are the zero action (the "hold" command: zero
  velocity/acceleration/jerk, depending on the control space; clamped into bounds when
  ``squash``). Zero-action copies count separately in the softmax, so more copies pull harder.
- ``sample_mode`` (``"GAUSSIAN"``, ``"HALTON"`` or ``"KNOT"``, default ``"GAUSSIAN"``):
  ``GAUSSIAN`` i.i.d. normals from a seeded ``torch.Generator``; ``HALTON`` a scrambled Halton
  sequence in ``H*D`` dimensions (continued across iterations) mapped through the normal inverse
  CDF; ``KNOT`` i.i.d. normals at ``n_knots`` knots per action dimension, interpolated over the
  horizon by a natural cubic spline and normalized to unit variance per step (smooth samples).
- ``n_knots`` (int >= 2 and <= H, default 4): knots for ``KNOT``.
- ``squash`` (bool, default true): clamp samples (and the initial mean) into the rollout's action
  bounds.
- ``seed`` (int, default 0): seed of every random draw; same seed, same results.
- ``gamma`` (float in (0, 1], default 1.0): cost discount; below 1 the weights use
  ``sum_h gamma^h costs[:, h]`` instead of ``total``.
- ``store_rollouts`` (bool, default false): keep every iteration's samples, costs and weights in
  ``OptResult.debug["rollouts"]``.
- ``base_action`` (``"REPEAT"`` or ``"NULL"``, default ``"REPEAT"``): what fills the steps freed
  by :meth:`Mppi.shift`, as cuRobo's ``base_action``: ``REPEAT`` the plan's last action, ``NULL``
  the optimizer's init action (:attr:`Mppi.init_mean`: zero by default, the rollout's
  ``init_action_mean`` under ``MpcSolver``, i.e. hold the retract pose in POSITION control
  where cuRobo's literal zero would command every joint to 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch

from curobo_lite.distributed import all_gather_with_grad, get_rank, get_world_size, shard_range
from curobo_lite.opt.base import (
    OptResult,
    Rollout,
    check_action_tensor,
    check_rollout_result,
    copy_tensors,
    validate_rollout,
)
from curobo_lite.opt.options import CheckedOptions, as_bool, as_choice, as_float, as_int, check_keys
from curobo_lite.opt.sample_lib import (
    HaltonGenerator,
    gaussian_transform,
    knot_interpolation_matrix,
)
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError

_SECTION = "mppi"
COV_TYPES = ("DIAG_A", "FULL")
SAMPLE_MODES = ("GAUSSIAN", "HALTON", "KNOT")
BASE_ACTIONS = ("REPEAT", "NULL")


@dataclass
class MppiConfig(CheckedOptions):
    """MPPI parameters; see the module docstring for every key."""

    n_problems: int = 1
    num_particles: int = 256
    n_iters: int = 1
    init_cov: float | Sequence[float] = 0.5
    cov_type: str = "DIAG_A"
    beta: float = 1.0
    step_size_mean: float = 0.9
    step_size_cov: float = 0.1
    min_cov: float = 1e-6
    null_act_frac: float = 0.0
    sample_mode: str = "GAUSSIAN"
    n_knots: int = 4
    squash: bool = True
    seed: int = 0
    gamma: float = 1.0
    store_rollouts: bool = False
    base_action: str = "REPEAT"

    def __post_init__(self) -> None:
        s = _SECTION
        self.n_problems = as_int(s, "n_problems", self.n_problems, 1)
        self.num_particles = as_int(s, "num_particles", self.num_particles, 2)
        self.n_iters = as_int(s, "n_iters", self.n_iters, 1)
        if isinstance(self.init_cov, (list, tuple)):
            if len(self.init_cov) == 0:
                raise InputValueError(
                    f"{s}.init_cov: expected a number or a non-empty list, got []"
                )
            self.init_cov = tuple(
                as_float(s, f"init_cov[{i}]", v, 0.0, low_open=True)
                for i, v in enumerate(self.init_cov)
            )
        else:
            self.init_cov = as_float(s, "init_cov", self.init_cov, 0.0, low_open=True)
        self.cov_type = as_choice(s, "cov_type", self.cov_type, COV_TYPES)
        self.beta = as_float(s, "beta", self.beta, 0.0, low_open=True)
        self.step_size_mean = as_float(s, "step_size_mean", self.step_size_mean, 0.0, 1.0, True)
        self.step_size_cov = as_float(s, "step_size_cov", self.step_size_cov, 0.0, 1.0)
        self.min_cov = as_float(s, "min_cov", self.min_cov, 0.0)
        if self.cov_type == "FULL" and self.min_cov <= 0.0:
            raise InputValueError(
                f"{s}.min_cov: expected > 0 with cov_type FULL (keeps the covariance positive "
                f"definite for its Cholesky factor), received {self.min_cov}"
            )
        self.null_act_frac = as_float(
            s, "null_act_frac", self.null_act_frac, 0.0, 1.0, high_open=True
        )
        if self.num_particles - self.n_null < 1:
            raise InputValueError(
                f"{s}.null_act_frac: leaves no random particle out of num_particles="
                f"{self.num_particles}, received {self.null_act_frac}"
            )
        self.sample_mode = as_choice(s, "sample_mode", self.sample_mode, SAMPLE_MODES)
        self.n_knots = as_int(s, "n_knots", self.n_knots, 2)
        self.squash = as_bool(s, "squash", self.squash)
        self.seed = as_int(s, "seed", self.seed, 0)
        self.gamma = as_float(s, "gamma", self.gamma, 0.0, 1.0, low_open=True)
        self.store_rollouts = as_bool(s, "store_rollouts", self.store_rollouts)
        self.base_action = as_choice(s, "base_action", self.base_action, BASE_ACTIONS)

    @property
    def n_null(self) -> int:
        """Deterministic particles per problem (mean + zero actions)."""
        return int(round(self.null_act_frac * self.num_particles))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MppiConfig:
        """Build from the ``mppi:`` YAML section; unknown keys raise ``ValueError``."""
        check_keys(_SECTION, data, [f.name for f in fields(cls)])
        return cls(**dict(data))


class Mppi:
    """Batched MPPI solver over a :class:`~curobo_lite.opt.base.Rollout`.

    The sampling mean (``[n_problems, H, D]``) and covariance persist across :meth:`optimize`
    calls, so an MPC loop calls :meth:`shift` then :meth:`optimize` each control step.

    Args:
        config: :class:`MppiConfig`.
        rollout: the rollout; its ``tensor_args`` decide device and dtype of every buffer.
        process_group: optional ``torch.distributed`` group to shard the particles over (see
            the module docstring); ``None`` or no initialized group: single process.
    """

    def __init__(self, config: MppiConfig, rollout: Rollout, process_group=None) -> None:
        if not isinstance(config, MppiConfig):
            raise InputTypeError(f"config: expected MppiConfig, received {type(config).__name__}")
        H, D = validate_rollout(rollout)
        self.config = config
        self.rollout = rollout
        self.tensor_args = rollout.tensor_args
        self.horizon, self.d_action = H, D
        P, n = config.n_problems, config.num_particles
        self.process_group = process_group
        world_size = get_world_size(process_group)
        if world_size > n:
            raise InputValueError(
                f"{_SECTION}.num_particles: expected at least one particle per rank "
                f"({world_size} ranks), received {n}"
            )
        self._shard = shard_range(n, get_rank(process_group), world_size)
        ta = self.tensor_args
        self._lows = ta.to_device(rollout.action_bound_lows)
        self._highs = ta.to_device(rollout.action_bound_highs)
        # the bounds tiled over the horizon [H D], for the samples' [P, n, H D] view
        self._lows_tiled = self._lows.repeat(H)
        self._highs_tiled = self._highs.repeat(H)

        if isinstance(config.init_cov, tuple):
            if len(config.init_cov) != D:
                raise InputValueError(
                    f"{_SECTION}.init_cov: expected {D} values (d_action), "
                    f"received {len(config.init_cov)}"
                )
            diag = ta.to_device(list(config.init_cov))
        else:
            diag = torch.full((D,), config.init_cov, **ta.as_kwargs())
        if config.cov_type == "DIAG_A":
            self._init_cov = diag[None].expand(P, D).clone()
            self._cov_floor = torch.full((D,), config.min_cov, **ta.as_kwargs())
        else:
            self._init_cov = torch.diag(diag)[None].expand(P, D, D).clone()
            self._cov_floor = config.min_cov * torch.eye(D, **ta.as_kwargs())
        self.cov_action = self._init_cov.clone()

        # Preallocated sample buffers, reused every iteration: unit draws, the samples, and the
        # update's squared deviations (FULL: the correlated noise)
        self._std = ta.zeros(P, n, H, D)
        self._noise = ta.zeros(P, n, H, D)
        self._act = ta.zeros(P, n, H, D)
        # the particles a rollout sees without the zero-action copies (_without_copies)
        self._rolled: torch.Tensor | None = None
        if config.sample_mode == "KNOT":
            if config.n_knots > H:
                raise InputValueError(
                    f"{_SECTION}.n_knots: expected at most the horizon {H}, "
                    f"received {config.n_knots}"
                )
            self._knot_mat = knot_interpolation_matrix(config.n_knots, H, ta)
            self._knots = ta.zeros(P, n, config.n_knots, D)
            # the spline of every joint at once: knots [n, K D] @ kron(M, I_D)^T [K D, H D] writes
            # the samples [n, H D] in place (the zeros of the Kronecker factor cost less than
            # the [H, P n D] product's permuted copy)
            eye = torch.eye(D, **ta.as_kwargs())
            self._knot_kron = torch.kron(self._knot_mat, eye).t().contiguous()
        self._halton = (
            HaltonGenerator(H * D, ta, seed=config.seed) if config.sample_mode == "HALTON" else None
        )
        self._gen = torch.Generator(device=ta.device)
        self._drawn_ahead = False  # the next sample's normals are drawn (_draw_normals)

        # Particle roles (see _sample): the mean itself, the zero action, then random.
        self._problems = torch.arange(P, device=ta.device)
        self._discount = config.gamma ** torch.arange(H, **ta.as_kwargs())

        self.init_mean = self._clamp(ta.zeros(P, H, D))
        self.mean_action = self.init_mean.clone()
        self.reset()

    # --- public API ------------------------------------------------------------------------

    def reset(self) -> None:
        """Restore the initial mean and covariance and restart every random stream."""
        self.mean_action.copy_(self.init_mean)
        self.cov_action.copy_(self._init_cov)
        self._gen.manual_seed(self.config.seed)
        self._drawn_ahead = False  # a draw ahead came from the old stream
        if self._halton is not None:
            self._halton.reset()

    def update_init_mean(self, init_mean: torch.Tensor) -> None:
        """Set the mean :meth:`reset` returns to, and the current mean.

        Args:
            init_mean: ``[n_problems, H, D]`` or ``[H, D]`` (shared by every problem); clamped
                into the action bounds when ``squash``.
        """
        P, H, D = self.config.n_problems, self.horizon, self.d_action
        if isinstance(init_mean, torch.Tensor) and init_mean.dim() == 2:
            init_mean = check_action_tensor("init_mean", init_mean, (H, D), self.tensor_args)
            init_mean = init_mean[None].expand(P, H, D)
        init_mean = check_action_tensor("init_mean", init_mean, (P, H, D), self.tensor_args)
        self.init_mean = self._clamp(init_mean.detach().clone())
        self.mean_action.copy_(self.init_mean)

    @property
    def sampled_actions(self) -> torch.Tensor:
        """``[n_problems, num_particles, H, D]`` the particles drawn by the last iteration (the
        sampling buffer itself, overwritten by the next :meth:`optimize`: copy what you keep);
        zeros before the first :meth:`optimize`."""
        return self._act

    def shift(self, steps: int) -> None:
        """Shift the mean ``steps`` actions towards the start for an MPC warm start.

        ``mean[:, h] <- mean[:, h + steps]``; the freed tail ``H - steps .. H - 1`` is filled
        as ``config.base_action`` says: ``REPEAT`` (default) repeats the last action (a "keep
        doing what the plan ended with" guess; in POSITION control it holds the final
        position), ``NULL`` takes the init action :attr:`init_mean` at those steps. ``steps >= H``
        fills the whole mean that way. The covariance is kept.

        This is cuRobo's rule. In v0.7.8 its MPPI does not shift its own mean
        (``ParticleOptBase._run_opt_iters`` calls ``OptimizerBase._shift``, a no-op, then
        ``update_seed`` copies the seed into the mean); the seed is shifted by
        ``WrapMpc._shift``, which rolls the plan left and repeats its last action (its
        ``base_action`` key is parsed there but not used). In v0.8.0 the particle optimizer shifts
        its mean itself, repeating the last action for ``REPEAT`` (the default) and writing the
        zero action for ``NULL``.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise InputValueError(f"steps: expected an int >= 0, received {excerpt(steps)}")
        if steps == 0:
            return
        m = self.mean_action
        P, H, D = m.shape
        k = min(steps, H)
        if self.config.base_action == "REPEAT":
            tail = m[:, -1:].expand(P, k, D)
        else:
            tail = self.init_mean[:, H - k :]
        m.copy_(torch.cat([m[:, k:], tail], dim=1))

    def optimize(self, init_mean: torch.Tensor | None = None) -> OptResult:
        """Run ``n_iters`` MPPI iterations.

        Args:
            init_mean: ``[n_problems, H, D]`` starting mean, or ``None`` to continue from the
                current (possibly shifted) mean. The covariance is always continued.

        Returns:
            :class:`OptResult` with ``action`` = updated mean ``[n_problems, H, D]``,
            ``best_action``/``best_cost`` = best sampled trajectory per problem in this call,
            ``debug["best_cost_history"] [n_iters, n_problems]``,
            ``debug["weighted_cost_history"] [n_iters, n_problems]`` (``sum_i w_i J_i``),
            ``debug["cov"]`` (final covariance) and, with ``store_rollouts``,
            ``debug["rollouts"]``: per iteration ``{"act" [P, n, H, D], "cost" [P, n],
            "weights" [P, n], "state"}``.
        """
        cfg = self.config
        P, n, H, D = cfg.n_problems, cfg.num_particles, self.horizon, self.d_action
        if init_mean is not None:
            init_mean = check_action_tensor("init_mean", init_mean, (P, H, D), self.tensor_args)
            self.mean_action.copy_(self._clamp(init_mean.detach()))
        best_cost = torch.full((P,), float("inf"), **self.tensor_args.as_kwargs())
        best_action = self.mean_action.clone()
        best_hist, wcost_hist, rollouts = [], [], []
        for _ in range(cfg.n_iters):
            act = self._sample()
            with torch.no_grad():
                first, last = self._shard
                local = act[:, first:last]
                n_local = last - first
                copies = self._zero_copies(n_local)
                if copies:  # the zero-action copies rolled out once (particle n_null - 1)
                    local = self._without_copies(local, copies)
                rows = n_local - copies
                result = self._rollout(local.reshape(P * rows, H, D))
                total = check_rollout_result(result, P * rows, H)
                if cfg.gamma < 1.0:
                    cost = (result.costs * self._discount).sum(-1)
                else:
                    cost = total
                cost = cost.detach().view(P, rows)
                if copies:
                    copied = cost[:, 1:2].expand(P, copies)
                    cost = torch.cat((cost[:, :1], copied, cost[:, 1:]), 1)
                if n_local != n:
                    # gather every rank's share along the particle axis: [n, P] -> [P, n]
                    cost = all_gather_with_grad(cost.t().contiguous(), self.process_group).t()
                weights, wcost = self._update(act, cost)
            it_best, it_idx = cost.nan_to_num(nan=float("inf")).min(dim=1)
            better = it_best < best_cost
            best_cost = torch.where(better, it_best, best_cost)
            best_action = torch.where(
                better[:, None, None], act[self._problems, it_idx], best_action
            )
            best_hist.append(best_cost)  # a new tensor every iteration
            wcost_hist.append(wcost)
            if cfg.store_rollouts:
                rollouts.append(
                    {
                        "act": act.clone(),
                        "cost": cost.clone(),
                        "weights": weights,
                        # the rollout rewrites its state buffers on the next call
                        "state": copy_tensors(result.state),
                    }
                )
        debug: dict[str, Any] = {
            "best_cost_history": torch.stack(best_hist),
            "weighted_cost_history": torch.stack(wcost_hist),
            "cov": self.cov_action.clone(),
        }
        if cfg.store_rollouts:
            debug["rollouts"] = rollouts
        return OptResult(
            action=self.mean_action.clone(),
            best_action=best_action,
            best_cost=best_cost,
            n_iters=cfg.n_iters,
            debug=debug,
        )

    # --- internals -------------------------------------------------------------------------

    def _zero_copies(self, n_local: int) -> int:
        """How many zero-action particles the next rollout may leave out (0: none): particles
        ``1 .. n_null - 1`` are one action, so a rollout that declares itself deterministic
        (``deterministic_rollout = True``, as :class:`~curobo_lite.rollout.ArmReacher`) rolls it
        out once and its cost stands for every copy (the softmax still counts each copy).
        Not with sharded particles (each rank's share) or ``store_rollouts`` (which keeps the
        rollout's states, one per particle)."""
        copies = self.config.n_null - 2
        if (
            copies < 1
            or n_local != self.config.num_particles
            or self.config.store_rollouts
            or not getattr(self.rollout, "deterministic_rollout", False)
        ):
            return 0
        return copies

    def _without_copies(self, local: torch.Tensor, copies: int) -> torch.Tensor:
        """``local [P, n, H, D]`` without particles ``1 .. copies`` (zero-action copies of
        particle ``copies + 1``), written into a kept buffer: the rollout sees the same tensor
        every iteration (what its recorded kernel launches read)."""
        P, n, H, D = local.shape
        buffer = self._rolled
        if buffer is None or buffer.shape != (P, n - copies, H, D):
            buffer = self._rolled = local.new_empty(P, n - copies, H, D)
        return torch.cat((local[:, :1], local[:, copies + 1 :]), 1, out=buffer)

    def _clamp(self, act: torch.Tensor) -> torch.Tensor:
        if not self.config.squash:
            return act
        return torch.maximum(torch.minimum(act, self._highs), self._lows)

    def _rollout(self, act_seq: torch.Tensor) -> Any:
        """``rollout.rollout_fn(act_seq)``; a rollout that runs work beside its kinematics
        (``beside_kinematics``, :class:`~curobo_lite.rollout.ArmReacher` on a CPU, where a
        helper thread computes them) also draws the next iteration's normals there
        (:meth:`_draw_normals`): off the step's critical path, the same draws in the same
        order from the same generator."""
        rollout = self.rollout
        hook = getattr(rollout, "beside_kinematics", False)
        if hook is False or self.config.sample_mode == "HALTON":
            return rollout.rollout_fn(act_seq)

        def beside() -> None:
            if hook is not None:
                hook()
            self._draw_normals()
            self._drawn_ahead = True

        rollout.beside_kinematics = beside
        try:
            return rollout.rollout_fn(act_seq)
        finally:
            if rollout.beside_kinematics is beside:  # not run: the caller's hook stays due
                rollout.beside_kinematics = hook

    def _draw_normals(self) -> torch.Tensor:
        """The unit normal draws of a sample, ``_std [P, n, H, D]`` (GAUSSIAN) or ``_knots [P,
        n, K, D]`` (KNOT): drawn now from the generator, or already by the last rollout
        (:meth:`_rollout`)."""
        buffer = self._knots if self.config.sample_mode == "KNOT" else self._std
        if self._drawn_ahead:
            self._drawn_ahead = False
        else:
            torch.randn(buffer.shape, generator=self._gen, out=buffer)
        return buffer

    def _draw_standard(self) -> torch.Tensor:
        """Fill and return the unit-covariance noise buffer ``[P, n, H, D]``."""
        cfg = self.config
        if cfg.sample_mode == "GAUSSIAN":
            self._draw_normals()
        elif cfg.sample_mode == "HALTON":
            u = self._halton.draw(cfg.n_problems * cfg.num_particles)
            self._std.copy_(gaussian_transform(u).view(self._std.shape))
        else:
            knots = self._draw_normals()
            # one [H, K] @ [K, P n D] product instead of P n small ones: on a CPU at MPC's
            # 400 x 5 x 7 the batched form took 0.32-0.67 ms, this 0.19-0.38 ms
            P, n, K, D = knots.shape
            flat = torch.mm(self._knot_mat, knots.permute(2, 0, 1, 3).reshape(K, P * n * D))
            self._std.copy_(flat.view(-1, P, n, D).permute(1, 2, 0, 3))
        return self._std

    def _sample(self) -> torch.Tensor:
        """Sample ``act [P, n, H, D]`` around the current mean (into the preallocated buffer):
        ``mean + noise`` for the random particles (``DIAG_A``: unit draws times the standard
        deviations; ``FULL``: times the Cholesky factor), the mean itself for particle 0 and
        the zero action for the other deterministic ones, clamped when ``squash``.

        Every op runs on ``[P, n, H * D]`` views with per-joint factors tiled over the horizon:
        on a CPU a broadcast over a last dimension of ``D = 7`` took 7-10x as long (a clamp
        into per-joint bounds on 400 x 30 x 7: 147 us, tiled 19 us)."""
        cfg = self.config
        act = self._act
        P, n, H, D = act.shape
        flat = act.view(P, n, H * D)
        mean = self.mean_action.view(P, 1, H * D)
        n_null = cfg.n_null
        if cfg.cov_type == "DIAG_A" and cfg.sample_mode == "KNOT":
            # the spline is linear: scale the knots [P, n, K, D], not the draws [P, n, H, D], and
            # add the mean in the same product (knots [n, K D] @ kron(M, I_D)^T [K D, H D])
            knots = self._draw_normals()
            K = knots.shape[2]
            knots.view(P, n, K * D).mul_(self.cov_action.sqrt().repeat(1, K)[:, None])
            if n_null:
                knots[:, :n_null] = 0.0  # the deterministic particles draw no noise
            torch.baddbmm(mean, knots.view(P, n, -1), self._knot_kron.expand(P, -1, -1), out=flat)
        else:
            std = self._draw_standard()
            if n_null:
                std[:, :n_null] = 0.0  # the deterministic particles draw no noise
            if cfg.cov_type == "DIAG_A":
                scale = self.cov_action.sqrt().repeat(1, H)[:, None]  # [P, 1, H D]
                torch.addcmul(mean, std.view(P, n, H * D), scale, out=flat)
            else:
                # cholesky_ex: no host read of the error flag (min_cov > 0 keeps the covariance
                # positive definite), so the iteration stays capturable
                chol = torch.linalg.cholesky_ex(self.cov_action).L
                noise = torch.matmul(std, chol.transpose(-1, -2)[:, None], out=self._noise)
                torch.add(mean, noise.view(P, n, H * D), out=flat)
        if n_null > 1:
            act[:, 1:n_null] = 0.0  # the zero action
        if cfg.squash:
            torch.clamp(flat, self._lows_tiled, self._highs_tiled, out=flat)
        return act

    def _update(self, act: torch.Tensor, cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Softmax-weighted mean/covariance update; returns ``(weights [P, n], sum w J [P])``.

        NaN and infinite costs weigh 0 (``+inf`` here); a problem with no finite cost keeps
        its mean and covariance (uniform weights, step 0)."""
        cfg = self.config
        P, n, H, D = act.shape
        inf = float("inf")
        cost = cost.nan_to_num(nan=inf, posinf=inf, neginf=inf)
        cmin = cost.amin(dim=1, keepdim=True)  # inf when no cost is finite
        any_finite = torch.isfinite(cmin)
        # (cmin - J) / beta, then 0 where no cost is finite (inf - inf)
        logits = (cmin - cost).mul_(1.0 / cfg.beta).nan_to_num_(nan=0.0, posinf=inf, neginf=-inf)
        weights = torch.softmax(logits, dim=1)
        finite_cost = cost.nan_to_num(posinf=0.0)  # the weight of an infinite cost is 0
        wcost = torch.where(any_finite[:, 0], (weights * finite_cost).sum(dim=1), cost[:, 0])
        flat = act.view(P, n, H * D)
        wmean = torch.bmm(weights[:, None], flat)  # [P, 1, H D]
        if cfg.cov_type == "DIAG_A":
            squares = torch.sub(flat, wmean, out=self._noise.view(P, n, H * D)).square_()
            est = torch.bmm(weights[:, None], squares).view(P, H, D).sum(dim=1)
        else:
            delta = act - wmean.view(P, 1, H, D)
            est = torch.einsum("pn,pnhd,pnhe->pde", weights, delta, delta)
        est = torch.add(self._cov_floor, est, alpha=1.0 / H)
        # a problem with no finite cost takes a step of 0
        step = any_finite.to(act.dtype)
        step_c = step * cfg.step_size_cov
        self.mean_action.lerp_(wmean.view(P, H, D), (step * cfg.step_size_mean)[:, :, None])
        self.cov_action.lerp_(est, step_c if cfg.cov_type == "DIAG_A" else step_c[:, :, None])
        return weights, wcost
