"""Joint-space state: position, velocity, acceleration and jerk over a batch."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from curobo_lite.types.base import (
    DeviceTarget,
    TensorDeviceType,
    check_data_device,
    check_dtype_device,
    resolve_device_target,
)
from curobo_lite.types.errors import InputTypeError, InputValueError


class StateType(enum.Enum):
    """Which derivative of position the optimizer's action commands."""

    POSITION = "POSITION"
    VELOCITY = "VELOCITY"
    ACCELERATION = "ACCELERATION"
    JERK = "JERK"

    @classmethod
    def parse(cls, value: str | StateType) -> StateType:
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).upper())
        except ValueError:
            raise InputValueError(
                f"control_space: expected one of {[m.value for m in cls]}, received {value!r}"
            ) from None


_FIELDS = ("position", "velocity", "acceleration", "jerk")


def _short(t: torch.Tensor, n: int = 4) -> str:
    flat = t.detach().reshape(-1)[:n].cpu().tolist()
    more = ", ..." if t.numel() > n else ""
    return "[" + ", ".join(f"{x:.4g}" for x in flat) + more + "]"


@dataclass
class JointState:
    """Joint-space state with any number of leading batch dimensions.

    Attributes:
        position: ``[..., D]`` joint positions (radians or metres).
        velocity, acceleration, jerk: same shape as ``position``; ``None`` becomes zeros.
        joint_names: optional list of ``D`` names.
    """

    position: torch.Tensor
    velocity: torch.Tensor | None = None
    acceleration: torch.Tensor | None = None
    jerk: torch.Tensor | None = None
    joint_names: list[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.position, torch.Tensor):
            raise InputTypeError(
                f"JointState.position: expected a torch.Tensor, received {type(self.position)}"
            )
        if self.position.ndim < 1:
            raise InputValueError("JointState.position: expected shape [..., D], received a scalar")
        if not self.position.dtype.is_floating_point:
            raise InputTypeError(
                f"JointState.position: expected a floating dtype, received {self.position.dtype}"
            )
        for name in _FIELDS[1:]:
            value = getattr(self, name)
            if value is None:
                setattr(self, name, torch.zeros_like(self.position))
                continue
            if not isinstance(value, torch.Tensor):
                raise InputTypeError(
                    f"JointState.{name}: expected a torch.Tensor, received {type(value)}"
                )
            if value.shape != self.position.shape:
                raise InputValueError(
                    f"JointState.{name}: expected shape {tuple(self.position.shape)} "
                    f"(that of position), received {tuple(value.shape)}"
                )
            check_dtype_device(
                f"JointState.{name}", value, self.position.dtype, self.position.device
            )
        if self.joint_names is not None:
            self.joint_names = list(self.joint_names)
            if len(self.joint_names) != self.dof:
                raise InputValueError(
                    f"JointState.joint_names: expected {self.dof} names (the dof of position), "
                    f"received {len(self.joint_names)}"
                )

    # shapes ---------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return self.position.shape[-1]

    @property
    def shape(self) -> torch.Size:
        return self.position.shape

    @property
    def batch_shape(self) -> torch.Size:
        return self.position.shape[:-1]

    @property
    def device(self) -> torch.device:
        return self.position.device

    @property
    def dtype(self) -> torch.dtype:
        return self.position.dtype

    def __len__(self) -> int:
        return self.position.shape[0] if self.position.ndim > 1 else 1

    # construction -----------------------------------------------------------------------------
    @classmethod
    def zeros(
        cls,
        size: Sequence[int],
        tensor_args: TensorDeviceType | None = None,
        joint_names: list[str] | None = None,
    ) -> JointState:
        """All-zero state of shape ``size`` (last entry is the dof)."""
        tensor_args = tensor_args or TensorDeviceType()
        position = torch.zeros(tuple(size), **tensor_args.as_kwargs())
        return cls(position=position, joint_names=joint_names)

    @classmethod
    def from_position(
        cls, position: torch.Tensor, joint_names: list[str] | None = None
    ) -> JointState:
        """State at rest at ``position``."""
        return cls(position=position, joint_names=joint_names)

    @classmethod
    def from_state_tensor(
        cls,
        state_tensor: torch.Tensor,
        joint_names: list[str] | None = None,
        dof: int | None = None,
    ) -> JointState:
        """Split ``[..., k*D]`` (k = 1..4: position, velocity, acceleration, jerk) into a state."""
        if dof is None:
            if joint_names is None:
                raise InputValueError(
                    "from_state_tensor: give dof or joint_names to split the tensor"
                )
            dof = len(joint_names)
        width = state_tensor.shape[-1]
        if width % dof != 0 or not 1 <= width // dof <= 4:
            raise InputValueError(
                f"from_state_tensor: state_tensor last dim must be k*{dof} with k in 1..4, "
                f"received {width}"
            )
        parts = state_tensor.split(dof, dim=-1)
        return cls(*parts, joint_names=joint_names)

    def to_state_tensor(self) -> torch.Tensor:
        """``[..., 3D]`` concatenation of position, velocity, acceleration."""
        return torch.cat((self.position, self.velocity, self.acceleration), dim=-1)

    @classmethod
    def stack(cls, states: Sequence[JointState], dim: int = 0) -> JointState:
        """Stack states along a new batch dimension ``dim``."""
        return cls._join(torch.stack, states, dim)

    @classmethod
    def cat(cls, states: Sequence[JointState], dim: int = 0) -> JointState:
        """Concatenate states along an existing batch dimension ``dim``."""
        return cls._join(torch.cat, states, dim)

    @classmethod
    def _join(cls, join: Callable, states: Sequence[JointState], dim: int) -> JointState:
        """``join`` (``torch.stack`` or ``torch.cat``) applied field by field along ``dim``; the
        joint names are those of the first state."""
        if len(states) == 0:
            raise InputValueError(f"JointState.{join.__name__}: states is empty")
        return cls(
            *(join([getattr(s, f) for s in states], dim=dim) for f in _FIELDS),
            joint_names=states[0].joint_names,
        )

    # copies and views -------------------------------------------------------------------------
    def _map(self, fn) -> JointState:
        return JointState(*(fn(getattr(self, f)) for f in _FIELDS), joint_names=self.joint_names)

    def clone(self) -> JointState:
        return self._map(torch.Tensor.clone)

    def detach(self) -> JointState:
        return self._map(torch.Tensor.detach)

    def to(self, device: DeviceTarget = None, dtype: torch.dtype | None = None) -> JointState:
        device, dtype = resolve_device_target(device, dtype)
        return self._map(lambda t: t.to(device=device, dtype=dtype))

    def __getitem__(self, index) -> JointState:
        if self.position.ndim < 2:
            raise IndexError("JointState: cannot index the batch of an unbatched state [D]")
        return self._map(lambda t: t[index])

    def unsqueeze(self, dim: int) -> JointState:
        return self._map(lambda t: t.unsqueeze(dim))

    def copy_(self, other: JointState) -> JointState:
        """In-place copy of ``other``'s tensors into this state's buffers."""
        for f in _FIELDS:
            getattr(self, f).copy_(getattr(other, f))
        return self

    def __repr__(self) -> str:
        names = f", joint_names={self.joint_names}" if self.joint_names else ""
        return (
            f"JointState(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device}, "
            f"position={_short(self.position)}, velocity={_short(self.velocity)}{names})"
        )


