"""Warp kernel for one damped least-squares step toward end-effector poses (the IK's pose phase).

:func:`curobo_lite.wrap.ik.dls.dls_steps` in torch spends about forty tensor ops per step on a
``[N, 6, D]`` Jacobian (assembly, error, projection, the limit lock, a batched solve, the step's
scale and clamp): on a CPU, 1.5-2.5 ms per step for 128 seeds, against ~0.3 ms for the forward
kinematics the step starts from. One thread per row does it all here, from the link frames of
that forward kinematics:

- the geometric Jacobian: column ``m`` of moving joint ``m`` is ``(a x (p_ee - p_m), a)`` for a
  revolute joint and ``(a, 0)`` for a prismatic one, with ``a`` its axis rotated into the base
  frame by its link's quaternion; ``J = columns^T @ jacobian_map`` (mimic joints add their
  column to the joint they follow);
- the error ``e``: target minus end-effector position, then twice the vector part of
  ``target * conj(quaternion)``, sign-fixed to the short way;
- ``e = R e``, ``J = R J`` with the row map ``R [6, 6]`` of a partial goal (none: identity);
  ``e = w * e``, ``J = w * J`` with the row weights ``w [6]``;
- the limit lock (``lock_limits``): a joint at a limit whose descent ``(J^T e)_d`` points out of
  its range gets a zero column;
- ``y = (J J^T + damping^2 I)^{-1} e`` by Cholesky (the matrix is symmetric positive definite),
  ``dq = J^T y``, scaled to at most ``max_step`` per joint, and ``q`` clamped into the limits.

The rows' Jacobian and the 6x6 system live in scratch arrays: their size depends on the robot.
Generic over float32 and float64.
"""

from __future__ import annotations

import torch
import warp as wp

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.kernels.warp_types import Array1, Array2, Array3, scalar_overloads

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


