"""Keeping a rollout's problem tensors at fixed addresses: a captured CUDA graph of the rollout
reads them there, so new values are copied into the kept tensors when their shapes match."""

from __future__ import annotations

from typing import Any

#: the tensor fields of a JointState and of a Pose
JOINT_FIELDS = ("position", "velocity", "acceleration", "jerk")
POSE_FIELDS = ("position", "quaternion")


def write_in_place(kept: Any, new: Any, fields: tuple[str, ...]) -> bool:
    """Copy ``new``'s tensors in ``fields`` into ``kept``'s when ``kept`` has the same ones (or
    ``None``) with the same shapes, dtypes and devices, so that they keep their addresses;
    returns whether it did (``False`` for a ``kept`` of ``None``)."""
    if kept is None:
        return False
    for name in fields:
        a, b = getattr(kept, name), getattr(new, name)
        if (a is None) != (b is None):
            return False
        if a is not None and (a.shape != b.shape or a.dtype != b.dtype or a.device != b.device):
            return False
    for name in fields:
        if getattr(new, name) is not None:
            getattr(kept, name).copy_(getattr(new, name))
    return True


def tensor_addresses(owner: Any, fields: tuple[str, ...]) -> tuple | None:
    """``(data_ptr, shape)`` of each tensor field of ``owner`` (``None`` for absent ones)."""
    if owner is None:
        return None
    values = (getattr(owner, name) for name in fields)
    return tuple(None if t is None else (t.data_ptr(), tuple(t.shape)) for t in values)
