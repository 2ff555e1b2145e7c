"""Damped least-squares steps toward end-effector poses: the IK's first phase, and the way
:mod:`~curobo_lite.wrap.trajopt.approach_seeds` backs a grasp off along the hand's axis.

One step solves ``(J J^T + lambda^2 I) y = e``, ``dq = J^T y`` for the 6-vector pose error
``e`` (position, then twice the vector part of the error quaternion, in the base frame) with
the geometric Jacobian ``J`` of :meth:`Kinematics.jacobian`. Near a solution it converges
quadratically (a few steps from millimetres to micrometres) where a first-order method needs
dozens: on a CPU, a pose-only IK of 32 seeds costs about as much as two L-BFGS iterations of the
collision-aware one. Each step is scaled to at most ``max_step`` rad per joint (near a
singularity the least-squares step is huge) and projected into the position limits.

Two options make the steps converge where the pose lies at the edge of the joint ranges (MBM
grasps in a cage or a box whose only configurations hold a wrist or shoulder joint at its
limit, and reach the pose only to within the IK's thresholds):

- ``lock_limits``: a joint at its limit whose descent direction ``J^T e`` points out of its
  range is held there for that step (its Jacobian column dropped): projected Gauss-Newton on
  the active set. Without it, the step is solved as if that joint could move and its clamp
  leaves the others with a step meant for another motion: the iterations stall at the limit.
- ``rotation_weight`` (m per rad): the rotation rows' weight against the position rows. A pose
  out of reach ends at the least-squares compromise of the weighted error; the IK weighs by
  ``position_threshold / rotation_threshold``, so the compromise lies within both thresholds
  wherever some configuration does (unweighted, it gives up 0.07 rad to gain 2 mm).
"""

from __future__ import annotations

import torch

from curobo_lite.kernels.dls_kernels import DlsStepper
from curobo_lite.robot import Kinematics
from curobo_lite.types.math import quat_to_matrix


def pose_error(
    kinematics: Kinematics,
    q: torch.Tensor,
    target_position: torch.Tensor,
    target_quaternion: torch.Tensor,
) -> torch.Tensor:
    """``[N, 6]``: position error (m) and rotation error vector (rad, small-angle) from the end
    effector at ``q [N, D]`` to the targets ``[N, 3]``, ``[N, 4]`` (wxyz), in the base frame."""
    state = kinematics.forward(q, spheres=False)
    return _error(state.ee_position, state.ee_quaternion, target_position, target_quaternion)


def _error(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    target_position: torch.Tensor,
    target_quaternion: torch.Tensor,
) -> torch.Tensor:
    """:func:`pose_error` from the end-effector pose ``[N, 3]``, ``[N, 4]``: the rotation part
    is twice the vector part of ``target * conj(quaternion)``, sign-fixed to the short way,
    written out (a dozen tensor ops, not the thirty of a general quaternion product: the pose
    phase pays each op per step)."""
    target_w, target_v = target_quaternion[:, :1], target_quaternion[:, 1:]
    w, v = quaternion[:, :1], quaternion[:, 1:]
    delta_w = (target_quaternion * quaternion).sum(-1, keepdim=True)
    delta_v = w * target_v - target_w * v - torch.linalg.cross(target_v, v, dim=-1)
    twice = torch.where(delta_w < 0.0, -2.0, 2.0)
    return torch.cat((target_position - position, twice * delta_v), dim=-1)


