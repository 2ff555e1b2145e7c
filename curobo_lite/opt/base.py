"""What every solver consumes and returns: the rollout protocol and the result types.

A *rollout* maps a batch of action sequences ``act_seq [B, H, D]`` to per-step costs ``[B, H]``
and a per-trajectory total ``[B]`` (the scalar each solver minimizes). Solvers batch
``n_problems`` independent problems, each with ``n`` particles (MPPI) or seeds (L-BFGS,
gradient descent): ``B = n_problems * n``, problem-major, i.e.
``act_seq.view(n_problems, n, H, D)``.
A rollout that holds per-problem data (goals, start states) maps batch index ``b`` to problem
``b // (B // n_problems)``; solvers may call it with a multiple of ``n`` trajectories per problem
(L-BFGS evaluates several line-search steps per seed in one call), always problem-major.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Protocol, runtime_checkable

import torch

from curobo_lite.opt.options import (  # noqa: F401 (re-exported: the option parsers' home)
    as_bool,
    as_choice,
    as_float,
    as_int,
    as_mapping,
    check_keys,
    options_from_dict,
)
from curobo_lite.types.base import TensorDeviceType, require_tensor
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError


@dataclass
class RolloutResult:
    """Output of :meth:`Rollout.rollout_fn`.

    Attributes:
        costs: ``[B, H]`` per-step costs.
        total: ``[B]`` per-trajectory scalar being minimized (usually ``costs.sum(-1)``);
            differentiable w.r.t. ``act_seq`` when grad is enabled.
        state: whatever the rollout wants to hand back (e.g. the joint-state trajectory).
    """

    costs: torch.Tensor
    total: torch.Tensor
    state: Any = None


@runtime_checkable
class Rollout(Protocol):
    """The interface solvers optimize over.

    Attributes:
        d_action: ``D``, action dimension.
        action_horizon: ``H``, number of actions per trajectory.
        action_bound_lows, action_bound_highs: ``[D]`` action bounds (used when a solver
            clamps into bounds).
        tensor_args: device and dtype of every tensor the solver allocates.
    """

    d_action: int
    action_horizon: int
    action_bound_lows: torch.Tensor
    action_bound_highs: torch.Tensor
    tensor_args: TensorDeviceType

    def rollout_fn(self, act_seq: torch.Tensor) -> RolloutResult:
        """Evaluate ``act_seq [B, H, D]``; return costs ``[B, H]`` and totals ``[B]``."""
        ...


@dataclass
class OptResult:
    """What a solver returns.

    Attributes:
        action: final iterate. MPPI: the updated mean ``[n_problems, H, D]``; gradient solvers:
            the last iterate of every seed ``[B, H, D]``.
        best_action: best trajectory seen. MPPI: best sampled trajectory per problem
            ``[n_problems, H, D]``; gradient solvers: best iterate per seed ``[B, H, D]``.
        best_cost: total of ``best_action``: ``[n_problems]`` (MPPI) or ``[B]`` (gradient).
        n_iters: iterations actually run.
        converged: ``[B]`` bool per seed (gradient solvers); ``None`` for MPPI.
        problem_converged: ``[n_problems]`` bool, the problem converged by the solver's stop
            rule (every seed, or its best seed) or passed a stop check (gradient solvers);
            ``None`` for MPPI.
        debug: solver-specific histories (see each solver).
    """

    action: torch.Tensor
    best_action: torch.Tensor
    best_cost: torch.Tensor
    n_iters: int
    converged: torch.Tensor | None = None
    problem_converged: torch.Tensor | None = None
    debug: dict[str, Any] = field(default_factory=dict)

    def best_per_problem(self, n_problems: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Best seed of each problem from ``best_action``/``best_cost``.

        Returns:
            ``(action [n_problems, H, D], cost [n_problems], seed_index [n_problems])``.
        """
        B = self.best_cost.shape[0]
        if n_problems < 1 or B % n_problems != 0:
            raise InputValueError(
                f"n_problems: expected a positive divisor of the batch size {B}, "
                f"received {n_problems}"
            )
        cost = self.best_cost.view(n_problems, -1)
        best_cost, idx = cost.min(dim=1)
        act = self.best_action.view(n_problems, cost.shape[1], *self.best_action.shape[1:])
        rows = torch.arange(n_problems, device=idx.device)
        return act[rows, idx], best_cost, idx


