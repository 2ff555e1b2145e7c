"""Dense torch step functions of the seed ``integration_utils`` API, with cuRobo 0.7.8's values.

``tensor_step_acc``, ``tensor_step_jerk``, ``tensor_step_vel``, ``tensor_step_pos``,
``tensor_step_pos_ik``, ``euler_integrate``, ``step_acc_semi_euler`` and
``tensor_step_acc_semi_euler`` reproduce cuRobo 0.7.8 for every input it accepts, including its
layouts (a start state ``[B, 1, 3D]`` broadcasts against ``[B, H, D]``) and its conventions, which
are *not* those of SPEC §2:

- the integrating functions apply the action at step ``h`` itself (no shift by one), so index 0
  is not the start state unless the integration matrix makes it so;
- ``dt`` enters only through the matrices the caller passes (``integrate_matrix``, ``fd_matrix``);
  several functions accept ``dt_h`` / ``diag_dt`` and ignore it (each docstring says which);
- outputs the function does not compute (e.g. jerk) are left as they are in ``state_seq``.

The engine's SPEC §2 steps are :func:`curobo_lite.kernels.tensor_step` (and the kernel classes and
:class:`~curobo_lite.rollout.dynamics_model.KinematicModel` built on it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from curobo_lite.rollout.dynamics_model._seed_common import as_int, named_errors
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputValueError

__all__ = [
    "euler_integrate",
    "step_acc_semi_euler",
    "tensor_step_acc",
    "tensor_step_acc_semi_euler",
    "tensor_step_jerk",
    "tensor_step_pos",
    "tensor_step_pos_ik",
    "tensor_step_vel",
]


@contextmanager
def _dense_step(func: str, n_dofs: Any, tensors: dict[str, Any], **matrices: Any) -> Iterator[int]:
    """The prologue of every state-vector step: ``n_dofs`` as an int, each of ``tensors`` a
    tensor, then torch's shape errors in the block named as :func:`named_errors` names them."""
    n = as_int("n_dofs", n_dofs)
    for name, value in tensors.items():
        require_tensor(name, value)
    with named_errors(func, **tensors, n_dofs=n, **matrices):
        yield n


def _block(n_dofs: int, k: int, dim: int) -> tuple:
    """Index of block ``k`` (``n_dofs`` wide) along ``dim`` (``-1``: the last dimension)."""
    lead = (Ellipsis,) if dim < 0 else (slice(None),) * dim
    return (*lead, slice(k * n_dofs, (k + 1) * n_dofs))


def _channels(state: torch.Tensor, n_dofs: int, count: int, dim: int) -> list[torch.Tensor]:
    """The first ``count`` blocks of ``n_dofs`` entries of ``state`` along ``dim``."""
    return [state[_block(n_dofs, k, dim)] for k in range(count)]


def _write(state_seq: torch.Tensor, n_dofs: int, dim: int, *blocks: torch.Tensor) -> None:
    """``state_seq[block k] = blocks[k]`` (setitem on the base tensor, autograd-safe)."""
    for k, value in enumerate(blocks):
        if value is not None:
            state_seq[_block(n_dofs, k, dim)] = value


def euler_integrate(
    q_0: torch.Tensor, u: torch.Tensor, diag_dt: Any, integrate_matrix: torch.Tensor
) -> torch.Tensor:
    """``q_0 + integrate_matrix @ u`` (cuRobo 0.7.8): ``diag_dt`` is **ignored**.

    The step sizes must already be inside ``integrate_matrix`` (e.g.
    ``build_int_matrix(H, traj_dt=dt)``). Shapes broadcast as in torch (``q_0`` ``[B, 1, D]`` with
    ``u`` ``[B, H, D]`` gives ``[B, H, D]``). The engine's integration (SPEC §2) is
    :func:`curobo_lite.kernels.tensor_step`.
    """
    require_tensor("q_0", q_0)
    require_tensor("u", u)
    require_tensor("integrate_matrix", integrate_matrix)
    with named_errors("euler_integrate", q_0=q_0, u=u, integrate_matrix=integrate_matrix):
        return q_0 + integrate_matrix @ u


