"""Independent references for collision tests: dense torch signed distances and coal queries.

Nothing here uses curobo_lite's kernels: boxes and spheres are measured with plain torch
(differentiable by autograd) or with coal (the maintained successor of FCL).
"""

from __future__ import annotations

import numpy as np
import torch


def quat_to_matrix(quat: torch.Tensor) -> torch.Tensor:
    """``[..., 4]`` unit ``wxyz`` quaternions to ``[..., 3, 3]`` rotation matrices."""
    w, x, y, z = quat.unbind(-1)
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
        -1,
    ).reshape(*quat.shape[:-1], 3, 3)


def box_sdf(points: torch.Tensor, pose: list[float], dims: list[float]) -> torch.Tensor:
    """Signed distance ``[...]`` of ``points [..., 3]`` to a box (``dims`` full sides) at
    ``pose`` (xyz wxyz): exact outside and inside (negative, to the nearest face)."""
    pose_t = points.new_tensor(pose)
    rotation = quat_to_matrix(pose_t[3:] / pose_t[3:].norm())
    local = (points - pose_t[:3]) @ rotation  # R^T (p - t), row vectors
    q = local.abs() - points.new_tensor(dims) / 2
    outside = q.clamp(min=0).norm(dim=-1)
    inside = q.amax(-1).clamp(max=0)
    return outside + inside


def sphere_sdf(points: torch.Tensor, center: list[float], radius: float) -> torch.Tensor:
    return (points - points.new_tensor(center)).norm(dim=-1) - radius


def _coal_transform(pose):
    import coal

    x, y, z, qw, qx, qy, qz = (float(v) for v in pose)
    rotation = coal.Quaternion(qw, qx, qy, qz).normalized().toRotationMatrix()
    return coal.Transform3s(rotation, np.array([x, y, z]))


def coal_sphere_box_distance(spheres: np.ndarray, boxes: list[tuple[list, list]]) -> np.ndarray:
    """Signed distances ``[M]`` of ``spheres [M, 4]`` to the nearest of ``boxes`` given as
    ``(pose xyz wxyz, dims)``, with coal's exact (GJK/EPA) signed distance."""
    import coal

    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    shapes = [(coal.Box(*map(float, dims)), _coal_transform(pose)) for pose, dims in boxes]
    out = np.full(len(spheres), np.inf)
    for i, (x, y, z, r) in enumerate(spheres):
        sphere = coal.Sphere(float(r))
        where = _coal_transform([x, y, z, 1.0, 0.0, 0.0, 0.0])
        for shape, transform in shapes:
            result = coal.DistanceResult()
            coal.distance(sphere, where, shape, transform, request, result)
            out[i] = min(out[i], result.min_distance)
    return out
