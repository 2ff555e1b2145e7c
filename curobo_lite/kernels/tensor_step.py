"""Differentiable step kernels: the autograd wrappers around the launches of
:mod:`~curobo_lite.kernels.step_launch`, on inputs checked by
:mod:`~curobo_lite.kernels.step_inputs`.

Public entry point: :func:`tensor_step`. The autograd contract (SPEC §2):

* backward returns gradients for the action and the start state whenever
  ``ctx.needs_input_grad`` asks, ``None`` for ``traj_dt``, indices and buffers;
* ``ctx.set_materialize_grads(False)``: an unused output's gradient may arrive as ``None``;
* every map is linear, so backward is the exact adjoint (itself differentiable: double backward
  runs the forward kernel), and ``jvp`` is the map applied to the tangents.
"""

from __future__ import annotations

import torch

from curobo_lite.kernels.step_inputs import (
    MIN_TRAJ_DT,
    StepInputs,
    StepMode,
    resolve_step_mode,
    validate_step_inputs,
)
from curobo_lite.kernels.step_launch import StepBuffers, launch_adjoint, launch_forward
from curobo_lite.types.checks import finite_checks, require_finite
from curobo_lite.types.state import StateType

# the step's public names stay importable from here
__all__ = [
    "MIN_TRAJ_DT",
    "StepBuffers",
    "StepInputs",
    "StepMode",
    "TensorStepAdjointFunction",
    "TensorStepFunction",
    "launch_adjoint",
    "launch_forward",
    "resolve_step_mode",
    "tensor_step",
    "validate_step_inputs",
]


def _or_zeros(
    tangent: torch.Tensor | None, shape: tuple[int, ...], ref: torch.Tensor
) -> torch.Tensor:
    return ref.new_zeros(shape) if tangent is None else tangent


def _step_arguments(ctx, traj_dt: torch.Tensor, *values: torch.Tensor | None) -> list:
    """The action ``[B, H, D]`` and start state ``3 x [S, D]`` fed to the forward map by a jvp
    or a double backward, from the optional ``values`` (``None`` reads as zeros)."""
    shapes = (ctx.act_shape, ctx.start_shape, ctx.start_shape, ctx.start_shape)
    return [_or_zeros(v, shape, traj_dt) for v, shape in zip(values, shapes, strict=True)]


class _PositionalFunction(torch.autograd.Function):
    """An autograd Function whose callers pass every argument positionally.

    ``Function.apply`` binds default arguments through ``inspect.signature`` on every call of a
    Function that defines ``setup_context`` (~20 us here, a sixth of a small kernel launch); with
    nothing to bind, a call goes straight to autograd's C++ entry. Under a functorch transform
    (vmap, jvp, grad) it takes torch's full path."""

    @classmethod
    def apply(cls, *args):
        if torch._C._are_functorch_transforms_active():
            return super().apply(*args)
        return super(torch.autograd.Function, cls).apply(*args)


