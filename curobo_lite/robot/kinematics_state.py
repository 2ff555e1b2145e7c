"""The results of :class:`~curobo_lite.robot.kinematics.Kinematics`: the state of a batch of
configurations (:class:`KinematicsState`) and preallocated outputs for a rollout loop
(:class:`KinematicsBuffers`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from curobo_lite.types import Pose
from curobo_lite.types.errors import InputValueError


def _fmt(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:.4g}" for v in values) + "]"


@dataclass
class KinematicsState:
    """Forward-kinematics result for a batch of configurations ``q [..., D]``.

    Attributes:
        ee_position: ``[..., 3]`` end-effector position in the base frame (metres).
        ee_quaternion: ``[..., 4]`` end-effector orientation, unit ``wxyz`` with ``w >= 0``.
        link_position: ``[..., L, 3]`` positions of ``link_names``.
        link_quaternion: ``[..., L, 4]`` orientations of ``link_names`` (``w >= 0``).
        link_names: ``L`` links along the chain, base excluded: the child link of every moving
            joint, then ``ee_link`` when fixed joints attach it. The last entry is always
            ``ee_link``; links reached through fixed joints mid-chain are folded away.
        link_spheres: ``[..., S, 4]`` collision spheres in the base frame (centre ``xyz``,
            radius including ``collision_sphere_buffer``), ordered as
            :attr:`Kinematics.sphere_link_names`; ``None`` when the robot has no spheres or
            they were not requested. Differentiable in ``q`` (centres; radii are constant).
    """

    ee_position: torch.Tensor
    ee_quaternion: torch.Tensor
    link_position: torch.Tensor
    link_quaternion: torch.Tensor
    link_names: list[str]
    link_spheres: torch.Tensor | None = None

    @property
    def batch_shape(self) -> torch.Size:
        return self.ee_position.shape[:-1]

    def ee_pose(self) -> Pose:
        """End-effector poses flattened to a ``Pose`` of batch ``prod(batch_shape)``."""
        return Pose(self.ee_position.reshape(-1, 3), self.ee_quaternion.reshape(-1, 4))

    def link_pose(self, link_name: str) -> Pose:
        """Poses of one link of ``link_names``, flattened to a ``Pose``."""
        if link_name not in self.link_names:
            raise InputValueError(
                f"link_name: expected one of {self.link_names}, received {link_name!r}"
            )
        i = self.link_names.index(link_name)
        return Pose(
            self.link_position[..., i, :].reshape(-1, 3),
            self.link_quaternion[..., i, :].reshape(-1, 4),
        )

    def __repr__(self) -> str:
        p = self.ee_position.reshape(-1, 3)
        q = self.ee_quaternion.reshape(-1, 4)
        first = _fmt(p[0].tolist() + q[0].tolist()) if p.shape[0] else "none"
        spheres = None if self.link_spheres is None else tuple(self.link_spheres.shape)
        return (
            f"KinematicsState(batch_shape={tuple(self.batch_shape)}, "
            f"links={len(self.link_names)} (ee={self.link_names[-1]!r}), "
            f"link_position={tuple(self.link_position.shape)}, "
            f"link_quaternion={tuple(self.link_quaternion.shape)}, "
            f"link_spheres={spheres}, "
            f"dtype={self.ee_position.dtype}, device={self.ee_position.device}, "
            f"first ee pose (xyz wxyz)={first})"
        )


@dataclass
class KinematicsBuffers:
    """Preallocated outputs of :meth:`Kinematics.forward` for one batch size ``N`` (from
    :meth:`Kinematics.allocate_outputs`): ``link_position [N, L, 3]``, ``link_quaternion
    [N, L, 4]``, ``joint_axis [N, 0, 3]`` (the axes only a backward pass reads are not
    computed) and ``link_spheres [N, S, 4]`` (``S = 0`` without spheres). Writing into them
    spares a rollout loop the allocations and first touches of fresh memory per call."""

    link_position: torch.Tensor
    link_quaternion: torch.Tensor
    joint_axis: torch.Tensor
    link_spheres: torch.Tensor

    def fits(self, n: int, spheres: bool) -> bool:
        """Whether these buffers hold ``n`` configurations (with spheres or not)."""
        return self.link_position.shape[0] == n and (self.link_spheres.shape[1] > 0) == spheres
