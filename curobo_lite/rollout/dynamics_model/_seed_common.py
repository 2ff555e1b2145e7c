"""Shared argument handling for the pure-PyTorch functions of the seed ``integration_utils`` API.

Those functions reproduce cuRobo 0.7.8 value for value, so they accept exactly the shapes that
torch's broadcasting and ``matmul`` rules accept for the same algebra. Rather than duplicating
those rules in hand-written checks (which would either reject layouts cuRobo accepts or accept
ones it rejects), each function runs its algebra inside :func:`named_errors`, which turns torch's
shape errors into a ``ValueError`` that names the function and the shapes of its arguments. Where
cuRobo would silently return NaN (a zero ``dt`` that it inverts, ``int_steps = 1`` in
``interpolate_kernel``) the functions check up front and raise a ``ValueError`` naming the argument.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from curobo_lite.types.errors import InputTypeError, InputValueError


def as_int(name: str, value: Any) -> int:
    """``value`` as a Python int (bools and floats are a ``TypeError``)."""
    if isinstance(value, bool):
        raise InputTypeError(f"{name}: expected an int, received bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InputTypeError(f"{name}: expected an int, received {type(value).__name__}") from None


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{list(value.shape)} {str(value.dtype).replace('torch.', '')}"
    position = getattr(value, "position", None)
    if isinstance(position, torch.Tensor):
        return f"{type(value).__name__}(position{list(position.shape)})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return repr(value) if isinstance(value, (int, float, type(None))) else type(value).__name__


@contextmanager
def named_errors(func: str, **args: Any) -> Iterator[None]:
    """Re-raise torch's shape/index errors inside the block as a ``ValueError`` naming ``args``."""
    try:
        yield
    except (RuntimeError, IndexError) as err:
        described = ", ".join(f"{k}={_describe(v)}" for k, v in args.items())
        raise InputValueError(
            f"{func}: incompatible arguments ({described}); cuRobo 0.7.8 rejects them too: {err}"
        ) from err


def tensor_kwargs(name: str, tensor_args: Any) -> dict[str, Any]:
    """``device``/``dtype`` of a ``TensorDeviceType`` (ours or cuRobo's: any object with both)."""
    device = getattr(tensor_args, "device", None)
    dtype = getattr(tensor_args, "dtype", None)
    if device is None or not isinstance(dtype, torch.dtype):
        raise InputTypeError(
            f"{name}: expected a TensorDeviceType (device and dtype), "
            f"received {type(tensor_args).__name__}"
        )
    return {"device": device, "dtype": dtype}


def check_invertible(name: str, dt: torch.Tensor, where: str = "") -> None:
    """``ValueError`` when ``1 / dt`` is not finite (a zero or NaN entry): cuRobo returns NaN."""
    inv = 1 / dt.detach()
    if not bool(torch.isfinite(inv).all()):
        raise InputValueError(
            f"{name}: expected non-zero finite-reciprocal entries{where} (the function divides by "
            f"them; cuRobo 0.7.8 returns NaN), received {dt.detach().tolist()}"
        )
