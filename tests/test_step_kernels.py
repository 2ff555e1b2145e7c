"""Step kernels (SPEC §2) against an independent loop reference, dense Jacobians and autograd."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from step_reference import reference_jacobian, reference_step

from curobo_lite.kernels import StepBuffers, StepMode, tensor_step

MODES = [
    ("POSITION", "BACKWARD", "POSITION_BACKWARD"),
    ("POSITION", "CENTRAL", "POSITION_CENTRAL"),
    ("POSITION", "TELEPORT", "POSITION_TELEPORT"),
    ("VELOCITY", "BACKWARD", "VELOCITY"),
    ("ACCELERATION", "BACKWARD", "ACCELERATION"),
    ("JERK", "BACKWARD", "JERK"),
]
MODE_IDS = [m[2] for m in MODES]


def random_dt(horizon: int, mode: str, generator: torch.Generator, dtype=torch.float64):
    if mode == "POSITION_CENTRAL":
        return torch.full((horizon,), 0.05, dtype=dtype)
    return (0.02 + 0.1 * torch.rand(horizon, generator=generator, dtype=torch.float64)).to(dtype)


def make_inputs(batch, horizon, dof, n_start, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    act = torch.randn(batch, horizon, dof, generator=g, dtype=torch.float64)
    starts = [torch.randn(n_start, dof, generator=g, dtype=torch.float64) for _ in range(3)]
    return [t.to(device=device, dtype=dtype) for t in (act, *starts)], g


def assert_matches_reference(outputs, reference, rtol, atol):
    for name, got, want in zip(
        ("position", "velocity", "acceleration", "jerk"), outputs, reference
    ):
        np.testing.assert_allclose(
            got.detach().cpu().double().numpy(), want, rtol=rtol, atol=atol, err_msg=name
        )


# ---------------------------------------------------------------------------------------------
# forward against the loop reference


@pytest.mark.parametrize("control_space,fd_mode,mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_forward_matches_loop_reference(control_space, fd_mode, mode, dtype, device):
    (act, p, v, a), g = make_inputs(5, 11, 3, 5, dtype, device)
    traj_dt = random_dt(11, mode, g, dtype).to(device)
    outputs = tensor_step(act, p, v, a, traj_dt, control_space, fd_mode)
    reference = reference_step(act.cpu(), p.cpu(), v.cpu(), a.cpu(), traj_dt.cpu(), mode)
    # float32: jerk divides by dt^3 (~1e4), so compare relative to the reference's scale
    tol = dict(rtol=1e-10, atol=1e-9) if dtype == torch.float64 else dict(rtol=2e-4, atol=2e-2)
    assert_matches_reference(outputs, reference, **tol)
    for out in outputs:
        assert out.shape == act.shape and out.dtype == dtype and out.device == act.device


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.integers(1, 6),
    horizon=st.integers(5, 40),
    dof=st.integers(1, 8),
    mode_index=st.integers(0, len(MODES) - 1),
    dt_seed=st.integers(0, 10_000),
    use_idx=st.booleans(),
)
def test_forward_random_shapes_and_dt(batch, horizon, dof, mode_index, dt_seed, use_idx):
    control_space, fd_mode, mode = MODES[mode_index]
    n_start = 3 if use_idx else batch
    (act, p, v, a), g = make_inputs(batch, horizon, dof, n_start, torch.float64, "cpu", dt_seed)
    traj_dt = random_dt(horizon, mode, g)
    start_idx = torch.randint(0, n_start, (batch,), generator=g) if use_idx else None
    outputs = tensor_step(act, p, v, a, traj_dt, control_space, fd_mode, start_idx=start_idx)
    reference = reference_step(act, p, v, a, traj_dt, mode, start_idx)
    assert_matches_reference(outputs, reference, rtol=1e-9, atol=1e-8)


def test_scalar_dt_equals_uniform_vector():
    (act, p, v, a), _ = make_inputs(2, 9, 2, 2, torch.float64, "cpu")
    scalar = tensor_step(act, p, v, a, 0.03, "JERK")
    vector = tensor_step(act, p, v, a, torch.full((9,), 0.03, dtype=torch.float64), "JERK")
    for s, w in zip(scalar, vector):
        torch.testing.assert_close(s, w)


def test_long_horizon_has_no_cap():
    (act, p, v, a), g = make_inputs(2, 300, 2, 2, torch.float64, "cpu")
    traj_dt = random_dt(300, "ACCELERATION", g)
    outputs = tensor_step(act, p, v, a, traj_dt, "ACCELERATION")
    assert_matches_reference(
        outputs, reference_step(act, p, v, a, traj_dt, "ACCELERATION"), rtol=1e-9, atol=1e-7
    )


def test_strided_layouts_and_buffers_are_honoured():
    (act, p, v, a), g = make_inputs(3, 8, 4, 3, torch.float64, "cpu")
    traj_dt = random_dt(8, "VELOCITY", g)
    act_dof_major = act.transpose(1, 2).contiguous().transpose(1, 2)  # non-contiguous [B,H,D]
    buffers = StepBuffers(
        *(
            torch.full((3, 4, 8), float("nan"), dtype=torch.float64).transpose(1, 2)
            for _ in range(4)
        )
    )
    outputs = tensor_step(act_dof_major, p, v, a, traj_dt, "VELOCITY", out=buffers)
    assert outputs[0].data_ptr() == buffers.position.data_ptr()
    assert_matches_reference(
        outputs, reference_step(act, p, v, a, traj_dt, "VELOCITY"), rtol=1e-10, atol=1e-9
    )


# ---------------------------------------------------------------------------------------------
# SPEC properties of CENTRAL mode


def test_central_exact_for_cubic_in_interior():
    horizon, dt = 12, 0.05
    t = torch.arange(horizon, dtype=torch.float64) * dt
    coeffs = torch.tensor([[0.3, -1.2, 0.7, 2.5], [-0.4, 0.5, -3.0, 1.1]], dtype=torch.float64)
    # coeffs[d] = (c0, c1, c2, c3): x(t) = c0 + c1 t + c2 t^2 + c3 t^3
    pos = sum(coeffs[:, k, None] * t**k for k in range(4)).T  # [H, D]
    vel = sum(k * coeffs[:, k, None] * t ** (k - 1) for k in range(1, 4)).T
    acc = (2 * coeffs[:, 2, None] + 6 * coeffs[:, 3, None] * t).T
    jerk = (6 * coeffs[:, 3, None] * torch.ones_like(t)).T
    act = torch.zeros(1, horizon, 2, dtype=torch.float64)
    act[0, :-1] = pos[1:]
    x, v, a, j = tensor_step(act, pos[:1], vel[:1], acc[:1], dt, "POSITION", "CENTRAL")
    interior = slice(2, horizon - 2)  # 2 <= h <= H-3
    torch.testing.assert_close(x[0], pos)
    torch.testing.assert_close(v[0, interior], vel[interior], rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(a[0, interior], acc[interior], rtol=1e-8, atol=1e-7)
    torch.testing.assert_close(j[0, interior], jerk[interior], rtol=1e-6, atol=1e-5)
    # index 0 reports the start state exactly
    torch.testing.assert_close(v[0, 0], vel[0])
    torch.testing.assert_close(a[0, 0], acc[0])


@pytest.mark.parametrize("control_space,fd_mode,mode", MODES[:2], ids=MODE_IDS[:2])
def test_held_at_rest_has_zero_derivatives(control_space, fd_mode, mode, device):
    start = torch.tensor([[0.4, -1.0, 2.0]], dtype=torch.float64, device=device)
    act = start[:, None, :].expand(1, 9, 3).contiguous()
    zeros = torch.zeros_like(start)
    x, v, a, j = tensor_step(act, start, zeros, zeros, 0.04, control_space, fd_mode)
    torch.testing.assert_close(x, act)
    for out in (v, a, j):
        assert torch.count_nonzero(out) == 0


# ---------------------------------------------------------------------------------------------
# backward: exact adjoint, gradcheck, gradgradcheck, jvp


@pytest.mark.parametrize("control_space,fd_mode,mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("use_idx", [False, True], ids=["direct", "start_idx"])
def test_backward_is_transpose_of_dense_jacobian(control_space, fd_mode, mode, use_idx, device):
    batch, horizon, dof, n_start = 3, 6, 2, (2 if use_idx else 3)
    (act, p, v, a), g = make_inputs(batch, horizon, dof, n_start, torch.float64, device)
    traj_dt = random_dt(horizon, mode, g).to(device)
    start_idx = torch.tensor([1, 0, 1], device=device) if use_idx else None
    jac = reference_jacobian(
        batch,
        horizon,
        dof,
        n_start,
        traj_dt.cpu(),
        mode,
        None if start_idx is None else start_idx.cpu(),
    )
    inputs = [t.clone().requires_grad_() for t in (act, p, v, a)]
    outputs = tensor_step(*inputs, traj_dt, control_space, fd_mode, start_idx=start_idx)
    grads = [torch.randn(o.shape, generator=g, dtype=torch.float64).to(device) for o in outputs]
    got = torch.autograd.grad(outputs, inputs, grads)
    want = jac.T @ np.concatenate([gr.cpu().numpy().ravel() for gr in grads])
    got_flat = np.concatenate([t.cpu().numpy().ravel() for t in got])
    np.testing.assert_allclose(got_flat, want, rtol=1e-10, atol=1e-8)
    # the last action never enters the trajectory (except in teleport mode)
    if mode != "POSITION_TELEPORT":
        assert torch.count_nonzero(got[0][:, -1]) == 0


@pytest.mark.parametrize("control_space,fd_mode,mode", MODES, ids=MODE_IDS)
def test_gradcheck_gradgradcheck_and_forward_mode(control_space, fd_mode, mode):
    (act, p, v, a), g = make_inputs(2, 6, 2, 2, torch.float64, "cpu", seed=3)
    traj_dt = random_dt(6, mode, g)
    inputs = tuple(t.requires_grad_() for t in (act, p, v, a))

    def step(*xs):
        return tensor_step(*xs, traj_dt, control_space, fd_mode)

    assert torch.autograd.gradcheck(step, inputs)
    assert torch.autograd.gradgradcheck(step, inputs)
    assert torch.autograd.gradcheck(
        step,
        inputs,
        check_forward_ad=True,
        check_backward_ad=False,
        check_undefined_grad=False,
        check_batched_grad=False,
    )


@pytest.mark.parametrize("target", ["act", "start_state"])
def test_gradcheck_each_target_with_start_idx(target):
    (act, p, v, a), g = make_inputs(3, 7, 2, 2, torch.float64, "cpu", seed=5)
    traj_dt = random_dt(7, "JERK", g)
    start_idx = torch.tensor([0, 1, 1])
    if target == "act":

        def step(x):
            return tensor_step(x, p, v, a, traj_dt, "JERK", start_idx=start_idx)

        args = (act.requires_grad_(),)
    else:

        def step(sp, sv, sa):
            return tensor_step(act, sp, sv, sa, traj_dt, "JERK", start_idx=start_idx)

        args = tuple(t.requires_grad_() for t in (p, v, a))
    assert torch.autograd.gradcheck(step, args)
    assert torch.autograd.gradgradcheck(step, args)


def test_jvp_equals_map_of_tangents():
    import torch.autograd.forward_ad as fwAD

    (act, p, v, a), g = make_inputs(2, 7, 3, 2, torch.float64, "cpu", seed=7)
    traj_dt = random_dt(7, "ACCELERATION", g)
    tangents = [torch.randn_like(t) for t in (act, p, v, a)]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip((act, p, v, a), tangents)]
        outputs = tensor_step(*duals, traj_dt, "ACCELERATION")
        jvp_out = [fwAD.unpack_dual(o).tangent for o in outputs]
    direct = reference_step(*[t.numpy() for t in tangents], traj_dt, "ACCELERATION")
    assert_matches_reference(jvp_out, direct, rtol=1e-10, atol=1e-9)


def test_unused_outputs_get_none_gradients():
    (act, p, v, a), g = make_inputs(2, 6, 2, 2, torch.float64, "cpu")
    traj_dt = random_dt(6, "POSITION_BACKWARD", g)
    act.requires_grad_()
    x, v_out, a_out, j = tensor_step(act, p, v, a, traj_dt, "POSITION")
    (grad_only_vel,) = torch.autograd.grad(v_out.square().sum(), act)
    jac = reference_jacobian(2, 6, 2, 2, traj_dt, "POSITION_BACKWARD")
    n = 2 * 6 * 2
    velocity_rows = jac[n : 2 * n, :n]
    want = velocity_rows.T @ (2 * v_out.detach().numpy().ravel())
    np.testing.assert_allclose(grad_only_vel.numpy().ravel(), want, rtol=1e-10, atol=1e-9)


def test_start_state_only_gradient_without_act_grad():
    (act, p, v, a), g = make_inputs(2, 6, 2, 2, torch.float64, "cpu")
    p.requires_grad_()
    x, *_ = tensor_step(act, p, v, a, 0.05, "VELOCITY")
    (grad_p,) = torch.autograd.grad(x.sum(), p)
    # every position of the VELOCITY rollout is p plus integrated actions: dx_h/dp = 1
    torch.testing.assert_close(grad_p, torch.full_like(p, 6.0))


# ---------------------------------------------------------------------------------------------
# bad input: clear errors, raised before any buffer is written


def _good(batch=2, horizon=6, dof=3):
    (act, p, v, a), _ = make_inputs(batch, horizon, dof, batch, torch.float32, "cpu")
    return act, p, v, a


@pytest.mark.parametrize(
    "mutate,error,words",
    [
        (lambda k: k.update(act=k["act"][0]), ValueError, ["act", "3 dims", "(6, 3)"]),
        (
            lambda k: k.update(start_position=k["start_position"][:1]),
            ValueError,
            ["start_position", "batch 2", "(1, 3)"],
        ),
        (
            lambda k: k.update(start_position=k["start_position"][:, :2]),
            ValueError,
            ["start_position", "3 dof", "(2, 2)"],
        ),
        (
            lambda k: k.update(start_velocity=k["start_velocity"][:, :2]),
            ValueError,
            ["start_velocity", "(2, 3)", "(2, 2)"],
        ),
        (
            lambda k: k.update(start_position=k["start_position"].double()),
            TypeError,
            ["start_position", "torch.float32", "torch.float64"],
        ),
        (
            lambda k: k.update(act=k["act"].half(), start_position=k["start_position"].half()),
            TypeError,
            ["act", "float16"],
        ),
        (lambda k: k.update(traj_dt=torch.full((5,), 0.1)), ValueError, ["traj_dt", "[6]", "(5,)"]),
        (
            lambda k: k.update(traj_dt=torch.tensor([0.1, 0.1, -0.1, 0.1, 0.1, 0.1])),
            ValueError,
            ["traj_dt", "positive", "-0.1", "step 2"],
        ),
        (lambda k: k.update(traj_dt=0.0), ValueError, ["traj_dt", "positive", "0.0"]),
        (
            lambda k: k.update(traj_dt=torch.full((6,), 0.1, dtype=torch.float64)),
            TypeError,
            ["traj_dt", "float32", "float64"],
        ),
        (lambda k: k.update(act=k["act"][:, :1]), ValueError, ["act", "at least 2", "horizon 1"]),
        (lambda k: k.update(control_space="TORQUE"), ValueError, ["control_space", "TORQUE"]),
        (lambda k: k.update(fd_mode="FORWARD"), ValueError, ["fd_mode", "FORWARD"]),
        (
            lambda k: k.update(start_idx=torch.tensor([0, 2])),
            ValueError,
            ["start_idx", "[0, 2)", "[0, 2]"],
        ),
        (
            lambda k: k.update(start_idx=torch.tensor([0.0, 1.0])),
            TypeError,
            ["start_idx", "integer", "float32"],
        ),
        (
            lambda k: k.update(start_idx=torch.tensor([0, 1, 1])),
            ValueError,
            ["start_idx", "[2]", "(3,)"],
        ),
        (
            lambda k: k.update(
                control_space="POSITION",
                fd_mode="CENTRAL",
                traj_dt=torch.tensor([0.1, 0.1, 0.1, 0.2, 0.1, 0.1]),
            ),
            ValueError,
            ["traj_dt", "CENTRAL", "uniform"],
        ),
        (
            lambda k: k.update(control_space="POSITION", fd_mode="CENTRAL", act=k["act"][:, :4]),
            ValueError,
            ["act", "POSITION_CENTRAL", "at least 5", "horizon 4"],
        ),
    ],
)
def test_bad_input_is_rejected_before_writing(mutate, error, words):
    act, p, v, a = _good()
    kwargs = dict(
        act=act,
        start_position=p,
        start_velocity=v,
        start_acceleration=a,
        traj_dt=0.1,
        control_space="ACCELERATION",
        fd_mode="BACKWARD",
        start_idx=None,
    )
    mutate(kwargs)
    shape = kwargs["act"].shape if kwargs["act"].ndim == 3 else act.shape
    buffers = StepBuffers(*(torch.full(shape, 7.0, dtype=torch.float32) for _ in range(4)))
    with pytest.raises(error) as info:
        tensor_step(**kwargs, out=buffers)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    for buffer in (buffers.position, buffers.velocity, buffers.acceleration, buffers.jerk):
        assert torch.all(buffer == 7.0)


def test_wrong_buffer_shape_is_rejected():
    act, p, v, a = _good()
    buffers = StepBuffers(*(torch.zeros(2, 5, 3) for _ in range(4)))
    with pytest.raises(ValueError, match="out_position.*\\(2, 6, 3\\).*\\(2, 5, 3\\)"):
        tensor_step(act, p, v, a, 0.1, "JERK", out=buffers)


def test_traj_dt_validation_notices_in_place_changes():
    act, p, v, a = _good()
    traj_dt = torch.full((6,), 0.1)
    tensor_step(act, p, v, a, traj_dt, "JERK")
    traj_dt[3] = -1.0  # bumps the version counter: the cached validation must not be reused
    with pytest.raises(ValueError, match="traj_dt"):
        tensor_step(act, p, v, a, traj_dt, "JERK")


def test_resolve_modes():
    from curobo_lite.kernels import resolve_step_mode
    from curobo_lite.types import StateType

    assert resolve_step_mode(StateType.POSITION, "central") is StepMode.POSITION_CENTRAL
    assert resolve_step_mode("velocity") is StepMode.VELOCITY
    assert resolve_step_mode("JERK", "CENTRAL") is StepMode.JERK


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    (act, p, v, a), g = make_inputs(64, 20, 7, 64, torch.float32, "cpu")
    for control_space, fd_mode, mode in MODES:
        dt = random_dt(20, mode, g, torch.float32)
        cpu = tensor_step(act, p, v, a, dt, control_space, fd_mode)
        gpu = tensor_step(*(t.cuda() for t in (act, p, v, a)), dt.cuda(), control_space, fd_mode)
        for c, d in zip(cpu, gpu):
            torch.testing.assert_close(d.cpu(), c, rtol=1e-5, atol=1e-3)


def test_reused_buffers_invalidate_stale_graphs():
    (act, p, v, a), _ = make_inputs(2, 6, 2, 2, torch.float64, "cpu")
    act.requires_grad_()
    buffers = StepBuffers.empty_like(act.detach())
    x, vel, *_ = tensor_step(act, p, v, a, 0.1, "POSITION", out=buffers)
    stale = vel.square().sum()  # saves the velocity buffer for its backward
    tensor_step(act * 2, p, v, a, 0.1, "POSITION", out=buffers)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        stale.backward()


@pytest.mark.parametrize("use_idx", [False, True], ids=["direct", "start_idx"])
def test_cpu_batch_chunking_matches_reference(monkeypatch, use_idx):
    """Large CPU launches are split over worker threads; force that path on a small batch."""
    import importlib

    launch_module = importlib.import_module("curobo_lite.kernels.launch")
    monkeypatch.setattr(launch_module, "CPU_CHUNK_MIN_ELEMENTS", 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        assert len(launch_module.cpu_row_chunks(7, 100)) == 3
        n_start = 2 if use_idx else 7
        (act, p, v, a), g = make_inputs(7, 6, 2, n_start, torch.float64, "cpu", seed=11)
        traj_dt = random_dt(6, "JERK", g)
        start_idx = torch.tensor([0, 1, 1, 0, 1, 0, 0]) if use_idx else None
        inputs = [t.clone().requires_grad_() for t in (act, p, v, a)]
        outputs = tensor_step(*inputs, traj_dt, "JERK", start_idx=start_idx)
        reference = reference_step(act, p, v, a, traj_dt, "JERK", start_idx)
        assert_matches_reference(outputs, reference, rtol=1e-10, atol=1e-9)
        grads = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in outputs]
        got = torch.autograd.grad(outputs, inputs, grads)
        jac = reference_jacobian(7, 6, 2, n_start, traj_dt, "JERK", start_idx)
        want = jac.T @ np.concatenate([gr.numpy().ravel() for gr in grads])
        got_flat = np.concatenate([t.numpy().ravel() for t in got])
        np.testing.assert_allclose(got_flat, want, rtol=1e-10, atol=1e-8)
    finally:
        torch.set_num_threads(threads)


def test_launch_descriptors_do_not_keep_tensors_alive():
    """The launch descriptor cache must not hold the tensors it describes: a held tensor is
    memory the allocator cannot reuse, and a held action gradient is one autograd copies into
    ``.grad`` instead of taking (checked here: ``.grad`` is the adjoint's own output)."""
    import gc
    import weakref

    from curobo_lite.kernels.launch import as_warp

    t = torch.randn(64, 7)
    as_warp(t)
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is None

    step_module = sys.modules["curobo_lite.kernels.tensor_step"]
    made = {}
    original = step_module.launch_adjoint

    def recording(*args, **kwargs):
        out = original(*args, **kwargs)
        made["grad_act"] = out[0].data_ptr()
        return out

    act = torch.randn(8, 16, 7, requires_grad=True)
    start = torch.randn(8, 7)
    outputs = tensor_step(act, start, None, None, 0.02, "ACCELERATION")
    step_module.launch_adjoint = recording
    try:
        torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
    finally:
        step_module.launch_adjoint = original
    assert act.grad.data_ptr() == made["grad_act"]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["f64", "f32"])
