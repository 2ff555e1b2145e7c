"""Matrix builders and dense torch reference step maps of the seed ``integration_utils`` API.

Conventions (SPEC §1–2): trajectories are ``[B, H, D]`` with index 0 the start state; ``traj_dt``
(here ``dt``, ``dt_h``, ``diag_dt``) is a scalar or an ``[H]`` tensor whose entry ``h`` is the
interval ending at step ``h`` (entry 0 is unused by the step maps). For ``h = 1 .. H-1`` the action
``u_{h-1}`` drives step ``h``; ``u[:, H-1]`` is unused and receives a zero gradient.

The step maps here are dense, matrix-based references: they are linear in the action and the start
state and differentiate through plain torch autograd, except the clique map, which has its own
``torch.autograd.Function`` (:class:`CliqueTensorStep`) with an explicit adjoint and jvp. The Warp
kernel classes (``CliqueTensorStepKernel`` and friends) live in
:mod:`curobo_lite.kernels.seed_functions` and are re-exported here under their seed names.

The ``jit_`` prefixes are kept for cuRobo API compatibility; these are plain functions (no
TorchScript).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch

from curobo_lite.kernels.seed_functions import (
    AccelerationTensorStepIdxKernel,
    AccelerationTensorStepKernel,
    CliqueTensorStepCentralDifferenceKernel,
    CliqueTensorStepCoalesceKernel,
    CliqueTensorStepIdxCentralDifferenceKernel,
    CliqueTensorStepIdxKernel,
    CliqueTensorStepKernel,
)
from curobo_lite.types import JointState, TensorDeviceType

__all__ = [
    "AccelerationTensorStepIdxKernel",
    "AccelerationTensorStepKernel",
    "CliqueTensorStep",
    "CliqueTensorStepCentralDifferenceKernel",
    "CliqueTensorStepCoalesceKernel",
    "CliqueTensorStepIdxCentralDifferenceKernel",
    "CliqueTensorStepIdxKernel",
    "CliqueTensorStepKernel",
    "action_interpolate_kernel",
    "build_clique_matrix",
    "build_fd_matrix",
    "build_int_matrix",
    "build_start_state_mask",
    "euler_integrate",
    "interpolate_kernel",
    "jit_backward_pos_clique",
    "jit_backward_pos_clique_contiguous",
    "jit_tensor_step_pos_clique",
    "jit_tensor_step_pos_clique_contiguous",
    "step_acc_semi_euler",
    "sum_matrix",
    "tensor_linspace",
    "tensor_step_acc",
    "tensor_step_acc_semi_euler",
    "tensor_step_jerk",
    "tensor_step_pos",
    "tensor_step_pos_clique",
    "tensor_step_pos_ik",
    "tensor_step_vel",
]


# ------------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------------
def _as_int(name: str, value: Any, minimum: int | None = None) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name}: expected an int, received bool {value!r}")
    try:
        out = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: expected an int, received {type(value).__name__}") from None
    if minimum is not None and out < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, received {out}")
    return out


def _shape_str(shape: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"


def _check_tensor(
    name: str,
    value: Any,
    shape: Sequence[int | None],
    like: torch.Tensor | None = None,
    label: str | None = None,
) -> torch.Tensor:
    """Check type, rank, sizes (``None`` = any), floating dtype, dtype/device of ``like``."""
    expected = label or _shape_str(shape)
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name}: expected a torch.Tensor of shape {expected}, received {type(value).__name__}"
        )
    if value.ndim != len(shape) or any(
        s is not None and s != n for s, n in zip(shape, value.shape, strict=False)
    ):
        raise ValueError(f"{name}: expected shape {expected}, received {tuple(value.shape)}")
    if not value.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating dtype, received {value.dtype}")
    if like is not None and (value.dtype != like.dtype or value.device != like.device):
        raise TypeError(
            f"{name}: expected dtype {like.dtype} on {like.device}, "
            f"received {value.dtype} on {value.device}"
        )
    return value


def _check_width(name: str, value: torch.Tensor, minimum: int, what: str) -> None:
    if value.shape[-1] < minimum:
        raise ValueError(
            f"{name}: expected last dim >= {minimum} ({what}), received shape {tuple(value.shape)}"
        )


def _dt_vector(
    name: str,
    dt: Any,
    horizon: int,
    device: torch.device | str,
    dtype: torch.dtype,
    like: torch.Tensor | None = None,
) -> torch.Tensor:
    """``[H]`` per-step dt from a scalar or an ``[H]`` tensor (entry 0 finite, entries 1.. > 0).

    With ``like`` an ``[H]`` tensor must already share ``like``'s dtype and device; a scalar (Python
    number or 0-d tensor) is converted.
    """
    if isinstance(dt, torch.Tensor):
        if dt.ndim == 0:
            vec = dt.to(device=device, dtype=dtype).expand(horizon)
        elif dt.ndim == 1 and dt.shape[0] == horizon:
            if like is not None:
                _check_tensor(name, dt, (horizon,), like=like)
                vec = dt
            else:
                if dt.dtype.is_complex or dt.dtype == torch.bool:
                    raise TypeError(f"{name}: expected a real dtype, received {dt.dtype}")
                vec = dt.to(device=device, dtype=dtype)
        else:
            raise ValueError(
                f"{name}: expected a scalar or a tensor of shape [{horizon}] (horizon), "
                f"received shape {tuple(dt.shape)}"
            )
    elif isinstance(dt, (int, float)) and not isinstance(dt, bool):
        vec = torch.full((horizon,), float(dt), device=device, dtype=dtype)
    else:
        raise TypeError(
            f"{name}: expected a float or a tensor of shape [{horizon}], "
            f"received {type(dt).__name__}"
        )
    detached = vec.detach()
    if not bool(torch.isfinite(detached).all()):
        raise ValueError(f"{name}: expected finite values, received {detached.tolist()}")
    if horizon > 1 and not bool((detached[1:] > 0).all()):
        raise ValueError(
            f"{name}: expected entries 1..H-1 > 0 (seconds per step), received {detached.tolist()}"
        )
    return vec


def _step_weights(dt_vec: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(w, inv_w), each ``[H]``: ``dt_h`` and ``1/dt_h`` for ``h >= 1``, 0 at ``h = 0``.

    Zeroing entry 0 is what makes index 0 report the start state: no increment lands on step 0.
    """
    zero = dt_vec.new_zeros(1)
    return torch.cat((zero, dt_vec[1:])), torch.cat((zero, 1.0 / dt_vec[1:]))


