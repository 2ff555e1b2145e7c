"""Straight lines of the end effector: poses ``step`` apart, each solved by damped least
squares from the previous configuration (:func:`~curobo_lite.wrap.ik.dls.dls_steps`), thinned
to the joint-space segments that stay on the line, checked on the spheres with the exact band.
Where the plain line runs a joint into its limit (a long line: the redundant arm drifts),
:func:`guided_line` moves the arm along the joint-space line to an IK solution of the last pose
while the hand keeps to its line. The pick and place (:mod:`~curobo_lite.wrap.motion.pick_place`)
is made of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from curobo_lite.types import Pose, matrix_to_quat, quat_to_matrix
from curobo_lite.wrap.ik.dls import dls_steps, pose_error
from curobo_lite.wrap.motion.motion_gen import MotionGen

#: a straight-line waypoint is reached when within these (m, rad) of its pose
LINE_TOLERANCE = (1e-3, 1e-2)


def _matrix(position: torch.Tensor, quaternion: torch.Tensor) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = quat_to_matrix(quaternion.detach().double().cpu()).numpy()
    matrix[:3, 3] = position.detach().double().cpu().numpy()
    return matrix


def hand_matrices(motion_gen: MotionGen, q: torch.Tensor) -> np.ndarray:
    """``[T, 4, 4]`` end-effector poses of ``q [T, D]`` (this package's FK)."""
    state = motion_gen.checker.kinematics.forward(q, spheres=False)
    return np.stack([_matrix(p, r) for p, r in zip(state.ee_position, state.ee_quaternion)])


def pose_rows(matrices: np.ndarray, tensor_args: Any) -> tuple[torch.Tensor, torch.Tensor]:
    m = torch.as_tensor(matrices, dtype=torch.float64)
    quaternion = torch.stack([matrix_to_quat(r) for r in m[:, :3, :3]])
    return (
        tensor_args.to_device(m[:, :3, 3].contiguous()),
        tensor_args.to_device(quaternion.contiguous()),
    )


def line_waypoints(start: np.ndarray, end: np.ndarray, step: float) -> np.ndarray:
    """``[K, 4, 4]`` poses from ``start [4, 4]`` (excluded) to ``end`` (included), at most
    ``step`` metres apart, the orientation slerped (here: held when both agree)."""
    count = max(1, int(math.ceil(np.linalg.norm(end[:3, 3] - start[:3, 3]) / step - 1e-9)))
    relative = torch.as_tensor(start[:3, :3].T @ end[:3, :3])
    axis_angle = _rotation_vector(relative)
    out = []
    for k in range(1, count + 1):
        s = k / count
        matrix = np.eye(4)
        matrix[:3, :3] = start[:3, :3] @ rotation_matrix(s * axis_angle)
        matrix[:3, 3] = (1.0 - s) * start[:3, 3] + s * end[:3, 3]
        out.append(matrix)
    return np.stack(out)


def _rotation_vector(rotation: torch.Tensor) -> np.ndarray:
    q = matrix_to_quat(rotation.double()).numpy()
    q = q if q[0] >= 0.0 else -q
    angle = 2.0 * math.atan2(float(np.linalg.norm(q[1:])), float(q[0]))
    norm = float(np.linalg.norm(q[1:]))
    return np.zeros(3) if norm < 1e-12 else q[1:] / norm * angle


def rotation_matrix(vector: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(vector))
    if angle < 1e-12:
        return np.eye(3)
    k = vector / angle
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


def straight_line(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    poses: np.ndarray,
    guide: torch.Tensor | None = None,
    iterations: int = 8,
    band: bool = True,
) -> tuple[torch.Tensor | None, str]:
    """``([K + 1, D], "SUCCESS")``: ``q0 [D]`` then a configuration per pose of ``poses
    [K, 4, 4]``, each solved from the previous by damped least squares and within
    :data:`LINE_TOLERANCE` of its pose, :func:`thinned` to the rows the joint-space segments
    need, those and the segments between them valid (spheres, with the exact band);
    ``(None, reason)`` otherwise. ``guide [K + 1, D]``: joint-space
    waypoints whose steps each solve starts from (the arm then moves as they do, in the null
    space of the hand's line: a way from one arm posture to another). ``band``: spheres within
    the exact band of an obstacle are judged on the meshes (a held object resting on its
    support); ``False``: the spheres must be clear (as a simulator made of them needs)."""
    checker = motion_gen.checker
    position, quaternion = pose_rows(poses, checker.tensor_args)
    rows = [q0.reshape(1, -1)]
    for k in range(poses.shape[0]):
        initial = rows[-1]
        if guide is not None:
            initial = rows[-1] + (guide[k + 1] - guide[k])[None]
        q = dls_steps(
            checker.kinematics,
            initial,
            position[k : k + 1],
            quaternion[k : k + 1],
            iterations,
        )
        error = pose_error(checker.kinematics, q, position[k : k + 1], quaternion[k : k + 1])
        if (
            float(error[0, :3].norm()) > LINE_TOLERANCE[0]
            or float(error[0, 3:].norm()) > LINE_TOLERANCE[1]
        ):
            return None, f"IK_FAIL at waypoint {k + 1} of {poses.shape[0]}"
        rows.append(q)
    path = thinned(checker.kinematics, torch.cat(rows), position, quaternion)
    band = motion_gen.exact_band if band else 0.0
    ok = checker.validate(path[1:], band) & checker.validate_segments(
        path[:-1], path[1:], resolution=0.02, exact_band=band
    )
    if not bool(ok.all()):
        first = int((~ok).nonzero()[0, 0])
        return None, f"COLLISION on segment {first + 1} of {path.shape[0] - 1}"
    return path, "SUCCESS"


@torch.no_grad()
def thinned(
    kinematics: Any, path: torch.Tensor, position: torch.Tensor, quaternion: torch.Tensor
) -> torch.Tensor:
    """The rows of ``path [K + 1, D]`` (row ``k > 0`` at the pose ``position [K, 3]``,
    ``quaternion [K, 4]`` row ``k - 1``) that straight joint-space segments need: each segment
    as long as every row it skips lies, moved onto the segment by its share of the joint-space
    length, within :data:`LINE_TOLERANCE` of its pose. The arm then stops only at those rows
    (:func:`time_polyline` rests at every corner) instead of at every waypoint."""
    K = path.shape[0] - 1
    length = torch.cat((path.new_zeros(1), (path[1:] - path[:-1]).norm(dim=-1).cumsum(0)))
    keep, i = [0], 0
    while i < K:
        rows, owners, targets = [], [], []
        for j in range(i + 2, K + 1):
            span = (length[j] - length[i]).clamp(min=1e-12)
            for m in range(i + 1, j):
                share = (length[m] - length[i]) / span
                rows.append(path[i] + share * (path[j] - path[i]))
                owners.append(j)
                targets.append(m - 1)
        best = i + 1
        if rows:
            error = pose_error(
                kinematics, torch.stack(rows), position[targets], quaternion[targets]
            )
            bad = (error[:, :3].norm(dim=-1) > LINE_TOLERANCE[0]) | (
                error[:, 3:].norm(dim=-1) > LINE_TOLERANCE[1]
            )
            owners_t = torch.as_tensor(owners, device=bad.device)
            for j in range(i + 2, K + 1):
                if bool(bad[owners_t == j].any()):
                    break
                best = j
        keep.append(best)
        i = best
    return path[keep]


def guided_line(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    poses: np.ndarray,
    tries: int = 2,
    guide_first: bool = False,
    band: bool = True,
) -> tuple[torch.Tensor | None, str]:
    """:func:`straight_line`, and where it fails, the same guided by the joint-space line from
    ``q0`` to an IK solution of the last pose (the distinct solutions nearest ``q0`` first,
    up to ``tries``); ``guide_first``: the guided lines first (a long line, where the plain
    one tends to run a joint into its limit); ``band``: as in :func:`straight_line`."""
    reasons = []
    if not guide_first:
        path, status = straight_line(motion_gen, q0, poses, band=band)
        if path is not None:
            return path, status
        reasons.append(status)
    position, quaternion = pose_rows(poses[-1:], motion_gen.checker.tensor_args)
    ik = motion_gen.ik_solver.solve_single(Pose(position, quaternion))
    ends = ik.distinct_solutions[0] if ik.distinct_solutions else ik.solution[:0]
    ends = ends[(ends - q0).abs().amax(-1).argsort()][:tries]
    s = torch.linspace(0.0, 1.0, poses.shape[0] + 1, dtype=q0.dtype, device=q0.device)[:, None]
    for end in ends:
        guide = q0 + s * (end.to(q0) - q0)
        path, status = straight_line(motion_gen, q0, poses, guide, band=band)
        if path is not None:
            return path, status
        reasons.append(status)
    if guide_first:
        path, status = straight_line(motion_gen, q0, poses, band=band)
        if path is not None:
            return path, status
        reasons.append(status)
    return None, "; ".join(reasons) + f" ({len(ends)} IK solutions of the end pose)"
