"""Differentiable step kernels: validation, Warp launches and the autograd wrappers.

Public entry point: :func:`tensor_step`. The autograd contract (SPEC §2):

* backward returns gradients for the action and the start state whenever
  ``ctx.needs_input_grad`` asks, ``None`` for ``traj_dt``, indices and buffers;
* ``ctx.set_materialize_grads(False)``: an unused output's gradient may arrive as ``None``;
* every map is linear, so backward is the exact adjoint (itself differentiable: double backward
  runs the forward kernel), and ``jvp`` is the map applied to the tangents.
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import torch
import warp as wp

from curobo_lite.kernels import step_kernels, step_rows
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types.base import check_data_device
from curobo_lite.types.checks import finite_checks, parse_number, require_finite
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.types.state import StateType


class StepMode(enum.Enum):
    """A control space together with its finite-difference mode."""

    POSITION_BACKWARD = "POSITION_BACKWARD"
    POSITION_CENTRAL = "POSITION_CENTRAL"
    POSITION_TELEPORT = "POSITION_TELEPORT"
    VELOCITY = "VELOCITY"
    ACCELERATION = "ACCELERATION"
    JERK = "JERK"

    @property
    def min_horizon(self) -> int:
        # CENTRAL needs one step (h = 2) whose five-point stencil lies inside the trajectory
        return {"POSITION_CENTRAL": 5, "POSITION_TELEPORT": 1}.get(self.value, 2)

    @property
    def needs_uniform_dt(self) -> bool:
        return self is StepMode.POSITION_CENTRAL


FD_MODES = ("BACKWARD", "CENTRAL", "TELEPORT")


def resolve_step_mode(
    control_space: str | StateType | StepMode, fd_mode: str = "BACKWARD"
) -> StepMode:
    """Map ``(control_space, fd_mode)`` to a :class:`StepMode`.

    ``fd_mode`` selects the POSITION variant: ``"BACKWARD"``, ``"CENTRAL"`` or ``"TELEPORT"`` (IK
    mode, position = action). For VELOCITY, ACCELERATION and JERK the derivatives are always
    backward differences / integrals (SPEC §2) and ``fd_mode`` is ignored.
    """
    if isinstance(control_space, StepMode):
        return control_space
    space = StateType.parse(control_space)
    fd = str(fd_mode).upper()
    if fd not in FD_MODES:
        raise InputValueError(f"fd_mode: expected one of {list(FD_MODES)}, received {fd_mode!r}")
    if space is StateType.POSITION:
        return StepMode("POSITION_" + fd)
    return StepMode(space.value)


# --------------------------------------------------------------------------------------------------
# validation (everything is checked before any buffer is written)

_SUPPORTED_DTYPES = (torch.float32, torch.float64)


def _check_tensor(name: str, value, ndim: int, dtype: torch.dtype | None, device) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise InputTypeError(f"{name}: expected a torch.Tensor, received {type(value).__name__}")
    if value.ndim != ndim:
        raise InputValueError(f"{name}: expected {ndim} dims, received shape {tuple(value.shape)}")
    if dtype is not None and value.dtype != dtype:
        raise InputTypeError(
            f"{name}: expected dtype {dtype} (that of act), received {value.dtype}"
        )
    if device is not None and value.device != device:
        raise InputTypeError(
            f"{name}: expected device {device} (that of act), received {value.device}"
        )
    return value


class _DtCache:
    """Remembers that a ``traj_dt`` tensor was validated, so hot loops that pass the same tensor
    again skip the host synchronisation; an in-place change bumps ``_version`` and re-validates."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, int, bool]] = {}

    def lookup(self, t: torch.Tensor) -> bool | None:
        entry = self._entries.get(id(t))
        if entry is None or entry[0]() is not t or entry[1] != t._version:
            return None
        return entry[2]

    def store(self, t: torch.Tensor, uniform: bool) -> None:
        if len(self._entries) > 64:
            self._entries = {k: v for k, v in self._entries.items() if v[0]() is not None}
        self._entries[id(t)] = (weakref.ref(t), t._version, uniform)


_dt_cache = _DtCache()


#: The shortest step (s) tensor_step accepts: finite differences over a shorter one (a
#: subnormal dt) overflow to inf from finite inputs.
MIN_TRAJ_DT = 1e-6


def prepare_traj_dt(
    traj_dt: float | torch.Tensor, horizon: int, like: torch.Tensor, mode: StepMode
) -> torch.Tensor:
    """Validate ``traj_dt`` (scalar or ``[H]``) and return it as a contiguous ``[H]`` tensor."""
    if isinstance(traj_dt, torch.Tensor) and traj_dt.ndim == 1:
        if traj_dt.shape[0] != horizon:
            raise InputValueError(
                f"traj_dt: expected shape [{horizon}] (the horizon of act) or a scalar, "
                f"received {tuple(traj_dt.shape)}"
            )
        if traj_dt.device != like.device:
            raise InputTypeError(
                f"traj_dt: expected device {like.device}, received {traj_dt.device}"
            )
        if traj_dt.dtype != like.dtype:
            raise InputTypeError(f"traj_dt: expected dtype {like.dtype}, received {traj_dt.dtype}")
        dt = traj_dt.contiguous()
    elif (
        isinstance(traj_dt, torch.Tensor) and traj_dt.ndim == 0 or isinstance(traj_dt, (int, float))
    ):
        # the one checked number path: bool, overflow, NaN/inf and magnitudes past 1e12 (which
        # overflow float32 products) are rejected here, not inside the kernel
        value = parse_number(traj_dt, "traj_dt", low=0.0, low_open=True)
        if value < MIN_TRAJ_DT:
            raise InputValueError(
                f"traj_dt: expected a positive step >= {MIN_TRAJ_DT:g} s, received {value:g}"
            )
        return torch.full((horizon,), value, device=like.device, dtype=like.dtype)
    else:
        shape = (
            tuple(traj_dt.shape) if isinstance(traj_dt, torch.Tensor) else type(traj_dt).__name__
        )
        raise InputValueError(f"traj_dt: expected a scalar or shape [{horizon}], received {shape}")

    uniform = _dt_cache.lookup(dt)
    if uniform is None:
        steps = dt[1:]
        if steps.numel() > 0:
            bad = ~(torch.isfinite(steps) & (steps >= MIN_TRAJ_DT))
            if bool(bad.any()):
                index = int(bad.nonzero()[0, 0]) + 1
                raise InputValueError(
                    f"traj_dt: expected positive finite entries (>= {MIN_TRAJ_DT:g} s) at steps "
                    f"1..{horizon - 1}, received {float(dt[index])} at step {index}"
                )
            uniform = bool(torch.allclose(steps, steps[:1].expand_as(steps), rtol=1e-6, atol=0.0))
        else:
            uniform = True
        _dt_cache.store(dt, uniform)
    if mode.needs_uniform_dt and not uniform:
        raise InputValueError(
            "traj_dt: CENTRAL finite differences need a uniform dt, received a non-uniform "
            f"schedule {dt[1:].tolist()[:6]}{' ...' if horizon > 7 else ''}"
        )
    return dt


