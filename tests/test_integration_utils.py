"""Property tests of the pure-PyTorch seed API in ``rollout/dynamics_model/integration_utils.py``.

These functions reproduce cuRobo 0.7.8 (``test_integration_utils_golden.py`` compares them with
cuRobo's own outputs). Here every builder and dense step is checked against a loop written from the
math of cuRobo's convention, with the recipe that turns it into SPEC §2 (an explicit per-step loop,
``ref_step``) where there is one; the clique autograd function is checked against SPEC §2 for a
start at rest, with gradcheck in float64.
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
# matrix builders: cuRobo 0.7.8's conventions, each checked against a loop written from its math
# ------------------------------------------------------------------------------------------------
def fwd_diff(y):
    """``y_i <- y_{i+1} - y_i``, last entry 0 (one application of cuRobo's forward difference)."""
    return [y[i + 1] - y[i] for i in range(len(y) - 1)] + [0.0] * min(1, len(y))


def bwd_diff(y):
    """``y_i <- y_i - y_{i-1}``, first entry 0 (one application of the SHIFT difference)."""
    return [0.0] * min(1, len(y)) + [y[i] - y[i - 1] for i in range(1, len(y))]


def repeat(fn, y, times):
    for _ in range(max(times, 1)):
        y = fn(y)
    return y


@FAST
@given(h=st.integers(0, 8), order=st.integers(0, 3), seed=seeds)
def test_build_fd_matrix_modes_match_difference_loops(h, order, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(h, generator=g, dtype=F64)
    xl = x.tolist()
    fwd = iu.build_fd_matrix(h, dtype=F64, order=order)
    assert fwd.shape == (h, h)
    close(fwd @ x, torch.tensor(repeat(fwd_diff, xl, order), dtype=F64))
    shift = iu.build_fd_matrix(h, dtype=F64, order=order, SHIFT=True)
    close(shift @ x, torch.tensor(repeat(bwd_diff, xl, order), dtype=F64))

    full = torch.randn(h + order, generator=g, dtype=F64)
    prev = iu.build_fd_matrix(h, dtype=F64, order=order, PREV_STATE=True)
    assert prev.shape == (h, h + order)
    expected = [-y for y in repeat(fwd_diff, full.tolist(), order)[:h]]
    close(prev @ full, torch.tensor(expected, dtype=F64))
    # PREV_STATE wins over the other flags, FULL_RANK over SHIFT
    close(iu.build_fd_matrix(h, dtype=F64, order=order, PREV_STATE=True, FULL_RANK=True), prev)
    close(iu.build_fd_matrix(h, dtype=F64, order=order, PREV_STATE=True, SHIFT=True), prev)


def test_build_fd_matrix_prev_state_sign_and_truncated_rows():
    prev = iu.build_fd_matrix(3, dtype=F64, order=1, PREV_STATE=True)
    close(prev, torch.tensor([[1.0, -1, 0, 0], [0, 1, -1, 0], [0, 0, 1, -1]], dtype=F64))
    # default order 2: the last rows are truncated differences, not zero
    fd2 = iu.build_fd_matrix(4, dtype=F64, order=2)
    close(fd2[2], torch.tensor([0.0, 0, 1, -1], dtype=F64))
    assert torch.all(fd2[3] == 0)


@pytest.mark.parametrize("h", [3, 5, 7, 9])
def test_build_fd_matrix_full_rank_rows(h):
    m = h // 2
    x = torch.randn(h, dtype=F64)
    expected = [
        x[i] - x[i + 1] if i < m else (x[m + 1] - x[m - 1] if i == m else x[i] - x[i - 1])
        for i in range(h)
    ]
    for order in (1, 3):
        mat = iu.build_fd_matrix(h, dtype=F64, order=order, FULL_RANK=True)
        close(mat @ x, torch.stack(expected))
        close(iu.build_fd_matrix(h, dtype=F64, order=order, FULL_RANK=True, SHIFT=True), mat)


@pytest.mark.parametrize("h", [0, 1, 2, 4, 6])
def test_build_fd_matrix_full_rank_needs_odd_horizon(h):
    with pytest.raises(ValueError, match="horizon"):
        iu.build_fd_matrix(h, FULL_RANK=True)


def test_build_fd_matrix_rejects_bad_types():
    with pytest.raises(TypeError, match="horizon"):
        iu.build_fd_matrix(5.0)
    with pytest.raises(TypeError, match="order"):
        iu.build_fd_matrix(5, order=1.5)
    with pytest.raises(ValueError, match="horizon"):
        iu.build_fd_matrix(-2)


@FAST
@given(h=st.integers(1, 8), order=st.integers(0, 3), diag=st.sampled_from([0, -1, 1]), seed=seeds)
def test_build_int_matrix_matches_cumsum_loop(h, order, diag, seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(h, generator=g, dtype=F64).tolist()
    dt = (torch.rand(h, generator=g, dtype=F64) - 0.2).tolist()  # any values: nothing is inverted
    for weights in (None, dt):
        y = list(u)
        for _ in range(order):
            w = weights or [1.0] * h
            y = [sum(w[j] * y[j] for j in range(h) if j <= i + diag) for i in range(h)]
        traj_dt = None if weights is None else torch.tensor(weights, dtype=F64)
        mat = iu.build_int_matrix(h, diagonal=diag, dtype=F64, order=order, traj_dt=traj_dt)
        close(mat @ torch.tensor(u, dtype=F64), torch.tensor(y, dtype=F64))


@FAST
@given(h=st.integers(1, 8), seed=seeds)
def test_build_clique_matrix_blocks(h, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(h, generator=g, dtype=F64).tolist()
    dt = (0.02 + torch.rand(h, generator=g, dtype=F64)).tolist()
    shifted = [0.0] + x[:-1]
    diff = [0.0] + [x[i] - x[i - 1] for i in range(1, h)]
    vel = [diff[i] / dt[i] for i in range(h)]
    third = [diff[i] / dt[i] ** 2 for i in range(h)]
    mat = iu.build_clique_matrix(h, torch.tensor(dt, dtype=F64), dtype=F64)
    assert mat.shape == (3 * h, h) and mat.dtype == F64
    close(mat @ torch.tensor(x, dtype=F64), torch.tensor(shifted + vel + third, dtype=F64))
    # scalar dt (an extension) is the uniform vector
    close(
        iu.build_clique_matrix(h, 0.1, dtype=F64),
        iu.build_clique_matrix(h, torch.full((h,), 0.1, dtype=F64), dtype=F64),
    )


def test_build_clique_matrix_rejects_bad_dt():
    with pytest.raises(ValueError, match="dt"):
        iu.build_clique_matrix(4, torch.tensor([0.1, 0.1, 0.0, 0.1]))
    with pytest.raises(ValueError, match="dt"):
        iu.build_clique_matrix(4, torch.tensor([0.1, float("nan"), 0.1, 0.1]))
    with pytest.raises(ValueError, match=r"\[4\]"):
        iu.build_clique_matrix(4, torch.ones(3))
    # negative steps are numbers to cuRobo: accepted
    assert torch.isfinite(iu.build_clique_matrix(3, -torch.ones(3))).all()


@FAST
@given(shape=shapes, seed=seeds)
def test_start_state_mask_assembles_position_sequence(shape, seed):
    b, h, d = shape
    u, p, *_ = random_case(seed, b, h, d)
    mask, n_mask = iu.build_start_state_mask(h, TA64)
    assert mask.shape == (h, 1) and n_mask.shape == (h, h)
    x = mask @ p.unsqueeze(1) + n_mask @ u
    expected = torch.stack([p] + [u[:, i - 1] for i in range(1, h)], dim=1)
    close(x, expected)


@FAST
@given(h=st.integers(1, 6), n=st.integers(0, 5), seed=seeds)
def test_sum_matrix_holds_knots(h, n, seed):
    knots = torch.randn(h, generator=torch.Generator().manual_seed(seed), dtype=F64)
    mat = iu.sum_matrix(h, n, TA64)
    assert mat.shape == ((h - 1) * n, h)
    expected = [knots[i].item() for i in range(h - 1) for _ in range(n)]
    close(mat @ knots, torch.tensor(expected, dtype=F64).reshape(-1))


@FAST
@given(h=st.integers(2, 6), n=st.integers(2, 6), alpha=st.floats(-3, 3), beta=st.floats(-3, 3))
def test_interpolate_kernel_reproduces_linear_functions(h, n, alpha, beta):
    mat = iu.interpolate_kernel(h, n, TA64)
    assert mat.shape == ((h - 1) * n, h)
    knots = torch.tensor([alpha + beta * i for i in range(h)], dtype=F64)
    expected = [alpha + beta * (i + k / (n - 1)) for i in range(h - 1) for k in range(n)]
    close(mat @ knots, torch.tensor(expected, dtype=F64))
    close(mat.sum(dim=1), torch.ones(mat.shape[0], dtype=F64))


def test_interpolate_kernel_one_step_is_nan_in_curobo():
    with pytest.raises(ValueError, match="int_steps"):
        iu.interpolate_kernel(3, 1, TA64)
    assert iu.interpolate_kernel(1, 1, TA64).shape == (0, 1)


@FAST
@given(h=st.integers(2, 6), n=st.integers(1, 8), offset=st.integers(0, 8))
def test_action_interpolate_kernel_matches_loop(h, n, offset):
    m = n - offset
    if m < 0:
        return  # shapes cuRobo mostly rejects; the golden test covers them
    mat = iu.action_interpolate_kernel(h, n, TA64, offset=offset)
    expected = torch.zeros((h - 1) * n, h, dtype=F64)
    for i in range(h - 1):
        for k in range(m):
            expected[i * n + k, i] = (m - 1 - k) / m
            expected[i * n + k, i + 1] = (k + 1) / m
    # cuRobo: column 1 of the last `offset` rows, whatever h; offset 0 means every row ([-0:])
    expected[(expected.shape[0] - offset if offset else 0) :, 1] = 1.0
    close(mat, expected)


def test_action_interpolate_kernel_rejects_what_curobo_rejects():
    with pytest.raises(ValueError, match="h"):
        iu.action_interpolate_kernel(1, 5, TA64)
    with pytest.raises(ValueError, match="action_interpolate_kernel"):
        iu.action_interpolate_kernel(3, 5, TA64, offset=-1)


@FAST
@given(steps=st.integers(1, 6), seed=seeds)
def test_tensor_linspace_along_trailing_unit_dim(steps, seed):
    g = torch.Generator().manual_seed(seed)
    start, end = (torch.randn(2, 3, 1, generator=g, dtype=F64) for _ in range(2))
    out = iu.tensor_linspace(start, end, steps=steps)
    assert out.shape == (2, 3, steps)
    for k in range(steps):
        close(out[..., k], (start + (k + 1) / steps * (end - start))[..., 0])
    close(out[..., -1], end[..., 0])
    with pytest.raises(ValueError, match="tensor_linspace"):
        iu.tensor_linspace(start[..., 0], end[..., 0], steps=4)  # last dim 3 vs 4 steps


# ------------------------------------------------------------------------------------------------
# dense steps: cuRobo 0.7.8's conventions (no shift, dt only through the matrices)
# ------------------------------------------------------------------------------------------------
def matvec(mat, seq):
    """``(mat @ seq)`` for seq ``[B, H, D]`` by an explicit loop over rows."""
    h = mat.shape[0]
    return torch.stack([sum(mat[i, j] * seq[:, j] for j in range(h)) for i in range(h)], dim=1)


def spec_integrator(dt):
    """dt-weighted inclusive sum that skips index 0: with it cuRobo's integrating functions give
    SPEC §2 when fed ``[start, u_0, ..., u_{H-2}]``."""
    w = torch.tensor([0.0] + list(dt[1:]), dtype=F64)
    return iu.build_int_matrix(len(dt), dtype=F64, traj_dt=w)


def shifted(first, u):
    return torch.cat((first.unsqueeze(1), u[:, :-1]), dim=1)


@FAST
@given(shape=shapes, seed=seeds)
def test_tensor_step_acc_convention(shape, seed):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    mat = torch.randn(h, h, dtype=F64)
    state = torch.cat((p, v, a), -1).unsqueeze(1)  # cuRobo's [B, 1, 3D]
    seq = torch.full((b, h, 4 * d), 7.0, dtype=F64)
    out = iu.tensor_step_acc(state, u, seq, None, d, mat)  # dt_h ignored
    assert out is seq
    vel = v.unsqueeze(1) + matvec(mat, u)
    close(out[..., :d], p.unsqueeze(1) + matvec(mat, vel))
    close(out[..., d : 2 * d], vel)
    close(out[..., 2 * d : 3 * d], u)
    assert torch.all(out[..., 3 * d :] == 7.0)
    # fed the shifted accelerations and a dt-weighted integrator it is SPEC §2 ACCELERATION
    ref = ref_step(u, p, v, a, dt, "ACCELERATION")
    out = iu.tensor_step_acc(state, shifted(a, u), seq, None, d, spec_integrator(dt))
    for k in range(3):
        close(out[..., k * d : (k + 1) * d], ref[k])


def test_tensor_step_acc_state_layouts():
    b, h, d = 3, 5, 2
    u, p, v, a, dt = random_case(0, b, h, d)
    mat = iu.build_int_matrix(h, dtype=F64)
    seq = torch.zeros(b, h, 3 * d, dtype=F64)
    with pytest.raises(ValueError, match=r"tensor_step_acc: .*state=tensor\[3, 6\]"):
        iu.tensor_step_acc(torch.cat((p, v, a), -1), u, seq, None, d, mat)  # [B, 3D], B != H
    one = iu.tensor_step_acc(torch.cat((p, v, a), -1)[:1], u[:1], seq[:1].clone(), None, d, mat)
    close(one, iu.tensor_step_acc(torch.cat((p, v, a), -1)[:1, None], u[:1], seq[:1], None, d, mat))


@FAST
@given(h=st.integers(1, 6), d=st.integers(1, 3), seed=seeds)
def test_tensor_step_jerk_convention(h, d, seed):
    u, p, v, a, dt = random_case(seed, 1, h, d)
    mat = torch.randn(h, h, dtype=F64)
    dtt = torch.tensor(dt, dtype=F64)
    seq = torch.full((1, h, 4 * d), 7.0, dtype=F64)
    out = iu.tensor_step_jerk(torch.cat((p, v, a), -1), u, seq, dtt, d, mat)
    acc = a.unsqueeze(1) + matvec(mat, dtt.view(1, -1, 1) * u)
    vel = v.unsqueeze(1) + matvec(mat, dtt.view(1, -1, 1) * acc)
    pos = p.unsqueeze(1) + matvec(mat, dtt.view(1, -1, 1) * vel)
    close(out[..., : 3 * d], torch.cat((pos, vel, acc), -1))
    assert torch.all(out[..., 3 * d :] == 7.0)
    # fed the shifted jerks and a strictly-after-0 integrator it is SPEC §2 JERK
    ref = ref_step(u, p, v, a, dt, "JERK")
    lower = iu.build_int_matrix(h, dtype=F64)
    lower[:, 0] = 0.0  # index 0 is never integrated
    out = iu.tensor_step_jerk(
        torch.cat((p, v, a), -1), shifted(torch.zeros_like(a), u), seq, dtt, d, lower
    )
    for k in range(3):
        close(out[..., k * d : (k + 1) * d], ref[k])


@FAST
@given(shape=shapes, seed=seeds)
def test_tensor_step_vel_convention(shape, seed):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    mat, fd = torch.randn(h, h, dtype=F64), torch.randn(h, h, dtype=F64)
    dtt = torch.tensor(dt, dtype=F64)
    state = torch.cat((p, v, a), -1).unsqueeze(1)
    seq = torch.full((b, h, 4 * d), 7.0, dtype=F64)
    out = iu.tensor_step_vel(state, u, seq, dtt, d, mat, fd)
    vel = shifted(v, u)
    close(out[..., d : 2 * d], vel)
    close(out[..., :d], p.unsqueeze(1) + matvec(mat, vel))
    rates = matvec(fd, vel) / dtt.view(1, -1, 1)
    close(out[..., 2 * d : 3 * d], torch.cat((a.unsqueeze(1), rates[:, :-1]), dim=1))
    assert torch.all(out[..., 3 * d :] == 7.0)


def test_tensor_step_vel_zero_dt():
    b, h, d = 2, 5, 2
    u, p, v, a, dt = random_case(1, b, h, d)
    state = torch.cat((p, v, a), -1).unsqueeze(1)
    mat = iu.build_int_matrix(h, dtype=F64)
    fd = iu.build_fd_matrix(h, dtype=F64)
    dtt = torch.tensor(dt, dtype=F64)
    seq = torch.zeros(b, h, 3 * d, dtype=F64)
    with pytest.raises(ValueError, match="dt_h"):
        iu.tensor_step_vel(state, u, seq, dtt.index_fill(0, torch.tensor([1]), 0.0), d, mat, fd)
    # the last entry never reaches the output in cuRobo: no NaN, accepted
    out = iu.tensor_step_vel(
        state, u, seq, dtt.index_fill(0, torch.tensor([h - 1]), 0.0), d, mat, fd
    )
    assert torch.isfinite(out).all()


@FAST
@given(shape=shapes, seed=seeds)
def test_tensor_step_pos_convention(shape, seed):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    fd = torch.randn(h, h, dtype=F64)
    seq = JointState(*(torch.full((b, h, d), 7.0, dtype=F64) for _ in range(4)))
    out = iu.tensor_step_pos(JointState(p, v, a), u, seq, fd)
    assert out is seq
    pos = shifted(p, u)
    vel = torch.cat((v.unsqueeze(1), matvec(fd, pos)[:, :-1]), dim=1)
    acc = torch.cat((a.unsqueeze(1), matvec(fd, vel)[:, :-1]), dim=1)
    close(out.position, pos)
    close(out.velocity, vel)
    close(out.acceleration, acc)
    assert torch.all(out.jerk == 7.0)


def test_tensor_step_pos_with_curobo_fd_matrix_lags_by_one_step():
    """cuRobo's TensorStepPosition passes ``diag(1/dt) @ build_fd_matrix(H)``: v_h uses dt_{h-1}."""
    b, h, d = 2, 6, 2
    u, p, v, a, dt = random_case(4, b, h, d)
    dtt = torch.tensor(dt, dtype=F64)
    fd = torch.diag(1 / dtt) @ iu.build_fd_matrix(h, dtype=F64)
    out = iu.tensor_step_pos(JointState(p, v, a), u, JointState.zeros((b, h, d), TA64), fd)
    x = out.position
    for i in range(1, h):
        close(out.velocity[:, i], (x[:, i] - x[:, i - 1]) / dt[i - 1])


def test_tensor_step_pos_ik_sets_position_only():
    u = torch.randn(3, 4, 2, dtype=F64)
    seq = JointState(*(torch.full((3, 4, 2), 2.0, dtype=F64) for _ in range(4)))
    out = iu.tensor_step_pos_ik(u, seq)
    assert out is seq and out.position is u
    for field in ("velocity", "acceleration", "jerk"):
        assert torch.all(getattr(out, field) == 2.0)


@FAST
@given(shape=shapes, seed=seeds)
def test_euler_integrate_ignores_diag_dt(shape, seed):
    b, h, d = shape
    u, p, _, _, dt = random_case(seed, b, h, d)
    mat = torch.randn(h, h, dtype=F64)
    expected = p.unsqueeze(1) + matvec(mat, u)
    close(
        iu.euler_integrate(p.unsqueeze(1), u, torch.diag(torch.tensor(dt, dtype=F64)), mat),
        expected,
    )
    close(iu.euler_integrate(p.unsqueeze(1), u, None, mat), expected)


@FAST
@given(shape=shapes, seed=seeds)
def test_step_acc_semi_euler_convention(shape, seed):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    mat = torch.randn(h, h, dtype=F64)
    out = iu.step_acc_semi_euler(torch.cat((p, v, a), -1).unsqueeze(1), u, None, d, mat)
    vel = v.unsqueeze(1) + matvec(mat, u)
    close(out, torch.cat((p.unsqueeze(1) + matvec(mat, vel), vel, u), -1))
    # with the shifted actions and the dt-weighted integrator: SPEC §2 ACCELERATION
    ref = ref_step(u, p, v, a, dt, "ACCELERATION")
    state = torch.cat((p, v, a), -1).unsqueeze(1)
    out = iu.step_acc_semi_euler(state, shifted(a, u), None, d, spec_integrator(dt))
    close(out, torch.cat(ref[:3], dim=-1))


@FAST
@given(shape=shapes, seed=seeds, separate_pos=st.booleans())
def test_tensor_step_acc_semi_euler_convention(shape, seed, separate_pos):
    b, h, d = shape
    u, p, v, a, dt = random_case(seed, b, h, d)
    mat = torch.randn(h, h, dtype=F64)
    mat_pos = torch.randn(h, h, dtype=F64) if separate_pos else None
    seq = JointState(*(torch.full((b, h, d), 7.0, dtype=F64) for _ in range(4)))
    out = iu.tensor_step_acc_semi_euler(JointState(p, v, a), u, seq, None, mat, mat_pos)
    assert out is seq
    vel = v.unsqueeze(1) + matvec(mat, u)
    close(out.acceleration, u)
    close(out.velocity, vel)
    close(out.position, p.unsqueeze(1) + matvec(mat if mat_pos is None else mat_pos, vel))
    assert torch.all(out.jerk == 7.0)


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
    out_c = iu.jit_tensor_step_pos_clique_contiguous(u, p, *mats)  # [B, H, D] in and out
    out_f = iu.CliqueTensorStep.apply(u, p, *mats)
    for k in range(4):
        close(out[k], ref[k])
        close(out_c[k], ref[k])
        assert out_c[k].is_contiguous()
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
    close(iu.jit_backward_pos_clique_contiguous(*grads, *mats[1:]), expected)
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
        iu.jit_tensor_step_pos_clique(u, p, mask, n_mask, f1, f2[:, :-1], f3)
    with pytest.raises(ValueError, match="mask"):
        iu.jit_tensor_step_pos_clique(u, p, mask.float(), n_mask, f1, f2, f3)
    with pytest.raises(ValueError, match="start_position"):
        iu.jit_tensor_step_pos_clique(u, torch.cat((p, p[:1])), mask, n_mask, f1, f2, f3)
    with pytest.raises(ValueError, match="pos_act"):
        iu.jit_tensor_step_pos_clique_contiguous(u.transpose(1, 2), p, mask, n_mask, f1, f2, f3)
    # cuRobo broadcasts a single start position over the batch: so do we
    out = iu.jit_tensor_step_pos_clique(u, p[:1], mask, n_mask, f1, f2, f3)
    close(out[0][:, 0], p[:1].expand(b, d))
    with pytest.raises(ValueError, match="fd_matrix"):
        iu.tensor_step_pos_clique(
            JointState(p), u, JointState.zeros((b, h, d), TA64), [mask, n_mask], [f1, f2]
        )


# ------------------------------------------------------------------------------------------------
# the facade keeps the seed listing's names and signatures
# ------------------------------------------------------------------------------------------------
SEED_SIGNATURES = {
    "build_clique_matrix": "horizon, dt, device='cpu', dtype=torch.float32",
    "build_fd_matrix": (
        "horizon, device='cpu', dtype=torch.float32, order=1, PREV_STATE=False, "
        "FULL_RANK=False, SHIFT=False"
    ),
    "build_int_matrix": "horizon, diagonal=0, device='cpu', dtype=torch.float32, order=1, "
    "traj_dt=None",
    "build_start_state_mask": "horizon, tensor_args",
    "tensor_step_jerk": "state, act, state_seq, dt_h, n_dofs, integrate_matrix, fd_matrix=None",
    "euler_integrate": "q_0, u, diag_dt, integrate_matrix",
    "tensor_step_acc": "state, act, state_seq, dt_h, n_dofs, integrate_matrix, fd_matrix=None",
    "jit_tensor_step_pos_clique_contiguous": "pos_act, start_position, mask, n_mask, fd_1, fd_2, "
    "fd_3",
    "jit_tensor_step_pos_clique": "pos_act, start_position, mask, n_mask, fd_1, fd_2, fd_3",
    "jit_backward_pos_clique": "grad_p, grad_v, grad_a, grad_j, n_mask, fd_1, fd_2, fd_3",
    "jit_backward_pos_clique_contiguous": "grad_p, grad_v, grad_a, grad_j, n_mask, fd_1, fd_2, "
    "fd_3",
    "tensor_step_pos_clique": "state, act, state_seq, mask_matrix, fd_matrix",
    "step_acc_semi_euler": "state, act, diag_dt, n_dofs, integrate_matrix",
    "tensor_step_acc_semi_euler": "state, act, state_seq, diag_dt, integrate_matrix, "
    "integrate_matrix_pos",
    "tensor_step_vel": "state, act, state_seq, dt_h, n_dofs, integrate_matrix, fd_matrix",
    "tensor_step_pos": "state, act, state_seq, fd_matrix",
    "tensor_step_pos_ik": "act, state_seq",
    "tensor_linspace": "start_tensor, end_tensor, steps=10",
    "sum_matrix": "h, int_steps, tensor_args",
    "interpolate_kernel": "h, int_steps, tensor_args",
    "action_interpolate_kernel": "h, int_steps, tensor_args, offset=4",
}


@pytest.mark.parametrize("name", sorted(SEED_SIGNATURES))
def test_seed_function_signature(name):
    import importlib
    import inspect

    module = importlib.import_module("curobo_lite.rollout.dynamics_model.integration_utils")
    params = inspect.signature(getattr(module, name)).parameters.values()
    rendered = ", ".join(
        p.name
        if p.default is inspect.Parameter.empty
        else f"{p.name}={'torch.float32' if p.default is torch.float32 else repr(p.default)}"
        for p in params
    )
    assert rendered == SEED_SIGNATURES[name]
    assert name in module.__all__
