"""Matrix builders of the seed ``integration_utils`` API, with cuRobo 0.7.8's values and shapes.

``build_clique_matrix``, ``build_fd_matrix``, ``build_int_matrix``, ``build_start_state_mask``,
``sum_matrix``, ``interpolate_kernel``, ``action_interpolate_kernel`` and ``tensor_linspace`` give
the numbers cuRobo 0.7.8 gives for every input it accepts (its conventions included, even where
they look accidental; each docstring says which). They are not the operators of the engine's step
maps: those follow SPEC §2 and live in :func:`curobo_lite.kernels.tensor_step`. Inputs cuRobo
rejects raise a ``ValueError`` (or ``TypeError``) naming the argument.
"""

from __future__ import annotations

from typing import Any

import torch

from curobo_lite.rollout.dynamics_model._seed_common import (
    as_int,
    check_invertible,
    named_errors,
    tensor_kwargs,
)
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputValueError

__all__ = [
    "action_interpolate_kernel",
    "build_clique_matrix",
    "build_fd_matrix",
    "build_int_matrix",
    "build_start_state_mask",
    "interpolate_kernel",
    "sum_matrix",
    "tensor_linspace",
]


def _dt_tensor(name: str, dt: Any, horizon: int, device: Any, dtype: torch.dtype) -> torch.Tensor:
    """``[H]`` tensor in ``dtype`` from an ``[H]`` tensor or (extension) a scalar."""
    if isinstance(dt, (int, float)) and not isinstance(dt, bool):
        return torch.full((horizon,), float(dt), device=device, dtype=dtype)
    dt = require_tensor(name, dt)
    if dt.ndim == 0:
        return dt.to(device=device, dtype=dtype).expand(horizon)
    if dt.ndim != 1 or dt.shape[0] != horizon:
        raise InputValueError(
            f"{name}: expected shape [{horizon}] (the horizon) or a scalar, "
            f"received {tuple(dt.shape)}"
        )
    return dt.to(device=device, dtype=dtype)


def _shift(horizon: int, **kw: Any) -> torch.Tensor:
    """``[H, H]`` sub-diagonal shift ``S``: ``(S x)_i = x_{i-1}``, ``(S x)_0 = 0``."""
    if horizon < 1:
        raise InputValueError(f"horizon: expected an int >= 1, received {horizon}")
    return torch.diag_embed(torch.ones(horizon - 1, **kw), offset=-1)


