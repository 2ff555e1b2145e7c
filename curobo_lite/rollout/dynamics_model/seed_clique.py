"""Dense POSITION "clique" step of the seed ``integration_utils`` API (cuRobo 0.7.8's values).

The clique step assembles the position sequence ``x = mask @ p + n_mask @ u`` (with
:func:`build_start_state_mask`: ``x = [p, u_0, ..., u_{H-2}]``) and applies three given operators,
``v = fd_1 @ x``, ``a = fd_2 @ x``, ``j = fd_3 @ x``. With ``F`` the dt-scaled backward difference
(``build_clique_matrix(H, dt)[H:2H]``) and ``fd_k = F^k`` this is SPEC §2 POSITION/BACKWARD for a
start state at rest; the functions themselves apply whatever matrices they are given, exactly as
cuRobo does (for a start state with velocity or acceleration use
:func:`curobo_lite.kernels.tensor_step`).

All shapes broadcast as in torch ``matmul``; the ``_contiguous`` variants take and return
``[B, H, D]`` like the others and only compute in the dof-major layout internally (as cuRobo).
The ``jit_`` prefixes are kept for API compatibility; these are plain functions (no TorchScript).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from curobo_lite.rollout.dynamics_model._seed_common import named_errors
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputValueError

__all__ = [
    "CliqueTensorStep",
    "jit_backward_pos_clique",
    "jit_backward_pos_clique_contiguous",
    "jit_tensor_step_pos_clique",
    "jit_tensor_step_pos_clique_contiguous",
    "tensor_step_pos_clique",
]

_MATS = ("mask", "n_mask", "fd_1", "fd_2", "fd_3")


def _require(names: Sequence[str], values: Sequence[Any]) -> None:
    for name, value in zip(names, values, strict=True):
        require_tensor(name, value)


_Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def _published(func: Callable, name: str, doc: str) -> Callable:
    """``func`` named ``name`` with docstring ``doc``: one of the public functions below, each
    built by a factory for both of cuRobo's layouts (the ``_contiguous`` names compute
    dof-major)."""
    func.__name__ = func.__qualname__ = name
    func.__doc__ = doc
    return func


def _clique_step(name: str, dof_major: bool, doc: str) -> Callable[..., _Outputs]:
    """The forward clique step ``name``, computed batch-major or (``dof_major``) as rows
    ``[B, D, H]``: the same map, cuRobo 0.7.8's two summation orders."""

    def step(
        pos_act: torch.Tensor,
        start_position: torch.Tensor,
        mask: torch.Tensor,
        n_mask: torch.Tensor,
        fd_1: torch.Tensor,
        fd_2: torch.Tensor,
        fd_3: torch.Tensor,
    ) -> _Outputs:
        mats = (mask, n_mask, fd_1, fd_2, fd_3)
        with _forward_errors(name, pos_act, start_position, mats):
            if not dof_major:
                pos = mask @ start_position.unsqueeze(1) + n_mask @ pos_act
                return pos, fd_1 @ pos, fd_2 @ pos, fd_3 @ pos
            rows = start_position.unsqueeze(1).transpose(1, 2) @ mask.transpose(0, 1)
            rows = rows + pos_act.transpose(1, 2) @ n_mask.transpose(0, 1)
            outputs = [rows] + [rows @ fd.transpose(0, 1) for fd in (fd_1, fd_2, fd_3)]
            pos, vel, acc, jerk = (o.transpose(1, 2).contiguous() for o in outputs)
            return pos, vel, acc, jerk

    return _published(step, name, doc)


jit_tensor_step_pos_clique = _clique_step(
    "jit_tensor_step_pos_clique",
    False,
    """``x = mask @ p[:, None] + n_mask @ u``; returns ``(x, fd_1 @ x, fd_2 @ x, fd_3 @ x)``.

    Args:
        pos_act: ``[B, H, D]`` positions (with the shift ``n_mask``, ``pos_act[:, H-1]`` is unused).
        start_position: ``[B, D]``.
        mask, n_mask: ``[H, 1]``, ``[H, H]`` from :func:`build_start_state_mask`.
        fd_1, fd_2, fd_3: ``[H, H]`` operators (velocity, acceleration, jerk).
    """,
)
jit_tensor_step_pos_clique_contiguous = _clique_step(
    "jit_tensor_step_pos_clique_contiguous",
    True,
    """:func:`jit_tensor_step_pos_clique` computed dof-major: ``[B, H, D]`` in, ``[B, H, D]`` out.

    The sequence is built as rows ``x^T = p^T mask^T + u^T n_mask^T`` (``[B, D, H]``) and the
    operators applied from the right; the outputs are transposed back and made contiguous, so the
    values equal :func:`jit_tensor_step_pos_clique`'s up to float summation order (cuRobo 0.7.8).
    """,
)


