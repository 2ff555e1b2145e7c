"""The cuRobo-compatible kernel classes of the seed API (``integration_utils``).

Each class keeps the seed's forward signature: ``(u_act, start_position, start_velocity,
start_acceleration, [start_idx,] out_position, out_velocity, out_acceleration, out_jerk, traj_dt,
out_grad_position)``. The kernels write into the preallocated ``out_*`` buffers and return them
(so a caller that reuses buffers across iterations allocates nothing); the action gradient is
written into ``out_grad_position``. Unlike cuRobo, every class has an exact backward for the action
*and* the start state (``AccelerationTensorStepKernel`` included), double backward and ``jvp``.

Layouts: ``[B, H, D]`` for all classes except :class:`CliqueTensorStepCoalesceKernel`, whose
action, buffers and outputs are dof-major ``[B, D, H]``.

Semantics: SPEC §2, which is what cuRobo 0.7.8's CUDA kernels (``tensor_step_kernel.cu``) compute
for a uniform ``dt``, extended to non-uniform ``traj_dt``, any horizon and exact adjoints. Unlike
cuRobo's Python (which hands its position kernels ``1 / dt``), ``traj_dt`` is always in seconds.
The README's "The cuRobo seed API" lists the differences and
``tests/test_seed_kernels_vs_curobo_cuda.py`` checks them against transcriptions of the kernels.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

from curobo_lite.kernels.step_inputs import (
    StepInputs,
    StepMode,
    check_tensor,
    validate_step_inputs,
)
from curobo_lite.kernels.step_launch import StepBuffers, launch_adjoint, launch_forward
from curobo_lite.kernels.tensor_step import TensorStepAdjointFunction
from curobo_lite.types.errors import InputValueError


def _to_step_layout(t: torch.Tensor | None, dof_major: bool) -> torch.Tensor | None:
    """View a ``[B, D, H]`` tensor as ``[B, H, D]`` (no copy); identity for step layout."""
    if t is None or not dof_major:
        return t
    return t.transpose(1, 2)


def _seed_forward(
    ctx,
    mode: StepMode,
    dof_major: bool,
    u_act,
    start_position,
    start_velocity,
    start_acceleration,
    start_idx,
    buffers,
    traj_dt,
    out_grad_position,
):
    act = _to_step_layout(u_act, dof_major)
    inputs = validate_step_inputs(
        act, start_position, start_velocity, start_acceleration, traj_dt, mode, start_idx
    )
    out = StepBuffers(*(_to_step_layout(b, dof_major) for b in buffers))
    out.check(act)
    if out_grad_position is not None:
        check_tensor("out_grad_position", out_grad_position, 3, act.dtype, act.device)
        if out_grad_position.shape != u_act.shape:
            raise InputValueError(
                f"out_grad_position: expected shape {tuple(u_act.shape)} (that of u_act), "
                f"received {tuple(out_grad_position.shape)}"
            )
    ctx.set_materialize_grads(False)
    launch_forward(inputs, out)
    ctx.mode = mode
    ctx.dof_major = dof_major
    ctx.act_shape = tuple(act.shape)
    ctx.n_start = start_position.shape[0]
    ctx.save_for_backward(inputs.traj_dt, inputs.start_idx, out_grad_position)
    ctx.save_for_forward(inputs.traj_dt, inputs.start_idx)
    # the buffers are written in place: bump their version counters so that a stale graph that
    # saved an earlier result from the same buffer fails loudly instead of using new numbers
    ctx.mark_dirty(*buffers)
    return tuple(buffers)


def _seed_backward(ctx, grads, n_nondiff: int):
    traj_dt, start_idx, out_grad_position = ctx.saved_tensors
    needs = ctx.needs_input_grad
    step_grads = tuple(_to_step_layout(g, ctx.dof_major) for g in grads)
    if all(g is None for g in step_grads):
        return (None,) * (4 + n_nondiff)
    if torch.is_grad_enabled():
        # create_graph=True: a differentiable adjoint (fresh tensors, no buffer reuse)
        g_act, g_pos, g_vel, g_acc = TensorStepAdjointFunction.apply(
            *step_grads, traj_dt, start_idx, ctx.n_start, ctx.mode, ctx.act_shape, None
        )
    else:
        g_act, g_pos, g_vel, g_acc = launch_adjoint(
            step_grads,
            traj_dt,
            ctx.mode,
            start_idx,
            ctx.n_start,
            ctx.act_shape,
            _to_step_layout(out_grad_position, ctx.dof_major),
        )
    g_act = _to_step_layout(g_act, ctx.dof_major)
    input_grads = (g_act, g_pos, g_vel, g_acc)
    return (*(g if need else None for g, need in zip(input_grads, needs[:4])), *(None,) * n_nondiff)


def _seed_jvp(ctx, t_act, t_pos, t_vel, t_acc):
    traj_dt, start_idx = ctx.saved_tensors
    start_shape = (ctx.n_start, ctx.act_shape[2])

    def zeros_if_none(t, shape):
        return traj_dt.new_zeros(shape) if t is None else t

    act = zeros_if_none(_to_step_layout(t_act, ctx.dof_major), ctx.act_shape)
    outputs = launch_forward(
        StepInputs(
            act,
            zeros_if_none(t_pos, start_shape),
            zeros_if_none(t_vel, start_shape),
            zeros_if_none(t_acc, start_shape),
            traj_dt,
            start_idx,
            ctx.mode,
        )
    )
    return tuple(_to_step_layout(o, ctx.dof_major) for o in outputs)


def _without_start_idx(forward: Callable[..., tuple]) -> Callable[..., tuple]:
    """The forward of a class without ``start_idx``: ``forward`` with ``start_idx=None``, and
    the seed's signature for it (``forward``'s without that parameter)."""

    def forward_without_idx(ctx, *args):
        return forward(ctx, *args[:4], None, *args[4:])

    signature = inspect.signature(forward)
    forward_without_idx.__signature__ = signature.replace(
        parameters=[p for p in signature.parameters.values() if p.name != "start_idx"]
    )
    return forward_without_idx


def _seed_class(name: str, mode: StepMode, dof_major: bool, with_idx: bool, doc: str) -> type:
    """One seed class: the seed's exact forward signature (with or without ``start_idx``) over
    the shared forward/backward/jvp above."""

    def forward(
        ctx,
        u_act,
        start_position,
        start_velocity,
        start_acceleration,
        start_idx,
        out_position,
        out_velocity,
        out_acceleration,
        out_jerk,
        traj_dt,
        out_grad_position,
    ):
        return _seed_forward(
            ctx,
            mode,
            dof_major,
            u_act,
            start_position,
            start_velocity,
            start_acceleration,
            start_idx,
            (out_position, out_velocity, out_acceleration, out_jerk),
            traj_dt,
            out_grad_position,
        )

    if not with_idx:
        forward = _without_start_idx(forward)
    n_nondiff = 7 if with_idx else 6

    def backward(ctx, grad_out_p, grad_out_v, grad_out_a, grad_out_j):
        return _seed_backward(ctx, (grad_out_p, grad_out_v, grad_out_a, grad_out_j), n_nondiff)

    def jvp(ctx, t_act, t_pos, t_vel, t_acc, *_buffers):
        return _seed_jvp(ctx, t_act, t_pos, t_vel, t_acc)

    namespace = {
        "__doc__": doc,
        "__module__": __name__,
        "__qualname__": name,
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "jvp": staticmethod(jvp),
    }
    return type(name, (torch.autograd.Function,), namespace)


CliqueTensorStepKernel = _seed_class(
    "CliqueTensorStepKernel",
    StepMode.POSITION_BACKWARD,
    False,
    False,
    "POSITION control, backward differences (SPEC §2), ``[B, H, D]``.",
)
CliqueTensorStepIdxKernel = _seed_class(
    "CliqueTensorStepIdxKernel",
    StepMode.POSITION_BACKWARD,
    False,
    True,
    "POSITION control, backward differences, start state ``[S, D]`` read via ``start_idx [B]``.",
)
CliqueTensorStepCentralDifferenceKernel = _seed_class(
    "CliqueTensorStepCentralDifferenceKernel",
    StepMode.POSITION_CENTRAL,
    False,
    False,
    "POSITION control, five-point central differences (uniform ``traj_dt``), ``[B, H, D]``.",
)
CliqueTensorStepIdxCentralDifferenceKernel = _seed_class(
    "CliqueTensorStepIdxCentralDifferenceKernel",
    StepMode.POSITION_CENTRAL,
    False,
    True,
    "POSITION control, central differences, start state read via ``start_idx [B]``.",
)
CliqueTensorStepCoalesceKernel = _seed_class(
    "CliqueTensorStepCoalesceKernel",
    StepMode.POSITION_BACKWARD,
    True,
    False,
    "POSITION control, backward differences, dof-major ``[B, D, H]`` action, buffers, outputs.",
)
AccelerationTensorStepKernel = _seed_class(
    "AccelerationTensorStepKernel",
    StepMode.ACCELERATION,
    False,
    False,
    "ACCELERATION control (semi-implicit Euler), ``[B, H, D]``, with an exact backward.",
)
AccelerationTensorStepIdxKernel = _seed_class(
    "AccelerationTensorStepIdxKernel",
    StepMode.ACCELERATION,
    False,
    True,
    "ACCELERATION control, start state read via ``start_idx [B]``.",
)

SEED_KERNEL_CLASSES = (
    CliqueTensorStepKernel,
    CliqueTensorStepIdxKernel,
    CliqueTensorStepCentralDifferenceKernel,
    CliqueTensorStepIdxCentralDifferenceKernel,
    CliqueTensorStepCoalesceKernel,
    AccelerationTensorStepKernel,
    AccelerationTensorStepIdxKernel,
)
