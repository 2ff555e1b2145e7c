"""Device and dtype carried through every object that allocates tensors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

import torch

from curobo_lite.types.errors import InputTypeError, InputValueError

_T = TypeVar("_T")

# Warp, which runs the kernels, knows these two device types only.
SUPPORTED_DEVICE_TYPES = ("cpu", "cuda")


def _as_device(device: str | torch.device) -> torch.device:
    if not isinstance(device, str | torch.device):
        raise InputTypeError(
            f"TensorDeviceType.device: expected a str or torch.device, received {device!r}"
        )
    try:
        device = torch.device(device)
    except RuntimeError as err:
        raise InputValueError(
            f"TensorDeviceType.device: expected a device such as 'cpu' or 'cuda:0', "
            f"received {device!r} ({err})"
        ) from None
    if device.type not in SUPPORTED_DEVICE_TYPES:
        raise InputValueError(
            f"TensorDeviceType.device: expected one of {list(SUPPORTED_DEVICE_TYPES)}, "
            f"received {str(device)!r}"
        )
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise InputValueError(
                f"TensorDeviceType.device: {str(device)!r} requested, but CUDA is not available "
                f"on this machine (use 'cpu')"
            )
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        elif device.index >= torch.cuda.device_count():
            raise InputValueError(
                f"TensorDeviceType.device: expected a CUDA index below "
                f"{torch.cuda.device_count()}, received {str(device)!r}"
            )
    return device


def check_data_device(name: str, tensor: torch.Tensor) -> None:
    """Reject a tensor on a device that holds no data or that Warp cannot run on (``meta``,
    ``xpu``...) before anything reads or copies it."""
    if tensor.device.type not in SUPPORTED_DEVICE_TYPES:
        raise InputValueError(
            f"{name}: expected a tensor on one of {list(SUPPORTED_DEVICE_TYPES)}, received one "
            f"on {str(tensor.device)!r}"
        )


def require_tensor(name: str, value: Any) -> torch.Tensor:
    """``value`` if it is a tensor; else :class:`InputTypeError` naming ``name`` and the type
    received."""
    if not isinstance(value, torch.Tensor):
        raise InputTypeError(f"{name}: expected a torch.Tensor, received {type(value).__name__}")
    return value


def check_dtype_device(
    name: str, value: torch.Tensor, dtype: torch.dtype, device: torch.device
) -> None:
    """Raise :class:`InputTypeError` naming ``name`` unless the tensor ``value`` (any shape) has
    ``dtype`` and lives on ``device``."""
    if value.dtype != dtype or value.device != device:
        raise InputTypeError(
            f"{name}: expected dtype {dtype} on {device}, received {value.dtype} on {value.device}"
        )


@dataclass(frozen=True)
class TensorDeviceType:
    """Where and in what precision tensors live: ``TensorDeviceType(device, dtype)``.

    Float tensors are created with ``dtype``; index tensors use ``torch.long``.
    """

    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    dtype: torch.dtype = torch.float32

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", _as_device(self.device))
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise InputTypeError(
                f"TensorDeviceType.dtype: expected a floating torch.dtype, received {self.dtype!r}"
            )

    def to_device(self, data: Any) -> torch.Tensor:
        """Turn a tensor, array or (nested) list into a tensor on this device and dtype."""
        if isinstance(data, torch.Tensor):
            return data.to(device=self.device, dtype=self.dtype)
        return torch.as_tensor(data, device=self.device, dtype=self.dtype)

    def zeros(self, *shape: int) -> torch.Tensor:
        return torch.zeros(*shape, device=self.device, dtype=self.dtype)

    def as_kwargs(self) -> dict[str, Any]:
        """``{"device": ..., "dtype": ...}`` for ``torch.zeros(..., **tensor_args.as_kwargs())``."""
        return {"device": self.device, "dtype": self.dtype}

    def __repr__(self) -> str:
        return f"TensorDeviceType(device={self.device}, dtype={self.dtype})"


#: the target of a tensor container's ``to()``: a device (or its name), a
#: :class:`TensorDeviceType` (its device and dtype both), or ``None`` (keep the device)
DeviceTarget = str | torch.device | TensorDeviceType | None


def resolve_device_target(
    device: DeviceTarget, dtype: torch.dtype | None
) -> tuple[str | torch.device | None, torch.dtype | None]:
    """``(device, dtype)`` for ``torch.Tensor.to`` from a container's ``to(device, dtype)``
    arguments: a :class:`TensorDeviceType` gives its own device and dtype (``dtype`` is then
    not used)."""
    if isinstance(device, TensorDeviceType):
        return device.device, device.dtype
    return device, dtype


class Forwarded(Generic[_T]):
    """A read-only attribute that is the same-named attribute of a member, read on every
    access (so it follows the member): in a class body, ``d_action = Forwarded[int]("model")``
    makes ``obj.d_action`` read ``obj.model.d_action``."""

    def __init__(self, member: str) -> None:
        self.member = member
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Forwarded[_T]: ...

    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> _T: ...

    def __get__(self, obj: object | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(getattr(obj, self.member), self.name)

    def __set__(self, obj: object, value: Any) -> None:
        raise AttributeError(f"{self.name}: read-only (it is {self.member}.{self.name})")
