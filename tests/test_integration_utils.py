"""Tests of the dense seed API in ``rollout/dynamics_model/integration_utils.py``.

Every step map is compared with an explicit per-step Python loop of SPEC §2 written here, every
matrix builder with an explicit loop, and the clique autograd function with gradcheck in float64.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import forward_ad

from curobo_lite.rollout.dynamics_model import integration_utils as iu
from curobo_lite.types import JointState, TensorDeviceType

F64 = torch.float64
TA64 = TensorDeviceType(dtype=F64)
FAST = settings(max_examples=8, deadline=None)
# torch's forward-AD machinery scripts its own decompositions on first use (not this module)
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)


# ------------------------------------------------------------------------------------------------
# independent references
# ------------------------------------------------------------------------------------------------
def ref_step(u, p, v, a, dt, space):
    """SPEC §2 by an explicit loop over steps. u [B,H,D]; p, v, a [B,D]; dt: list of H floats."""
    xs, vs, as_, js = [p], [v], [a], [torch.zeros_like(p)]
    for h in range(1, u.shape[1]):
        d, uh = dt[h], u[:, h - 1]
        if space == "POSITION":
            xh = uh
            vh = (xh - xs[-1]) / d
            ah = (vh - vs[-1]) / d
            jh = (ah - as_[-1]) / d
        elif space == "VELOCITY":
            vh = uh
            xh = xs[-1] + vh * d
            ah = (vh - vs[-1]) / d
            jh = (ah - as_[-1]) / d
        elif space == "ACCELERATION":
            ah = uh
            vh = vs[-1] + ah * d
            xh = xs[-1] + vh * d
            jh = (ah - as_[-1]) / d
        else:
            jh = uh
            ah = as_[-1] + jh * d
            vh = vs[-1] + ah * d
            xh = xs[-1] + vh * d
        xs.append(xh)
        vs.append(vh)
        as_.append(ah)
        js.append(jh)
    return tuple(torch.stack(s, dim=1) for s in (xs, vs, as_, js))


def diff_loop(seq, times):
    """Apply ``y_i <- y_{i+1} - y_i`` ``times`` times (the sequence shrinks)."""
    out = list(seq)
    for _ in range(times):
        out = [out[i + 1] - out[i] for i in range(len(out) - 1)]
    return out


def random_case(seed, b, h, d, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(b, h, d, generator=g, dtype=dtype)
    p, v, a = (torch.randn(b, d, generator=g, dtype=dtype) for _ in range(3))
    dt = (0.02 + 0.3 * torch.rand(h, generator=g, dtype=dtype)).tolist()
    return u, p, v, a, dt


def clique_mats(h, dt, dtype=F64):
    ta = TensorDeviceType(dtype=dtype)
    mask, n_mask = iu.build_start_state_mask(h, ta)
    fd = iu.build_clique_matrix(h, torch.tensor(dt, dtype=dtype), dtype=dtype)[h : 2 * h]
    return mask, n_mask, fd, fd @ fd, fd @ fd @ fd


shapes = st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(1, 3))
seeds = st.integers(0, 2**31 - 1)


def close(x, y, tol=1e-10):
    torch.testing.assert_close(x, y, rtol=tol, atol=tol)


# ------------------------------------------------------------------------------------------------
# builders
# ------------------------------------------------------------------------------------------------
@FAST
@given(h=st.integers(1, 8), order=st.integers(1, 3), seed=seeds)
def test_build_fd_matrix_variants_match_difference_loops(h, order, seed):
    x = torch.randn(h, generator=torch.Generator().manual_seed(seed), dtype=F64)
    prev = torch.randn(order, dtype=F64)
    xl = x.tolist()

    fwd = iu.build_fd_matrix(h, dtype=F64, order=order)
    expected = diff_loop(xl, order) + [0.0] * min(order, h)
    close(fwd @ x, torch.tensor(expected[:h], dtype=F64))

    full = prev.tolist() + xl
    prev_mat = iu.build_fd_matrix(h, dtype=F64, order=order, PREV_STATE=True)
    assert prev_mat.shape == (h, h + order)
    close(prev_mat @ torch.tensor(full, dtype=F64), torch.tensor(diff_loop(full, order), dtype=F64))

    rank = iu.build_fd_matrix(h, dtype=F64, order=order, FULL_RANK=True)
    close(rank @ x, torch.tensor(diff_loop([0.0] * order + xl, order), dtype=F64))
    assert torch.linalg.matrix_rank(rank) == h

    shift = iu.build_fd_matrix(h, dtype=F64, order=order, SHIFT=True)
    close(shift @ x, torch.tensor(diff_loop([xl[0]] * order + xl, order), dtype=F64))
    assert torch.all(shift[0] == 0)
    one = iu.build_fd_matrix(h, dtype=F64, order=1, SHIFT=True)
    close(shift, torch.linalg.matrix_power(one, order))


def test_build_fd_matrix_rejects_combined_flags_and_bad_order():
    with pytest.raises(ValueError, match="at most one"):
        iu.build_fd_matrix(5, SHIFT=True, PREV_STATE=True)
    with pytest.raises(ValueError, match="order"):
        iu.build_fd_matrix(5, order=0)
    with pytest.raises(TypeError, match="horizon"):
        iu.build_fd_matrix(5.0)


@FAST
@given(h=st.integers(1, 8), order=st.integers(1, 3), diag=st.sampled_from([0, -1]), seed=seeds)
def test_build_int_matrix_matches_cumsum_loop(h, order, diag, seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(h, generator=g, dtype=F64).tolist()
    dt = (0.05 + torch.rand(h, generator=g, dtype=F64)).tolist()
    for weights in (None, dt):
        y = list(u)
        for _ in range(order):
            w = weights or [1.0] * h
            y = [sum(w[j] * y[j] for j in range(h) if j <= i + diag) for i in range(h)]
        traj_dt = None if weights is None else torch.tensor(weights, dtype=F64)
        mat = iu.build_int_matrix(h, diagonal=diag, dtype=F64, order=order, traj_dt=traj_dt)
        close(mat @ torch.tensor(u, dtype=F64), torch.tensor(y, dtype=F64))


@FAST
@given(h=st.integers(1, 8), order=st.integers(1, 3))
def test_full_rank_fd_inverts_int_matrix(h, order):
    fd = iu.build_fd_matrix(h, dtype=F64, order=order, FULL_RANK=True)
    close(fd @ iu.build_int_matrix(h, dtype=F64, order=order), torch.eye(h, dtype=F64))


@FAST
@given(h=st.integers(1, 8), seed=seeds)
def test_build_clique_matrix_matches_loop(h, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(h, generator=g, dtype=F64).tolist()
    dt = (0.02 + torch.rand(h, generator=g, dtype=F64)).tolist()
    v = [0.0] + [(x[i] - x[i - 1]) / dt[i] for i in range(1, h)]
    a = [0.0] + [(v[i] - v[i - 1]) / dt[i] for i in range(1, h)]
    mat = iu.build_clique_matrix(h, torch.tensor(dt, dtype=F64), dtype=F64)
    assert mat.shape == (3 * h, h) and mat.dtype == F64
    close(mat @ torch.tensor(x, dtype=F64), torch.tensor(x + v + a, dtype=F64))


def test_build_clique_matrix_uniform_dt_equals_scaled_shift_fd():
    h, dt = 7, 0.05
    mat = iu.build_clique_matrix(h, dt, dtype=F64)
    for k in (1, 2):
        fd = iu.build_fd_matrix(h, dtype=F64, order=k, SHIFT=True) / dt**k
        close(mat[k * h : (k + 1) * h], fd)


def test_build_clique_matrix_rejects_bad_dt():
    with pytest.raises(ValueError, match="dt"):
        iu.build_clique_matrix(4, torch.tensor([0.1, 0.1, 0.0, 0.1]))
    with pytest.raises(ValueError, match="dt"):
        iu.build_clique_matrix(4, torch.tensor([0.1, float("nan"), 0.1, 0.1]))
    with pytest.raises(ValueError, match=r"shape \[4\]"):
        iu.build_clique_matrix(4, torch.ones(3))


@FAST
@given(shape=shapes, seed=seeds)
def test_start_state_mask_assembles_position_sequence(shape, seed):
    b, h, d = shape
    u, p, *_ = random_case(seed, b, h, d)
    mask, n_mask = iu.build_start_state_mask(h, TA64)
    assert mask.shape == (h, 1) and n_mask.shape == (h, h)
    x = mask * p.unsqueeze(1) + n_mask @ u
    expected = torch.stack([p] + [u[:, i - 1] for i in range(1, h)], dim=1)
    close(x, expected)


@FAST
@given(h=st.integers(2, 6), n=st.integers(1, 5), seed=seeds)
def test_sum_matrix_holds_knots(h, n, seed):
    knots = torch.randn(h, generator=torch.Generator().manual_seed(seed), dtype=F64)
    mat = iu.sum_matrix(h, n, TA64)
    expected = [knots[i].item() for i in range(h - 1) for _ in range(n)]
    close(mat @ knots, torch.tensor(expected, dtype=F64))


@FAST
@given(h=st.integers(2, 6), n=st.integers(1, 6), alpha=st.floats(-3, 3), beta=st.floats(-3, 3))
def test_interpolate_kernel_reproduces_linear_functions(h, n, alpha, beta):
    mat = iu.interpolate_kernel(h, n, TA64)
    assert mat.shape == ((h - 1) * n, h)
    knots = torch.tensor([alpha + beta * i for i in range(h)], dtype=F64)
    expected = []
    for i in range(h - 1):
        for k in range(n):
            t = k / (n - 1) if n > 1 else 0.0
            expected.append(alpha + beta * (i + t))
    close(mat @ knots, torch.tensor(expected, dtype=F64))
    close(mat.sum(dim=1), torch.ones(mat.shape[0], dtype=F64))


@FAST
@given(h=st.integers(2, 6), n=st.integers(1, 6), offset=st.integers(0, 6), beta=st.floats(-3, 3))
def test_action_interpolate_kernel_linear_then_hold(h, n, offset, beta):
    total = (h - 1) * n
    if total - offset < 2:
        with pytest.raises(ValueError, match="offset"):
            iu.action_interpolate_kernel(h, n, TA64, offset=offset)
        return
    mat = iu.action_interpolate_kernel(h, n, TA64, offset=offset)
    assert mat.shape == (total, h)
    m = total - offset
    knots = torch.tensor([1.0 + beta * i for i in range(h)], dtype=F64)
    expected = [1.0 + beta * (r * (h - 1) / (m - 1)) for r in range(m)]
    expected += [1.0 + beta * (h - 1)] * offset
    close(mat @ knots, torch.tensor(expected, dtype=F64))
    close(mat.sum(dim=1), torch.ones(total, dtype=F64))
    assert torch.all(mat >= 0)


def test_action_interpolate_kernel_default_offset():
    mat = iu.action_interpolate_kernel(4, 4, TA64)
    assert mat.shape == (12, 4)
    assert torch.all(mat[-4:, -1] == 1) and torch.all(mat[:1, 0] == 1)


@FAST
@given(steps=st.integers(1, 6), seed=seeds)
def test_tensor_linspace_matches_loop(steps, seed):
    g = torch.Generator().manual_seed(seed)
    start, end = (
        torch.randn(2, 3, generator=g, dtype=F64),
        torch.randn(2, 3, generator=g, dtype=F64),
    )
    out = iu.tensor_linspace(start, end, steps=steps)
    assert out.shape == (2, 3, steps)
    for k in range(steps):
        close(out[..., k], start + (k + 1) / steps * (end - start))
    close(out[..., -1], end)


# ------------------------------------------------------------------------------------------------
# dense steps on concatenated state tensors
# ------------------------------------------------------------------------------------------------
STEPS = {
    "ACCELERATION": iu.tensor_step_acc,
    "JERK": iu.tensor_step_jerk,
    "VELOCITY": iu.tensor_step_vel,
}


@FAST
@given(
    shape=shapes,
    seed=seeds,
    space=st.sampled_from(sorted(STEPS)),
    use_fd=st.booleans(),
    width=st.sampled_from([3, 4, 5]),
)
def test_tensor_steps_match_reference_loop(shape, seed, space, use_fd, width):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    state = torch.cat((p, v, a), dim=-1)
    state_seq = torch.full((b, h, width * d), 7.0, dtype=F64)
    fd = iu.build_fd_matrix(h, dtype=F64, order=1, SHIFT=True) if use_fd else None
    out = STEPS[space](
        state, u, state_seq, torch.tensor(dt, dtype=F64), d, iu.build_int_matrix(h, dtype=F64), fd
    )
    assert out is state_seq
    ref = ref_step(u, p, v, a, dt, space)
    for k in range(min(width, 4)):
        close(out[..., k * d : (k + 1) * d], ref[k])
    if width == 5:
        assert torch.all(out[..., 4 * d :] == 7.0)


@pytest.mark.parametrize("space", sorted(STEPS))
def test_tensor_steps_scalar_dt_float32(space):
    b, h, d, dt = 2, 6, 3, 0.1
    u, p, v, a, _ = random_case(3, b, h, d, dtype=torch.float32)
    state_seq = torch.zeros(b, h, 4 * d)
    out = STEPS[space](torch.cat((p, v, a), -1), u, state_seq, dt, d, iu.build_int_matrix(h), None)
    ref = ref_step(u.double(), p.double(), v.double(), a.double(), [dt] * h, space)
    torch.testing.assert_close(out.double(), torch.cat(ref, dim=-1), rtol=1e-4, atol=1e-3)


def test_tensor_step_acc_last_action_unused():
    b, h, d = 2, 5, 2
    u, p, v, a, dt = random_case(1, b, h, d)
    u.requires_grad_(True)
    out = iu.tensor_step_acc(
        torch.cat((p, v, a), -1),
        u,
        torch.zeros(b, h, 4 * d, dtype=F64),
        torch.tensor(dt, dtype=F64),
        d,
        iu.build_int_matrix(h, dtype=F64),
    )
    out.square().sum().backward()
    assert torch.all(u.grad[:, -1] == 0) and torch.any(u.grad[:, :-1] != 0)


def test_tensor_step_rejects_bad_inputs():
    b, h, d = 2, 5, 3
    u, p, v, a, dt = random_case(0, b, h, d)
    state, seq = torch.cat((p, v, a), -1), torch.zeros(b, h, 3 * d, dtype=F64)
    mat, dtt = iu.build_int_matrix(h, dtype=F64), torch.tensor(dt, dtype=F64)
    with pytest.raises(ValueError, match="act"):
        iu.tensor_step_acc(state, u, seq, dtt, d + 1, mat)
    with pytest.raises(ValueError, match="state_seq"):
        iu.tensor_step_acc(state, u, seq[..., :-1], dtt, d, mat)
    with pytest.raises(TypeError, match="state"):
        iu.tensor_step_acc(state.float(), u, seq, dtt, d, mat)
    with pytest.raises(ValueError, match="dt_h"):
        iu.tensor_step_acc(state, u, seq, -dtt, d, mat)
    with pytest.raises(ValueError, match="integrate_matrix"):
        iu.tensor_step_vel(state, u, seq, dtt, d, mat[:-1], None)
    before = seq.clone()
    with pytest.raises(ValueError, match="fd_matrix"):
        iu.tensor_step_vel(state, u, seq, dtt, d, mat, mat[1:])
    assert torch.equal(seq, before)


# ------------------------------------------------------------------------------------------------
# Euler helpers and JointState steps
# ------------------------------------------------------------------------------------------------
@FAST
@given(shape=shapes, seed=seeds)
def test_euler_integrate_matches_loop(shape, seed):
    b, h, d = shape
    u, p, _, _, dt = random_case(seed, b, h, d)
    expected = torch.stack(
        [p + sum(dt[j] * u[:, j] for j in range(i + 1)) for i in range(h)], dim=1
    )
    mat = iu.build_int_matrix(h, dtype=F64)
    dtt = torch.tensor(dt, dtype=F64)
    close(iu.euler_integrate(p, u, torch.diag(dtt), mat), expected)
    close(iu.euler_integrate(p, u, dtt, mat), expected)


@FAST
@given(shape=shapes, seed=seeds, diag_form=st.booleans())
def test_step_acc_semi_euler_matches_reference(shape, seed, diag_form):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    dtt = torch.tensor(dt, dtype=F64)
    diag_dt = torch.diag(dtt) if diag_form else dtt
    out = iu.step_acc_semi_euler(
        torch.cat((p, v, a), -1), u, diag_dt, d, iu.build_int_matrix(h, dtype=F64)
    )
    ref = ref_step(u, p, v, a, dt, "ACCELERATION")
    close(out, torch.cat(ref[:3], dim=-1))


@FAST
@given(shape=shapes, seed=seeds, separate_pos=st.booleans())
def test_tensor_step_acc_semi_euler_matches_reference(shape, seed, separate_pos):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    mat = iu.build_int_matrix(h, dtype=F64)
    seq = JointState.zeros((b, h, d), TA64)
    out = iu.tensor_step_acc_semi_euler(
        JointState(p, v, a),
        u,
        seq,
        torch.diag(torch.tensor(dt, dtype=F64)),
        mat,
        mat.clone() if separate_pos else None,
    )
    assert out is seq
    ref = ref_step(u, p, v, a, dt, "ACCELERATION")
    for field, expected in zip(("position", "velocity", "acceleration", "jerk"), ref, strict=True):
        close(getattr(out, field), expected)


@FAST
@given(shape=shapes, seed=seeds)
def test_tensor_step_pos_matches_reference(shape, seed):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    fd = iu.build_clique_matrix(h, torch.tensor(dt, dtype=F64), dtype=F64)[h : 2 * h]
    out = iu.tensor_step_pos(JointState(p, v, a), u, JointState.zeros((b, h, d), TA64), fd)
    ref = ref_step(u, p, v, a, dt, "POSITION")
    for field, expected in zip(("position", "velocity", "acceleration", "jerk"), ref, strict=True):
        close(getattr(out, field), expected)


def test_tensor_step_pos_ik_teleports():
    u = torch.randn(3, 4, 2, dtype=F64)
    seq = JointState(torch.ones(3, 4, 2, dtype=F64), torch.ones(3, 4, 2, dtype=F64))
    out = iu.tensor_step_pos_ik(u, seq)
    assert torch.equal(out.position, u)
    for field in ("velocity", "acceleration", "jerk"):
        assert torch.all(getattr(out, field) == 0)
    with pytest.raises(ValueError, match="state_seq.position"):
        iu.tensor_step_pos_ik(u, JointState.zeros((3, 5, 2), TA64))


# ------------------------------------------------------------------------------------------------
# POSITION clique
# ------------------------------------------------------------------------------------------------
@FAST
@given(shape=shapes, seed=seeds)
def test_clique_forward_matches_reference_at_rest(shape, seed):
    b, h, d = shape
    u, p, _, _, dt = random_case(seed, b, h, d)
    mats = clique_mats(h, dt)
    zeros = torch.zeros_like(p)
    ref = ref_step(u, p, zeros, zeros, dt, "POSITION")
    out = iu.jit_tensor_step_pos_clique(u, p, *mats)
    out_c = iu.jit_tensor_step_pos_clique_contiguous(u.transpose(1, 2).contiguous(), p, *mats)
    out_f = iu.CliqueTensorStep.apply(u, p, *mats)
    for k in range(4):
        close(out[k], ref[k])
        close(out_c[k].transpose(1, 2), ref[k])
        close(out_f[k], ref[k])
    seq = iu.tensor_step_pos_clique(
        JointState(p, torch.randn_like(p)),
        u,
        JointState.zeros((b, h, d), TA64),
        list(mats[:2]),
        list(mats[2:]),
    )
    for field, expected in zip(("position", "velocity", "acceleration", "jerk"), ref, strict=True):
        close(getattr(seq, field), expected)


@FAST
@given(shape=shapes, seed=seeds, drop=st.integers(0, 3))
def test_clique_backward_is_exact_transpose(shape, seed, drop):
    b, h, d = shape
    u, p, _, _, dt = random_case(seed, b, h, d)
    mats = clique_mats(h, dt)
    g = torch.Generator().manual_seed(seed + 1)
    grads = [torch.randn(b, h, d, generator=g, dtype=F64) for _ in range(4)]
    grads[drop] = None  # one output unused: its gradient arrives as None
    u_req = u.clone().requires_grad_(True)
    zeros = torch.zeros_like(p)
    ref = ref_step(u_req, p, zeros, zeros, dt, "POSITION")
    loss = sum((r * gr).sum() for r, gr in zip(ref, grads, strict=True) if gr is not None)
    # with H = 1 nothing depends on u: the 0 * sum keeps the graph connected (gradient zero)
    (expected,) = torch.autograd.grad(loss + 0.0 * u_req.sum(), u_req)
    out = iu.jit_backward_pos_clique(*grads, *mats[1:])
    close(out, expected)
    assert torch.all(out[:, -1] == 0)
    grads_c = [None if gr is None else gr.transpose(1, 2) for gr in grads]
    close(iu.jit_backward_pos_clique_contiguous(*grads_c, *mats[1:]).transpose(1, 2), expected)
    # adjoint identity <J u, g> = <u, J^T g>
    fwd = iu.jit_tensor_step_pos_clique(u, torch.zeros_like(p), *mats)
    lhs = sum((f * gr).sum() for f, gr in zip(fwd, grads, strict=True) if gr is not None)
    assert math.isclose(lhs.item(), (u * out).sum().item(), rel_tol=1e-9, abs_tol=1e-9)


def test_jit_backward_rejects_all_none():
    mats = clique_mats(4, [0.1] * 4)
    with pytest.raises(ValueError, match="at least one"):
        iu.jit_backward_pos_clique(None, None, None, None, *mats[1:])


@pytest.mark.parametrize("h", [1, 2, 5])
def test_clique_gradcheck_and_gradgradcheck(h):
    b, d = 2, 2
    u, p, _, _, dt = random_case(h, b, h, d)
    mats = clique_mats(h, dt)
    u.requires_grad_(True)
    p.requires_grad_(True)

    def fn(u_, p_):
        return iu.CliqueTensorStep.apply(u_, p_, *mats)

    assert torch.autograd.gradcheck(fn, (u, p), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(fn, (u, p))


def test_clique_needs_input_grad_and_materialize_false():
    b, h, d = 3, 6, 2
    u, p, _, _, dt = random_case(7, b, h, d)
    mats = clique_mats(h, dt)
    u.requires_grad_(True)
    pos, vel, acc, jerk = iu.CliqueTensorStep.apply(u, p, *mats)
    acc.square().sum().backward()  # pos, vel and jerk gradients arrive as None
    u_ref = u.detach().clone().requires_grad_(True)
    zeros = torch.zeros_like(p)
    ref_step(u_ref, p, zeros, zeros, dt, "POSITION")[2].square().sum().backward()
    close(u.grad, u_ref.grad)
    assert p.grad is None

    p.requires_grad_(True)
    u.grad = None
    pos, *_ = iu.CliqueTensorStep.apply(u, p, *mats)
    pos.sum().backward()
    close(p.grad, torch.ones_like(p))  # only x_0 depends on p in position
    assert torch.all(u.grad[:, -1] == 0) and torch.all(u.grad[:, :-1] == 1)


@FAST
@given(shape=shapes, seed=seeds)
def test_clique_jvp_is_map_of_tangents(shape, seed):
    b, h, d = shape
    u, p, _, _, dt = random_case(seed, b, h, d)
    mats = clique_mats(h, dt)
    u_t, p_t = torch.randn_like(u), torch.randn_like(p)
    with forward_ad.dual_level():
        out = iu.CliqueTensorStep.apply(
            forward_ad.make_dual(u, u_t), forward_ad.make_dual(p, p_t), *mats
        )
        tangents = [forward_ad.unpack_dual(o).tangent for o in out]
        only_u = iu.CliqueTensorStep.apply(forward_ad.make_dual(u, u_t), p, *mats)
        tangents_u = [forward_ad.unpack_dual(o).tangent for o in only_u]
    zeros = torch.zeros_like(p)
    ref = ref_step(u_t, p_t, zeros, zeros, dt, "POSITION")
    ref_u = ref_step(u_t, zeros, zeros, zeros, dt, "POSITION")
    for k in range(4):
        close(tangents[k], ref[k])
        close(tangents_u[k], ref_u[k])


def test_clique_rejects_bad_matrices():
    b, h, d = 2, 5, 2
    u, p, _, _, dt = random_case(0, b, h, d)
    mask, n_mask, f1, f2, f3 = clique_mats(h, dt)
    with pytest.raises(ValueError, match="fd_2"):
        iu.jit_tensor_step_pos_clique(u, p, mask, n_mask, f1, f2[:-1], f3)
    with pytest.raises(TypeError, match="mask"):
        iu.jit_tensor_step_pos_clique(u, p, mask.float(), n_mask, f1, f2, f3)
    with pytest.raises(ValueError, match="start_position"):
        iu.jit_tensor_step_pos_clique(u, p[:1], mask, n_mask, f1, f2, f3)
    with pytest.raises(ValueError, match="fd_matrix"):
        iu.tensor_step_pos_clique(
            JointState(p), u, JointState.zeros((b, h, d), TA64), [mask, n_mask], [f1, f2]
        )