def tensor_step_acc(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: Any,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor | None = None,
) -> torch.Tensor:
    """ACCELERATION step in cuRobo 0.7.8's dense convention, written into ``state_seq``.

    With ``q, qd`` the first two ``n_dofs`` blocks of the last dimension of ``state``
    (``[B, 1, 3D]`` in cuRobo's layout; ``[B, 3D]`` broadcasts only for ``B == 1`` or
    ``B == H``) and ``M = integrate_matrix``: ``qdd = act``, ``qd' = qd + M @ act``,
    ``q' = q + M @ qd'``, written into ``state_seq[..., :D]``, ``[D:2D]``, ``[2D:3D]``; other
    channels (jerk) are left untouched. ``act[:, h]`` acts at step ``h`` (no shift). ``dt_h`` and
    ``fd_matrix`` are **ignored**: pass
    ``M = build_int_matrix(H, traj_dt=dt)`` for a dt-weighted sum. SPEC §2 ACCELERATION (start
    state at index 0, ``u_{h-1}`` drives step ``h``) is ``tensor_step(..., "ACCELERATION")``.

    Returns:
        ``state_seq``.
    """
    tensors = {"state": state, "act": act, "state_seq": state_seq}
    with _dense_step("tensor_step_acc", n_dofs, tensors, integrate_matrix=integrate_matrix) as n:
        q, qd = _channels(state, n, 2, -1)
        vel = qd + integrate_matrix @ act
        pos = q + integrate_matrix @ vel
        _write(state_seq, n, -1, None, None, act)  # cuRobo's order: acc, vel, then pos
        _write(state_seq, n, -1, None, vel)
        _write(state_seq, n, -1, pos)
    return state_seq


def tensor_step_jerk(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor | None = None,
) -> torch.Tensor:
    """JERK step in cuRobo 0.7.8's dense convention, written into ``state_seq``.

    With ``W = diag(dt_h)`` (``dt_h`` ``[H]``, every entry used), ``M = integrate_matrix`` and
    ``q, qd, qdd`` the first three ``n_dofs`` blocks of ``state`` along **dim 1** (so ``state`` is
    ``[B, >=3D]``; its ``[B, D]`` parts broadcast against ``[B, H, D]`` only for ``B == 1`` or
    ``B == H``, as in cuRobo): ``qdd' = qdd + M W act``, ``qd' = qd + M W qdd'``,
    ``q' = q + M W qd'``, written into ``state_seq[:, :, :3D]``; the jerk channel is left
    untouched and ``fd_matrix`` is **ignored**. ``act[:, h]`` acts at step ``h`` (no shift).
    SPEC §2 JERK is ``tensor_step(..., "JERK")``.

    Returns:
        ``state_seq``.
    """
    tensors = {"state": state, "act": act, "state_seq": state_seq, "dt_h": dt_h}
    with _dense_step("tensor_step_jerk", n_dofs, tensors, integrate_matrix=integrate_matrix) as n:
        q, qd, qdd = _channels(state, n, 3, 1)
        weight = torch.diag(dt_h)
        acc = qdd + integrate_matrix @ (weight @ act)
        vel = qd + integrate_matrix @ (weight @ acc)
        pos = q + integrate_matrix @ (weight @ vel)
        _write(state_seq, n, 2, pos, vel, acc)
    return state_seq


