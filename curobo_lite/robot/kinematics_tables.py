"""The constant tables of a robot's forward kinematics, built once from its :class:`RobotConfig`.

The chain from ``base_link`` to ``ee_link`` is reduced to ``M`` moving joints, each with one
constant origin (fixed joints folded into the next moving joint's origin) and, when the chain
ends with fixed joints, a constant end-effector offset; every collision sphere is folded into the
moving frame it rides on, and the self-collision pairs are listed link pair by link pair. The
tables come in the layouts the two backends of :class:`~curobo_lite.robot.Kinematics` read: the
torch backend's component-major matrices (:mod:`curobo_lite.robot.kinematics_torch`) and the
Warp kernels' chain arrays (:mod:`curobo_lite.robot.fk_kernels`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from curobo_lite.robot import fk_kernels
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.geometry import (
    quat_multiply_np,
    quat_to_matrix_np,
    right_multiply_matrix_np,
    rotate_quadratic_form_np,
    rpy_to_quat_np,
)
from curobo_lite.types import TensorDeviceType

# a frame as (position [3], unit quaternion wxyz [4]), float64
_Frame = tuple[np.ndarray, np.ndarray]
_IDENTITY: _Frame = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))


def _compose(a: _Frame, b: _Frame) -> _Frame:
    return a[0] + quat_to_matrix_np(a[1]) @ b[0], quat_multiply_np(a[1], b[1])


@dataclass
class ChainTables:
    """Everything forward kinematics needs besides ``q`` (tensors on the robot's device).

    Attributes:
        link_names: ``L`` links with a frame: each moving joint's child, then ``ee_link`` when
            the chain ends with fixed joints.
        num_moving: ``M`` moving joints.
        revolute: ``M`` flags (``False``: prismatic); revolute_mask: the same, ``[M]`` bool.
        identity_map: joint ``k`` is ``q[k]`` (no mimic joint, no reordering).
        source, multiplier, offset: ``[M]``: joint ``k`` is ``multiplier_k q[source_k] +
            offset_k``; jacobian_map ``[M, D]``: the same map as a matrix.
        axes: ``[M, 3]`` joint axes in their own frames.
        first: the first moving frame's terms (``quat``, ``quat_axis``, ``position``,
            ``axis``, each a column), which depend on no previous frame.
        rot_t, pos_t, axis_t: per moving joint (``None`` for the first): the right-multiply
            matrix of its origin quaternion (``[8, 4]`` stacked with that of ``A (0, axis)``
            for a revolute joint, ``[4, 4]`` for a prismatic one) and the ``[3, 16]`` quadratic
            forms of ``R(q) origin_xyz`` and ``R(q) axis``: the torch backend's GEMMs.
        ee_offset: ``(right-multiply matrix [4, 4], quadratic form [3, 16])`` of the constant
            end-effector offset, ``None`` when the chain ends with a moving joint.
        wp_chain: the Warp kernels' arrays: ``origin [M, 11]`` (xyz, ``A``, ``B = A (0,
            axis)``), ``axis``, ``scale``, ``offset``, ``source``, ``joint_type``,
            ``ee_origin [1, 7]``.
        sphere_link_names: ``S`` links, one per sphere, spheres sorted by frame then link.
        sphere_local: ``[S, 4]`` centres in that frame and radii (buffer included).
        sphere_start: ``[M + 2]`` int32: spheres of frame ``f`` are ``start[f + 1] ..
            start[f + 2] - 1``.
        sphere_forms: ``(frame, begin, end, form [16, 3 (end - begin)])`` per frame with
            spheres: the torch backend's one GEMM per frame.
        sphere_groups: ``[G, 2]`` the ``[begin, end)`` sphere range of each link.
        sphere_link_frames: ``{link: (frame, T [4, 4])}``: the moving frame a sphere link
            rides on (-1: the base) and the link's constant transform in it (float64).
        sphere_world_mask: ``[S]`` bool: the sphere is checked against the world (False for
            spheres of links that no active joint moves, unless the robot file's
            ``world_collision_fixed_links`` is true).
        self_collision_pairs: ``[P, 2]`` (``i < j``, spheres of different, not ignored
            links); self_collision_pair_buffer ``[P]`` (sum of the two links'
            ``self_collision_buffer``); self_collision_blocks ``[K, 4]`` (``pair_begin,
            pair_end, group_a, group_b``: the pairs come link pair by link pair, which lets
            the self-collision kernel skip far-apart links).
    """

    link_names: list[str]
    num_moving: int
    revolute: list[bool]
    revolute_mask: torch.Tensor
    identity_map: bool
    source: torch.Tensor
    multiplier: torch.Tensor
    offset: torch.Tensor
    jacobian_map: torch.Tensor
    axes: torch.Tensor
    first: dict[str, torch.Tensor]
    rot_t: list[torch.Tensor | None]
    pos_t: list[torch.Tensor | None]
    axis_t: list[torch.Tensor | None]
    ee_offset: tuple[torch.Tensor, torch.Tensor] | None
    wp_chain: dict[str, torch.Tensor]
    sphere_link_names: list[str]
    sphere_local: torch.Tensor
    sphere_start: torch.Tensor
    sphere_forms: list[tuple[int, int, int, torch.Tensor]]
    sphere_groups: torch.Tensor
    sphere_world_mask: torch.Tensor
    sphere_link_frames: dict[str, tuple[int, np.ndarray]]
    self_collision_pairs: torch.Tensor
    self_collision_pair_buffer: torch.Tensor
    self_collision_blocks: torch.Tensor


def build_chain_tables(config: RobotConfig, tensor_args: TensorDeviceType) -> ChainTables:
    """The tables of ``config``'s base-to-end-effector chain, on ``tensor_args``."""
    ta = tensor_args
    joint_names = list(config.joint_names)
    moving: list[tuple] = []  # (joint, folded origin)
    pending = _IDENTITY
    # every chain link: (moving frame it rides on, -1 for the base; constant offset from it)
    chain_frames = {config.base_link: (-1, _IDENTITY)}
    for joint in config.chain:
        origin = (np.asarray(joint.origin_xyz, dtype=np.float64), rpy_to_quat_np(joint.origin_rpy))
        pending = _compose(pending, origin)
        if joint.is_moving:
            moving.append((joint, pending))
            pending = _IDENTITY
        chain_frames[joint.child] = (len(moving) - 1, pending)
    ends_fixed = not config.chain[-1].is_moving
    num_moving = len(moving)
    revolute = [j.type != "prismatic" for j, _ in moving]

    source, multiplier, offset = [], [], []
    for joint, _ in moving:
        if joint.mimic is None:
            source.append(joint_names.index(joint.name))
            multiplier.append(1.0)
            offset.append(0.0)
        else:
            source.append(joint_names.index(joint.mimic.joint))
            multiplier.append(joint.mimic.multiplier)
            offset.append(joint.mimic.offset)
    # column k of the chain contributes multiplier_k to the Jacobian column of q[source_k]
    mapping = np.zeros((num_moving, len(joint_names)))
    for k, (j, m) in enumerate(zip(source, multiplier)):
        mapping[k, j] += m

    # Constants in component-major layout: frames are stored as [4, N] / [3, N] so that every
    # element-wise op runs over contiguous batch rows.
    first: dict[str, torch.Tensor] = {}
    rot_t: list[torch.Tensor | None] = [None]
    pos_t: list[torch.Tensor | None] = [None]
    axis_t: list[torch.Tensor | None] = [None]
    axes = []
    for k, (joint, (p0, q0)) in enumerate(moving):
        axis = np.asarray(joint.axis, dtype=np.float64)
        axes.append(axis)
        q_axis = quat_multiply_np(q0, np.concatenate(([0.0], axis)))
        axis_in_parent = quat_to_matrix_np(q0) @ axis
        if k == 0:
            # the first frame does not depend on a previous one: store its terms directly
            first = {
                "quat": ta.to_device(q0)[:, None],
                "quat_axis": ta.to_device(q_axis)[:, None],
                "position": ta.to_device(p0)[:, None],
                "axis": ta.to_device(axis_in_parent)[:, None],
            }
            continue
        rot = right_multiply_matrix_np(q0)
        if revolute[k]:
            rot = np.concatenate((rot, right_multiply_matrix_np(q_axis)), axis=0)
        rot_t.append(ta.to_device(rot))
        pos_t.append(ta.to_device(rotate_quadratic_form_np(p0).T))
        axis_t.append(ta.to_device(rotate_quadratic_form_np(axis_in_parent).T))
    axes_t = ta.to_device(np.stack(axes))
    multiplier_t = ta.to_device(multiplier)
    offset_t = ta.to_device(offset)
    ee_offset = None
    if ends_fixed:
        p_off, q_off = pending
        ee_offset = (
            ta.to_device(right_multiply_matrix_np(q_off)),
            ta.to_device(rotate_quadratic_form_np(p_off).T),
        )
    index = {"dtype": torch.int32, "device": ta.device}
    wp_chain = {
        # xyz, origin quaternion A, and B = A (0, axis): a revolute joint at angle t turns by
        # A (cos(t/2) + sin(t/2) (0, axis)) = cos(t/2) A + sin(t/2) B
        "origin": ta.to_device(
            np.stack(
                [
                    np.concatenate((p0, q0, quat_multiply_np(q0, np.r_[0.0, j.axis])))
                    for j, (p0, q0) in moving
                ]
            )
        ),
        "axis": axes_t,
        "scale": multiplier_t,
        "offset": offset_t,
        "source": torch.as_tensor(source, **index),
        "joint_type": torch.as_tensor(
            [fk_kernels.REVOLUTE if r else fk_kernels.PRISMATIC for r in revolute], **index
        ),
        "ee_origin": ta.to_device(np.concatenate(pending))[None],
    }
    spheres = _sphere_tables(config, chain_frames, num_moving, ta)
    return ChainTables(
        link_names=[j.child for j, _ in moving] + ([config.ee_link] if ends_fixed else []),
        num_moving=num_moving,
        revolute=revolute,
        revolute_mask=torch.as_tensor(revolute, device=ta.device),
        identity_map=(
            source == list(range(len(joint_names)))
            and all(m == 1.0 for m in multiplier)
            and all(o == 0.0 for o in offset)
        ),
        source=torch.as_tensor(source, dtype=torch.long, device=ta.device),
        multiplier=multiplier_t,
        offset=offset_t,
        jacobian_map=ta.to_device(mapping),
        axes=axes_t,
        first=first,
        rot_t=rot_t,
        pos_t=pos_t,
        axis_t=axis_t,
        ee_offset=ee_offset,
        wp_chain=wp_chain,
        **spheres,
    )