def _shift_in(first: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
    """``[B, H, D]`` sequence ``[first, act_0, ..., act_{H-2}]`` (u_{h-1} drives step h)."""
    return torch.cat((first.unsqueeze(1), act[:, :-1]), dim=1)


def _backward_diff(seq: torch.Tensor, inv_w: torch.Tensor) -> torch.Tensor:
    """``[B, H, D]``: ``(s_h - s_{h-1}) / dt_h`` for ``h >= 1``, 0 at ``h = 0``."""
    diff = torch.cat((torch.zeros_like(seq[:, :1]), seq[:, 1:] - seq[:, :-1]), dim=1)
    return diff * inv_w.view(1, -1, 1)


def _apply_fd(
    fd_matrix: torch.Tensor | None, seq: torch.Tensor, inv_w: torch.Tensor
) -> torch.Tensor:
    """Scaled backward difference of ``seq`` [B, H, D], by ``fd_matrix`` when one is given."""
    if fd_matrix is None:
        return _backward_diff(seq, inv_w)
    return torch.matmul(fd_matrix, seq) * inv_w.view(1, -1, 1)


def _write_state_seq(state_seq: torch.Tensor, n_dofs: int, *parts: torch.Tensor) -> torch.Tensor:
    """Write position, velocity, acceleration (and jerk when there is room) into ``state_seq``."""
    for k, part in enumerate(parts):
        if state_seq.shape[-1] >= (k + 1) * n_dofs:
            state_seq[..., k * n_dofs : (k + 1) * n_dofs] = part
    return state_seq


def _check_joint_state(name: str, state: Any, shape: Sequence[int | None], like: torch.Tensor):
    if not isinstance(state, JointState):
        raise TypeError(f"{name}: expected a JointState, received {type(state).__name__}")
    _check_tensor(f"{name}.position", state.position, shape, like=like)


# ------------------------------------------------------------------------------------------------
# matrix builders
# ------------------------------------------------------------------------------------------------
def _shift_backward_difference(horizon: int, device, dtype) -> torch.Tensor:
    """``[H, H]`` unscaled first backward difference, row 0 zero (start at rest)."""
    mat = torch.eye(horizon, device=device, dtype=dtype)
    mat -= torch.diag(torch.ones(horizon - 1, device=device, dtype=dtype), -1)
    mat[0, 0] = 0.0
    return mat


def build_clique_matrix(
    horizon: int,
    dt: float | torch.Tensor,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Stacked ``[3H, H]`` operator ``[I; F; F @ F]`` acting on a position sequence ``x [H]``.

    ``x`` is the POSITION-control position sequence ``[p, u_0, ..., u_{H-2}]`` (the start position
    followed by the shifted actions), so the first block is the identity. ``F`` is the per-step
    scaled backward difference of a start at rest: ``(F x)_0 = 0`` and
    ``(F x)_h = (x_h - x_{h-1}) / dt_h``; hence block 2 gives the velocities and block 3
    ``(F F x)_h = (v_h - v_{h-1}) / dt_h`` the accelerations of SPEC §2 POSITION/BACKWARD with
    ``v_0 = a_0 = 0``. Row 0 of each derivative block is zero.

    Args:
        horizon: ``H >= 1``.
        dt: scalar or ``[H]`` seconds per step (entry ``h`` ends at step ``h``; entry 0 unused).

    Returns:
        ``[3H, H]`` tensor; ``build_clique_matrix(H, dt)[H:2H]`` is the ``fd_1`` / ``fd_matrix``
        expected by :func:`jit_tensor_step_pos_clique` and :func:`tensor_step_pos`.
    """
    horizon = _as_int("horizon", horizon, 1)
    dt_vec = _dt_vector("dt", dt, horizon, device, dtype)
    _, inv_w = _step_weights(dt_vec)
    fd = inv_w.unsqueeze(1) * _shift_backward_difference(horizon, dt_vec.device, dtype)
    eye = torch.eye(horizon, device=dt_vec.device, dtype=dtype)
    return torch.cat((eye, fd, fd @ fd), dim=0)


def build_fd_matrix(
    horizon: int,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    order: int = 1,
    PREV_STATE: bool = False,  # noqa: N803 - seed API name
    FULL_RANK: bool = False,  # noqa: N803 - seed API name
    SHIFT: bool = False,  # noqa: N803 - seed API name
) -> torch.Tensor:
    """Unscaled order-``k`` finite-difference operator (integer binomial weights, no ``dt``).

    At most one flag may be set:

    - default: ``[H, H]`` forward difference, ``(D x)_i = sum_j (-1)^(k-j) C(k, j) x_{i+j}`` for
      ``i <= H-1-k``; the last ``k`` rows (not enough points) are zero.
    - ``PREV_STATE``: ``[H, H+k]`` operator on ``[x_{-k}, ..., x_{-1}, x_0, ..., x_{H-1}]`` (the
      sequence prefixed by ``k`` previous states); row ``i`` is the ``k``-th backward difference
      ending at ``x_i``, ``sum_m (-1)^m C(k, m) x_{i-m}``. All rows are full.
    - ``FULL_RANK``: ``[H, H]`` the ``PREV_STATE`` operator with the previous states taken as zero
      (its first ``k`` columns dropped): ``(I - S)^k`` with ``S`` the sub-diagonal shift. Unit
      lower-triangular, hence invertible; its inverse is ``build_int_matrix(H, order=k)``.
    - ``SHIFT``: ``[H, H]`` the ``PREV_STATE`` operator with the previous states held at ``x_0``
      (a start at rest): row 0 is zero and row ``i >= 1`` is the backward difference ending at
      ``x_i``; equal to the ``k``-th power of the ``order=1`` ``SHIFT`` matrix. Divided row-wise by
      ``dt_h`` (uniform: by ``dt^k``) it gives the SPEC §2 POSITION derivatives from rest.
    """
    horizon = _as_int("horizon", horizon, 1)
    order = _as_int("order", order, 1)
    if sum(bool(f) for f in (PREV_STATE, FULL_RANK, SHIFT)) > 1:
        raise ValueError(
            "build_fd_matrix: expected at most one of PREV_STATE, FULL_RANK, SHIFT, received "
            f"PREV_STATE={PREV_STATE}, FULL_RANK={FULL_RANK}, SHIFT={SHIFT}"
        )
    # weight of x_{i+j} in the forward difference starting at i
    coeff = [(-1) ** (order - j) * math.comb(order, j) for j in range(order + 1)]
    rows = torch.arange(horizon, device=device)
    if not (PREV_STATE or FULL_RANK or SHIFT):
        mat = torch.zeros(horizon, horizon, device=device, dtype=dtype)
        valid = rows[: max(horizon - order, 0)]
        for j, c in enumerate(coeff):
            mat[valid, valid + j] = float(c)
        return mat
    prev = torch.zeros(horizon, horizon + order, device=device, dtype=dtype)
    for j, c in enumerate(coeff):
        prev[rows, rows + j] = float(c)
    if PREV_STATE:
        return prev
    mat = prev[:, order:].clone()
    if SHIFT:
        mat[:, 0] += prev[:, :order].sum(dim=1)
    return mat


def build_int_matrix(
    horizon: int,
    diagonal: int = 0,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    order: int = 1,
    traj_dt: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """``[H, H]`` order-``k`` cumulative-sum operator ``(L W)^k``.

    ``L = tril(ones(H, H), diagonal)``: ``diagonal=0`` gives the inclusive sum
    ``y_i = sum_{j <= i} u_j``, ``diagonal=-1`` the exclusive one ``sum_{j < i} u_j``. ``W`` is
    the identity, or ``diag(traj_dt)`` when ``traj_dt`` (scalar or ``[H]``) is given, so column
    ``j`` is weighted by ``traj_dt[j]`` (``y_i = sum_{j <= i} dt_j u_j``).
    """
    horizon = _as_int("horizon", horizon, 1)
    diagonal = _as_int("diagonal", diagonal)
    order = _as_int("order", order, 1)
    mat = torch.tril(torch.ones(horizon, horizon, device=device, dtype=dtype), diagonal=diagonal)
    if traj_dt is not None:
        dt_vec = _dt_vector("traj_dt", traj_dt, horizon, device, dtype)
        mat = mat * dt_vec.unsqueeze(0)
    return torch.linalg.matrix_power(mat, order)


def build_start_state_mask(
    horizon: int, tensor_args: TensorDeviceType
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mask ``[H, 1]``, n_mask ``[H, H]``) that assemble the POSITION sequence from actions.

    ``mask`` is 1 at step 0 and 0 elsewhere; ``n_mask`` is the sub-diagonal shift,
    ``(n_mask @ u)_h = u_{h-1}`` and ``(n_mask @ u)_0 = 0``. So
    ``mask * p + n_mask @ u = [p, u_0, ..., u_{H-2}]``.
    """
    horizon = _as_int("horizon", horizon, 1)
    kw = tensor_args.as_kwargs()
    mask = torch.zeros(horizon, 1, **kw)
    mask[0, 0] = 1.0
    n_mask = torch.diag(torch.ones(horizon - 1, **kw), -1)
    return mask, n_mask


def sum_matrix(h: int, int_steps: int, tensor_args: TensorDeviceType) -> torch.Tensor:
    """``[(h-1)*int_steps, h]`` zero-order hold: segment ``i`` repeats knot ``i``.

    Row ``i*int_steps + k`` (``k < int_steps``, ``i <= h-2``) selects knot ``i``; the last knot is
    not used. Its transpose sums dense samples segment-wise back onto their knots (the adjoint).
    """
    h = _as_int("h", h, 2)
    int_steps = _as_int("int_steps", int_steps, 1)
    mat = torch.zeros((h - 1) * int_steps, h, **tensor_args.as_kwargs())
    seg = torch.arange((h - 1) * int_steps, device=tensor_args.device) // int_steps
    mat[torch.arange(mat.shape[0], device=tensor_args.device), seg] = 1.0
    return mat


def interpolate_kernel(h: int, int_steps: int, tensor_args: TensorDeviceType) -> torch.Tensor:
    """``[(h-1)*int_steps, h]`` piecewise-linear interpolation between consecutive knots.

    Segment ``i`` (knots ``i``, ``i+1``) takes ``int_steps`` rows with weights
    ``t_k = k / (int_steps - 1)``: row ``i*int_steps + k`` is ``(1 - t_k) e_i + t_k e_{i+1}``, so
    both endpoints are included in each segment (knot ``i+1`` ends segment ``i`` and starts
    segment ``i+1``). With ``int_steps = 1`` each segment is just its start knot.
    """
    h = _as_int("h", h, 2)
    int_steps = _as_int("int_steps", int_steps, 1)
    kw = tensor_args.as_kwargs()
    if int_steps > 1:
        t = torch.linspace(0.0, 1.0, int_steps, **kw)
    else:
        t = torch.zeros(1, **kw)
    mat = torch.zeros((h - 1) * int_steps, h, **kw)
    for i in range(h - 1):
        block = mat[i * int_steps : (i + 1) * int_steps]
        block[:, i] = 1.0 - t
        block[:, i + 1] = t
    return mat


def action_interpolate_kernel(
    h: int, int_steps: int, tensor_args: TensorDeviceType, offset: int = 4
) -> torch.Tensor:
    """``[N, h]``, ``N = (h-1)*int_steps``: interpolation whose last ``offset`` rows hold the end.

    The ``h`` knots are spread evenly over the first ``M = N - offset`` samples (knot 0 at sample
    0, knot ``h-1`` at sample ``M-1``; sample ``r`` sits at knot coordinate
    ``r (h-1) / (M-1)`` and interpolates linearly between its two neighbouring knots); the final
    ``offset`` samples repeat knot ``h-1``. The result is continuous and comes to rest: an
    interpolated position trajectory has zero velocity over its last ``offset`` steps, which is
    what a stop-at-end MPC action wants. Requires ``M >= 2``.
    """
    h = _as_int("h", h, 2)
    int_steps = _as_int("int_steps", int_steps, 1)
    offset = _as_int("offset", offset, 0)
    n = (h - 1) * int_steps
    m = n - offset
    if m < 2:
        raise ValueError(
            f"offset: expected <= (h-1)*int_steps - 2 = {n - 2} so that at least two samples "
            f"interpolate the knots, received {offset}"
        )
    kw = tensor_args.as_kwargs()
    mat = torch.zeros(n, h, **kw)
    # integer arithmetic keeps knot hits exact: position r*(h-1)/(m-1) = i + rem/(m-1)
    r = torch.arange(m, device=tensor_args.device)
    num = r * (h - 1)
    i = torch.clamp(num // (m - 1), max=h - 2)
    t = (num - i * (m - 1)).to(tensor_args.dtype) / (m - 1)
    mat[r, i] = 1.0 - t
    mat[r, i + 1] = t
    mat[m:, h - 1] = 1.0
    return mat


def tensor_linspace(
    start_tensor: torch.Tensor, end_tensor: torch.Tensor, steps: int = 10
) -> torch.Tensor:
    """Batched linspace along a new last dimension, excluding the start and including the end.

    ``out[..., k] = start + (k+1)/steps * (end - start)`` for ``k = 0 .. steps-1``; the output
    shape is ``broadcast(start, end).shape + (steps,)`` (``out[..., -1] == end``).
    """
    steps = _as_int("steps", steps, 1)
    _check_tensor("start_tensor", start_tensor, [None] * getattr(start_tensor, "ndim", 0))
    _check_tensor(
        "end_tensor", end_tensor, [None] * getattr(end_tensor, "ndim", 0), like=start_tensor
    )
    frac = torch.arange(1, steps + 1, device=start_tensor.device, dtype=start_tensor.dtype) / steps
    return start_tensor.unsqueeze(-1) + frac * (end_tensor - start_tensor).unsqueeze(-1)


# ------------------------------------------------------------------------------------------------
# dense reference steps on concatenated state tensors
# ------------------------------------------------------------------------------------------------
def _check_step_inputs(
    state: Any,
    act: Any,
    state_seq: Any,
    n_dofs: Any,
    integrate_matrix: Any,
    fd_matrix: Any,
) -> tuple[int, int, int]:
    n_dofs = _as_int("n_dofs", n_dofs, 1)
    _check_tensor("act", act, (None, None, n_dofs), label=f"[B, H, n_dofs={n_dofs}]")
    b, h, _ = act.shape
    if h < 1:
        raise ValueError(f"act: expected a horizon H >= 1, received shape {tuple(act.shape)}")
    _check_tensor("state", state, (b, None), like=act, label=f"[B={b}, 3*n_dofs={3 * n_dofs}]")
    _check_width("state", state, 3 * n_dofs, "position, velocity, acceleration")
    _check_tensor(
        "state_seq", state_seq, (b, h, None), like=act, label=f"[B={b}, H={h}, >={3 * n_dofs}]"
    )
    _check_width("state_seq", state_seq, 3 * n_dofs, "position, velocity, acceleration")
    _check_tensor("integrate_matrix", integrate_matrix, (h, h), like=act)
    if fd_matrix is not None:
        _check_tensor("fd_matrix", fd_matrix, (h, h), like=act)
    return b, h, n_dofs


def _split_state(state: torch.Tensor, n_dofs: int):
    return (
        state[:, :n_dofs],
        state[:, n_dofs : 2 * n_dofs],
        state[:, 2 * n_dofs : 3 * n_dofs],
    )


def _integrate(
    start: torch.Tensor, rate: torch.Tensor, w: torch.Tensor, integrate_matrix: torch.Tensor
) -> torch.Tensor:
    """``start + integrate_matrix @ (w * rate)``: ``[B, D]`` + ``[H, H] @ [B, H, D]``."""
    return start.unsqueeze(1) + torch.matmul(integrate_matrix, rate * w.view(1, -1, 1))


def tensor_step_acc(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: float | torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor | None = None,
) -> torch.Tensor:
    """ACCELERATION control, semi-implicit Euler (SPEC §2), dense reference.

    ``a_h = u_{h-1}``, ``v_h = v_{h-1} + a_h dt_h``, ``x_h = x_{h-1} + v_h dt_h``,
    ``j_h = (a_h - a_{h-1}) / dt_h``; index 0 is the start state, ``j_0 = 0``.

    Args:
        state: ``[B, >=3D]`` start state ``cat(position, velocity, acceleration)``.
        act: ``[B, H, D]`` accelerations (``act[:, H-1]`` unused).
        state_seq: ``[B, H, >=3D]`` output buffer, written in place: ``[..., :D]`` position,
            ``[D:2D]`` velocity, ``[2D:3D]`` acceleration and, when it is at least ``4D`` wide,
            ``[3D:4D]`` jerk; further channels are left untouched.
        dt_h: scalar or ``[H]`` per-step dt (``traj_dt``; entry 0 unused).
        n_dofs: ``D``.
        integrate_matrix: ``[H, H]`` unweighted cumulative sum, ``build_int_matrix(H)``; the
            ``dt`` weights come from ``dt_h``.
        fd_matrix: optional ``[H, H]`` unscaled backward difference used for the jerk,
            ``build_fd_matrix(H, order=1, SHIFT=True)``; ``None`` differences directly.

    Returns:
        ``state_seq``. When ``act`` requires grad, ``state_seq`` joins the autograd graph.
    """
    _, h, d = _check_step_inputs(state, act, state_seq, n_dofs, integrate_matrix, fd_matrix)
    w, inv_w = _step_weights(_dt_vector("dt_h", dt_h, h, act.device, act.dtype, like=act))
    p0, v0, a0 = _split_state(state, d)
    acc = _shift_in(a0, act)
    vel = _integrate(v0, acc, w, integrate_matrix)
    pos = _integrate(p0, vel, w, integrate_matrix)
    jerk = _apply_fd(fd_matrix, acc, inv_w)
    return _write_state_seq(state_seq, d, pos, vel, acc, jerk)


def tensor_step_jerk(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: float | torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor | None = None,
) -> torch.Tensor:
    """JERK control (SPEC §2), dense reference.

    ``j_h = u_{h-1}``, ``a_h = a_{h-1} + j_h dt_h``, ``v_h = v_{h-1} + a_h dt_h``,
    ``x_h = x_{h-1} + v_h dt_h``; index 0 is the start state, ``j_0 = 0``. Arguments and layout as
    in :func:`tensor_step_acc`. ``fd_matrix`` is accepted for API compatibility (shape-checked
    only): with jerk as the action no differencing is needed.
    """
    _, h, d = _check_step_inputs(state, act, state_seq, n_dofs, integrate_matrix, fd_matrix)
    w, _ = _step_weights(_dt_vector("dt_h", dt_h, h, act.device, act.dtype, like=act))
    p0, v0, a0 = _split_state(state, d)
    jerk = _shift_in(torch.zeros_like(a0), act)
    acc = _integrate(a0, jerk, w, integrate_matrix)
    vel = _integrate(v0, acc, w, integrate_matrix)
    pos = _integrate(p0, vel, w, integrate_matrix)
    return _write_state_seq(state_seq, d, pos, vel, acc, jerk)


def tensor_step_vel(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: float | torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor | None,
) -> torch.Tensor:
    """VELOCITY control (SPEC §2), dense reference.

    ``v_h = u_{h-1}``, ``x_h = x_{h-1} + v_h dt_h``, ``a_h = (v_h - v_{h-1}) / dt_h``,
    ``j_h = (a_h - a_{h-1}) / dt_h``; index 0 is the start state (including its acceleration),
    ``j_0 = 0``. Arguments and layout as in :func:`tensor_step_acc`; ``fd_matrix`` is the unscaled
    backward difference ``build_fd_matrix(H, order=1, SHIFT=True)`` (``None``: direct difference).
    """
    _, h, d = _check_step_inputs(state, act, state_seq, n_dofs, integrate_matrix, fd_matrix)
    w, inv_w = _step_weights(_dt_vector("dt_h", dt_h, h, act.device, act.dtype, like=act))
    p0, v0, a0 = _split_state(state, d)
    vel = _shift_in(v0, act)
    pos = _integrate(p0, vel, w, integrate_matrix)
    acc = _apply_fd(fd_matrix, vel, inv_w)
    # row 0 of the difference is zero; index 0 reports the start acceleration instead
    acc = torch.cat((a0.unsqueeze(1), acc[:, 1:]), dim=1)
    jerk = _apply_fd(fd_matrix, acc, inv_w)
    return _write_state_seq(state_seq, d, pos, vel, acc, jerk)


def euler_integrate(
    q_0: torch.Tensor,
    u: torch.Tensor,
    diag_dt: float | torch.Tensor,
    integrate_matrix: torch.Tensor,
) -> torch.Tensor:
    """``q_0 + integrate_matrix @ diag_dt @ u``.

    Args:
        q_0: ``[B, D]``.
        u: ``[B, H, D]`` rates.
        diag_dt: ``[H, H]`` (diagonal) matrix, or an ``[H]`` vector / scalar standing for its
            diagonal. Used as given: entry 0 weights ``u[:, 0]``.
        integrate_matrix: ``[H, H]``.

    Returns:
        ``[B, H, D]``.
    """
    _check_tensor("u", u, (None, None, None), label="[B, H, D]")
    b, h, d = u.shape
    _check_tensor("q_0", q_0, (b, d), like=u)
    _check_tensor("integrate_matrix", integrate_matrix, (h, h), like=u)
    if isinstance(diag_dt, torch.Tensor) and diag_dt.ndim == 2:
        _check_tensor("diag_dt", diag_dt, (h, h), like=u)
        op = integrate_matrix @ diag_dt
    else:
        if isinstance(diag_dt, torch.Tensor) and diag_dt.ndim == 1:
            _check_tensor("diag_dt", diag_dt, (h,), like=u)
        elif isinstance(diag_dt, torch.Tensor) and diag_dt.ndim != 0:
            raise ValueError(
                f"diag_dt: expected shape [{h}, {h}], [{h}] or a scalar, "
                f"received {tuple(diag_dt.shape)}"
            )
        op = integrate_matrix * torch.as_tensor(diag_dt, device=u.device, dtype=u.dtype)
    return q_0.unsqueeze(1) + torch.matmul(op, u)


def _dt_from_diag(diag_dt: Any, h: int, like: torch.Tensor) -> torch.Tensor:
    if isinstance(diag_dt, torch.Tensor) and diag_dt.ndim == 2:
        _check_tensor("diag_dt", diag_dt, (h, h), like=like)
        diag_dt = torch.diagonal(diag_dt)
    return _dt_vector("diag_dt", diag_dt, h, like.device, like.dtype, like=like)


def _semi_euler(
    p0: torch.Tensor,
    v0: torch.Tensor,
    a0: torch.Tensor,
    act: torch.Tensor,
    diag_dt: Any,
    integrate_matrix: torch.Tensor,
    integrate_matrix_pos: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    acc = _shift_in(a0, act)
    # rates at step 0 are zeroed so that index 0 stays the start state whatever diag_dt[0] holds
    acc_inc = _shift_in(torch.zeros_like(a0), act)
    vel = euler_integrate(v0, acc_inc, diag_dt, integrate_matrix)
    vel_inc = torch.cat((torch.zeros_like(vel[:, :1]), vel[:, 1:]), dim=1)
    pos = euler_integrate(p0, vel_inc, diag_dt, integrate_matrix_pos)
    return pos, vel, acc


def step_acc_semi_euler(
    state: torch.Tensor,
    act: torch.Tensor,
    diag_dt: float | torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
) -> torch.Tensor:
    """ACCELERATION semi-implicit Euler via :func:`euler_integrate`; returns ``cat(q, qd, qdd)``.

    Args:
        state: ``[B, >=3D]`` start ``cat(position, velocity, acceleration)``.
        act: ``[B, H, D]`` accelerations (``act[:, H-1]`` unused).
        diag_dt: ``[H, H]`` ``diag(traj_dt)`` (or ``[H]`` / scalar); entry 0 unused.
        n_dofs: ``D``.
        integrate_matrix: ``[H, H]`` ``build_int_matrix(H)``.

    Returns:
        ``[B, H, 3D]`` positions, velocities, accelerations of SPEC §2 ACCELERATION.
    """
    n_dofs = _as_int("n_dofs", n_dofs, 1)
    _check_tensor("act", act, (None, None, n_dofs), label=f"[B, H, n_dofs={n_dofs}]")
    b, h, d = act.shape
    _check_tensor("state", state, (b, None), like=act, label=f"[B={b}, 3*n_dofs={3 * d}]")
    _check_width("state", state, 3 * d, "position, velocity, acceleration")
    _check_tensor("integrate_matrix", integrate_matrix, (h, h), like=act)
    _dt_from_diag(diag_dt, h, act)
    p0, v0, a0 = _split_state(state, d)
    pos, vel, acc = _semi_euler(p0, v0, a0, act, diag_dt, integrate_matrix, integrate_matrix)
    return torch.cat((pos, vel, acc), dim=-1)


def tensor_step_acc_semi_euler(
    state: JointState,
    act: torch.Tensor,
    state_seq: JointState,
    diag_dt: float | torch.Tensor,
    integrate_matrix: torch.Tensor,
    integrate_matrix_pos: torch.Tensor | None,
) -> JointState:
    """ACCELERATION semi-implicit Euler on :class:`JointState` (SPEC §2), with jerk.

    Args:
        state: start state, fields ``[B, D]``.
        act: ``[B, H, D]`` accelerations (``act[:, H-1]`` unused).
        state_seq: output ``JointState`` ``[B, H, D]``; its four fields are replaced (not copied
            into, so reusing it never chains autograd graphs across calls) and it is returned.
        diag_dt: ``[H, H]`` ``diag(traj_dt)`` (or ``[H]`` / scalar); entry 0 unused.
        integrate_matrix: ``[H, H]`` ``build_int_matrix(H)`` for velocity.
        integrate_matrix_pos: ``[H, H]`` integrator for position; ``None`` reuses
            ``integrate_matrix``.
    """
    _check_tensor("act", act, (None, None, None), label="[B, H, D]")
    b, h, d = act.shape
    _check_joint_state("state", state, (b, d), act)
    _check_joint_state("state_seq", state_seq, (b, h, d), act)
    _check_tensor("integrate_matrix", integrate_matrix, (h, h), like=act)
    if integrate_matrix_pos is None:
        integrate_matrix_pos = integrate_matrix
    _check_tensor("integrate_matrix_pos", integrate_matrix_pos, (h, h), like=act)
    _, inv_w = _step_weights(_dt_from_diag(diag_dt, h, act))
    pos, vel, acc = _semi_euler(
        state.position,
        state.velocity,
        state.acceleration,
        act,
        diag_dt,
        integrate_matrix,
        integrate_matrix_pos,
    )
    state_seq.position = pos
    state_seq.velocity = vel
    state_seq.acceleration = acc
    state_seq.jerk = _backward_diff(acc, inv_w)
    return state_seq


def tensor_step_pos(
    state: JointState, act: torch.Tensor, state_seq: JointState, fd_matrix: torch.Tensor
) -> JointState:
    """POSITION control, backward difference (SPEC §2), from a full start state.

    ``x_h = u_{h-1}``, ``v_h = (x_h - x_{h-1}) / dt_h``, ``a_h = (v_h - v_{h-1}) / dt_h``,
    ``j_h = (a_h - a_{h-1}) / dt_h``; index 0 reports ``state`` (``j_0 = 0``).

    Args:
        state: start state, fields ``[B, D]`` (position, velocity and acceleration are used).
        act: ``[B, H, D]`` positions (``act[:, H-1]`` unused).
        state_seq: output ``JointState`` ``[B, H, D]``; its fields are replaced and it is returned.
        fd_matrix: ``[H, H]`` dt-scaled backward difference ``F`` with zero row 0,
            ``(F x)_h = (x_h - x_{h-1}) / dt_h``: ``build_clique_matrix(H, traj_dt)[H:2H]``. The
            step's ``dt`` comes only from this matrix.
    """
    _check_tensor("act", act, (None, None, None), label="[B, H, D]")
    b, h, d = act.shape
    _check_joint_state("state", state, (b, d), act)
    _check_joint_state("state_seq", state_seq, (b, h, d), act)
    _check_tensor("fd_matrix", fd_matrix, (h, h), like=act)
    pos = _shift_in(state.position, act)
    vel = torch.matmul(fd_matrix, pos)
    vel = torch.cat((state.velocity.unsqueeze(1), vel[:, 1:]), dim=1)
    acc = torch.matmul(fd_matrix, vel)
    acc = torch.cat((state.acceleration.unsqueeze(1), acc[:, 1:]), dim=1)
    jerk = torch.matmul(fd_matrix, acc)
    jerk = torch.cat((torch.zeros_like(jerk[:, :1]), jerk[:, 1:]), dim=1)
    state_seq.position = pos
    state_seq.velocity = vel
    state_seq.acceleration = acc
    state_seq.jerk = jerk
    return state_seq


def tensor_step_pos_ik(act: torch.Tensor, state_seq: JointState) -> JointState:
    """POSITION "teleport" / IK mode: ``position = act`` (all ``H`` steps), other fields zero.

    Args:
        act: ``[B, H, D]``.
        state_seq: ``JointState`` ``[B, H, D]``; fields are replaced and it is returned.
    """
    _check_tensor("act", act, (None, None, None), label="[B, H, D]")
    _check_joint_state("state_seq", state_seq, tuple(act.shape), act)
    state_seq.position = act
    state_seq.velocity = torch.zeros_like(act)
    state_seq.acceleration = torch.zeros_like(act)
    state_seq.jerk = torch.zeros_like(act)
    return state_seq


# ------------------------------------------------------------------------------------------------
# POSITION clique (start at rest): dense matrices + explicit adjoint
# ------------------------------------------------------------------------------------------------
def _check_clique_mats(
    h: int,
    like: torch.Tensor,
    mask: Any,
    n_mask: Any,
    fd_1: Any,
    fd_2: Any,
    fd_3: Any,
) -> None:
    if mask is not None:
        _check_tensor("mask", mask, (h, 1), like=like)
    _check_tensor("n_mask", n_mask, (h, h), like=like)
    _check_tensor("fd_1", fd_1, (h, h), like=like)
    _check_tensor("fd_2", fd_2, (h, h), like=like)
    _check_tensor("fd_3", fd_3, (h, h), like=like)


def jit_tensor_step_pos_clique(
    pos_act: torch.Tensor,
    start_position: torch.Tensor,
    mask: torch.Tensor,
    n_mask: torch.Tensor,
    fd_1: torch.Tensor,
    fd_2: torch.Tensor,
    fd_3: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """POSITION backward-difference step from a start at rest (``v_0 = a_0 = 0``), batch-major.

    ``x = mask * p + n_mask @ u = [p, u_0, ..., u_{H-2}]``, ``v = fd_1 @ x``, ``a = fd_2 @ x``,
    ``j = fd_3 @ x``. With ``F = build_clique_matrix(H, traj_dt)[H:2H]`` and
    ``fd_k = F^k`` this is SPEC §2 POSITION/BACKWARD for a start state at rest: index 0 reports the
    start position and zero derivatives.

    Args:
        pos_act: ``[B, H, D]`` positions (``pos_act[:, H-1]`` unused).
        start_position: ``[B, D]``.
        mask, n_mask: from :func:`build_start_state_mask` (``[H, 1]``, ``[H, H]``).
        fd_1, fd_2, fd_3: ``[H, H]`` velocity, acceleration and jerk operators on ``x``.

    Returns:
        (position, velocity, acceleration, jerk), each ``[B, H, D]``.
    """
    _check_tensor("pos_act", pos_act, (None, None, None), label="[B, H, D]")
    b, h, d = pos_act.shape
    _check_tensor("start_position", start_position, (b, d), like=pos_act)
    _check_clique_mats(h, pos_act, mask, n_mask, fd_1, fd_2, fd_3)
    pos = mask * start_position.unsqueeze(1) + torch.matmul(n_mask, pos_act)
    return (
        pos,
        torch.matmul(fd_1, pos),
        torch.matmul(fd_2, pos),
        torch.matmul(fd_3, pos),
    )


def jit_tensor_step_pos_clique_contiguous(
    pos_act: torch.Tensor,
    start_position: torch.Tensor,
    mask: torch.Tensor,
    n_mask: torch.Tensor,
    fd_1: torch.Tensor,
    fd_2: torch.Tensor,
    fd_3: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dof-major :func:`jit_tensor_step_pos_clique`: ``pos_act [B, D, H]``, outputs ``[B, D, H]``.

    ``start_position`` stays ``[B, D]``; the matrices are the same ``[H, *]`` ones, applied from the
    right transposed (``x = p mask^T + u n_mask^T``, ``v = x fd_1^T``, ...).
    """
    _check_tensor("pos_act", pos_act, (None, None, None), label="[B, D, H]")
    b, d, h = pos_act.shape
    _check_tensor("start_position", start_position, (b, d), like=pos_act)
    _check_clique_mats(h, pos_act, mask, n_mask, fd_1, fd_2, fd_3)
    pos = start_position.unsqueeze(-1) * mask.transpose(0, 1) + torch.matmul(
        pos_act, n_mask.transpose(0, 1)
    )
    return (
        pos,
        torch.matmul(pos, fd_1.transpose(0, 1)),
        torch.matmul(pos, fd_2.transpose(0, 1)),
        torch.matmul(pos, fd_3.transpose(0, 1)),
    )


def _clique_adjoint_x(
    grads: Sequence[torch.Tensor | None],
    mats: Sequence[torch.Tensor],
    contiguous: bool,
) -> torch.Tensor | None:
    """Gradient w.r.t. the position sequence ``x`` (None when every incoming gradient is None).

    Batch-major: ``g_p + fd_1^T g_v + fd_2^T g_a + fd_3^T g_j``; dof-major: the same from the right.
    """
    total = grads[0]
    for grad, mat in zip(grads[1:], mats, strict=True):
        if grad is None:
            continue
        term = torch.matmul(grad, mat) if contiguous else torch.matmul(mat.transpose(0, 1), grad)
        total = term if total is None else total + term
    return total


def _check_grads(names: Sequence[str], grads: Sequence[Any]) -> torch.Tensor:
    first = next((k for k, g in enumerate(grads) if g is not None), None)
    if first is None:
        raise ValueError(f"{', '.join(names)}: expected at least one gradient, received all None")
    like = _check_tensor(names[first], grads[first], (None, None, None), label="[B, *, *]")
    for name, grad in zip(names, grads, strict=True):
        if grad is not None:
            _check_tensor(name, grad, tuple(like.shape), like=like)
    return like


def jit_backward_pos_clique(
    grad_p: torch.Tensor | None,
    grad_v: torch.Tensor | None,
    grad_a: torch.Tensor | None,
    grad_j: torch.Tensor | None,
    n_mask: torch.Tensor,
    fd_1: torch.Tensor,
    fd_2: torch.Tensor,
    fd_3: torch.Tensor,
) -> torch.Tensor:
    """Adjoint of :func:`jit_tensor_step_pos_clique` w.r.t. ``pos_act``.

    ``grad_u = n_mask^T (g_p + fd_1^T g_v + fd_2^T g_a + fd_3^T g_j)``; inputs ``[B, H, D]``
    (``None`` is read as zero, at least one must be given), output ``[B, H, D]``. The last step
    ``grad_u[:, H-1]`` is zero.
    """
    grads = (grad_p, grad_v, grad_a, grad_j)
    like = _check_grads(("grad_p", "grad_v", "grad_a", "grad_j"), grads)
    _check_clique_mats(like.shape[1], like, None, n_mask, fd_1, fd_2, fd_3)
    g_x = _clique_adjoint_x(grads, (fd_1, fd_2, fd_3), contiguous=False)
    return torch.matmul(n_mask.transpose(0, 1), g_x)


def jit_backward_pos_clique_contiguous(
    grad_p: torch.Tensor | None,
    grad_v: torch.Tensor | None,
    grad_a: torch.Tensor | None,
    grad_j: torch.Tensor | None,
    n_mask: torch.Tensor,
    fd_1: torch.Tensor,
    fd_2: torch.Tensor,
    fd_3: torch.Tensor,
) -> torch.Tensor:
    """Adjoint of :func:`jit_tensor_step_pos_clique_contiguous`: ``[B, D, H]`` in and out."""
    grads = (grad_p, grad_v, grad_a, grad_j)
    like = _check_grads(("grad_p", "grad_v", "grad_a", "grad_j"), grads)
    _check_clique_mats(like.shape[2], like, None, n_mask, fd_1, fd_2, fd_3)
    g_x = _clique_adjoint_x(grads, (fd_1, fd_2, fd_3), contiguous=True)
    return torch.matmul(g_x, n_mask)


class CliqueTensorStep(torch.autograd.Function):
    """POSITION backward-difference step from rest with an explicit adjoint (batch-major).

    ``apply(u_act [B,H,D], start_position [B,D], mask, n_mask, fd_1, fd_2, fd_3)`` returns
    (position, velocity, acceleration, jerk), see :func:`jit_tensor_step_pos_clique`. The matrices
    are constants: their gradients and tangents are ``None``/ignored.
    """

    @staticmethod
    def forward(
        ctx: Any,
        u_act: torch.Tensor,
        start_position: torch.Tensor,
        mask: torch.Tensor,
        n_mask: torch.Tensor,
        fd_1: torch.Tensor,
        fd_2: torch.Tensor,
        fd_3: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        out = jit_tensor_step_pos_clique(u_act, start_position, mask, n_mask, fd_1, fd_2, fd_3)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(mask, n_mask, fd_1, fd_2, fd_3)
        ctx.save_for_forward(mask, n_mask, fd_1, fd_2, fd_3)
        ctx.u_shape = tuple(u_act.shape)
        return out

    @staticmethod
    def backward(
        ctx: Any,
        grad_out_p: torch.Tensor | None,
        grad_out_v: torch.Tensor | None,
        grad_out_a: torch.Tensor | None,
        grad_out_j: torch.Tensor | None,
    ) -> tuple[torch.Tensor | None, ...]:
        need_u, need_p = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        nones = (None,) * 5
        if not (need_u or need_p):
            return (None, None, *nones)
        mask, n_mask, fd_1, fd_2, fd_3 = ctx.saved_tensors
        g_x = _clique_adjoint_x(
            (grad_out_p, grad_out_v, grad_out_a, grad_out_j), (fd_1, fd_2, fd_3), contiguous=False
        )
        if g_x is None:
            # every output gradient is None (unused outputs): the gradient is zero
            return (None, None, *nones)
        grad_u = torch.matmul(n_mask.transpose(0, 1), g_x) if need_u else None
        grad_p = (mask * g_x).sum(dim=1) if need_p else None
        return (grad_u, grad_p, *nones)

    @staticmethod
    def jvp(
        ctx: Any,
        u_t: torch.Tensor | None,
        p_t: torch.Tensor | None,
        mask_t: torch.Tensor | None,
        n_mask_t: torch.Tensor | None,
        fd_1_t: torch.Tensor | None,
        fd_2_t: torch.Tensor | None,
        fd_3_t: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        mask, n_mask, fd_1, fd_2, fd_3 = ctx.saved_tensors
        b, h, d = ctx.u_shape
        if u_t is None:
            u_t = mask.new_zeros(b, h, d)
        if p_t is None:
            p_t = mask.new_zeros(b, d)
        # linear map: the tangent output is the map applied to the tangents
        return jit_tensor_step_pos_clique(u_t, p_t, mask, n_mask, fd_1, fd_2, fd_3)


def tensor_step_pos_clique(
    state: JointState,
    act: torch.Tensor,
    state_seq: JointState,
    mask_matrix: Sequence[torch.Tensor],
    fd_matrix: Sequence[torch.Tensor],
) -> JointState:
    """POSITION backward-difference step from rest through :class:`CliqueTensorStep`.

    Only ``state.position`` is used: the start is taken at rest (``v_0 = a_0 = 0``), index 0
    reports the start position and zero derivatives.

    Args:
        state: start state, fields ``[B, D]``.
        act: ``[B, H, D]`` positions (``act[:, H-1]`` unused).
        state_seq: output ``JointState`` ``[B, H, D]``; fields are replaced and it is returned.
        mask_matrix: ``[mask [H, 1], n_mask [H, H]]`` from :func:`build_start_state_mask`.
        fd_matrix: ``[fd_1, fd_2, fd_3]``, each ``[H, H]`` (``F``, ``F^2``, ``F^3``).
    """
    _check_tensor("act", act, (None, None, None), label="[B, H, D]")
    b, h, d = act.shape
    _check_joint_state("state", state, (b, d), act)
    _check_joint_state("state_seq", state_seq, (b, h, d), act)
    if len(mask_matrix) != 2:
        raise ValueError(
            f"mask_matrix: expected [mask, n_mask] (2 tensors), received {len(mask_matrix)}"
        )
    if len(fd_matrix) != 3:
        raise ValueError(
            f"fd_matrix: expected [fd_1, fd_2, fd_3] (3 tensors), received {len(fd_matrix)}"
        )
    pos, vel, acc, jerk = CliqueTensorStep.apply(
        act, state.position, mask_matrix[0], mask_matrix[1], *fd_matrix
    )
    state_seq.position = pos
    state_seq.velocity = vel
    state_seq.acceleration = acc
    state_seq.jerk = jerk
    return state_seq