def check_joint_state(
    state: object,
    name: str,
    dof: int,
    tensor_args: TensorDeviceType,
    batch: int | None = None,
    exact_batch: bool = False,
    at_rest: str | None = None,
    rest_tolerance: float = 1e-6,
) -> JointState:
    """The one validator of joint states handed to the solvers and rollouts.

    Args:
        state: a :class:`JointState` with ``[S, D]`` fields (``[D]`` counts as one state).
        name: the argument's name, for the errors.
        dof: ``D``, the robot's joints.
        tensor_args: device and dtype to move the state to.
        batch: the expected ``S``; a batch of 1 is accepted too (shared) unless
            ``exact_batch``.
        at_rest: when given, velocity and acceleration must be zero (within
            ``rest_tolerance``); the text says why (e.g. ``"trajectory optimization plans from
            rest"``).

    Returns:
        The state as ``[S, D]`` on ``tensor_args`` (not copied when already there).

    Raises:
        TypeError: not a ``JointState``. ValueError: wrong shape or batch, NaN or infinite
        values, or (``at_rest``) a moving state; each names ``name``, the expected and the
        received value. Reading the values back synchronizes the device once.
    """
    if not isinstance(state, JointState):
        raise InputTypeError(f"{name}: expected a JointState, received {type(state).__name__}")
    received = tuple(state.position.shape)
    if state.position.ndim == 1:
        state = state.unsqueeze(0)
    expected = "S" if batch is None else str(batch)
    allowed = None if batch is None else ((batch,) if exact_batch else (1, batch))
    if (
        state.position.ndim != 2
        or state.dof != dof
        or (allowed is not None and state.position.shape[0] not in allowed)
    ):
        shared = "" if allowed is None or exact_batch or batch == 1 else f" (or [1, {dof}])"
        raise InputValueError(
            f"{name}: expected position shape [{expected}, {dof}]{shared} (the robot's {dof} "
            f"joints), received {received}"
        )
    if state.position.shape[0] == 0:
        raise InputValueError(f"{name}: expected at least one state, received shape {received}")
    check_data_device(name, state.position)
    state = state.to(tensor_args)
    values = state.to_state_tensor()
    if not bool(torch.isfinite(values).all()):
        bad = [
            field
            for field in ("position", "velocity", "acceleration")
            if not bool(torch.isfinite(getattr(state, field)).all())
        ]
        raise InputValueError(f"{name}: {', '.join(bad)} contains NaN or infinite values")
    if at_rest is not None:
        for field in ("velocity", "acceleration"):
            peak = float(getattr(state, field).abs().max())
            if peak > rest_tolerance:
                raise InputValueError(
                    f"{name}: {at_rest}; expected zero {field}, received max |{field}| = {peak:.3g}"
                )
    return state