def _sphere_tables(
    config: RobotConfig, chain_frames: dict, num_moving: int, ta: TensorDeviceType
) -> dict:
    """The sphere and self-collision fields of :class:`ChainTables`: every collision sphere
    folded into the moving frame it rides on, sorted by frame."""
    collision = config.collision
    index = {"dtype": torch.int32, "device": ta.device}
    long = {"dtype": torch.long, "device": ta.device}
    rows = []  # (frame, link position in collision.link_names, link, [x, y, z, r])
    link_frames: dict[str, tuple[int, np.ndarray]] = {}
    if collision is not None:
        for order, link in enumerate(collision.link_names):
            anchor, attach = config.rigid_attachment(link)
            frame, (p0, q0) = chain_frames[anchor]
            to_frame = np.eye(4)
            to_frame[:3, :3] = quat_to_matrix_np(q0)
            to_frame[:3, 3] = p0
            to_frame = to_frame @ attach
            link_frames[link] = (frame, to_frame)
            for x, y, z, r in collision.spheres[link]:
                centre = to_frame[:3, :3] @ np.array([x, y, z]) + to_frame[:3, 3]
                rows.append((frame, order, link, [*centre, r + collision.sphere_buffer]))
    rows.sort(key=lambda row: (row[0], row[1]))  # stable: file order within a link
    names = [row[2] for row in rows]
    local = np.array([row[3] for row in rows], dtype=np.float64).reshape(-1, 4)
    counts = np.bincount(
        np.array([row[0] + 1 for row in rows], dtype=np.int64), minlength=num_moving + 1
    )
    start = np.concatenate(([0], np.cumsum(counts)))
    # torch backend: R(q) c is a quadratic form in q, so the spheres of one frame are one GEMM
    # of the frame's quaternion outer product with a [16, 3 S_f] constant
    forms = [
        (
            f,
            int(start[f + 1]),
            int(start[f + 2]),
            ta.to_device(
                np.concatenate(
                    [rotate_quadratic_form_np(c) for c in local[start[f + 1] : start[f + 2], :3]],
                    axis=1,
                )
            ),
        )
        for f in range(-1, num_moving)
        if start[f + 2] > start[f + 1]
    ]

    # spheres of one link are contiguous (sorted by frame, then link): one group per link
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
    # frame -1 is the base: no active joint moves those spheres
    include_fixed = collision is not None and collision.world_collision_fixed_links
    world_mask = [include_fixed or row[0] >= 0 for row in rows]
    return {
        "sphere_link_names": names,
        "sphere_world_mask": torch.as_tensor(world_mask, dtype=torch.bool, device=ta.device),
        "sphere_link_frames": link_frames,
        "sphere_local": ta.to_device(local),
        "sphere_start": torch.as_tensor(start, **index),
        "sphere_forms": forms,
        "sphere_groups": torch.as_tensor(groups, **long).reshape(-1, 2),
        "self_collision_pairs": torch.as_tensor(pairs, **long).reshape(-1, 2),
        "self_collision_pair_buffer": ta.to_device(pair_buffer).reshape(-1),
        "self_collision_blocks": torch.as_tensor(blocks, **long).reshape(-1, 4),
    }