def _grad_x(
    grads: Sequence[torch.Tensor | None], fds: Sequence[torch.Tensor], dof_major: bool
) -> torch.Tensor | None:
    """Adjoint on the position sequence: ``g_p + fd_3^T g_j + fd_2^T g_a + fd_1^T g_v``.

    ``None`` gradients count as zero (an extension: cuRobo needs tensors). The sum is taken in
    cuRobo's order so float32 results match to rounding: batch-major left to right from ``g_p``;
    dof-major as ``g_p + (g_j^T fd_3 + g_a^T fd_2 + g_v^T fd_1)^T``.
    """
    g_p, g_v, g_a, g_j = grads
    fd_1, fd_2, fd_3 = fds
    total = g_p
    if dof_major:
        terms = [
            g.transpose(-1, -2) @ fd
            for g, fd in ((g_j, fd_3), (g_a, fd_2), (g_v, fd_1))
            if g is not None
        ]
        if terms:
            rows = terms[0]
            for term in terms[1:]:
                rows = rows + term
            total = rows.transpose(-1, -2) if total is None else total + rows.transpose(-1, -2)
        return total
    for g, fd in ((g_j, fd_3), (g_a, fd_2), (g_v, fd_1)):
        if g is not None:
            term = fd.transpose(-1, -2) @ g
            total = term if total is None else total + term
    return total


def _forward_errors(func: str, pos_act: Any, start_position: Any, mats: Sequence[Any]):
    """Check the tensors of the forward ``func`` and return the :func:`named_errors` context
    naming every argument."""
    _require(("pos_act", "start_position", *_MATS), (pos_act, start_position, *mats))
    return named_errors(
        func,
        pos_act=pos_act,
        start_position=start_position,
        **dict(zip(_MATS, mats, strict=True)),
    )


_GRADS = ("grad_p", "grad_v", "grad_a", "grad_j")


def _backward_errors(func: str, grads: Sequence[Any], n_mask: Any, fd: Sequence[Any]):
    """Check the incoming gradients of ``func`` (at least one, tensors) and return the
    :func:`named_errors` context naming every argument."""
    if all(g is None for g in grads):
        raise InputValueError(f"{func}: expected at least one gradient, received all None")
    for name, g in zip(_GRADS, grads, strict=True):
        if g is not None:
            require_tensor(name, g)
    named = dict(zip(_GRADS, grads, strict=True))
    return named_errors(func, **named, n_mask=n_mask, **dict(zip(_MATS[2:], fd, strict=True)))


def _clique_backward(name: str, dof_major: bool, doc: str) -> Callable[..., torch.Tensor]:
    """The adjoint ``name`` of a forward clique step, batch-major or dof-major like it."""

    def backward(
        grad_p: torch.Tensor | None,
        grad_v: torch.Tensor | None,
        grad_a: torch.Tensor | None,
        grad_j: torch.Tensor | None,
        n_mask: torch.Tensor,
        fd_1: torch.Tensor,
        fd_2: torch.Tensor,
        fd_3: torch.Tensor,
    ) -> torch.Tensor:
        grads = (grad_p, grad_v, grad_a, grad_j)
        with _backward_errors(name, grads, n_mask, (fd_1, fd_2, fd_3)):
            g_x = _grad_x(grads, (fd_1, fd_2, fd_3), dof_major=dof_major)
            if not dof_major:
                return n_mask.transpose(-1, -2) @ g_x
            return (g_x.transpose(-1, -2) @ n_mask).transpose(-1, -2).contiguous()

    return _published(backward, name, doc)


jit_backward_pos_clique = _clique_backward(
    "jit_backward_pos_clique",
    False,
    """Adjoint of :func:`jit_tensor_step_pos_clique` w.r.t. ``pos_act``, ``[B, H, D]`` in and out.

    ``grad_u = n_mask^T (g_p + fd_3^T g_j + fd_2^T g_a + fd_1^T g_v)`` (``None`` reads as zero, an
    extension; at least one gradient must be given). With the shift ``n_mask``,
    ``grad_u[:, H-1] = 0``.
    """,
)
jit_backward_pos_clique_contiguous = _clique_backward(
    "jit_backward_pos_clique_contiguous",
    True,
    """Adjoint of :func:`jit_tensor_step_pos_clique_contiguous`: ``[B, H, D]`` in and out.

    Same map as :func:`jit_backward_pos_clique`, computed dof-major (cuRobo 0.7.8's summation
    order); the result is contiguous.
    """,
)


