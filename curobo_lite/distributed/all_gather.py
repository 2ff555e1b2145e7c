"""All-gather with a gradient: every rank sees the whole batch, and gradients flow back to the
rank that owns each slice.

Forward concatenates every rank's tensor along dim 0 (first dimensions may differ between ranks).
Backward sums the incoming gradient over ranks (each rank may compute a different loss on the
gathered tensor, the total loss is their sum) and hands each rank the rows of its own input.

Both directions are collectives: every rank of the group must call the forward, and every rank
must run a backward through it, with the same ``requires_grad`` on its input. A rank that skips
either leaves the others waiting until the process-group timeout.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist
from torch.autograd.function import once_differentiable

from curobo_lite.distributed.group import collective_errors, is_distributed
from curobo_lite.types.errors import InputTypeError, InputValueError

# Dtype ids exchanged between ranks to detect mismatches; the order only has to agree between
# processes running the same torch, so a sorted scan of torch's dtype objects is enough.
_DTYPES: tuple[torch.dtype, ...] = tuple(
    sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
)
_DTYPE_ID = {dtype: i for i, dtype in enumerate(_DTYPES)}

# ``all_gather_single`` replaces the deprecated ``all_gather_into_tensor`` in newer torch.
_gather_into = getattr(dist, "all_gather_single", None) or getattr(
    dist, "all_gather_into_tensor", None
)


def _gather_rows(out: torch.Tensor, inp: torch.Tensor, group: Any) -> None:
    """``out[r * n:(r + 1) * n] = inp`` of rank ``r``, for equal-sized contiguous ``inp``."""
    with collective_errors("all_gather_with_grad"):
        if _gather_into is not None:
            _gather_into(out, inp, group=group)
        else:
            dist.all_gather(list(out.chunk(dist.get_world_size(group))), inp, group=group)


def _check_same(what: str, per_rank: list[Any]) -> None:
    if any(value != per_rank[0] for value in per_rank):
        raise InputValueError(
            f"all_gather_with_grad: tensor must have the same {what} on every rank, "
            f"received {what} per rank {per_rank}"
        )


def _gather_shapes(tensor: torch.Tensor, group: Any) -> list[list[int]]:
    """Shape of ``tensor`` on every rank, checking ndim, dtype and trailing dims agree.

    Every rank runs the same checks on the same gathered metadata, so a mismatch raises on all
    ranks together instead of leaving some ranks blocked in the next collective.
    """
    world = dist.get_world_size(group)
    device = tensor.device
    header = torch.tensor(
        [tensor.ndim, _DTYPE_ID.get(tensor.dtype, -1)], dtype=torch.int64, device=device
    )
    headers = torch.empty(world * 2, dtype=torch.int64, device=device)
    _gather_rows(headers, header, group)
    ndims, dtype_ids = headers.view(world, 2).t().tolist()
    _check_same("dtype", [str(_DTYPES[i]) if i >= 0 else "unknown" for i in dtype_ids])
    _check_same("number of dimensions", ndims)
    if ndims[0] == 0:
        raise InputValueError(
            "all_gather_with_grad: tensor must have at least 1 dimension to concatenate along "
            "dim 0, received a 0-dim tensor (use tensor.reshape(1))"
        )
    shape = torch.tensor(tensor.shape, dtype=torch.int64, device=device)
    shapes_flat = torch.empty(world * tensor.ndim, dtype=torch.int64, device=device)
    _gather_rows(shapes_flat, shape, group)
    shapes = shapes_flat.view(world, tensor.ndim).tolist()
    _check_same("trailing shape (all but dim 0)", [s[1:] for s in shapes])
    return shapes


def _all_gather_forward(tensor: torch.Tensor, group: Any) -> tuple[torch.Tensor, list[int]]:
    """Concatenation of every rank's ``tensor`` along dim 0, and the first dims per rank."""
    shapes = _gather_shapes(tensor, group)
    sizes = [s[0] for s in shapes]
    trailing = tuple(tensor.shape[1:])
    world = len(sizes)
    if sum(sizes) * math.prod(trailing) == 0:
        # Nothing to send; every rank takes this branch since they all see the same shapes.
        return tensor.new_empty((sum(sizes), *trailing)), sizes
    tensor = tensor.contiguous()
    max_size = max(sizes)
    if min(sizes) == max_size:
        out = tensor.new_empty((world * max_size, *trailing))
        _gather_rows(out, tensor, group)
        return out, sizes
    # Unequal first dims: pad every rank to the largest, gather, then drop the padding rows.
    padded = tensor.new_zeros((max_size, *trailing))
    padded[: tensor.shape[0]] = tensor
    buffer = tensor.new_empty((world * max_size, *trailing))
    _gather_rows(buffer, padded, group)
    pieces = [buffer[r * max_size : r * max_size + n] for r, n in enumerate(sizes)]
    return torch.cat(pieces, dim=0), sizes