def validate_rollout(rollout: Any) -> tuple[int, int]:
    """Check that ``rollout`` satisfies :class:`Rollout`; return ``(H, D)``."""
    for name in (
        "d_action",
        "action_horizon",
        "action_bound_lows",
        "action_bound_highs",
        "tensor_args",
        "rollout_fn",
    ):
        if not hasattr(rollout, name):
            raise InputTypeError(
                f"rollout: expected an object with attribute {name!r} (see "
                f"curobo_lite.opt.base.Rollout), received {type(rollout).__name__} without it"
            )
    if not callable(rollout.rollout_fn):
        raise InputTypeError("rollout.rollout_fn: expected a callable")
    if not isinstance(rollout.tensor_args, TensorDeviceType):
        raise InputTypeError(
            "rollout.tensor_args: expected TensorDeviceType, "
            f"received {type(rollout.tensor_args).__name__}"
        )
    D, H = rollout.d_action, rollout.action_horizon
    for name, v in (("d_action", D), ("action_horizon", H)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputValueError(f"rollout.{name}: expected a positive int, received {excerpt(v)}")
    for name in ("action_bound_lows", "action_bound_highs"):
        b = getattr(rollout, name)
        if not isinstance(b, torch.Tensor) or b.shape != (D,):
            shape = tuple(b.shape) if isinstance(b, torch.Tensor) else type(b).__name__
            raise InputValueError(
                f"rollout.{name}: expected a tensor of shape ({D},), received {shape}"
            )
        if torch.isnan(b).any():
            raise InputValueError(f"rollout.{name}: contains NaN")
    if (rollout.action_bound_lows > rollout.action_bound_highs).any():
        raise InputValueError(
            "rollout.action_bound_lows: expected <= action_bound_highs elementwise, received "
            f"lows={rollout.action_bound_lows.tolist()} highs={rollout.action_bound_highs.tolist()}"
        )
    return H, D


def check_rollout_result(result: Any, batch: int, horizon: int) -> torch.Tensor:
    """Validate what ``rollout_fn`` returned for a batch of ``batch``; return ``total [batch]``."""
    if not isinstance(result, RolloutResult):
        raise InputTypeError(
            f"rollout.rollout_fn: expected a RolloutResult, received {type(result).__name__}"
        )
    if not isinstance(result.total, torch.Tensor) or result.total.shape != (batch,):
        shape = tuple(result.total.shape) if isinstance(result.total, torch.Tensor) else None
        raise InputValueError(
            f"rollout.rollout_fn: expected total of shape ({batch},), received {shape}"
        )
    if not isinstance(result.costs, torch.Tensor) or result.costs.shape != (batch, horizon):
        shape = tuple(result.costs.shape) if isinstance(result.costs, torch.Tensor) else None
        raise InputValueError(
            f"rollout.rollout_fn: expected costs of shape ({batch}, {horizon}), received {shape}"
        )
    return result.total


def check_action_tensor(
    name: str, x: Any, shape: tuple[int, ...], tensor_args: TensorDeviceType
) -> torch.Tensor:
    """Validate an action tensor: type, shape, dtype, device, finiteness."""
    require_tensor(name, x)
    if tuple(x.shape) != shape:
        raise InputValueError(f"{name}: expected shape {shape}, received {tuple(x.shape)}")
    if x.dtype != tensor_args.dtype:
        raise InputTypeError(f"{name}: expected dtype {tensor_args.dtype}, received {x.dtype}")
    if x.device != tensor_args.device:
        raise InputValueError(f"{name}: expected device {tensor_args.device}, received {x.device}")
    if not torch.isfinite(x).all():
        raise InputValueError(f"{name}: contains NaN or infinite values")
    return x


def copy_tensors(value: Any) -> Any:
    """``value`` with every tensor in it copied (detached): a tensor, or dataclasses, lists,
    tuples and dicts holding tensors; anything else is shared. For keeping what a rollout
    returned past its next call, which may rewrite the rollout's buffers."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if is_dataclass(value) and not isinstance(value, type):
        copies = {f.name: copy_tensors(getattr(value, f.name)) for f in fields(value) if f.init}
        return replace(value, **copies)
    if isinstance(value, (list, tuple)):
        return type(value)(copy_tensors(v) for v in value)
    if isinstance(value, dict):
        return {k: copy_tensors(v) for k, v in value.items()}
    return value
