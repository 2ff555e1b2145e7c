"""Batched, differentiable forward kinematics and geometric Jacobian of a serial chain.

The chain from ``base_link`` to ``ee_link`` is reduced at construction to ``M`` moving joints,
each with one constant origin transform (fixed joints folded into the next moving joint's
origin) and, when the chain ends with fixed joints, a constant end-effector offset. Frames are
carried as (position, unit ``wxyz`` quaternion); no matrix-to-quaternion conversion is needed.

Two backends compute the same thing (they agree to rounding):

- ``"warp"`` (default): one Warp kernel, one thread per configuration (``fk_kernels``).
- ``"torch"``: batched over configurations in a component-major layout (``[4, N]``, ``[3, N]``)
  so element-wise ops run over contiguous rows. Right-multiplying by a constant quaternion is a
  constant ``4x4`` matrix, so ``q_k = cos(t/2) q_{k-1} A_k + sin(t/2) q_{k-1} B_k`` is one GEMM
  and a multiply-add; ``R(q) o`` is a quadratic form in ``q``, so ``p_k = p_{k-1} + R(q_{k-1})
  o_k`` is an outer product and one ``addmm``. Python loops run over joints, never the batch.

Both use the same analytic backward (see :meth:`Kinematics._grad_q_torch`): for a revolute joint
with base-frame axis ``z_j``, ``dp_k/dt_j = z_j x (p_k - p_j)`` and ``dq_k/dt_j = 0.5 (0, z_j)
(x) q_k``, summed over later links with suffix sums, so FK + backward costs about two forward
passes and no autograd graph is recorded inside FK. It is first-order only (double backward
raises).

Measured on the 2-core development CPU (Franka, float32, ``benchmarks/kinematics.py``): Warp was
faster for FK + backward at N = 1000 and 12000, and the two were close for FK alone at
N = 12000; on CUDA, Warp's single launch replaces ~60 small kernel launches.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import warp as wp
from torch.autograd.function import once_differentiable

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.robot import fk_kernels
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.geometry import (
    quat_multiply_np,
    quat_to_matrix_np,
    right_multiply_matrix_np,
    rotate_quadratic_form_np,
    rpy_to_quat_np,
)
from curobo_lite.types import Pose, TensorDeviceType, check_dtype_device, quat_rotate
from curobo_lite.types.errors import InputTypeError, InputValueError


def _like(t: torch.Tensor) -> dict:
    return {"device": t.device, "dtype": t.dtype}


def _cross_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cross product over dim -2 of component-major ``[..., 3, N]`` tensors (rows contiguous)."""
    ax, ay, az = a.unbind(-2)
    bx, by, bz = b.unbind(-2)
    return torch.stack(
        (
            torch.addcmul(ay * bz, az, by, value=-1.0),
            torch.addcmul(az * bx, ax, bz, value=-1.0),
            torch.addcmul(ax * by, ay, bx, value=-1.0),
        ),
        dim=-2,
    )


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