class CliqueTensorStep(torch.autograd.Function):
    """:func:`jit_tensor_step_pos_clique` with an explicit adjoint (cuRobo 0.7.8's numbers).

    ``apply(u_act, start_position, mask, n_mask, fd_1, fd_2, fd_3)`` returns
    ``(position, velocity, acceleration, jerk)``. The backward gives cuRobo's action gradient
    (:func:`jit_backward_pos_clique`) and, as an extension, the start-position gradient
    ``mask^T g_x``; the matrices get ``None``. Unused outputs may send ``None`` gradients
    (``set_materialize_grads(False)``), ``jvp`` applies the (linear) map to the tangents.
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
    ) -> _Outputs:
        """``(position, velocity, acceleration, jerk)`` of :func:`jit_tensor_step_pos_clique`."""
        matrices = (mask, n_mask, fd_1, fd_2, fd_3)
        out = jit_tensor_step_pos_clique(u_act, start_position, *matrices)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*matrices)
        ctx.save_for_forward(*matrices)
        ctx.shapes = (tuple(u_act.shape), tuple(start_position.shape))
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
        # the order of forward's inputs: u_act, start_position, then the five matrices (None)
        nones = (None,) * 5
        grads = (grad_out_p, grad_out_v, grad_out_a, grad_out_j)
        if not (need_u or need_p) or all(g is None for g in grads):
            return (None, None, *nones)
        mask, n_mask, fd_1, fd_2, fd_3 = ctx.saved_tensors
        g_x = _grad_x(grads, (fd_1, fd_2, fd_3), dof_major=False)
        grad_u = n_mask.transpose(-1, -2) @ g_x if need_u else None
        grad_p = None
        if need_p:
            p_shape = ctx.shapes[1]
            grad_p = (
                (mask.transpose(-1, -2) @ g_x)
                .sum_to_size((*p_shape[:1], 1, *p_shape[1:]))
                .squeeze(1)
            )
        return (grad_u, grad_p, *nones)

    @staticmethod
    def jvp(
        ctx: Any,
        u_t: torch.Tensor | None,
        p_t: torch.Tensor | None,
        *_matrix_tangents: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        mask, n_mask, fd_1, fd_2, fd_3 = ctx.saved_tensors
        u_shape, p_shape = ctx.shapes
        u_t = mask.new_zeros(u_shape) if u_t is None else u_t
        p_t = mask.new_zeros(p_shape) if p_t is None else p_t
        # a linear map: the output tangent is the map applied to the input tangents
        return jit_tensor_step_pos_clique(u_t, p_t, mask, n_mask, fd_1, fd_2, fd_3)


def tensor_step_pos_clique(
    state: Any,
    act: torch.Tensor,
    state_seq: Any,
    mask_matrix: Sequence[torch.Tensor],
    fd_matrix: Sequence[torch.Tensor],
) -> Any:
    """POSITION clique step through :class:`CliqueTensorStep` (cuRobo 0.7.8's values).

    Only ``state.position`` is used (the start is taken at rest); ``state_seq``'s four fields are
    replaced by the outputs and it is returned.

    Args:
        state: start state, fields ``[B, D]``.
        act: ``[B, H, D]`` positions.
        state_seq: output joint state.
        mask_matrix: ``[mask, n_mask]`` from :func:`build_start_state_mask` (further entries are
            ignored, as in cuRobo).
        fd_matrix: ``[fd_1, fd_2, fd_3]`` (further entries ignored).
    """
    if len(mask_matrix) < 2:
        raise InputValueError(
            f"mask_matrix: expected [mask, n_mask] (2 tensors), received {len(mask_matrix)}"
        )
    if len(fd_matrix) < 3:
        raise InputValueError(
            f"fd_matrix: expected [fd_1, fd_2, fd_3] (3 tensors), received {len(fd_matrix)}"
        )
    pos, vel, acc, jerk = CliqueTensorStep.apply(
        act, state.position, mask_matrix[0], mask_matrix[1], *fd_matrix[:3]
    )
    state_seq.position = pos
    state_seq.velocity = vel
    state_seq.acceleration = acc
    state_seq.jerk = jerk
    return state_seq