@wp.kernel
def dls_step(
    link_position: Array3,
    link_quaternion: Array3,
    local_axis: Array2,
    revolute: Array1,
    jacobian_map: Array2,
    target_position: Array2,
    target_quaternion: Array2,
    row_map: Array3,
    row_weight: Array1,
    low: Array1,
    high: Array1,
    settings: Array1,
    lock_limits: int,
    jac: Array3,
    system: Array3,
    q: Array2,
):
    """One step of row ``n`` of ``q [N, D]`` in place (module docstring). ``link_position [N, L,
    3]``, ``link_quaternion [N, L, 4]``: forward kinematics at ``q``, the first ``M`` links those
    of the moving joints and the last the end effector; ``local_axis [M, 3]``, ``revolute [M]``
    (1 or 0), ``jacobian_map [M, D]``; targets ``[N, 3]``, ``[N, 4]``; ``row_map [N or 1, 6, 6]``
    (``[0, 6, 6]``: none); ``row_weight [6]``; ``settings [2]``: ``damping^2``, ``max_step``;
    scratch ``jac [N, 6, D]``, ``system [N, 6, 8]`` (the Cholesky factor in columns 0-5, the
    error in 6, the solution in 7)."""
    n = wp.tid()
    num_moving = local_axis.shape[0]
    dof = q.shape[1]
    ee = link_position.shape[1] - 1
    zero = q.dtype(0.0)
    one = q.dtype(1.0)
    px = link_position[n, ee, 0]
    py = link_position[n, ee, 1]
    pz = link_position[n, ee, 2]
    # pose error (position first), in system[:, :, 6]
    w = link_quaternion[n, ee, 0]
    vx = link_quaternion[n, ee, 1]
    vy = link_quaternion[n, ee, 2]
    vz = link_quaternion[n, ee, 3]
    tw = target_quaternion[n, 0]
    tx = target_quaternion[n, 1]
    ty = target_quaternion[n, 2]
    tz = target_quaternion[n, 3]
    delta_w = tw * w + tx * vx + ty * vy + tz * vz
    twice = q.dtype(2.0)
    if delta_w < zero:
        twice = q.dtype(-2.0)
    system[n, 0, 6] = target_position[n, 0] - px
    system[n, 1, 6] = target_position[n, 1] - py
    system[n, 2, 6] = target_position[n, 2] - pz
    # w t_v - t_w v - t_v x v
    system[n, 3, 6] = twice * (w * tx - tw * vx - (ty * vz - tz * vy))
    system[n, 4, 6] = twice * (w * ty - tw * vy - (tz * vx - tx * vz))
    system[n, 5, 6] = twice * (w * tz - tw * vz - (tx * vy - ty * vx))
    # Jacobian: zero, then each moving joint's column through the map
    for r in range(6):
        for d in range(dof):
            jac[n, r, d] = zero
    for m in range(num_moving):
        qw = link_quaternion[n, m, 0]
        qx = link_quaternion[n, m, 1]
        qy = link_quaternion[n, m, 2]
        qz = link_quaternion[n, m, 3]
        lx = local_axis[m, 0]
        ly = local_axis[m, 1]
        lz = local_axis[m, 2]
        # a = v + 2 w (u x v) + 2 u x (u x v), u the quaternion's vector part
        cx = qy * lz - qz * ly
        cy = qz * lx - qx * lz
        cz = qx * ly - qy * lx
        ax = lx + q.dtype(2.0) * (qw * cx + qy * cz - qz * cy)
        ay = ly + q.dtype(2.0) * (qw * cy + qz * cx - qx * cz)
        az = lz + q.dtype(2.0) * (qw * cz + qx * cy - qy * cx)
        c0 = ax
        c1 = ay
        c2 = az
        c3 = zero
        c4 = zero
        c5 = zero
        if revolute[m] > zero:
            rx = px - link_position[n, m, 0]
            ry = py - link_position[n, m, 1]
            rz = pz - link_position[n, m, 2]
            c0 = ay * rz - az * ry
            c1 = az * rx - ax * rz
            c2 = ax * ry - ay * rx
            c3 = ax
            c4 = ay
            c5 = az
        for d in range(dof):
            factor = jacobian_map[m, d]
            if factor != zero:
                jac[n, 0, d] = jac[n, 0, d] + factor * c0
                jac[n, 1, d] = jac[n, 1, d] + factor * c1
                jac[n, 2, d] = jac[n, 2, d] + factor * c2
                jac[n, 3, d] = jac[n, 3, d] + factor * c3
                jac[n, 4, d] = jac[n, 4, d] + factor * c4
                jac[n, 5, d] = jac[n, 5, d] + factor * c5
    # a partial goal's row map: e = R e, J = R J (system[:, :, 7] holds R e for a moment)
    if row_map.shape[0] > 0:
        g = n
        if row_map.shape[0] == 1:
            g = 0
        for r in range(6):
            value = zero
            for k in range(6):
                value = value + row_map[g, r, k] * system[n, k, 6]
            system[n, r, 7] = value
        for r in range(6):
            system[n, r, 6] = system[n, r, 7]
        for d in range(dof):
            for r in range(6):
                value = zero
                for k in range(6):
                    value = value + row_map[g, r, k] * jac[n, k, d]
                system[n, r, 7] = value
            for r in range(6):
                jac[n, r, d] = system[n, r, 7]
    for r in range(6):
        system[n, r, 6] = row_weight[r] * system[n, r, 6]
        for d in range(dof):
            jac[n, r, d] = row_weight[r] * jac[n, r, d]
    if lock_limits != 0:  # joints at a limit that descent would push out stay put
        for d in range(dof):
            descent = zero
            for r in range(6):
                descent = descent + jac[n, r, d] * system[n, r, 6]
            value = q[n, d]
            if (value <= low[d] and descent < zero) or (value >= high[d] and descent > zero):
                for r in range(6):
                    jac[n, r, d] = zero
    # J J^T + damping^2 I, lower triangle, factored in place (Cholesky)
    for r in range(6):
        for c in range(r + 1):
            value = zero
            for d in range(dof):
                value = value + jac[n, r, d] * jac[n, c, d]
            if r == c:
                value = value + settings[0]
            system[n, r, c] = value
    for c in range(6):
        pivot = system[n, c, c]
        for k in range(c):
            pivot = pivot - system[n, c, k] * system[n, c, k]
        pivot = wp.sqrt(pivot)
        system[n, c, c] = pivot
        for r in range(c + 1, 6):
            value = system[n, r, c]
            for k in range(c):
                value = value - system[n, r, k] * system[n, c, k]
            system[n, r, c] = value / pivot
    # L z = e, then L^T y = z (z and y in column 7)
    for r in range(6):
        value = system[n, r, 6]
        for k in range(r):
            value = value - system[n, r, k] * system[n, k, 7]
        system[n, r, 7] = value / system[n, r, r]
    for i in range(6):
        r = 5 - i
        value = system[n, r, 7]
        for k in range(r + 1, 6):
            value = value - system[n, k, r] * system[n, k, 7]
        system[n, r, 7] = value / system[n, r, r]
    # dq = J^T y, scaled to at most max_step per joint, into the limits
    largest = zero
    for d in range(dof):
        value = zero
        for r in range(6):
            value = value + jac[n, r, d] * system[n, r, 7]
        jac[n, 0, d] = value  # row 0 is free now: it holds the step
        largest = wp.max(largest, wp.abs(value))
    scale = wp.min(settings[1] / wp.max(largest, q.dtype(1e-12)), one)
    for d in range(dof):
        q[n, d] = wp.min(wp.max(q[n, d] + scale * jac[n, 0, d], low[d]), high[d])


