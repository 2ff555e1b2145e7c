"""Float64 numpy helpers for constant transforms (joint origins), used when building a chain.

These run once per robot, never on the hot path, so they favour clarity over batching.
Quaternions are ``wxyz``; URDF ``rpy`` means fixed-axis X, then Y, then Z:
``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def rpy_to_matrix_np(rpy: Sequence[float]) -> np.ndarray:
    """URDF roll-pitch-yaw ``[3]`` to a ``[3, 3]`` rotation matrix."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy_np(matrix: np.ndarray) -> tuple[float, float, float]:
    """``[3, 3]`` rotation matrix to URDF ``(roll, pitch, yaw)``, pitch in ``[-pi/2, pi/2]``.

    At gimbal lock (``|pitch| = pi/2``) yaw is set to 0 and the whole rotation about the
    vertical goes into roll, so ``rpy_to_matrix_np`` of the result reproduces ``matrix``.
    """
    m = np.asarray(matrix, dtype=np.float64)
    cos_pitch = math.hypot(m[0, 0], m[1, 0])
    pitch = math.atan2(-m[2, 0], cos_pitch)
    if cos_pitch > 1e-9:
        roll = math.atan2(m[2, 1], m[2, 2])
        yaw = math.atan2(m[1, 0], m[0, 0])
    else:
        sin_pitch = -m[2, 0]
        roll = math.atan2(sin_pitch * m[0, 1], m[1, 1])
        yaw = 0.0
    # + 0.0 turns -0.0 into 0.0 so written files stay tidy
    return roll + 0.0, pitch + 0.0, yaw + 0.0


def quat_from_axis_angle_np(axis: Sequence[float], angle: float) -> np.ndarray:
    """Unit ``wxyz`` quaternion of a rotation by ``angle`` about unit ``axis``."""
    half = 0.5 * angle
    return np.concatenate(([math.cos(half)], math.sin(half) * np.asarray(axis, dtype=np.float64)))


def quat_multiply_np(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Hamilton product of two ``wxyz`` quaternions."""
    w1, x1, y1, z1 = q1
    w2, x2, y2, z2 = q2
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


def rpy_to_quat_np(rpy: Sequence[float]) -> np.ndarray:
    """URDF roll-pitch-yaw to a unit ``wxyz`` quaternion (``qz * qy * qx``)."""
    r, p, y = (float(v) for v in rpy)
    qx = quat_from_axis_angle_np((1.0, 0.0, 0.0), r)
    qy = quat_from_axis_angle_np((0.0, 1.0, 0.0), p)
    qz = quat_from_axis_angle_np((0.0, 0.0, 1.0), y)
    return quat_multiply_np(quat_multiply_np(qz, qy), qx)


def quat_to_matrix_np(q: np.ndarray) -> np.ndarray:
    """Homogeneous (quadratic) quaternion-to-matrix map; a rotation for unit ``q``."""
    w, x, y, z = q
    return np.array(
        [
            [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
        ]
    )


def right_multiply_matrix_np(r: np.ndarray) -> np.ndarray:
    """``[4, 4]`` matrix ``A`` with ``q (x) r = A @ q`` for every quaternion ``q``."""
    r0, r1, r2, r3 = r
    return np.array(
        [
            [r0, -r1, -r2, -r3],
            [r1, r0, r3, -r2],
            [r2, -r3, r0, r1],
            [r3, r2, -r1, r0],
        ]
    )


def rotate_quadratic_form_np(v: np.ndarray) -> np.ndarray:
    """``[16, 3]`` matrix ``K`` with ``R(q) @ v = (q outer q).flatten() @ K`` for unit ``q``.

    ``R(q) v`` is a quadratic form in the quaternion, so rotating a constant vector by a batch
    of quaternions becomes one outer product and one GEMM. Built by polarisation of the
    homogeneous map so it is exact for any ``q`` of unit norm.
    """
    v = np.asarray(v, dtype=np.float64)
    eye = np.eye(4)

    def form(q: np.ndarray) -> np.ndarray:
        return quat_to_matrix_np(q) @ v

    k = np.zeros((4, 4, 3))
    for a in range(4):
        k[a, a] = form(eye[a])
    for a in range(4):
        for b in range(a + 1, 4):
            cross_term = form(eye[a] + eye[b]) - k[a, a] - k[b, b]
            k[a, b] = 0.5 * cross_term
            k[b, a] = 0.5 * cross_term
    return k.reshape(16, 3)