class AllGatherGrad(torch.autograd.Function):
    """``AllGatherGrad.apply(tensor, group)``: all-gather along dim 0 with a gradient.

    Forward: ``tensor`` ``[N_r, *S]`` on rank ``r`` -> ``[sum_r N_r, *S]`` on every rank (rank 0's
    rows first). Backward: the incoming gradient ``[sum_r N_r, *S]`` is summed over ranks and rank
    ``r`` receives rows ``sum_{q<r} N_q .. sum_{q<=r} N_q`` of the sum, shape ``[N_r, *S]``.

    With no initialized process group this is the identity. The tensor must live on a device the
    group's backend accepts (CUDA for NCCL; CPU or CUDA for gloo). Double backward is not
    supported (``once_differentiable``).
    """

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, group: Any = None) -> torch.Tensor:
        ctx.distributed = is_distributed()
        if not ctx.distributed:
            return tensor
        gathered, sizes = _all_gather_forward(tensor, group)
        rank = dist.get_rank(group)
        ctx.group = group
        ctx.start = sum(sizes[:rank])
        ctx.stop = ctx.start + sizes[rank]
        return gathered

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None]:
        if not ctx.distributed:
            return grad_output, None
        # Own contiguous copy: the collective works in place, and the incoming gradient may be an
        # expanded (stride-0) or shared tensor that must not be overwritten.
        grad = grad_output.clone(memory_format=torch.contiguous_format)
        if grad.numel() > 0:
            with collective_errors("all_gather_with_grad (backward)"):
                dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=ctx.group)
        return grad[ctx.start : ctx.stop], None


def all_gather_with_grad(
    tensor: torch.Tensor, group: dist.ProcessGroup | None = None
) -> torch.Tensor:
    """Concatenate ``tensor`` from every rank of ``group`` along dim 0, differentiably.

    Args:
        tensor: ``[N_r, *S]`` on rank ``r``; ``N_r`` may differ between ranks, ``S`` and the
            dtype must match. On the group's device (CUDA for NCCL).
        group: process group; ``None`` for the default group.

    Returns:
        ``[sum_r N_r, *S]``, the same on every rank. Gradients of a loss computed on any rank flow
        back to the rank that owns each row (summed over ranks). Without an initialized process
        group the result is ``tensor`` itself (identity, differentiable).

    Raises:
        TypeError: ``tensor`` is not a tensor.
        ValueError: a 0-dim tensor, a CPU tensor on an NCCL group, or ranks disagreeing on dtype,
            number of dimensions or trailing shape (raised on every rank).
    """
    if not isinstance(tensor, torch.Tensor):
        raise InputTypeError(
            f"all_gather_with_grad: tensor must be a torch.Tensor, received {type(tensor).__name__}"
        )
    if not is_distributed():
        if tensor.ndim == 0:
            raise InputValueError(
                "all_gather_with_grad: tensor must have at least 1 dimension to concatenate "
                "along dim 0, received a 0-dim tensor (use tensor.reshape(1))"
            )
        return tensor
    if dist.get_backend(group) == "nccl" and tensor.device.type != "cuda":
        raise InputValueError(
            f"all_gather_with_grad: the group uses NCCL, which needs CUDA tensors, received a "
            f"tensor on {tensor.device}"
        )
    return AllGatherGrad.apply(tensor, group)
