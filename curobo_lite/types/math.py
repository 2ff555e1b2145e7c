"""Poses and the quaternion algebra (``wxyz``) used by kinematics and costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from curobo_lite.types.base import (
    DeviceTarget,
    TensorDeviceType,
    check_data_device,
    resolve_device_target,
)
from curobo_lite.types.errors import InputTypeError, InputValueError


def quat_multiply(q1: torch.Tensor, q2: torch.Tensor) -> torch.Tensor:
    """Hamilton product of ``wxyz`` quaternions, broadcasting over leading dims."""
    w1, x1, y1, z1 = q1.unbind(-1)
    w2, x2, y2, z2 = q2.unbind(-1)
    return torch.stack(
        (
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ),
        dim=-1,
    )


def quat_conjugate(q: torch.Tensor) -> torch.Tensor:
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate vectors ``v [...,3]`` by unit quaternions ``q [...,4]``."""
    w = q[..., :1]
    xyz = q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v + w * t + torch.cross(xyz, t, dim=-1)


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """``[...,4]`` unit ``wxyz`` quaternion to ``[...,3,3]`` rotation matrix."""
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        (
            1 - 2 * (y * y + z * z),
            2 * (x * y - w * z),
            2 * (x * z + w * y),
            2 * (x * y + w * z),
            1 - 2 * (x * x + z * z),
            2 * (y * z - w * x),
            2 * (x * z - w * y),
            2 * (y * z + w * x),
            1 - 2 * (x * x + y * y),
        ),
        dim=-1,
    ).reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(m: torch.Tensor) -> torch.Tensor:
    """``[...,3,3]`` rotation matrix to ``wxyz`` quaternion with ``w >= 0``.

    Uses the branch with the largest diagonal term for numerical stability (Shepperd).
    """
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    candidates = torch.stack(
        (
            torch.stack(
                (
                    1 + trace,
                    m[..., 2, 1] - m[..., 1, 2],
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1],
                ),
                -1,
            ),
            torch.stack(
                (
                    m[..., 2, 1] - m[..., 1, 2],
                    1 + m00 - m11 - m22,
                    m[..., 0, 1] + m[..., 1, 0],
                    m[..., 0, 2] + m[..., 2, 0],
                ),
                -1,
            ),
            torch.stack(
                (
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 0, 1] + m[..., 1, 0],
                    1 - m00 + m11 - m22,
                    m[..., 1, 2] + m[..., 2, 1],
                ),
                -1,
            ),
            torch.stack(
                (
                    m[..., 1, 0] - m[..., 0, 1],
                    m[..., 0, 2] + m[..., 2, 0],
                    m[..., 1, 2] + m[..., 2, 1],
                    1 - m00 - m11 + m22,
                ),
                -1,
            ),
        ),
        dim=-2,
    )
    choice = torch.stack((trace, m00, m11, m22), dim=-1).argmax(dim=-1)
    q = torch.gather(candidates, -2, choice[..., None, None].expand(choice.shape + (1, 4)))
    q = q.squeeze(-2)
    q = q / q.norm(dim=-1, keepdim=True)
    return torch.where(q[..., :1] < 0, -q, q)


def rpy_to_matrix(rpy: torch.Tensor) -> torch.Tensor:
    """URDF roll-pitch-yaw (fixed axes X, Y, Z: ``R = Rz(y) Ry(p) Rx(r)``) to ``[...,3,3]``."""
    r, p, y = rpy.unbind(-1)
    cr, sr, cp, sp, cy, sy = r.cos(), r.sin(), p.cos(), p.sin(), y.cos(), y.sin()
    return torch.stack(
        (
            cy * cp,
            cy * sp * sr - sy * cr,
            cy * sp * cr + sy * sr,
            sy * cp,
            sy * sp * sr + cy * cr,
            sy * sp * cr - cy * sr,
            -sp,
            cp * sr,
            cp * cr,
        ),
        dim=-1,
    ).reshape(rpy.shape[:-1] + (3, 3))


