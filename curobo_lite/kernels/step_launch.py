"""Step kernel launches without autograd: :func:`launch_forward` (action and start state to
position, velocity, acceleration and jerk) and :func:`launch_adjoint` (its transpose), through
the per-joint kernels of :mod:`~curobo_lite.kernels.step_kernels` or, on a CPU with contiguous
joints, the row kernels of :mod:`~curobo_lite.kernels.step_rows`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import warp as wp

from curobo_lite.kernels import step_kernels, step_rows
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.step_inputs import StepInputs, StepMode, check_tensor
from curobo_lite.types.errors import InputValueError

_index_placeholders: dict[torch.device, torch.Tensor] = {}


def _index_placeholder(device: torch.device) -> torch.Tensor:
    placeholder = _index_placeholders.get(device)
    if placeholder is None:
        placeholder = torch.zeros(1, dtype=torch.int64, device=device)
        _index_placeholders[device] = placeholder
    return placeholder


_SCALAR = {torch.float32: wp.float32, torch.float64: wp.float64}
_overload_cache: dict[tuple[str, str, torch.dtype], wp.Kernel] = {}


def _kernel(kind: str, mode: StepMode, dtype: torch.dtype) -> wp.Kernel:
    key = (kind, mode.value, dtype)
    kernel = _overload_cache.get(key)
    if kernel is None:
        if kind == "forward":
            generic = step_kernels.FORWARD_KERNELS[mode.value]
            arg_types = step_kernels.forward_signature(_SCALAR[dtype])
        else:
            generic = step_kernels.ADJOINT_KERNELS[mode.value]
            arg_types = step_kernels.adjoint_signature(_SCALAR[dtype])
        kernel = generic.get_overload(arg_types)
        _overload_cache[key] = kernel
    return kernel


def _launch(
    kernel: wp.Kernel,
    batch: int,
    dof: int,
    device: torch.device,
    make_args: Callable[[int, int], list],
    elements: int,
) -> None:
    """Launch over ``(batch rows, dof groups)``: one dof per thread on CUDA (parallelism), all
    dofs of a trajectory per thread on CPU (fewer, longer-lived threads, measured faster there).
    ``make_args(b0, b1)`` builds the kernel arguments for batch rows ``b0:b1``."""
    if device.type == "cuda":

        def make_launch(b0: int, b1: int):
            return (b1 - b0, dof), [*make_args(b0, b1), 1]
    else:

        def make_launch(b0: int, b1: int):
            return (b1 - b0, 1), [*make_args(b0, b1), dof]

    launch_rows(kernel, batch, device, make_launch, elements)


@dataclass
class StepBuffers:
    """Output buffers ``[B, H, D]`` (any strides) a step kernel writes into."""

    position: torch.Tensor
    velocity: torch.Tensor
    acceleration: torch.Tensor
    jerk: torch.Tensor

    @classmethod
    def empty_like(cls, act: torch.Tensor) -> StepBuffers:
        return cls(
            *(torch.empty_like(act, memory_format=torch.contiguous_format) for _ in range(4))
        )

    def check(self, act: torch.Tensor) -> None:
        for name in ("position", "velocity", "acceleration", "jerk"):
            buffer = getattr(self, name)
            check_tensor(f"out_{name}", buffer, 3, act.dtype, act.device)
            if buffer.shape != act.shape:
                raise InputValueError(
                    f"out_{name}: expected shape {tuple(act.shape)} (that of the action), "
                    f"received {tuple(buffer.shape)}"
                )


def launch_forward(inputs: StepInputs, out: StepBuffers | None = None):
    """Run the forward kernel; returns ``(position, velocity, acceleration, jerk)``."""
    wp.init()
    act = inputs.act
    if out is None:
        out = StepBuffers.empty_like(act)
    use_idx = inputs.start_idx is not None
    index = inputs.start_idx if use_idx else _index_placeholder(act.device)
    starts = (inputs.start_position, inputs.start_velocity, inputs.start_acceleration)
    outputs = (out.position, out.velocity, out.acceleration, out.jerk)
    traj_dt = as_warp(inputs.traj_dt)

    def make_args(b0: int, b1: int, vector: type | None = None) -> list:
        # ``vector``: the joint-vector type of the row kernels (None: the per-joint kernels)
        rows = slice(b0, b1)
        # with an index the start states are shared rows: slice the index, not the states
        start_args = [as_warp(t if use_idx else t[rows], vector) for t in starts]
        return [
            as_warp(act[rows], vector),
            *start_args,
            as_warp(index[rows]) if use_idx else as_warp(index),
            int(use_idx),
            traj_dt,
            *(as_warp(t[rows], vector) for t in outputs),
        ]

    batch, _, dof = act.shape
    if step_rows.rows_fit(inputs.mode.value, act.device, (act, *starts, *outputs)):
        _launch_rows("forward", inputs.mode, act, make_args)
    else:
        _launch(
            _kernel("forward", inputs.mode, act.dtype),
            batch,
            dof,
            act.device,
            make_args,
            act.numel(),
        )
    return out.position, out.velocity, out.acceleration, out.jerk


def _launch_rows(
    kind: str, mode: StepMode, like: torch.Tensor, make_args: Callable[..., list]
) -> None:
    """Launch the ``kind`` row kernel of ``mode`` (:mod:`~curobo_lite.kernels.step_rows`: CPU,
    one thread per trajectory, a row of joints per load and store) over ``like``'s ``[B, H, D]``
    shape, dtype and device; ``make_args(b0, b1, vector)`` builds the arguments of rows
    ``b0:b1`` with the joint-vector type ``vector``."""
    batch, _, dof = like.shape
    vector = step_rows.joint_vector(dof, like.dtype)
    kernel = step_rows.rows_kernel(kind, mode.value, dof, like.dtype)
    launch_rows(
        kernel,
        batch,
        like.device,
        lambda b0, b1: (b1 - b0, make_args(b0, b1, vector)),
        like.numel(),
    )


def launch_adjoint(
    grads: tuple[torch.Tensor | None, ...],
    traj_dt: torch.Tensor,
    mode: StepMode,
    start_idx: torch.Tensor | None,
    n_start: int,
    act_shape: tuple[int, int, int],
    out_grad_act: torch.Tensor | None = None,
):
    """Run the adjoint kernel for output gradients ``grads`` (``None`` = zero).

    Returns ``(grad_act [B,H,D], grad_start_position, grad_start_velocity,
    grad_start_acceleration)``; the start gradients are ``[S, D]`` (summed over the batch rows
    that share a start state when ``start_idx`` is given). ``traj_dt`` fixes dtype and device.
    """
    wp.init()
    batch, _, dof = act_shape
    if out_grad_act is None:
        out_grad_act = traj_dt.new_empty(act_shape)
    start_grads = [traj_dt.new_empty(batch, dof) for _ in range(3)]
    flags = [int(g is not None) for g in grads]
    dt = as_warp(traj_dt)

    def make_args(b0: int, b1: int, vector: type | None = None) -> list:
        # ``vector``: the joint-vector type of the row kernels (None: the per-joint kernels)
        rows = slice(b0, b1)
        # a missing gradient is never read by the kernel; any array of the right type stands in
        arrays = [as_warp((g if g is not None else out_grad_act)[rows], vector) for g in grads]
        return [
            *arrays,
            *flags,
            dt,
            as_warp(out_grad_act[rows], vector),
            *(as_warp(g[rows], vector) for g in start_grads),
        ]

    present = [g for g in grads if g is not None]
    if step_rows.rows_fit(mode.value, traj_dt.device, (*present, out_grad_act)):
        _launch_rows("adjoint", mode, out_grad_act, make_args)
    else:
        _launch(
            _kernel("adjoint", mode, traj_dt.dtype),
            batch,
            dof,
            traj_dt.device,
            make_args,
            batch * act_shape[1] * dof,
        )
    if start_idx is not None:
        start_grads = [
            traj_dt.new_zeros(n_start, dof).index_add_(0, start_idx, g) for g in start_grads
        ]
    return (out_grad_act, *start_grads)