class TensorStepFunction(_PositionalFunction):
    """``(act, start_position, start_velocity, start_acceleration) -> (x, v, a, j)``.

    Non-differentiable arguments: ``traj_dt [H]``, ``start_idx [B] | None``, ``mode``,
    ``out`` (:class:`StepBuffers` or ``None``). Inputs must be validated already.
    """

    @staticmethod
    def forward(
        act, start_position, start_velocity, start_acceleration, traj_dt, start_idx, mode, out
    ):
        if out is not None:
            # reused buffers are overwritten behind autograd's back: bump their versions so a
            # stale graph that saved an earlier result fails loudly instead of using new numbers
            for buffer in (out.position, out.velocity, out.acceleration, out.jerk):
                torch.autograd.graph.increment_version(buffer)
        return launch_forward(
            StepInputs(
                act, start_position, start_velocity, start_acceleration, traj_dt, start_idx, mode
            ),
            out,
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        act, start_position, _, _, traj_dt, start_idx, mode, _ = inputs
        ctx.set_materialize_grads(False)
        ctx.mode = mode
        ctx.act_shape = tuple(act.shape)
        ctx.start_shape = tuple(start_position.shape)
        ctx.save_for_backward(traj_dt, start_idx)
        ctx.save_for_forward(traj_dt, start_idx)

    @staticmethod
    def backward(ctx, grad_position, grad_velocity, grad_acceleration, grad_jerk):
        grads = (grad_position, grad_velocity, grad_acceleration, grad_jerk)
        needs = ctx.needs_input_grad
        if all(g is None for g in grads) or not any(needs[:4]):
            return (None,) * 8
        traj_dt, start_idx = ctx.saved_tensors
        input_grads = TensorStepAdjointFunction.apply(
            *grads, traj_dt, start_idx, ctx.start_shape[0], ctx.mode, ctx.act_shape, None
        )
        return (
            *(g if need else None for g, need in zip(input_grads, needs[:4])),
            None,
            None,
            None,
            None,
        )

    @staticmethod
    def jvp(ctx, t_act, t_pos, t_vel, t_acc, *_non_differentiable):
        traj_dt, start_idx = ctx.saved_tensors
        act_and_start = _step_arguments(ctx, traj_dt, t_act, t_pos, t_vel, t_acc)
        return launch_forward(StepInputs(*act_and_start, traj_dt, start_idx, ctx.mode))


class TensorStepAdjointFunction(_PositionalFunction):
    """The transpose map: output gradients ``(gx, gv, ga, gj)`` to input gradients.

    Its own backward is the forward step, which makes double backward exact and cheap.
    ``out_grad_act`` is an optional ``[B, H, D]`` buffer for the action gradient.
    """

    @staticmethod
    def forward(
        grad_position,
        grad_velocity,
        grad_acceleration,
        grad_jerk,
        traj_dt,
        start_idx,
        n_start,
        mode,
        act_shape,
        out_grad_act,
    ):
        grads = (grad_position, grad_velocity, grad_acceleration, grad_jerk)
        return launch_adjoint(grads, traj_dt, mode, start_idx, n_start, act_shape, out_grad_act)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, _, _, _, traj_dt, start_idx, n_start, mode, act_shape, _ = inputs
        ctx.set_materialize_grads(False)
        ctx.mode = mode
        ctx.act_shape = act_shape
        ctx.start_shape = (n_start, act_shape[2])
        ctx.save_for_backward(traj_dt, start_idx)
        ctx.save_for_forward(traj_dt, start_idx)

    @staticmethod
    def jvp(ctx, t_pos, t_vel, t_acc, t_jerk, *_non_differentiable):
        traj_dt, start_idx = ctx.saved_tensors
        grads = (t_pos, t_vel, t_acc, t_jerk)
        n_start = ctx.start_shape[0]
        return launch_adjoint(grads, traj_dt, ctx.mode, start_idx, n_start, ctx.act_shape)

    @staticmethod
    def backward(ctx, gg_act, gg_pos, gg_vel, gg_acc):
        if all(g is None for g in (gg_act, gg_pos, gg_vel, gg_acc)):
            return (None,) * 10
        traj_dt, start_idx = ctx.saved_tensors
        act_and_start = _step_arguments(ctx, traj_dt, gg_act, gg_pos, gg_vel, gg_acc)
        outputs = TensorStepFunction.apply(*act_and_start, traj_dt, start_idx, ctx.mode, None)
        return (*outputs, None, None, None, None, None, None)


def tensor_step(
    act: torch.Tensor,
    start_position: torch.Tensor,
    start_velocity: torch.Tensor | None,
    start_acceleration: torch.Tensor | None,
    traj_dt: float | torch.Tensor,
    control_space: str | StateType | StepMode,
    fd_mode: str = "BACKWARD",
    start_idx: torch.Tensor | None = None,
    out: StepBuffers | None = None,
    check_index: bool = True,
    check_finite: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Integrate an action sequence into a joint-state trajectory (SPEC §2).

    Values are not checked by default: NaN/inf inputs propagate to the outputs, as in torch
    ops, with no device sync. ``check_finite=True`` (a debug option; default: the environment
    variable ``CUROBO_LITE_CHECK_FINITE``) checks ``act``, the start state and ``traj_dt``
    first and raises an ``InputValueError`` naming the argument and the first bad index.

    Args:
        act: ``[B, H, D]`` actions; ``act[:, h-1]`` drives step ``h``; ``act[:, H-1]`` is unused
            (except in TELEPORT mode, where position = act).
        start_position, start_velocity, start_acceleration: ``[B, D]``, or ``[S, D]`` with
            ``start_idx``; velocity/acceleration may be ``None`` (zero).
        traj_dt: seconds per step, a scalar or ``[H]`` (entry ``h`` ends at step ``h``; entry 0
            unused), at least :data:`MIN_TRAJ_DT` (1 us). CENTRAL needs it uniform.
        control_space: ``"POSITION"``, ``"VELOCITY"``, ``"ACCELERATION"``, ``"JERK"`` (or a
            :class:`StateType` / :class:`StepMode`).
        fd_mode: for POSITION: ``"BACKWARD"``, ``"CENTRAL"`` or ``"TELEPORT"``.
        start_idx: optional ``[B]`` integer rows of the start state for each trajectory.
        out: optional preallocated :class:`StepBuffers` to write into (reused across calls).
        check_index: ``False`` skips the check that ``start_idx`` lies in ``[0, S)``, the one
            host read of the call: for callers that built the indices themselves (the rollout),
            so the hot loop needs no device synchronization.
        check_finite: raise on NaN/inf inputs instead of propagating them (one device read per
            input; ``None``: ``$CUROBO_LITE_CHECK_FINITE``).

    Returns:
        ``(position, velocity, acceleration, jerk)``, each ``[B, H, D]``; index 0 holds the start
        state (jerk 0). Differentiable w.r.t. ``act`` and the start state, twice, and in
        forward mode.
    """
    mode = resolve_step_mode(control_space, fd_mode)
    inputs = validate_step_inputs(
        act,
        start_position,
        start_velocity,
        start_acceleration,
        traj_dt,
        mode,
        start_idx,
        check_index,
    )
    if finite_checks(check_finite):
        for name, value in (
            ("act", inputs.act),
            ("start_position", inputs.start_position),
            ("start_velocity", inputs.start_velocity),
            ("start_acceleration", inputs.start_acceleration),
            ("traj_dt", inputs.traj_dt),
        ):
            require_finite(name, value)
    if out is not None:
        out.check(inputs.act)
    return TensorStepFunction.apply(
        inputs.act,
        inputs.start_position,
        inputs.start_velocity,
        inputs.start_acceleration,
        inputs.traj_dt,
        inputs.start_idx,
        mode,
        out,
    )