def test_cpu_row_kernels_serve_contiguous_joints_and_match_the_reference(monkeypatch, dtype):
    """On a CPU the control spaces whose step reads one action run forward and adjoint through
    the row kernels (a step's joints as one vector) when the joint axis of their tensors is
    contiguous, through the per-joint kernels otherwise; both match the loop reference and the
    transpose of its dense Jacobian, also with a start state broadcast by a zero stride and
    with some output gradients absent."""
    from curobo_lite.kernels import step_rows

    used = []
    rows_kernel = step_rows.rows_kernel
    monkeypatch.setattr(
        step_rows, "rows_kernel", lambda *args: used.append(args[:2]) or rows_kernel(*args)
    )
    tol = dict(rtol=1e-10, atol=1e-9) if dtype == torch.float64 else dict(rtol=2e-4, atol=2e-2)
    B, H = 3, 7
    for control_space, fd_mode, mode in MODES:
        rows = mode in step_rows.ROW_FORWARDS
        for dof in (1, 3, 9):
            (act, p, v, a), g = make_inputs(B, H, dof, 1, torch.float64, "cpu", seed=dof)
            traj_dt = random_dt(H, mode, g)
            reference = reference_step(act, *(t.expand(B, dof) for t in (p, v, a)), traj_dt, mode)
            jac = reference_jacobian(B, H, dof, 1, traj_dt, mode, torch.zeros(B, dtype=torch.long))
            weights = [torch.randn(B, H, dof, generator=g, dtype=torch.float64) for _ in range(4)]
            weights[2] = None  # an output without a gradient
            for layout in ("rows", "dof_major"):
                x = act.to(dtype)
                if layout == "dof_major":  # joint axis strided: the per-joint kernels
                    x = x.transpose(1, 2).contiguous().transpose(1, 2)
                x = x.requires_grad_()
                starts = [t.to(dtype).requires_grad_() for t in (p, v, a)]
                used.clear()
                outputs = tensor_step(
                    x,
                    *(t.expand(B, dof) for t in starts),
                    traj_dt.to(dtype),
                    control_space,
                    fd_mode,
                )
                assert_matches_reference(outputs, reference, **tol)
                pairs = [(o, w.to(dtype)) for o, w in zip(outputs, weights) if w is not None]
                if layout == "dof_major":
                    pairs = [(o, w.transpose(1, 2).contiguous().transpose(1, 2)) for o, w in pairs]
                outs, out_grads = zip(*pairs)
                got = torch.autograd.grad(outs, [x, *starts], out_grads)
                flat = [np.zeros(B * H * dof) if w is None else w.numpy().ravel() for w in weights]
                want = jac.T @ np.concatenate(flat)
                got_flat = np.concatenate([t.detach().double().numpy().ravel() for t in got])
                np.testing.assert_allclose(got_flat, want, **tol, err_msg=f"{mode} {layout}")
                # torch gives a size-1 axis stride 1: a single joint is contiguous either way
                strided = layout == "dof_major" and dof > 1
                expect = [] if strided else [("forward", mode), ("adjoint", mode)]
                assert used == (expect if rows else []), (mode, layout, dof)