def quat_angle_error(q1: torch.Tensor, q2: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Geodesic angle (radians, in ``[0, pi]``) between unit quaternions, sign-invariant."""
    # atan2 form stays accurate (and differentiable) near zero error, unlike acos: the cosine
    # of the half angle is q1 . q2, the scalar part of conj(q1) q2, its sine the vector part's norm
    if q2.numel() == 4:
        # one quaternion q2 (a single goal): conj(q1) q2 is linear in q1, one [4, 4] product
        rel = q1 @ _conjugate_product_matrix(q2.reshape(4)).t()
        dot, vector = rel[..., 0].abs(), rel[..., 1:]
    else:
        dot = (q1 * q2).sum(-1).abs()
        vector = quat_multiply(quat_conjugate(q1), q2)[..., 1:]
    return 2.0 * torch.atan2((vector.square().sum(-1) + eps).sqrt(), dot)


def _conjugate_product_matrix(q: torch.Tensor) -> torch.Tensor:
    """``[4, 4]`` matrix ``M`` with ``conj(p) q = M p`` for ``wxyz`` quaternions ``p``."""
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        (
            torch.stack((w, x, y, z)),
            torch.stack((x, -w, z, -y)),
            torch.stack((y, -z, -w, x)),
            torch.stack((z, y, -x, -w)),
        )
    )


#: Quaternions of a smaller norm count as zero (no rotation can be read from them).
ZERO_QUATERNION_NORM = 1e-9


def _unit_quaternion(quaternion: torch.Tensor) -> torch.Tensor:
    """``quaternion [N, 4]`` scaled to unit norm. A zero (or denormal) row is kept as it is and
    NaN passes through: :func:`check_pose` rejects both where a pose is an input, naming the
    argument (``goal_pose``), not the constructor."""
    if quaternion.device.type not in ("cpu", "cuda") or quaternion.numel() == 0:
        return quaternion
    norm = quaternion.norm(dim=-1, keepdim=True)
    return quaternion / torch.where(norm < ZERO_QUATERNION_NORM, torch.ones_like(norm), norm)


@dataclass
class Pose:
    """A batch of rigid transforms.

    Attributes:
        position: ``[N, 3]`` metres.
        quaternion: ``[N, 4]`` quaternion, ``wxyz``, normalized on input; defaults to
            identity. A zero one is kept (zero): every solver rejects it with an
            :class:`~curobo_lite.types.errors.InputValueError` naming its argument
            (:func:`check_pose`).
    """

    position: torch.Tensor
    quaternion: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.position, torch.Tensor):
            raise InputTypeError(
                f"Pose.position: expected a torch.Tensor, received {type(self.position)}"
            )
        if self.position.ndim == 1:
            self.position = self.position.unsqueeze(0)
        if self.position.ndim != 2 or self.position.shape[-1] != 3:
            raise InputValueError(
                f"Pose.position: expected shape [N, 3], received {tuple(self.position.shape)}"
            )
        if self.quaternion is None:
            self.quaternion = torch.zeros(
                self.position.shape[0], 4, device=self.position.device, dtype=self.position.dtype
            )
            self.quaternion[:, 0] = 1.0
        if not isinstance(self.quaternion, torch.Tensor):
            raise InputTypeError(
                f"Pose.quaternion: expected a torch.Tensor, received {type(self.quaternion)}"
            )
        if self.quaternion.ndim == 1:
            self.quaternion = self.quaternion.unsqueeze(0)
        if self.quaternion.shape != (self.position.shape[0], 4):
            raise InputValueError(
                f"Pose.quaternion: expected shape [{self.position.shape[0]}, 4] (wxyz), "
                f"received {tuple(self.quaternion.shape)}"
            )
        if self.quaternion.dtype != self.position.dtype or (
            self.quaternion.device != self.position.device
        ):
            raise InputTypeError(
                f"Pose.quaternion: expected dtype {self.position.dtype} on "
                f"{self.position.device}, received {self.quaternion.dtype} on "
                f"{self.quaternion.device}"
            )
        self.quaternion = _unit_quaternion(self.quaternion)

    @classmethod
    def from_list(cls, pose: Sequence[float], tensor_args: TensorDeviceType | None = None) -> Pose:
        """``[x, y, z, qw, qx, qy, qz]`` (or ``[x, y, z]``) to a single pose ``[1, ...]``."""
        tensor_args = tensor_args or TensorDeviceType()
        values = list(pose)
        if len(values) not in (3, 7):
            raise InputValueError(
                f"Pose.from_list: expected 3 or 7 numbers [x y z (qw qx qy qz)], "
                f"received {len(values)}"
            )
        position = tensor_args.to_device(values[:3]).unsqueeze(0)
        quaternion = None
        if len(values) == 7:
            quaternion = tensor_args.to_device(values[3:]).unsqueeze(0)
            norm = quaternion.norm()
            if not torch.isfinite(norm) or norm < 1e-9:
                raise InputValueError(f"Pose.from_list: quaternion {values[3:]} has zero norm")
            quaternion = quaternion / norm
        return cls(position, quaternion)

    @property
    def batch(self) -> int:
        return self.position.shape[0]

    def __len__(self) -> int:
        return self.batch

    def __getitem__(self, index) -> Pose:
        p, q = self.position[index], self.quaternion[index]
        return Pose(p, q)

    def clone(self) -> Pose:
        return Pose(self.position.clone(), self.quaternion.clone())

    def to(self, device: DeviceTarget = None, dtype: torch.dtype | None = None) -> Pose:
        device, dtype = resolve_device_target(device, dtype)
        return Pose(self.position.to(device, dtype), self.quaternion.to(device, dtype))

    def repeat(self, n: int) -> Pose:
        return Pose(self.position.repeat(n, 1), self.quaternion.repeat(n, 1))

    def to_list(self) -> list[float]:
        """First pose as ``[x, y, z, qw, qx, qy, qz]``."""
        return self.position[0].tolist() + self.quaternion[0].tolist()

    def rotation_matrix(self) -> torch.Tensor:
        return quat_to_matrix(self.quaternion)

    def multiply(self, other: Pose) -> Pose:
        """Compose ``self * other`` (apply ``other`` in this pose's frame)."""
        return Pose(
            self.position + quat_rotate(self.quaternion, other.position),
            quat_multiply(self.quaternion, other.quaternion),
        )

    def inverse(self) -> Pose:
        q_inv = quat_conjugate(self.quaternion)
        return Pose(-quat_rotate(q_inv, self.position), q_inv)

    def distance(self, other: Pose) -> tuple[torch.Tensor, torch.Tensor]:
        """``(position_error [N] metres, rotation_error [N] radians)`` to ``other``."""
        return (
            (self.position - other.position).norm(dim=-1),
            quat_angle_error(self.quaternion, other.quaternion),
        )

    def __repr__(self) -> str:
        p = self.position[0].detach().cpu().tolist()
        q = self.quaternion[0].detach().cpu().tolist()
        first = "[" + ", ".join(f"{x:.4g}" for x in p + q) + "]"
        return (
            f"Pose(batch={self.batch}, dtype={self.position.dtype}, "
            f"device={self.position.device}, first(xyz wxyz)={first})"
        )


def check_pose(
    pose: object, name: str, tensor_args: TensorDeviceType, batch: int | None = None
) -> Pose:
    """The one validator of goal poses: a :class:`Pose` (of ``batch`` poses when given), finite,
    no zero quaternion; returns a copy on ``tensor_args`` with unit quaternions. Errors name
    ``name``, the expected and the received value."""
    if not isinstance(pose, Pose):
        raise InputTypeError(f"{name}: expected a Pose, received {type(pose).__name__}")
    if batch is not None and pose.batch != batch:
        raise InputValueError(f"{name}: expected batch {batch}, received {pose.batch}")
    if pose.batch < 1:
        raise InputValueError(f"{name}: expected at least one pose, received batch 0")
    check_data_device(f"{name}.position", pose.position)
    pose = pose.to(tensor_args)
    finite = torch.isfinite(pose.position).all() & torch.isfinite(pose.quaternion).all()
    if not bool(finite):
        raise InputValueError(f"{name}: contains NaN or infinite values")
    norm = pose.quaternion.norm(dim=-1, keepdim=True)
    if bool((norm < 1e-6).any()):
        rows = torch.nonzero(norm[:, 0] < 1e-6)[:, 0].tolist()
        raise InputValueError(
            f"{name}.quaternion: expected non-zero wxyz quaternions, received zero norm in "
            f"row(s) {rows[:8]}"
        )
    return Pose(pose.position.clone(), pose.quaternion / norm)