@dataclass
class StepInputs:
    """Validated inputs of one step call (shapes: act [B,H,D], start [S,D], start_idx [B])."""

    act: torch.Tensor
    start_position: torch.Tensor
    start_velocity: torch.Tensor
    start_acceleration: torch.Tensor
    traj_dt: torch.Tensor
    start_idx: torch.Tensor | None
    mode: StepMode


def validate_step_inputs(
    act: torch.Tensor,
    start_position: torch.Tensor,
    start_velocity: torch.Tensor | None,
    start_acceleration: torch.Tensor | None,
    traj_dt: float | torch.Tensor,
    mode: StepMode,
    start_idx: torch.Tensor | None = None,
    check_index: bool = True,
) -> StepInputs:
    """Check shapes, dtypes, devices and values; raise ``ValueError``/``TypeError`` naming the
    argument, the expected and the received value. Nothing is written. ``check_index=False``
    skips the range check of ``start_idx`` (its only host read)."""
    _check_tensor("act", act, 3, None, None)
    check_data_device("act", act)
    if act.dtype not in _SUPPORTED_DTYPES:
        raise InputTypeError(f"act: expected dtype float32 or float64, received {act.dtype}")
    batch, horizon, dof = act.shape
    if horizon < mode.min_horizon:
        raise InputValueError(
            f"act: {mode.value} needs a horizon of at least {mode.min_horizon}, "
            f"received shape {tuple(act.shape)} (horizon {horizon})"
        )
    if batch == 0 or dof == 0:
        raise InputValueError(
            f"act: expected non-empty batch and dof, received shape {tuple(act.shape)}"
        )
    _check_tensor("start_position", start_position, 2, act.dtype, act.device)
    if start_velocity is None:
        start_velocity = torch.zeros_like(start_position)
    if start_acceleration is None:
        start_acceleration = torch.zeros_like(start_position)
    _check_tensor("start_velocity", start_velocity, 2, act.dtype, act.device)
    _check_tensor("start_acceleration", start_acceleration, 2, act.dtype, act.device)
    if start_position.shape[1] != dof:
        raise InputValueError(
            f"start_position: expected {dof} dof (that of act {tuple(act.shape)}), "
            f"received shape {tuple(start_position.shape)}"
        )
    n_start = start_position.shape[0]
    if start_idx is None:
        if n_start != batch:
            raise InputValueError(
                f"start_position: expected batch {batch} (that of act {tuple(act.shape)}) or a "
                f"start_idx, received shape {tuple(start_position.shape)}"
            )
    else:
        if not isinstance(start_idx, torch.Tensor):
            raise InputTypeError(
                f"start_idx: expected a torch.Tensor, received {type(start_idx).__name__}"
            )
        if start_idx.dtype.is_floating_point or start_idx.dtype == torch.bool:
            raise InputTypeError(
                f"start_idx: expected an integer dtype, received {start_idx.dtype}"
            )
        if start_idx.shape != (batch,):
            raise InputValueError(
                f"start_idx: expected shape [{batch}] (the batch of act), received "
                f"{tuple(start_idx.shape)}"
            )
        if start_idx.device != act.device:
            raise InputTypeError(
                f"start_idx: expected device {act.device}, received {start_idx.device}"
            )
        low, high = (int(start_idx.min()), int(start_idx.max())) if check_index else (0, 0)
        if low < 0 or high >= n_start:
            raise InputValueError(
                f"start_idx: expected values in [0, {n_start}) (rows of start_position), "
                f"received values in [{low}, {high}]"
            )
        start_idx = start_idx.to(torch.int64).contiguous()
    for name, value in (
        ("start_velocity", start_velocity),
        ("start_acceleration", start_acceleration),
    ):
        if value.shape != start_position.shape:
            raise InputValueError(
                f"{name}: expected shape {tuple(start_position.shape)} (that of start_position), "
                f"received {tuple(value.shape)}"
            )
    dt = prepare_traj_dt(traj_dt, horizon, act, mode)
    return StepInputs(act, start_position, start_velocity, start_acceleration, dt, start_idx, mode)


# --------------------------------------------------------------------------------------------------
# raw launches (no autograd)


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
            _check_tensor(f"out_{name}", buffer, 3, act.dtype, act.device)
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


# --------------------------------------------------------------------------------------------------
# autograd


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