def tensor_step_vel(
    state: torch.Tensor,
    act: torch.Tensor,
    state_seq: torch.Tensor,
    dt_h: torch.Tensor,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
    fd_matrix: torch.Tensor,
) -> torch.Tensor:
    """VELOCITY step in cuRobo 0.7.8's dense convention, written into ``state_seq``.

    ``state`` (``[B, 1, 3D]``; ``[B, 3D]`` only for ``B == 1``) is copied into
    ``state_seq[:, 0, :3D]``; velocities ``qd = [qd_0, act_0, ..., act_{H-2}]`` (shifted, as in
    SPEC §2); positions ``q = q_0 + M @ qd`` with ``M = integrate_matrix`` (``dt`` only through
    ``M``; ``qd_0`` is integrated too unless ``M`` excludes it); accelerations at steps ``h >= 1``
    are ``(diag(1/dt_h) @ fd_matrix @ qd)_{h-1}`` — row ``h-1`` of the difference, one step late
    compared with SPEC §2. The jerk channel and ``state_seq[:, 0, 3D:]`` beyond the state's width
    are left untouched. A zero ``dt_h`` entry whose reciprocal reaches the output as NaN is a
    ``ValueError`` (cuRobo returns NaN; ``dt_h[H-1]`` is never used).
    SPEC §2 VELOCITY is ``tensor_step(..., "VELOCITY")``.

    Returns:
        ``state_seq``.
    """
    tensors = {"state": state, "act": act, "state_seq": state_seq, "dt_h": dt_h}
    with _dense_step(
        "tensor_step_vel", n_dofs, tensors, integrate_matrix=integrate_matrix, fd_matrix=fd_matrix
    ) as n:
        args = (state, act, dt_h, n, integrate_matrix, fd_matrix)
        if not bool(torch.isfinite(1 / dt_h.detach()).all()):
            # a zero (or NaN) step is divided by: cuRobo returns NaN wherever it reaches the
            # output (dt_h[H-1] never does); find out on a scratch copy before writing
            with torch.no_grad():
                trial = _vel_into(state_seq.detach().clone(), *(_detach(x) for x in args))
            finite_in = all(
                not bool(torch.isnan(x).any()) for x in (state, act, integrate_matrix, fd_matrix)
            )
            if finite_in and bool(torch.isnan(trial[..., : 3 * n]).any()):
                raise InputValueError(
                    "dt_h: expected non-zero entries where the step divides by them (cuRobo "
                    f"0.7.8 returns NaN), received {dt_h.detach().tolist()}"
                )
        return _vel_into(state_seq, *args)


def _detach(x: Any) -> Any:
    return x.detach() if isinstance(x, torch.Tensor) else x


def _vel_into(state_seq, state, act, dt_h, n, integrate_matrix, fd_matrix) -> torch.Tensor:
    state_seq[:, 0:1, : 3 * n] = state
    (q,) = _channels(state, n, 1, -1)
    state_seq[:, 1:, n : 2 * n] = act[:, :-1, :]
    vel = state_seq[:, :, n : 2 * n]
    state_seq[:, :, :n] = q + integrate_matrix @ vel
    rates = (torch.diag(1 / dt_h) @ fd_matrix) @ vel
    state_seq[:, 1:, 2 * n : 3 * n] = rates[:, :-1, :]
    return state_seq


def _start_rows(state_seq: Any, state: Any) -> None:
    for field in ("position", "velocity", "acceleration"):
        getattr(state_seq, field)[:, 0, :] = getattr(state, field)


def tensor_step_pos(state: Any, act: torch.Tensor, state_seq: Any, fd_matrix: torch.Tensor) -> Any:
    """POSITION step in cuRobo 0.7.8's dense convention, written into ``state_seq``'s tensors.

    Index 0 of ``state_seq`` position/velocity/acceleration gets the start ``state`` (fields
    ``[B, D]``); positions ``x_h = act_{h-1}`` for ``h >= 1`` (shifted, as in SPEC §2); then
    ``v_h = (fd_matrix @ x)_{h-1}`` and ``a_h = (fd_matrix @ v)_{h-1}`` for ``h >= 1`` — row
    ``h-1`` of the given operator, with ``dt`` only inside ``fd_matrix``. cuRobo builds
    ``fd_matrix = diag(1/dt) @ build_fd_matrix(H)`` (forward difference), which makes
    ``v_h = (x_h - x_{h-1}) / dt_{h-1}``. The jerk is left untouched. SPEC §2 POSITION is
    ``tensor_step(..., "POSITION")``.

    Returns:
        ``state_seq`` (its tensors are written in place).
    """
    require_tensor("act", act)
    require_tensor("fd_matrix", fd_matrix)
    with named_errors(
        "tensor_step_pos", state=state, act=act, state_seq=state_seq, fd_matrix=fd_matrix
    ):
        _start_rows(state_seq, state)
        pos, vel, acc = state_seq.position, state_seq.velocity, state_seq.acceleration
        pos[:, 1:] = act[:, :-1, :]
        vel[:, 1:] = (fd_matrix @ pos)[:, :-1, :]
        acc[:, 1:] = (fd_matrix @ vel)[:, :-1, :]
    return state_seq