def _signature(scalar) -> list:
    a3, a2, a1 = wp.array3d(dtype=scalar), wp.array2d(dtype=scalar), wp.array(dtype=scalar)
    return [a3, a3, a2, a1, a2, a2, a2, a3, a1, a1, a1, a1, int, a3, a3, a2]


_kernel = scalar_overloads(dls_step, _signature)


class DlsStepper:
    """One damped least-squares step of ``q [N, D]`` in place per :meth:`step` call, from the
    link frames of its forward kinematics (module docstring); the scratch arrays are allocated
    once per instance.

    Args:
        q: ``[N, D]`` contiguous joint positions, updated in place by :meth:`step`.
        local_axis: ``[M, 3]`` the moving joints' axes in their own frames.
        revolute: ``[M]`` 1 for a revolute joint, 0 for a prismatic one.
        jacobian_map: ``[M, D]`` moving joints to the robot's joints (mimic multipliers).
        target_position: ``[N, 3]``; target_quaternion: ``[N, 4]`` (``wxyz``).
        row_map: ``[N or 1, 6, 6]`` a partial goal's row map, or ``None``.
        row_weight: ``[6]`` the error rows' weights (position first).
        low, high: ``[D]`` position limits.
        damping: the damping ``lambda`` (the system adds ``lambda^2 I``).
        max_step: largest joint step (rad or m).
        lock_limits: hold joints at a limit that descent would push out.

    Inputs are trusted (built by :func:`~curobo_lite.wrap.ik.dls.dls_steps`).
    """

    def __init__(
        self,
        q: torch.Tensor,
        local_axis: torch.Tensor,
        revolute: torch.Tensor,
        jacobian_map: torch.Tensor,
        target_position: torch.Tensor,
        target_quaternion: torch.Tensor,
        row_map: torch.Tensor | None,
        row_weight: torch.Tensor,
        low: torch.Tensor,
        high: torch.Tensor,
        damping: float,
        max_step: float,
        lock_limits: bool,
    ) -> None:
        wp.init()
        n, dof = q.shape
        self.q = q
        self.jac = q.new_empty(n, 6, dof)
        self.system = q.new_empty(n, 6, 8)
        if row_map is None:
            row_map = q.new_empty(0, 6, 6)
        settings = torch.tensor([damping * damping, max_step], dtype=q.dtype, device=q.device)
        self._constants = [
            as_warp(t.contiguous())
            for t in (local_axis, revolute, jacobian_map, target_position, target_quaternion)
        ]
        self._tail = [
            as_warp(row_map.contiguous()),
            as_warp(row_weight.contiguous()),
            as_warp(low.contiguous()),
            as_warp(high.contiguous()),
            as_warp(settings),
            int(lock_limits),
        ]
        self._targets = (target_position.contiguous(), target_quaternion.contiguous())
        self._row_map = row_map.contiguous()

    def step(self, link_position: torch.Tensor, link_quaternion: torch.Tensor) -> None:
        """Step ``q`` in place from its link frames ``[N, L, 3]``, ``[N, L, 4]``."""
        q, n = self.q, self.q.shape[0]
        constants, tail = self._constants, self._tail
        targets, row_map = self._targets, self._row_map

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            if b0 == 0 and b1 == n:
                inputs = constants
                row_input = tail[0]
            else:
                inputs = [*constants[:3], as_warp(targets[0][rows]), as_warp(targets[1][rows])]
                row_input = as_warp(row_map[rows]) if row_map.shape[0] > 1 else tail[0]
            return b1 - b0, [
                as_warp(link_position[rows]),
                as_warp(link_quaternion[rows]),
                *inputs,
                row_input,
                *tail[1:],
                as_warp(self.jac[rows]),
                as_warp(self.system[rows]),
                as_warp(q[rows]),
            ]

        launch_rows(_kernel(q.dtype), n, q.device, make_launch, n * self.jac.shape[2] * 120)
