"""The checked inputs of the voxel world and the depth camera: points, vectors, poses.

Each function turns what a user passes (tensors, numpy arrays, lists, a ``Pose``) into the
tensors the kernels take, or raises an error that names the argument, what was expected and
what was received, before anything is written.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from curobo_lite.types import Pose
from curobo_lite.types.base import require_tensor
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.types.math import quat_to_matrix


def vector3(name: str, value: Any) -> np.ndarray:
    array = np.asarray(value.tolist() if isinstance(value, torch.Tensor) else value, dtype=float)
    if array.shape != (3,):
        raise InputValueError(f"{name}: expected shape [3], received {list(array.shape)}")
    if not np.isfinite(array).all():
        raise InputValueError(f"{name}: expected finite values, received {array.tolist()}")
    return array


def positive_number(name: str, value: Any, upper: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < upper:
        raise InputValueError(f"{name}: expected a number in (0, {upper:g}), received {value!r}")
    return float(value)


def as_points(name: str, value: Any, device: torch.device, columns: int = 3) -> torch.Tensor:
    """A checked ``[N, columns]`` float32 tensor on ``device`` from a tensor or array."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    require_tensor(name, value)
    if not (value.dtype.is_floating_point or value.dtype in (torch.int32, torch.int64)):
        raise InputTypeError(f"{name}: expected a float tensor, received {value.dtype}")
    if value.ndim < 2 or value.shape[-1] != columns:
        raise InputValueError(
            f"{name}: expected shape [N, {columns}], received {list(value.shape)}"
        )
    value = value.detach().reshape(-1, columns).to(device=device, dtype=torch.float32)
    if not bool(torch.isfinite(value).all()):
        raise InputValueError(f"{name}: expected finite values, received NaN or inf")
    return value


def pose_frame(name: str, pose: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rotation [3, 3], translation [3])`` float32 of a one-row ``Pose`` or a ``[7]``
    ``x, y, z, qw, qx, qy, qz``."""
    if isinstance(pose, Pose):
        if pose.position.shape[0] != 1:
            raise InputValueError(
                f"{name}: expected a Pose with one row, received batch {pose.position.shape[0]}"
            )
        values = torch.cat((pose.position[0], pose.quaternion[0])).detach()
    else:
        if isinstance(pose, np.ndarray | list | tuple):
            pose = torch.as_tensor(np.asarray(pose, dtype=float))
        require_tensor(name, pose)
        if pose.shape not in ((7,), (1, 7)):
            raise InputValueError(f"{name}: expected shape [7], received {list(pose.shape)}")
        values = pose.detach().reshape(7)
    values = values.to(device=device, dtype=torch.float32)
    if not bool(torch.isfinite(values).all()):
        raise InputValueError(f"{name}: expected a finite pose, received {values.tolist()}")
    norm = values[3:].norm()
    if not float(norm) > 1e-6:
        raise InputValueError(f"{name}: expected a unit quaternion, received {values.tolist()}")
    return quat_to_matrix((values[3:] / norm)[None])[0], values[:3]
