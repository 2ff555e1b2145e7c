"""Step kernel inputs: the control space and finite-difference mode (:class:`StepMode`) and the
validation of an action, start state and ``traj_dt`` (:func:`validate_step_inputs`), which
checks everything before any buffer is written."""

from __future__ import annotations

import enum
import weakref
from dataclasses import dataclass

import torch

from curobo_lite.types.base import check_data_device
from curobo_lite.types.checks import parse_number
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


_SUPPORTED_DTYPES = (torch.float32, torch.float64)


def check_tensor(name: str, value, ndim: int, dtype: torch.dtype | None, device) -> torch.Tensor:
    """``value`` if it is a tensor of ``ndim`` dims (and ``dtype`` and ``device``, those of the
    action, when given), else an error naming ``name``."""
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
    check_tensor("act", act, 3, None, None)
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
    check_tensor("start_position", start_position, 2, act.dtype, act.device)
    if start_velocity is None:
        start_velocity = torch.zeros_like(start_position)
    if start_acceleration is None:
        start_acceleration = torch.zeros_like(start_position)
    check_tensor("start_velocity", start_velocity, 2, act.dtype, act.device)
    check_tensor("start_acceleration", start_acceleration, 2, act.dtype, act.device)
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