@torch.no_grad()
def dls_steps(
    kinematics: Kinematics,
    q: torch.Tensor,
    target_position: torch.Tensor,
    target_quaternion: torch.Tensor,
    iterations: int,
    damping: float = 0.01,
    max_step: float = 0.2,
    axes: torch.Tensor | None = None,
    project: bool = True,
    rotation_weight: float = 1.0,
    lock_limits: bool = False,
) -> torch.Tensor:
    """``[N, D]``: ``q [N, D]`` after ``iterations`` damped least-squares steps toward the
    end-effector targets ``[N, 3]`` and ``[N, 4]`` (see the module docstring).

    ``axes [6]`` (``[rx, ry, rz, x, y, z]``, a partial goal's mask): only the axes where it is
    nonzero are driven, in the target's frame (``project``; else the base frame); the error
    and Jacobian rows of the free axes are dropped, so those axes move as they like.
    ``rotation_weight`` and ``lock_limits``: see the module docstring (defaults: plain
    steps)."""
    q = q.detach().clone()
    low, high = kinematics.robot_config.joint_limits.position.to(q)
    eye = torch.eye(6, dtype=q.dtype, device=q.device)
    damped = damping**2 * eye
    weight = None
    if rotation_weight != 1.0:
        weight = torch.tensor([1.0, 1.0, 1.0] + [rotation_weight] * 3, dtype=q.dtype)
        weight = weight.to(q.device)[None, :, None]  # the error's order: position first
    rows = None
    if axes is not None:
        rows = torch.cat((axes[3:], axes[:3])).to(q)  # the error's order: position first
        rows = (rows > 0).to(q)[None, :, None]
        if project:  # error and Jacobian rows in the target frame
            frame = quat_to_matrix(target_quaternion).transpose(1, 2)
            zero = torch.zeros_like(frame)
            frame = torch.cat(
                (torch.cat((frame, zero), 2), torch.cat((zero, frame), 2)), 1
            )  # [N, 6, 6]
            rows = frame * rows
        else:
            rows = eye[None] * rows
    if kinematics.backend == "warp" and iterations > 0:
        return _warp_steps(
            kinematics,
            q,
            target_position,
            target_quaternion,
            iterations,
            damping,
            max_step,
            (low, high),
            rows,
            weight,
            lock_limits,
        )
    for _ in range(iterations):
        jac, position, quaternion = kinematics.jacobian_and_pose(q)  # [N, 6, D]
        error = _error(position, quaternion, target_position, target_quaternion)
        if rows is not None:
            error = (rows @ error[..., None])[..., 0]
            jac = rows @ jac
        if weight is not None:
            error = error * weight[..., 0]
            jac = jac * weight
        if lock_limits:  # joints at a limit that descent would push out stay put
            descent = (jac.transpose(1, 2) @ error[..., None])[..., 0]
            held = ((q <= low) & (descent < 0.0)) | ((q >= high) & (descent > 0.0))
            jac = jac * (~held)[:, None, :]
        step = jac.transpose(1, 2) @ torch.linalg.solve(
            jac @ jac.transpose(1, 2) + damped, error[..., None]
        )
        step = step[..., 0]
        scale = (max_step / step.abs().amax(-1, keepdim=True).clamp(min=1e-12)).clamp(max=1.0)
        q = torch.minimum(torch.maximum(q + scale * step, low), high)
    return q


def _warp_steps(
    kinematics: Kinematics,
    q: torch.Tensor,
    target_position: torch.Tensor,
    target_quaternion: torch.Tensor,
    iterations: int,
    damping: float,
    max_step: float,
    limits: tuple[torch.Tensor, torch.Tensor],
    rows: torch.Tensor | None,
    weight: torch.Tensor | None,
    lock_limits: bool,
) -> torch.Tensor:
    """:func:`dls_steps`' loop with the Warp backend: per step, forward kinematics into kept
    buffers and one kernel for the rest (:mod:`curobo_lite.kernels.dls_kernels`); ``limits``:
    the position limits ``(low [D], high [D])`` on ``q``'s device."""
    tables = kinematics.tables
    low, high = limits
    row_weight = torch.ones(6, dtype=q.dtype, device=q.device)
    if weight is not None:
        row_weight = weight.reshape(6)
    q = q.contiguous()
    stepper = DlsStepper(
        q,
        tables.axes.to(q),
        tables.revolute_mask.to(q),
        tables.jacobian_map.to(q),
        target_position.expand(q.shape[0], 3),
        target_quaternion.expand(q.shape[0], 4),
        rows,
        row_weight,
        low,
        high,
        damping,
        max_step,
        lock_limits,
    )
    frames = kinematics.allocate_outputs(q.shape[0], spheres=False)
    for _ in range(iterations):
        kinematics.forward(q, spheres=False, out=frames)
        stepper.step(frames.link_position, frames.link_quaternion)
    return q