def tensor_step_pos_ik(act: torch.Tensor, state_seq: Any) -> Any:
    """POSITION "teleport" (IK) mode as in cuRobo 0.7.8: ``state_seq.position = act``.

    The other fields of ``state_seq`` are left as they are (SPEC §2's teleport mode, which zeroes
    them, is ``tensor_step(act, p, v, a, dt, "POSITION", fd_mode="TELEPORT")``).
    """
    require_tensor("act", act)
    state_seq.position = act
    return state_seq


def step_acc_semi_euler(
    state: torch.Tensor,
    act: torch.Tensor,
    diag_dt: Any,
    n_dofs: int,
    integrate_matrix: torch.Tensor,
) -> torch.Tensor:
    """``cat(q + M @ (qd + M @ act), qd + M @ act, act)`` along the last dim (cuRobo 0.7.8).

    ``q, qd`` are the first two ``n_dofs`` blocks of the last dimension of ``state`` (``[B, 1, 3D]``
    in cuRobo's layout), ``M = integrate_matrix``. ``diag_dt`` is **ignored** (see
    :func:`euler_integrate`); ``act[:, h]`` acts at step ``h``. SPEC §2 ACCELERATION is
    ``tensor_step(..., "ACCELERATION")``.
    """
    tensors = {"state": state, "act": act}
    with _dense_step(
        "step_acc_semi_euler", n_dofs, tensors, integrate_matrix=integrate_matrix
    ) as n:
        q, qd = _channels(state, n, 2, -1)
        vel = euler_integrate(qd, act, diag_dt, integrate_matrix)
        pos = euler_integrate(q, vel, diag_dt, integrate_matrix)
        return torch.cat((pos, vel, act), dim=-1)


def tensor_step_acc_semi_euler(
    state: Any,
    act: torch.Tensor,
    state_seq: Any,
    diag_dt: Any,
    integrate_matrix: torch.Tensor,
    integrate_matrix_pos: torch.Tensor | None,
) -> Any:
    """ACCELERATION on joint states, cuRobo 0.7.8's dense convention.

    With ``q, qd = state.position.unsqueeze(1), state.velocity.unsqueeze(1)`` (``[B, 1, D]`` for
    fields ``[B, D]``): ``state_seq.acceleration = act``, ``state_seq.velocity = qd + M @ act``
    (``M = integrate_matrix``) and ``state_seq.position = q + M_pos @ velocity``; the fields are
    replaced (not copied into), the jerk is left as it is and ``diag_dt`` is **ignored** (cuRobo
    puts the step sizes into the matrices). ``integrate_matrix_pos=None`` reuses
    ``integrate_matrix`` (an extension; cuRobo fails). SPEC §2 ACCELERATION is
    ``tensor_step(..., "ACCELERATION")``.
    """
    require_tensor("act", act)
    if integrate_matrix_pos is None:
        integrate_matrix_pos = integrate_matrix
    with named_errors(
        "tensor_step_acc_semi_euler",
        state=state,
        act=act,
        integrate_matrix=integrate_matrix,
        integrate_matrix_pos=integrate_matrix_pos,
    ):
        q = state.position.unsqueeze(1)
        qd = state.velocity.unsqueeze(1)
        vel = euler_integrate(qd, act, diag_dt, integrate_matrix)
        pos = euler_integrate(q, vel, diag_dt, integrate_matrix_pos)
    state_seq.acceleration = act
    state_seq.velocity = vel
    state_seq.position = pos
    return state_seq