def build_clique_matrix(
    horizon: int,
    dt: torch.Tensor,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``[3H, H]`` stack ``[S; W (I - S)'; W^2 (I - S)']`` (cuRobo 0.7.8's values).

    ``S`` is the sub-diagonal shift (``(S x)_i = x_{i-1}``, row 0 zero), ``(I - S)'`` the backward
    difference with its row 0 zeroed and ``W = diag(1 / dt)``. So block 2 maps a position sequence
    to ``(x_h - x_{h-1}) / dt_h`` (zero at ``h = 0``), the ``fd_1`` / velocity operator of a start
    at rest; block 1 is the *shift* (not the identity) and block 3 scales the same first
    difference by ``1 / dt_h^2`` (it is *not* the acceleration operator ``F @ F``). For the
    SPEC §2 POSITION derivatives use ``F = build_clique_matrix(H, dt)[H:2H]`` with ``F @ F`` and
    ``F @ F @ F``, or :func:`curobo_lite.kernels.tensor_step`.

    Args:
        horizon: ``H >= 1``.
        dt: ``[H]`` seconds per step (every entry is used: ``dt[0]`` scales the zero row 0). A
            scalar is accepted as an extension. Entries must be non-zero (cuRobo returns NaN).
    """
    horizon = as_int("horizon", horizon)
    shift = _shift(horizon, device=device, dtype=dtype)
    dt = _dt_tensor("dt", dt, horizon, device, dtype)
    check_invertible("dt", dt)
    inv = (1 / dt).unsqueeze(1)
    first_diff = torch.eye(horizon, device=device, dtype=dtype) - shift
    first_diff[0, 0] = 0.0
    vel = inv * first_diff
    return torch.cat((shift, vel, inv * vel), dim=0)


def _difference(n: int, backward: bool, **kw: Any) -> torch.Tensor:
    """``[n, n]`` first difference: forward ``x_{i+1} - x_i`` (last row zero) or, with
    ``backward``, ``x_i - x_{i-1}`` (row 0 zero); all zeros for ``n <= 1``."""
    if n < 0:
        raise InputValueError(f"horizon: expected a non-negative size, received {n}")
    mat = torch.zeros(n, n, **kw)
    if n > 1:
        idx = torch.arange(n - 1, device=mat.device)
        if backward:
            mat[idx + 1, idx] = -1.0
            mat[idx + 1, idx + 1] = 1.0
        else:
            mat[idx, idx] = -1.0
            mat[idx, idx + 1] = 1.0
    return mat


def _power(base: torch.Tensor, order: int) -> torch.Tensor:
    """``base^max(order, 1)`` by repeated left multiplication (integer entries: exact)."""
    out = base
    for _ in range(order - 1):
        out = base @ out
    return out


def _central_split(horizon: int, **kw: Any) -> torch.Tensor:
    """cuRobo's ``FULL_RANK`` matrix (odd ``H >= 3``), ``m = H // 2``: rows ``i < m`` are
    ``x_i - x_{i+1}``, row ``m`` is ``x_{m+1} - x_{m-1}``, rows ``i > m`` are ``x_i - x_{i-1}``."""
    if horizon < 3 or horizon % 2 == 0:
        raise InputValueError(
            f"horizon: FULL_RANK expects an odd horizon >= 3 (cuRobo 0.7.8 fails otherwise), "
            f"received {horizon}"
        )
    m = horizon // 2
    mat = torch.eye(horizon, **kw)
    for i in range(horizon):
        if i < m:
            mat[i, i + 1] = -1.0
        elif i > m:
            mat[i, i - 1] = -1.0
    mat[m, m] = 0.0
    mat[m, m - 1] = -1.0
    mat[m, m + 1] = 1.0
    return mat


def build_fd_matrix(
    horizon: int,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    order: int = 1,
    PREV_STATE: bool = False,  # noqa: N803 - seed API name
    FULL_RANK: bool = False,  # noqa: N803 - seed API name
    SHIFT: bool = False,  # noqa: N803 - seed API name
) -> torch.Tensor:
    """Unscaled integer finite-difference operators (cuRobo 0.7.8's values); no ``dt``.

    With ``F_n`` the ``[n, n]`` forward difference (``(F x)_i = x_{i+1} - x_i``, last row zero)
    and ``B_n`` the backward one (``(B x)_i = x_i - x_{i-1}``, row 0 zero), ``k = max(order, 1)``;
    the flags are checked in this order and the first one set wins:

    - ``PREV_STATE``: ``[H, H+order]`` ``-(F_{H+order})^k[:H]``. On the sequence
      ``[x_{-order}, ..., x_{-1}, x_0, ..., x_{H-1}]`` row ``i`` is *minus* the order-``k``
      backward difference ending at ``x_i`` for ``order >= 1`` (``x_{i-1} - x_i`` for order 1):
      cuRobo's sign, opposite to the usual ``∇^k``.
    - ``FULL_RANK``: ``[H, H]``, ``order`` ignored, odd ``H >= 3`` only: with ``m = H // 2``, rows
      ``i < m`` are ``x_i - x_{i+1}``, row ``m`` is ``x_{m+1} - x_{m-1}``, rows ``i > m`` are
      ``x_i - x_{i-1}``.
    - ``SHIFT``: ``[H, H]`` ``(B_H)^k``.
    - default: ``[H, H]`` ``(F_H)^k``. Its last ``k`` rows are truncated (not zeroed) differences,
      e.g. row ``H-2`` of ``F^2`` is ``x_{H-2} - x_{H-1}``.

    ``F`` and ``B`` are all zeros for a size ``<= 1``. The engine's SPEC §2 derivatives (scaled
    by a possibly non-uniform ``traj_dt``) come from :func:`curobo_lite.kernels.tensor_step`.
    """
    horizon = as_int("horizon", horizon)
    order = as_int("order", order)
    kw = {"device": device, "dtype": dtype}
    if PREV_STATE:
        size = horizon + order
        if size < 0:
            raise InputValueError(f"horizon + order: expected >= 0, received {size}")
        return -1.0 * _power(_difference(size, False, **kw), order)[:horizon, :]
    if horizon < 0:
        raise InputValueError(f"horizon: expected an int >= 0, received {horizon}")
    if FULL_RANK:
        return _central_split(horizon, **kw)
    if horizon <= 1:
        return torch.zeros(horizon, horizon, **kw)
    return _power(_difference(horizon, bool(SHIFT), **kw), order)


def build_int_matrix(
    horizon: int,
    diagonal: int = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    order: int = 1,
    traj_dt: torch.Tensor | None = None,
) -> torch.Tensor:
    """``[H, H]`` ``(L W)^order`` with ``L = tril(ones, diagonal)`` (cuRobo 0.7.8's values).

    ``W`` is the identity, or ``torch.diag(traj_dt)`` when ``traj_dt`` (``[H]``; a scalar is an
    extension) is given: ``(L W u)_i = sum_{j <= i + diagonal} traj_dt[j] u_j`` (entry 0 is used;
    any values, nothing is inverted). ``order <= 0`` gives the identity. The product
    ``I L W L W ...`` is taken with ``torch.linalg.multi_dot``, as in cuRobo (which also makes an
    ``[H, H]`` ``traj_dt`` with ``order=1`` return the vector ``L @ diagonal(traj_dt)``).
    """
    horizon = as_int("horizon", horizon)
    diagonal = as_int("diagonal", diagonal)
    order = as_int("order", order)
    if horizon < 0:
        raise InputValueError(f"horizon: expected an int >= 0, received {horizon}")
    kw = {"device": device, "dtype": dtype}
    lower = torch.tril(torch.ones(horizon, horizon, **kw), diagonal=diagonal)
    factors = [lower] * max(order, 0)
    if traj_dt is not None:
        if isinstance(traj_dt, torch.Tensor) and traj_dt.ndim > 0:
            weights = traj_dt.to(device=device, dtype=dtype)
        else:
            weights = _dt_tensor("traj_dt", traj_dt, horizon, device, dtype)
        with named_errors("build_int_matrix", horizon=horizon, traj_dt=traj_dt):
            weight = torch.diag(weights)
        factors = [m for _ in range(max(order, 0)) for m in (lower, weight)]
    chain = [torch.eye(horizon, **kw), *factors]
    if len(chain) == 1:
        return chain[0]
    with named_errors("build_int_matrix", horizon=horizon, order=order, traj_dt=traj_dt):
        return torch.linalg.multi_dot(chain)


def build_start_state_mask(horizon: int, tensor_args: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(mask ``[H, 1]``, n_mask ``[H, H]``): ``mask @ p + n_mask @ u = [p, u_0, ..., u_{H-2}]``.

    ``mask`` is 1 at step 0; ``n_mask`` is the sub-diagonal shift (same as cuRobo 0.7.8).
    """
    horizon = as_int("horizon", horizon)
    kw = tensor_kwargs("tensor_args", tensor_args)
    n_mask = _shift(horizon, **kw)
    mask = torch.zeros(horizon, 1, **kw)
    mask[0, 0] = 1.0
    return mask, n_mask


def _rows(func: str, h: int, int_steps: int, kw: dict[str, Any]) -> torch.Tensor:
    n = (h - 1) * int_steps
    if h < 0 or n < 0:
        raise InputValueError(
            f"{func}: expected h >= 1 and int_steps >= 0 ((h-1)*int_steps rows), "
            f"received h={h}, int_steps={int_steps}"
        )
    return torch.zeros(n, h, **kw)


def sum_matrix(h: int, int_steps: int, tensor_args: Any) -> torch.Tensor:
    """``[(h-1)*int_steps, h]`` zero-order hold: rows ``i*int_steps .. (i+1)*int_steps - 1`` select
    knot ``i`` (``i <= h-2``); the last knot is not used (same as cuRobo 0.7.8)."""
    h, int_steps = as_int("h", h), as_int("int_steps", int_steps)
    mat = _rows("sum_matrix", h, int_steps, tensor_kwargs("tensor_args", tensor_args))
    for knot in range(h - 1):
        mat[knot * int_steps : (knot + 1) * int_steps, knot] = 1.0
    return mat


def interpolate_kernel(h: int, int_steps: int, tensor_args: Any) -> torch.Tensor:
    """``[(h-1)*int_steps, h]`` linear interpolation, both knots included in each segment.

    Row ``i*int_steps + k`` is ``((s-1-k) e_i + k e_{i+1}) / (s-1)`` with ``s = int_steps``, so
    knot ``i+1`` ends segment ``i`` and starts segment ``i+1`` (same as cuRobo 0.7.8). ``int_steps
    = 1`` (with ``h >= 2``) is a ``ValueError``: cuRobo divides by ``s - 1 = 0`` and returns NaN.
    """
    h, int_steps = as_int("h", h), as_int("int_steps", int_steps)
    kw = tensor_kwargs("tensor_args", tensor_args)
    mat = _rows("interpolate_kernel", h, int_steps, kw)
    if int_steps < 0:
        raise InputValueError(f"int_steps: expected an int >= 0, received {int_steps}")
    if int_steps == 1 and h >= 2:
        raise InputValueError(
            "int_steps: expected >= 2 (weights k / (int_steps - 1); cuRobo 0.7.8 returns NaN), "
            "received 1"
        )
    ramp = torch.arange(0, int_steps, **kw) / (int_steps - 1)
    for knot in range(h - 1):
        rows = slice(knot * int_steps, (knot + 1) * int_steps)
        mat[rows, knot] = ramp.flip(0)
        mat[rows, knot + 1] = ramp
    return mat


def action_interpolate_kernel(
    h: int, int_steps: int, tensor_args: Any, offset: int = 4
) -> torch.Tensor:
    """``[(h-1)*int_steps, h]`` interpolation with gaps, cuRobo 0.7.8's values.

    With ``s = int_steps`` and ``m = s - offset``: the first ``m`` rows of segment ``i`` ramp from
    knot ``i`` towards knot ``i+1`` *excluding* knot ``i`` — row ``i*s + k`` is
    ``((m-1-k) e_i + (k+1) e_{i+1}) / m`` (so its last one is knot ``i+1``) — and the remaining
    ``offset`` rows of each segment are zero; finally column **1** of the last ``offset`` rows of
    the whole matrix is set to 1 (cuRobo's convention, whatever ``h``; ``offset = 0`` sets all of
    column 1). Requires ``h >= 2``. For an interpolation that holds the *last* knot, use
    :func:`interpolate_kernel` and repeat the final row.
    """
    h, int_steps, offset = as_int("h", h), as_int("int_steps", int_steps), as_int("offset", offset)
    kw = tensor_kwargs("tensor_args", tensor_args)
    if h < 2:
        raise InputValueError(f"h: expected an int >= 2 (column 1 is written), received {h}")
    mat = _rows("action_interpolate_kernel", h, int_steps, kw)
    m = int_steps - offset
    with named_errors("action_interpolate_kernel", h=h, int_steps=int_steps, offset=offset):
        ramp = torch.arange(0, m + 1, **kw) / m
        for knot in range(h - 1):
            rows = slice(knot * int_steps, knot * int_steps + m)
            mat[rows, knot] = ramp.flip(0)[1:]
            mat[rows, knot + 1] = ramp[1:]
        mat[-offset:, 1] = 1.0
    return mat


def tensor_linspace(
    start_tensor: torch.Tensor, end_tensor: torch.Tensor, steps: int = 10
) -> torch.Tensor:
    """``start + c * (end - start)`` with ``c = cumsum([1/steps] * steps)`` (cuRobo 0.7.8's values).

    ``c`` (shape ``[steps]``) broadcasts against the *last* dimension of ``start``/``end``: with
    inputs ``[..., 1]`` the output is ``[..., steps]`` (``out[..., k] ≈ start + (k+1)/steps
    (end - start)``, ``out[..., -1] ≈ end``); with a last dimension equal to ``steps``, entry ``k``
    of that dimension takes fraction ``c_k``. The fractions are the running sum (not ``k/steps``).
    """
    steps = as_int("steps", steps)
    require_tensor("start_tensor", start_tensor)
    require_tensor("end_tensor", end_tensor)
    with named_errors(
        "tensor_linspace", start_tensor=start_tensor, end_tensor=end_tensor, steps=steps
    ):
        frac = torch.cumsum(
            torch.ones(steps, device=start_tensor.device, dtype=start_tensor.dtype) / steps, dim=0
        )
        return start_tensor + frac * (end_tensor - start_tensor)