class Kinematics:
    """Forward kinematics and Jacobian of ``robot_config``'s base-to-end-effector chain.

    Args:
        robot_config: a validated :class:`RobotConfig`.
        tensor_args: device and dtype of the constants and of accepted ``q``; defaults to
            ``robot_config.tensor_args``.
        backend: ``"warp"`` (one fused Warp kernel per pass, forward and hand-written exact
            adjoint; the default, measured faster on CPU) or ``"torch"`` (batched GEMMs and
            element-wise ops with the same analytic backward). Both are device-generic.
    """

    BACKENDS = ("warp", "torch")

    def __init__(
        self,
        robot_config: RobotConfig,
        tensor_args: TensorDeviceType | None = None,
        backend: str = "warp",
    ) -> None:
        if not isinstance(robot_config, RobotConfig):
            raise InputTypeError(
                f"robot_config: expected a RobotConfig, received {type(robot_config).__name__}"
            )
        if backend not in self.BACKENDS:
            raise InputValueError(f"backend: expected one of {self.BACKENDS}, received {backend!r}")
        self.backend = backend
        self.robot_config = robot_config
        self.tensor_args = tensor_args or robot_config.tensor_args
        self.joint_names = list(robot_config.joint_names)
        self.base_link = robot_config.base_link
        self.ee_link = robot_config.ee_link
        self._build(robot_config)

    # construction ---------------------------------------------------------------------------------
    def _build(self, config: RobotConfig) -> None:
        ta = self.tensor_args
        identity = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))

        def compose(a, b):
            return a[0] + quat_to_matrix_np(a[1]) @ b[0], quat_multiply_np(a[1], b[1])

        moving = []  # (joint, folded origin)
        pending = identity
        # every chain link: (moving frame it rides on, -1 for the base; constant offset from it)
        chain_frames = {config.base_link: (-1, identity)}
        for joint in config.chain:
            origin = (
                np.asarray(joint.origin_xyz, dtype=np.float64),
                rpy_to_quat_np(joint.origin_rpy),
            )
            pending = compose(pending, origin)
            if joint.is_moving:
                moving.append((joint, pending))
                pending = identity
            chain_frames[joint.child] = (len(moving) - 1, pending)
        ends_fixed = not config.chain[-1].is_moving

        self.link_names = [j.child for j, _ in moving] + ([config.ee_link] if ends_fixed else [])
        self.num_moving = len(moving)
        self._revolute = [j.type != "prismatic" for j, _ in moving]

        source, multiplier, offset = [], [], []
        for joint, _ in moving:
            if joint.mimic is None:
                source.append(self.joint_names.index(joint.name))
                multiplier.append(1.0)
                offset.append(0.0)
            else:
                source.append(self.joint_names.index(joint.mimic.joint))
                multiplier.append(joint.mimic.multiplier)
                offset.append(joint.mimic.offset)
        self._identity_map = (
            source == list(range(len(self.joint_names)))
            and all(m == 1.0 for m in multiplier)
            and all(o == 0.0 for o in offset)
        )
        self._source = torch.as_tensor(source, dtype=torch.long, device=ta.device)
        self._multiplier = ta.to_device(multiplier)
        self._offset = ta.to_device(offset)
        # column k of the chain contributes multiplier_k to the Jacobian column of q[source_k]
        mapping = np.zeros((self.num_moving, len(self.joint_names)))
        for k, (j, m) in enumerate(zip(source, multiplier)):
            mapping[k, j] += m
        self._jacobian_map = ta.to_device(mapping)

        # Constants in component-major layout: frames are stored as [4, N] / [3, N] so that
        # every element-wise op runs over contiguous batch rows.
        self._first: dict[str, torch.Tensor] = {}
        self._rot_t: list[torch.Tensor | None] = [None]  # [8, 4] revolute or [4, 4] prismatic
        self._pos_t: list[torch.Tensor | None] = [None]  # [3, 16]: R(q) @ origin_xyz
        self._axis_t: list[torch.Tensor | None] = [None]  # [3, 16]: R(q) @ axis in parent
        axes = []
        for k, (joint, (p0, q0)) in enumerate(moving):
            axis = np.asarray(joint.axis, dtype=np.float64)
            axes.append(axis)
            q_axis = quat_multiply_np(q0, np.concatenate(([0.0], axis)))
            axis_in_parent = quat_to_matrix_np(q0) @ axis
            if k == 0:
                # the first frame does not depend on a previous one: store its terms directly
                self._first = {
                    "quat": ta.to_device(q0)[:, None],
                    "quat_axis": ta.to_device(q_axis)[:, None],
                    "position": ta.to_device(p0)[:, None],
                    "axis": ta.to_device(axis_in_parent)[:, None],
                }
                continue
            rot = right_multiply_matrix_np(q0)
            if self._revolute[k]:
                rot = np.concatenate((rot, right_multiply_matrix_np(q_axis)), axis=0)
            self._rot_t.append(ta.to_device(rot))
            self._pos_t.append(ta.to_device(rotate_quadratic_form_np(p0).T))
            self._axis_t.append(ta.to_device(rotate_quadratic_form_np(axis_in_parent).T))
        self._axes = ta.to_device(np.stack(axes))
        self._revolute_mask = torch.as_tensor(self._revolute, device=ta.device)
        self._ee_offset = None
        if ends_fixed:
            p_off, q_off = pending
            self._ee_offset = (
                ta.to_device(right_multiply_matrix_np(q_off)),
                ta.to_device(rotate_quadratic_form_np(p_off).T),
            )
        # chain description for the Warp kernels (see curobo_lite.robot.fk_kernels)
        index = {"dtype": torch.int32, "device": ta.device}
        self._wp_chain = {
            # xyz, origin quaternion A, and B = A (0, axis): a revolute joint at angle t turns
            # by A (cos(t/2) + sin(t/2) (0, axis)) = cos(t/2) A + sin(t/2) B
            "origin": ta.to_device(
                np.stack(
                    [
                        np.concatenate((p0, q0, quat_multiply_np(q0, np.r_[0.0, j.axis])))
                        for j, (p0, q0) in moving
                    ]
                )
            ),
            "axis": self._axes,
            "scale": self._multiplier,
            "offset": self._offset,
            "source": torch.as_tensor(source, **index),
            "joint_type": torch.as_tensor(
                [fk_kernels.REVOLUTE if r else fk_kernels.PRISMATIC for r in self._revolute],
                **index,
            ),
            "ee_origin": ta.to_device(np.concatenate(pending))[None],
        }
        self._build_spheres(config, chain_frames)
        if self.backend == "warp":
            wp.init()

    def _build_spheres(self, config: RobotConfig, chain_frames: dict) -> None:
        """Fold every collision sphere into the moving frame it rides on, sorted by frame.

        Sets ``sphere_link_names`` (``S``), ``self_collision_pairs [P, 2]`` (``i < j``, spheres
        of different, not ignored links), ``self_collision_pair_buffer [P]`` (sum of the two
        links' ``self_collision_buffer``), ``sphere_groups [G, 2]`` (the ``[begin, end)``
        sphere range of each link) and ``self_collision_blocks [K, 4]`` (``pair_begin,
        pair_end, group_a, group_b``: the pairs come link pair by link pair, which lets the
        self-collision kernel skip far-apart links).
        """
        ta = self.tensor_args
        collision = config.collision
        index = {"dtype": torch.int32, "device": ta.device}
        rows = []  # (frame, link position in collision.link_names, link, [x, y, z, r])
        if collision is not None:
            for order, link in enumerate(collision.link_names):
                anchor, attach = config.rigid_attachment(link)
                frame, (p0, q0) = chain_frames[anchor]
                to_frame = np.eye(4)
                to_frame[:3, :3] = quat_to_matrix_np(q0)
                to_frame[:3, 3] = p0
                to_frame = to_frame @ attach
                for x, y, z, r in collision.spheres[link]:
                    centre = to_frame[:3, :3] @ np.array([x, y, z]) + to_frame[:3, 3]
                    rows.append((frame, order, link, [*centre, r + collision.sphere_buffer]))
        rows.sort(key=lambda row: (row[0], row[1]))  # stable: file order within a link
        self.sphere_link_names = [row[2] for row in rows]
        self._sphere_frame = torch.as_tensor([row[0] for row in rows], dtype=torch.long)
        local = np.array([row[3] for row in rows], dtype=np.float64).reshape(-1, 4)
        self._sphere_local = ta.to_device(local)
        counts = np.bincount(
            np.array([row[0] + 1 for row in rows], dtype=np.int64), minlength=self.num_moving + 1
        )
        start = np.concatenate(([0], np.cumsum(counts)))
        self._sphere_start = torch.as_tensor(start, **index)
        # torch backend: R(q) c is a quadratic form in q, so the spheres of one frame are one
        # GEMM of the frame's quaternion outer product with a [16, 3 S_f] constant
        self._sphere_forms = [
            (
                f,
                int(start[f + 1]),
                int(start[f + 2]),
                ta.to_device(
                    np.concatenate(
                        [
                            rotate_quadratic_form_np(c)
                            for c in local[start[f + 1] : start[f + 2], :3]
                        ],
                        axis=1,
                    )
                ),
            )
            for f in range(-1, self.num_moving)
            if start[f + 2] > start[f + 1]
        ]
        self._sphere_frame = self._sphere_frame.to(ta.device)

        # spheres of one link are contiguous (sorted by frame, then link): one group per link
        names = self.sphere_link_names
        groups: list[list[int]] = []
        for i, link in enumerate(names):
            if i == 0 or names[i - 1] != link:
                groups.append([i, i + 1])
            else:
                groups[-1][1] = i + 1
        # pairs in blocks of one link pair each, so the kernel can cull far-apart links
        pairs, pair_buffer, blocks = [], [], []
        if collision is not None:
            buffers = collision.self_collision_buffer
            for ga, gb in itertools.combinations(range(len(groups)), 2):
                a, b = names[groups[ga][0]], names[groups[gb][0]]
                if collision.ignores(a, b):
                    continue
                begin = len(pairs)
                pairs += [(i, j) for i in range(*groups[ga]) for j in range(*groups[gb])]
                pair_buffer += [buffers.get(a, 0.0) + buffers.get(b, 0.0)] * (len(pairs) - begin)
                blocks.append((begin, len(pairs), ga, gb))
        self.self_collision_pairs = torch.as_tensor(
            pairs, dtype=torch.long, device=ta.device
        ).reshape(-1, 2)
        self.sphere_groups = torch.as_tensor(groups, dtype=torch.long, device=ta.device).reshape(
            -1, 2
        )
        self.self_collision_blocks = torch.as_tensor(
            blocks, dtype=torch.long, device=ta.device
        ).reshape(-1, 4)
        self.self_collision_pair_buffer = ta.to_device(pair_buffer).reshape(-1)

    # properties -----------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def num_spheres(self) -> int:
        """``S``: the number of collision spheres (0 when the robot has none)."""
        return len(self.sphere_link_names)

    # core -------------------------------------------------------------------------------------
    def _flatten(self, q: torch.Tensor, name: str = "q") -> tuple[torch.Tensor, torch.Size]:
        if not isinstance(q, torch.Tensor):
            raise InputTypeError(
                f"{name}: expected a torch.Tensor [..., {self.dof}], received {type(q)}"
            )
        if q.ndim < 1 or q.shape[-1] != self.dof:
            raise InputValueError(
                f"{name}: expected shape [..., {self.dof}] (joints {self.joint_names}), "
                f"received {tuple(q.shape)}"
            )
        check_dtype_device(name, q, self.tensor_args.dtype, self.tensor_args.device)
        return q.reshape(-1, self.dof), q.shape[:-1]

    def _frames_torch(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Link frames of ``q [N, D]`` without autograd, component-major.

        Returns:
            ``(position [L, 3, N], quaternion [L, 4, N] with w >= 0, axis [M, 3, N])``; ``axis``
            holds each moving joint's unit axis in the base frame.
        """
        n = q.shape[0]
        num_links, m = len(self.link_names), self.num_moving
        kwargs = {"device": q.device, "dtype": q.dtype}
        values = q.t().contiguous()
        if not self._identity_map:
            values = values.index_select(0, self._source)
            values = values * self._multiplier[:, None] + self._offset[:, None]
        half = 0.5 * values
        cos_half, sin_half = half.cos(), half.sin()

        position = torch.empty(num_links, 3, n, **kwargs)
        quat = torch.empty(num_links, 4, n, **kwargs)
        axis = torch.empty(m, 3, n, **kwargs)
        outer = torch.empty(16, n, **kwargs)
        outer_view = outer.view(4, 4, n)
        both = torch.empty(8, n, **kwargs)

        first = self._first
        if self._revolute[0]:
            torch.mul(first["quat"], cos_half[0], out=quat[0])
            quat[0].addcmul_(first["quat_axis"], sin_half[0])
            position[0].copy_(first["position"].expand(3, n))
        else:
            quat[0].copy_(first["quat"].expand(4, n))
            torch.mul(first["axis"], values[0], out=position[0])
            position[0].add_(first["position"])
        axis[0].copy_(first["axis"].expand(3, n))
        for k in range(1, m):
            prev = quat[k - 1]
            torch.mul(prev[:, None, :], prev[None, :, :], out=outer_view)
            torch.addmm(position[k - 1], self._pos_t[k], outer, out=position[k])
            torch.mm(self._axis_t[k], outer, out=axis[k])
            if self._revolute[k]:
                torch.mm(self._rot_t[k], prev, out=both)
                torch.mul(both[:4], cos_half[k], out=quat[k])
                quat[k].addcmul_(both[4:], sin_half[k])
            else:
                torch.mm(self._rot_t[k], prev, out=quat[k])
                position[k].addcmul_(axis[k], values[k])
        if self._ee_offset is not None:
            rot, form = self._ee_offset
            prev = quat[m - 1]
            torch.mul(prev[:, None, :], prev[None, :, :], out=outer_view)
            torch.addmm(position[m - 1], form, outer, out=position[m])
            torch.mm(rot, prev, out=quat[m])
        # one hemisphere, so equal rotations compare equal (q and -q are the same rotation)
        quat.mul_(1.0 - 2.0 * (quat[:, :1] < 0).to(q.dtype))
        return position, quat, axis

    def _grad_q_torch(
        self,
        position: torch.Tensor,
        quat: torch.Tensor,
        axis: torch.Tensor,
        grad_position: torch.Tensor,
        grad_quat: torch.Tensor,
    ) -> torch.Tensor:
        """Exact vector-Jacobian product of the link frames, all component-major.

        For a revolute joint j with base-frame axis z_j at p_j and every link k after it,
        dp_k/dt_j = z_j x (p_k - p_j) and dq_k/dt_j = 0.5 (0, z_j) (x) q_k, so
        dL/dt_j = z_j . sum_{k>=j} [p_k x g_k - p_j x g_k
        + 0.5 (w_k gv_k - gw_k v_k + v_k x gv_k)]; a prismatic joint gives z_j . sum_{k>=j} g_k.
        Suffix sums over k make it O(L) per configuration.

        Args:
            position ``[L, 3, N]``, quat ``[L, 4, N]``, axis ``[M, 3, N]``: from ``_frames``.
            grad_position ``[L, 3, N]``, grad_quat ``[L, 4, N]``: upstream gradients.

        Returns:
            ``[D, N]`` gradient with respect to ``q`` (transposed).
        """
        m = self.num_moving
        w, v = quat[:, :1], quat[:, 1:]
        grad_w, grad_v = grad_quat[:, :1], grad_quat[:, 1:]
        terms = torch.empty(position.shape[0], 6, position.shape[2], **_like(position))
        torch.sub(w * grad_v, grad_w * v, out=terms[:, :3])
        terms[:, :3].add_(_cross_rows(v, grad_v)).mul_(0.5)
        terms[:, :3].add_(_cross_rows(position, grad_position))
        terms[:, 3:].copy_(grad_position)
        for k in range(terms.shape[0] - 2, -1, -1):  # suffix sums over the links
            terms[k].add_(terms[k + 1])
        moment, force = terms[:m, :3], terms[:m, 3:]
        lever = moment - _cross_rows(position[:m], force)
        if not all(self._revolute):
            lever = torch.where(self._revolute_mask[:, None, None], lever, force)
        grad_values = (axis * lever).sum(1)
        return self._jacobian_map.t() @ grad_values

    def _sphere_arrays(self, spheres: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sphere_local [S, 4], sphere_start [M + 2])``, empty when spheres are off."""
        if spheres:
            return self._sphere_local, self._sphere_start
        return self._sphere_local[:0], torch.zeros_like(self._sphere_start)

    def allocate_outputs(self, n: int, spheres: bool = True) -> KinematicsBuffers:
        """Output buffers for :meth:`forward` of ``n`` configurations (``spheres``: room for
        the collision spheres, when the robot has them)."""
        spheres = bool(spheres) and self.num_spheres > 0
        local, _ = self._sphere_arrays(spheres)
        kwargs = self.tensor_args.as_kwargs()
        return KinematicsBuffers(
            torch.empty(n, len(self.link_names), 3, **kwargs),
            torch.empty(n, len(self.link_names), 4, **kwargs),
            # the base-frame joint axes serve only the backward pass, which buffers never see
            torch.empty(n, 0, 3, **kwargs),
            torch.empty(n, local.shape[0], 4, **kwargs),
        )

    def _frames_warp(
        self, q: torch.Tensor, spheres: bool = False, out: KinematicsBuffers | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Link frames ``[N, L, 3]``, ``[N, L, 4]``, base-frame axes ``[N, M, 3]`` and
        spheres ``[N, S, 4]`` (``S = 0`` unless ``spheres``), written into ``out`` if given.
        The axes (which only the backward pass reads) are written when the axis buffer has
        room for them: :meth:`allocate_outputs` leaves none."""
        n, num_links = q.shape[0], len(self.link_names)
        local, start = self._sphere_arrays(spheres)
        if out is None:
            out = self.allocate_outputs(n, spheres)
            out.joint_axis = torch.empty(n, self.num_moving, 3, **_like(q))
        position, quat = out.link_position, out.link_quaternion
        axis, link_spheres = out.joint_axis, out.link_spheres
        write_axis = int(axis.shape[1] > 0)
        sphere_inputs = [as_warp(local), as_warp(start)]
        c = self._wp_chain
        chain = [
            as_warp(t)
            for t in (
                c["origin"],
                c["axis"],
                c["scale"],
                c["offset"],
                c["source"],
                c["joint_type"],
                c["ee_origin"],
            )
        ]
        has_ee = int(self._ee_offset is not None)
        lanes = fk_kernels.forward_lanes(q.device, q.dtype)
        kernel = fk_kernels.fk_forward_lanes if lanes else fk_kernels.kernel_for("forward", q.dtype)

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            outputs = (as_warp(t[rows]) for t in (position, quat, axis, link_spheres))
            inputs = [
                as_warp(q[rows]),
                *chain,
                self.num_moving,
                has_ee,
                write_axis,
                *sphere_inputs,
                *outputs,
            ]
            if lanes:
                return -(-(b1 - b0) // fk_kernels.LANES), [*inputs, b1 - b0]
            return b1 - b0, inputs

        work = n * (num_links * 16 + local.shape[0] * 4)
        launch_rows(kernel, n, q.device, make_launch, work)
        return position, quat, axis, link_spheres

    def _grad_q_warp(
        self,
        position: torch.Tensor,
        quat: torch.Tensor,
        axis: torch.Tensor,
        link_spheres: torch.Tensor,
        grad_position: torch.Tensor,
        grad_quat: torch.Tensor,
        grad_spheres: torch.Tensor,
    ) -> torch.Tensor:
        """``[N, D]`` gradient from row-major link frames, spheres and their gradients."""
        n = position.shape[0]
        grad = torch.zeros(n, self.dof, **_like(position))
        c = self._wp_chain
        constants = [as_warp(t) for t in (c["scale"], c["source"], c["joint_type"])]
        num_links = len(self.link_names)
        _, start = self._sphere_arrays(link_spheres.shape[1] > 0)
        start = as_warp(start)

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            frames = (
                as_warp(t[rows])
                for t in (
                    position,
                    quat,
                    axis,
                    grad_position,
                    grad_quat,
                    link_spheres,
                    grad_spheres,
                )
            )
            return b1 - b0, [
                *frames,
                start,
                *constants,
                self.num_moving,
                num_links,
                as_warp(grad[rows]),
            ]

        launch_rows(
            fk_kernels.kernel_for("adjoint", position.dtype),
            n,
            position.device,
            make_launch,
            n * (num_links * 16 + link_spheres.shape[1] * 4),
        )
        return grad

    def _link_frames(
        self, q: torch.Tensor, spheres: bool = False, out: KinematicsBuffers | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple]:
        """``(position [N, L, 3], quaternion [N, L, 4], spheres [N, S, 4], saved)`` without
        autograd. Only the Warp backend fuses the spheres (``S = 0`` otherwise) and writes
        into ``out``."""
        if self.backend == "warp":
            position, quat, axis, link_spheres = self._frames_warp(q, spheres, out)
            return position, quat, link_spheres, (position, quat, axis, link_spheres)
        position, quat, axis = self._frames_torch(q)
        outputs = position.permute(2, 0, 1).contiguous(), quat.permute(2, 0, 1).contiguous()
        return *outputs, q.new_empty(q.shape[0], 0, 4), (position, quat, axis)

    def _link_frames_grad(
        self,
        saved: tuple,
        grad_position: torch.Tensor,
        grad_quat: torch.Tensor,
        grad_spheres: torch.Tensor,
    ) -> torch.Tensor:
        """``[N, D]`` vector-Jacobian product of :meth:`_link_frames`."""
        if self.backend == "warp":
            position, quat, axis, link_spheres = saved
            return self._grad_q_warp(
                position,
                quat,
                axis,
                link_spheres,
                grad_position.contiguous(),
                grad_quat.contiguous(),
                grad_spheres.contiguous(),
            )
        grad = self._grad_q_torch(
            *saved,
            grad_position.permute(1, 2, 0).contiguous(),
            grad_quat.permute(1, 2, 0).contiguous(),
        )
        return grad.t()

    def _spheres_torch(self, position: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """``[N, S, 4]`` spheres from link frames ``[N, L, 3|4]`` (autograd through them)."""
        n = position.shape[0]
        local = self._sphere_local
        centres = []
        for frame, begin, end, form in self._sphere_forms:
            if frame < 0:
                centres.append(local[begin:end, :3].expand(n, -1, -1))
                continue
            r = quat[:, frame]
            outer = (r[:, :, None] * r[:, None, :]).reshape(n, 16)
            rotated = (outer @ form).reshape(n, end - begin, 3)
            centres.append(position[:, frame, None, :] + rotated)
        centre = torch.cat(centres, dim=1)
        return torch.cat((centre, local[:, 3:].expand(n, -1, 1)), dim=-1)

    def forward(
        self, q: torch.Tensor, spheres: bool = True, out: KinematicsBuffers | None = None
    ) -> KinematicsState:
        """Link and end-effector poses in the base frame, and the collision spheres.

        Differentiable with respect to ``q`` (exact analytic backward; first order only).

        Args:
            q: ``[..., D]`` joint positions (e.g. ``[N, D]`` or trajectories ``[N, H, D]``), on
                this object's device and dtype.
            spheres: compute ``link_spheres`` (when the robot has spheres); pass ``False`` to
                skip them when only poses are needed.
            out: buffers from :meth:`allocate_outputs` for ``N = q.numel() / D`` (and the same
                ``spheres``) to write into: the returned tensors are views of them, overwritten
                by the next call with the same buffers. Only where no gradient is taken (grad
                mode off, or ``q`` not requiring grad): a backward pass would read frames a
                later call overwrote.

        Returns:
            :class:`KinematicsState` with ``ee_position [..., 3]``, ``ee_quaternion [..., 4]``
            (``wxyz``, ``w >= 0``), ``link_position [..., L, 3]``, ``link_quaternion [..., L, 4]``
            and ``link_spheres [..., S, 4]`` (or ``None``).
        """
        flat, batch_shape = self._flatten(q)
        spheres = bool(spheres) and self.num_spheres > 0
        if out is None:
            position, quat, link_spheres = _LinkFrames.apply(flat, self, spheres)
        else:
            self._check_outputs(out, flat, spheres)
            position, quat, link_spheres, _ = self._link_frames(flat.detach(), spheres, out)
        if spheres and self.backend == "torch":
            link_spheres = self._spheres_torch(position, quat)
        num_links = len(self.link_names)
        return KinematicsState(
            ee_position=position.reshape(*batch_shape, num_links, 3)[..., -1, :],
            ee_quaternion=quat.reshape(*batch_shape, num_links, 4)[..., -1, :],
            link_position=position.reshape(*batch_shape, num_links, 3),
            link_quaternion=quat.reshape(*batch_shape, num_links, 4),
            link_names=list(self.link_names),
            link_spheres=(
                link_spheres.reshape(*batch_shape, self.num_spheres, 4) if spheres else None
            ),
        )

    __call__ = forward

    def _check_outputs(self, out: KinematicsBuffers, flat: torch.Tensor, spheres: bool) -> None:
        if not isinstance(out, KinematicsBuffers):
            raise InputTypeError(
                f"out: expected KinematicsBuffers (allocate_outputs), received {type(out).__name__}"
            )
        if torch.is_grad_enabled() and flat.requires_grad:
            raise InputValueError(
                "out: expected no gradient to be taken (grad mode off or q not requiring grad), "
                "received q that requires grad"
            )
        if not out.fits(flat.shape[0], spheres):
            has = "with" if out.link_spheres.shape[1] else "without"
            raise InputValueError(
                f"out: expected buffers for {flat.shape[0]} configurations "
                f"({'with' if spheres else 'without'} spheres), received "
                f"{out.link_position.shape[0]} ({has} spheres)"
            )
        check_dtype_device("out", out.link_position, flat.dtype, flat.device)

    def jacobian(self, q: torch.Tensor) -> torch.Tensor:
        """Geometric Jacobian of the end effector in the base frame (differentiable).

        Args:
            q: ``[..., D]`` joint positions.

        Returns:
            ``[..., 6, D]``: rows 0-2 map joint velocities to the linear velocity of the
            end-effector origin, rows 3-5 to the angular velocity, both in the base frame.
            Mimic joints add ``multiplier`` times their column to the joint they follow.
        """
        flat, batch_shape = self._flatten(q)
        position, quat, _ = _LinkFrames.apply(flat, self, False)
        m = self.num_moving
        axes = quat_rotate(quat[:, :m], self._axes.expand(flat.shape[0], m, 3))
        lever = position[:, -1:] - position[:, :m]
        revolute = self._revolute_mask[:, None]
        linear = torch.where(revolute, torch.linalg.cross(axes, lever, dim=-1), axes)
        angular = axes * revolute
        columns = torch.cat((linear, angular), dim=-1)  # [N, M, 6]
        jac = columns.transpose(1, 2) @ self._jacobian_map
        return jac.reshape(*batch_shape, 6, self.dof)

    def __repr__(self) -> str:
        return (
            f"Kinematics(robot={self.robot_config.name!r}, dof={self.dof}, "
            f"base_link={self.base_link!r}, ee_link={self.ee_link!r}, "
            f"links={len(self.link_names)}, {self.tensor_args})"
        )


class _LinkFrames(torch.autograd.Function):
    """``q [N, D] -> (link_position [N, L, 3], link_quaternion [N, L, 4], spheres [N, S, 4])``
    with exact backward; ``S = 0`` unless ``spheres`` and the Warp backend (which fuses them)."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, kinematics: Kinematics, spheres: bool):
        # outputs the loss does not use arrive as None: unused spheres cost no backward work
        ctx.set_materialize_grads(False)
        position, quat, link_spheres, saved = kinematics._link_frames(q.detach(), spheres)
        ctx.kinematics = kinematics
        ctx.frame_shapes = (position.shape, quat.shape)
        ctx.save_for_backward(*saved)
        return position, quat, link_spheres

    @staticmethod
    @once_differentiable
    def backward(
        ctx,
        grad_position: torch.Tensor | None,
        grad_quat: torch.Tensor | None,
        grad_spheres: torch.Tensor | None,
    ):
        saved = ctx.saved_tensors
        like = {"dtype": saved[0].dtype, "device": saved[0].device}
        if grad_position is None:
            grad_position = torch.zeros(ctx.frame_shapes[0], **like)
        if grad_quat is None:
            grad_quat = torch.zeros(ctx.frame_shapes[1], **like)
        if ctx.kinematics.backend == "warp":
            link_spheres = saved[3]
            if grad_spheres is None:
                # no sphere gradient: run the adjoint without its sphere loop
                link_spheres = link_spheres[:, :0]
                grad_spheres = link_spheres
                saved = (*saved[:3], link_spheres)
        grad = ctx.kinematics._link_frames_grad(saved, grad_position, grad_quat, grad_spheres)
        return grad, None, None
