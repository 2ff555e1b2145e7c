"""The torch backend of :class:`~curobo_lite.robot.Kinematics`: link frames, their exact
vector-Jacobian product and the collision spheres, batched over configurations with torch ops.

Frames are carried component-major (``[4, N]``, ``[3, N]``) so element-wise ops run over
contiguous rows. Right-multiplying by a constant quaternion is a constant ``4x4`` matrix, so
``q_k = cos(t/2) q_{k-1} A_k + sin(t/2) q_{k-1} B_k`` is one GEMM and a multiply-add; ``R(q) o``
is a quadratic form in ``q``, so ``p_k = p_{k-1} + R(q_{k-1}) o_k`` is an outer product and one
``addmm``. Python loops run over joints, never the batch. The constants are those of
:class:`~curobo_lite.robot.kinematics_tables.ChainTables`.
"""

from __future__ import annotations

import torch

from curobo_lite.robot.kinematics_tables import ChainTables


def cross_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
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


def frames_torch(
    tables: ChainTables, q: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Link frames of ``q [N, D]`` without autograd, component-major.

    Returns:
        ``(position [L, 3, N], quaternion [L, 4, N] with w >= 0, axis [M, 3, N])``; ``axis``
        holds each moving joint's unit axis in the base frame.
    """
    n = q.shape[0]
    num_links, m = len(tables.link_names), tables.num_moving
    kwargs = {"device": q.device, "dtype": q.dtype}
    values = q.t().contiguous()
    if not tables.identity_map:
        values = values.index_select(0, tables.source)
        values = values * tables.multiplier[:, None] + tables.offset[:, None]
    half = 0.5 * values
    cos_half, sin_half = half.cos(), half.sin()

    position = torch.empty(num_links, 3, n, **kwargs)
    quat = torch.empty(num_links, 4, n, **kwargs)
    axis = torch.empty(m, 3, n, **kwargs)
    outer = torch.empty(16, n, **kwargs)
    outer_view = outer.view(4, 4, n)
    both = torch.empty(8, n, **kwargs)

    first = tables.first
    if tables.revolute[0]:
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
        torch.addmm(position[k - 1], tables.pos_t[k], outer, out=position[k])
        torch.mm(tables.axis_t[k], outer, out=axis[k])
        if tables.revolute[k]:
            torch.mm(tables.rot_t[k], prev, out=both)
            torch.mul(both[:4], cos_half[k], out=quat[k])
            quat[k].addcmul_(both[4:], sin_half[k])
        else:
            torch.mm(tables.rot_t[k], prev, out=quat[k])
            position[k].addcmul_(axis[k], values[k])
    if tables.ee_offset is not None:
        rot, form = tables.ee_offset
        prev = quat[m - 1]
        torch.mul(prev[:, None, :], prev[None, :, :], out=outer_view)
        torch.addmm(position[m - 1], form, outer, out=position[m])
        torch.mm(rot, prev, out=quat[m])
    # one hemisphere, so equal rotations compare equal (q and -q are the same rotation)
    quat.mul_(1.0 - 2.0 * (quat[:, :1] < 0).to(q.dtype))
    return position, quat, axis


def grad_q_torch(
    tables: ChainTables,
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
        position ``[L, 3, N]``, quat ``[L, 4, N]``, axis ``[M, 3, N]``: from
            :func:`frames_torch`.
        grad_position ``[L, 3, N]``, grad_quat ``[L, 4, N]``: upstream gradients.

    Returns:
        ``[D, N]`` gradient with respect to ``q`` (transposed).
    """
    m = tables.num_moving
    w, v = quat[:, :1], quat[:, 1:]
    grad_w, grad_v = grad_quat[:, :1], grad_quat[:, 1:]
    terms = torch.empty(
        position.shape[0], 6, position.shape[2], dtype=position.dtype, device=position.device
    )
    torch.sub(w * grad_v, grad_w * v, out=terms[:, :3])
    terms[:, :3].add_(cross_rows(v, grad_v)).mul_(0.5)
    terms[:, :3].add_(cross_rows(position, grad_position))
    terms[:, 3:].copy_(grad_position)
    for k in range(terms.shape[0] - 2, -1, -1):  # suffix sums over the links
        terms[k].add_(terms[k + 1])
    moment, force = terms[:m, :3], terms[:m, 3:]
    lever = moment - cross_rows(position[:m], force)
    if not all(tables.revolute):
        lever = torch.where(tables.revolute_mask[:, None, None], lever, force)
    grad_values = (axis * lever).sum(1)
    return tables.jacobian_map.t() @ grad_values


def spheres_torch(tables: ChainTables, position: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
    """``[N, S, 4]`` spheres from link frames ``[N, L, 3|4]`` (autograd through them)."""
    n = position.shape[0]
    local = tables.sphere_local
    centres = []
    for frame, begin, end, form in tables.sphere_forms:
        if frame < 0:
            centres.append(local[begin:end, :3].expand(n, -1, -1))
            continue
        r = quat[:, frame]
        outer = (r[:, :, None] * r[:, None, :]).reshape(n, 16)
        rotated = (outer @ form).reshape(n, end - begin, 3)
        centres.append(position[:, frame, None, :] + rotated)
    centre = torch.cat(centres, dim=1)
    return torch.cat((centre, local[:, 3:].expand(n, -1, 1)), dim=-1)
