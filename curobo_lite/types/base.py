"""Device and dtype carried through every object that allocates tensors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.types.errors import InputTypeError


def _as_device(device: str | torch.device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


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
