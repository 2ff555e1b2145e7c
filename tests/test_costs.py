"""Rollout cost terms against explicit numpy loops, finite differences and config validation."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import yaml

from curobo_lite.rollout.cost import (
    COST_REGISTRY,
    BoundCost,
    BoundCostConfig,
    CSpaceGoalCost,
    NullSpaceCost,
    PoseCost,
    PoseCostConfig,
    SmoothnessCost,
    StopCost,
    build_costs,
)
from curobo_lite.types import JointState, Pose, TensorDeviceType

F64 = TensorDeviceType(dtype=torch.float64)
F32 = TensorDeviceType(dtype=torch.float32)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _unit_quats(rng: np.random.Generator, *shape: int) -> np.ndarray:
    q = rng.normal(size=(*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _np_quat_to_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _np_angle(q1: np.ndarray, q2: np.ndarray) -> float:
    """Rotation angle between two orientations from their rotation matrices."""
    r = _np_quat_to_matrix(q1).T @ _np_quat_to_matrix(q2)
    return math.acos(np.clip((np.trace(r) - 1) / 2, -1.0, 1.0))


def _t(x: np.ndarray, tensor_args: TensorDeviceType = F64, grad: bool = False) -> torch.Tensor:
    return tensor_args.to_device(np.asarray(x)).requires_grad_(grad)


def _limits(dof: int = 3) -> dict[str, np.ndarray]:
    lower = np.array([-1.0, -2.0, 0.0, -0.5, -3.0][:dof])
    upper = np.array([1.0, 1.0, 2.0, 0.5, 3.0][:dof])
    return {
        "position": np.stack([lower, upper]),
        "velocity": np.stack([-np.full(dof, 2.0), np.full(dof, 2.0)]),
        "acceleration": np.stack([-np.full(dof, 5.0), np.full(dof, 4.0)]),
        "jerk": np.stack([-np.full(dof, 50.0), np.full(dof, 50.0)]),
    }


def _random_state(rng: np.random.Generator, b: int, h: int, d: int, scale: float = 1.0):
    fields = [rng.normal(size=(b, h, d)) * s * scale for s in (1.0, 2.0, 5.0, 40.0)]
    return fields


# --------------------------------------------------------------------------------------------------
# pose cost


def _np_pose_cost(pos, quat, goal_pos, goal_quat, idx, term, run, ramp, norm, rot):
    b_count, horizon = pos.shape[:2]
    out = np.zeros((b_count, horizon))
    for b in range(b_count):
        g = idx[b]
        for h in range(horizon):
            diff = pos[b, h] - goal_pos[g]
            e_pos = np.sqrt(diff @ diff) if norm == "L2" else diff @ diff
            if rot == "GEODESIC":
                e_rot = _np_angle(quat[b, h], goal_quat[g])
            else:
                e_rot = 1.0 - abs(quat[b, h] @ goal_quat[g])
            if h == horizon - 1:
                w = term
            else:
                f = h / (horizon - 1) if ramp else 1.0
                w = [run[0] * f, run[1] * f]
            out[b, h] = w[0] * e_pos + w[1] * e_rot
    return out


@pytest.mark.parametrize("norm", ["L2", "SQUARED_L2"])
@pytest.mark.parametrize("rot", ["GEODESIC", "ONE_MINUS_DOT"])
@pytest.mark.parametrize("ramp", [False, True])
def test_pose_cost_matches_numpy_loop(norm, rot, ramp):
    rng = _rng(1)
    b_count, horizon = 4, 5
    pos, quat = rng.normal(size=(b_count, horizon, 3)), _unit_quats(rng, b_count, horizon)
    goal_pos, goal_quat = rng.normal(size=(3, 3)), _unit_quats(rng, 3)
    idx = np.array([2, 0, 0, 1])
    term, run = [2.0, 5.0], [0.3, 0.7]
    cost = PoseCost.from_dict(
        {
            "weight": 1.5,
            "terminal_weight": term,
            "run_weight": run,
            "run_weight_ramp": ramp,
            "position_norm": norm.lower(),
            "rotation_error": rot,
        },
        F64,
    )
    goal = Pose(_t(goal_pos), _t(goal_quat))
    out = cost(_t(pos), _t(quat), goal, torch.as_tensor(idx))
    expected = 1.5 * _np_pose_cost(pos, quat, goal_pos, goal_quat, idx, term, run, ramp, norm, rot)
    assert out.shape == (b_count, horizon)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-9, atol=1e-5)


def test_pose_cost_terminal_only_is_zero_before_last_step():
    rng = _rng(2)
    pos, quat = rng.normal(size=(3, 6, 3)), _unit_quats(rng, 3, 6)
    goal_pos, goal_quat = rng.normal(size=(1, 3)), _unit_quats(rng, 1)
    cost = PoseCost.from_dict({"terminal_weight": [1.0, 2.0]}, F64)
    out = cost(_t(pos), _t(quat), Pose(_t(goal_pos), _t(goal_quat))).detach().numpy()
    assert np.all(out[:, :-1] == 0.0)
    for b in range(3):
        expected = np.linalg.norm(pos[b, -1] - goal_pos[0]) + 2.0 * _np_angle(
            quat[b, -1], goal_quat[0]
        )
        assert out[b, -1] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("rot", ["GEODESIC", "ONE_MINUS_DOT"])
def test_pose_cost_quaternion_sign_invariance(rot):
    rng = _rng(3)
    pos, quat = rng.normal(size=(4, 3, 3)), _unit_quats(rng, 4, 3)
    goal_pos, goal_quat = rng.normal(size=(4, 3)), _unit_quats(rng, 4)
    cost = PoseCost.from_dict({"run_weight": [1.0, 1.0], "rotation_error": rot}, F64)
    base = cost(_t(pos), _t(quat), Pose(_t(goal_pos), _t(goal_quat)))
    flipped = cost(_t(pos), _t(-quat), Pose(_t(goal_pos), _t(goal_quat)))
    goal_flipped = cost(_t(pos), _t(quat), Pose(_t(goal_pos), _t(-goal_quat)))
    torch.testing.assert_close(base, flipped, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(base, goal_flipped, rtol=1e-12, atol=1e-12)
    # a genuinely different rotation does change the cost
    assert not torch.allclose(
        base, cost(_t(pos), _t(quat[:, :, [1, 0, 2, 3]]), Pose(_t(goal_pos), _t(goal_quat)))
    )


def test_pose_cost_errors_metric():
    rng = _rng(4)
    pos, quat = rng.normal(size=(3, 4, 3)), _unit_quats(rng, 3, 4)
    goal_pos, goal_quat = rng.normal(size=(2, 3)), _unit_quats(rng, 2)
    idx = np.array([1, 1, 0])
    cost = PoseCost.from_dict(
        {"position_norm": "SQUARED_L2", "rotation_error": "ONE_MINUS_DOT"}, F64
    )
    p = _t(pos, grad=True)
    pos_err, rot_err = cost.errors(
        p, _t(quat), Pose(_t(goal_pos), _t(goal_quat)), torch.as_tensor(idx)
    )
    assert not pos_err.requires_grad and pos_err.shape == (3,) and rot_err.shape == (3,)
    for b in range(3):
        assert pos_err[b].item() == pytest.approx(np.linalg.norm(pos[b, -1] - goal_pos[idx[b]]))
        assert rot_err[b].item() == pytest.approx(
            _np_angle(quat[b, -1], goal_quat[idx[b]]), abs=1e-7
        )
    # identical poses: zero error (no smoothing offset in the metric)
    same_p, same_r = cost.errors(_t(pos), _t(quat), Pose(_t(pos[:, -1]), _t(-quat[:, -1])))
    assert same_p.abs().max().item() == 0.0 and same_r.abs().max().item() < 1e-7


@pytest.mark.parametrize("norm", ["L2", "SQUARED_L2"])
@pytest.mark.parametrize("rot", ["GEODESIC", "ONE_MINUS_DOT"])
def test_pose_cost_gradcheck(norm, rot):
    rng = _rng(5)
    pos, quat = _t(rng.normal(size=(2, 3, 3)), grad=True), _t(_unit_quats(rng, 2, 3), grad=True)
    goal = Pose(_t(rng.normal(size=(2, 3))), _t(_unit_quats(rng, 2)))
    cost = PoseCost.from_dict(
        {
            "run_weight": [0.5, 0.25],
            "run_weight_ramp": True,
            "position_norm": norm,
            "rotation_error": rot,
        },
        F64,
    )
    assert torch.autograd.gradcheck(lambda p, q: cost(p, q, goal), (pos, quat))


def test_pose_cost_gradient_finite_at_zero_error():
    rng = _rng(6)
    goal_pos, goal_quat = rng.normal(size=(1, 3)), _unit_quats(rng, 1)
    for dtype in (F32, F64):
        pos = _t(np.repeat(goal_pos[None], 2, 0).repeat(3, 1), dtype, grad=True)
        quat = _t(np.repeat(goal_quat[None], 2, 0).repeat(3, 1), dtype, grad=True)
        cost = PoseCost.from_dict({"run_weight": [1.0, 1.0]}, dtype)
        out = cost(pos, quat, Pose(_t(goal_pos, dtype), _t(goal_quat, dtype)))
        assert out.dtype == dtype.dtype and out.abs().max().item() < 1e-5
        out.sum().backward()
        assert torch.isfinite(pos.grad).all() and torch.isfinite(quat.grad).all()


def test_pose_cost_goal_batching_and_errors():
    rng = _rng(7)
    pos, quat = _t(rng.normal(size=(3, 2, 3))), _t(_unit_quats(rng, 3, 2))
    goals = Pose(_t(rng.normal(size=(3, 3))), _t(_unit_quats(rng, 3)))
    cost = PoseCost.from_dict({}, F64)
    # G == B without goal_idx is the identity mapping
    torch.testing.assert_close(cost(pos, quat, goals), cost(pos, quat, goals, torch.arange(3)))
    # G == 1 broadcasts like an explicit zero index
    one = goals[0:1]
    torch.testing.assert_close(cost(pos, quat, one), cost(pos, quat, goals, torch.zeros(3).long()))
    two = goals[0:2]
    with pytest.raises(ValueError, match="goal has batch 2"):
        cost(pos, quat, two)
    with pytest.raises(ValueError, match=r"goal_idx entries must lie in \[0, 1\]"):
        cost(pos, quat, two, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="goal_idx expected an int64/int32 tensor of shape"):
        cost(pos, quat, two, torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="ee_position expected shape"):
        cost(pos[..., :2], quat, goals)
    with pytest.raises(TypeError, match="expected dtype torch.float64"):
        cost(pos.float(), quat, goals)
    with pytest.raises(TypeError, match="goal must be a Pose"):
        cost(pos, quat, goals.position)


def test_pose_cost_update_weight_and_enabled():
    rng = _rng(8)
    pos, quat = _t(rng.normal(size=(2, 4, 3))), _t(_unit_quats(rng, 2, 4))
    goal = Pose(_t(rng.normal(size=(1, 3))), _t(_unit_quats(rng, 1)))
    cost = PoseCost.from_dict({"terminal_weight": [1.0, 0.0]}, F64)
    position_only = cost(pos, quat, goal)
    # a graph built before a weight update still backpropagates with the old weights
    p = pos.clone().requires_grad_(True)
    pending = cost(p, quat, goal)
    cost.update_weight(7.0)
    pending.sum().backward()
    direction = (pos[:, -1] - goal.position) / (pos[:, -1] - goal.position).norm(
        dim=-1, keepdim=True
    )
    torch.testing.assert_close(p.grad[:, -1], direction)
    cost.update_weight(1.0)
    cost.update_weight(terminal_weight=[0.0, 1.0])
    rotation_only = cost(pos, quat, goal)
    cost.update_weight(3.0, terminal_weight=[1.0, 1.0])
    torch.testing.assert_close(cost(pos, quat, goal), 3.0 * (position_only + rotation_only))
    with pytest.raises(ValueError, match="terminal_weight: expected values >= 0"):
        cost.update_weight(terminal_weight=[-1.0, 1.0])
    assert cost.config.terminal_weight.tolist() == [1.0, 1.0] and cost.weight == 3.0
    with pytest.raises(ValueError, match="unknown weight"):
        cost.update_weight(position_norm="L2")
    cost.enabled = False
    assert torch.equal(cost(pos, quat, goal), torch.zeros(2, 4, dtype=torch.float64))


# --------------------------------------------------------------------------------------------------
# c-space goal and null-space costs


@pytest.mark.parametrize("ramp", [False, True])
def test_cspace_goal_cost_matches_numpy_loop(ramp):
    rng = _rng(10)
    b_count, horizon, dof = 4, 5, 3
    q = rng.normal(size=(b_count, horizon, dof))
    goals = rng.normal(size=(2, dof))
    idx = np.array([1, 0, 1, 1])
    cw = np.array([1.0, 0.5, 2.0])
    cost = CSpaceGoalCost.from_dict(
        {
            "weight": 2.0,
            "terminal_weight": 3.0,
            "run_weight": 0.4,
            "run_weight_ramp": ramp,
            "cspace_weights": cw.tolist(),
        },
        F64,
    )
    out = cost(JointState(_t(q)), JointState(_t(goals)), torch.as_tensor(idx)).detach().numpy()
    expected = np.zeros((b_count, horizon))
    for b in range(b_count):
        for h in range(horizon):
            w = 3.0 if h == horizon - 1 else 0.4 * (h / (horizon - 1) if ramp else 1.0)
            expected[b, h] = (
                2.0 * w * sum(cw[d] * (q[b, h, d] - goals[idx[b], d]) ** 2 for d in range(dof))
            )
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_cspace_goal_cost_terminal_only_gradcheck_and_errors():
    rng = _rng(11)
    q = _t(rng.normal(size=(2, 4, 3)), grad=True)
    goal = _t(rng.normal(size=3))
    cost = CSpaceGoalCost.from_dict({}, F64)
    out = cost(q, goal)
    assert torch.all(out[:, :-1] == 0)
    np.testing.assert_allclose(
        out[:, -1].detach().numpy(),
        ((q[:, -1].detach().numpy() - goal.numpy()) ** 2).sum(-1),
        rtol=1e-12,
    )
    run = CSpaceGoalCost.from_dict({"run_weight": 0.5, "cspace_weights": [1.0, 2.0, 0.0]}, F64)
    assert torch.autograd.gradcheck(lambda x: run(x, goal), (q,))
    with pytest.raises(ValueError, match="state has 2 dof but cspace_weights has 3"):
        run(q[..., :2], goal[:2])
    with pytest.raises(ValueError, match=r"goal expected shape \[G, 3\]"):
        cost(q, goal[:2])


def test_null_space_cost_matches_numpy_and_gradcheck():
    rng = _rng(12)
    q = rng.normal(size=(3, 4, 2))
    retract, cw = np.array([0.2, -0.4]), np.array([0.5, 3.0])
    cost = NullSpaceCost.from_dict(
        {"weight": 0.7, "cspace_weights": cw.tolist()}, F64, retract_config=retract.tolist()
    )
    out = cost(JointState(_t(q))).detach().numpy()
    expected = np.zeros((3, 4))
    for b in range(3):
        for h in range(4):
            expected[b, h] = 0.7 * sum(cw[d] * (q[b, h, d] - retract[d]) ** 2 for d in range(2))
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert torch.autograd.gradcheck(cost, (_t(q, grad=True),))
    with pytest.raises(ValueError, match="retract_config: required"):
        NullSpaceCost.from_dict({}, F64)
    with pytest.raises(ValueError, match="cspace_weights: expected 2 values, received 3"):
        NullSpaceCost.from_dict({"retract_config": [0, 0], "cspace_weights": [1, 1, 1]}, F64)


# --------------------------------------------------------------------------------------------------
# bound cost


def _np_bound_cost(fields, limits, bw, lw, act, mode):
    b_count, horizon, dof = fields[0].shape
    out = np.zeros((b_count, horizon))
    for qi, name in enumerate(("position", "velocity", "acceleration", "jerk")):
        lo, hi = limits[name]
        for d in range(dof):
            margin = act[qi] * (hi[d] - lo[d]) if mode == "FRACTION" else act[qi]
            lo_a, hi_a = lo[d] + margin, hi[d] - margin
            for b in range(b_count):
                for h in range(horizon):
                    x = fields[qi][b, h, d]
                    e = max(lo_a - x, 0.0) + max(x - hi_a, 0.0)
                    out[b, h] += bw[qi] * e * e + lw[qi] * e
    return out


@pytest.mark.parametrize(
    "mode,act", [("FRACTION", [0.1, 0.05, 0.2, 0.0]), ("ABSOLUTE", [0.05, 0.3, 1.0, 5.0])]
)
def test_bound_cost_matches_numpy_loop(mode, act):
    rng = _rng(20)
    fields = _random_state(rng, 3, 4, 3)
    limits = _limits(3)
    for qi, (lo, hi) in enumerate(limits.values()):
        fields[qi][0] = (lo + hi) / 2  # trajectory 0 sits mid-range: zero cost
    bw, lw = [10.0, 2.0, 0.5, 0.01], [1.0, 0.0, 0.3, 0.0]
    cost = BoundCost.from_dict(
        {
            "bound_weight": bw,
            "linear_weight": lw,
            "activation_distance": act,
            "activation_mode": mode,
            "weight": 2.0,
        },
        F64,
        joint_limits={k: v.tolist() for k, v in limits.items()},
    )
    out = cost(JointState(*[_t(f) for f in fields])).detach().numpy()
    expected = 2.0 * _np_bound_cost(fields, limits, bw, lw, act, mode)
    assert (expected > 0).any() and (expected == 0).any()  # the case exercises both regimes
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_bound_cost_free_position_widens_only_the_position_margin():
    rng = _rng(23)
    fields = _random_state(rng, 3, 5, 3)
    limits = _limits(3)
    act, bw, lw = [0.2, 0.1, 0.1, 0.1], [10.0, 2.0, 0.5, 0.01], [1.0, 0.0, 0.3, 0.0]
    options = {"bound_weight": bw, "linear_weight": lw, "activation_distance": act}
    cost = BoundCost.from_dict(
        options, F64, joint_limits={k: v.tolist() for k, v in limits.items()}
    )
    lo, hi = limits["position"]
    margin = 0.2 * (hi - lo)
    # joint 0: free span reaches past the lower margin (and past the limit: clipped there);
    # joint 1: inside the margins (no change); joint 2: into the upper margin only
    free = np.stack(
        (
            [lo[0] - 1.0, lo[1] + 2 * margin[1], lo[2] + 2 * margin[2]],
            [hi[0] - 2 * margin[0], hi[1] - 2 * margin[1], hi[2] - 0.5 * margin[2]],
        )
    )
    cost.config.free_position = free.tolist()  # an assignment re-derives the kernel's bounds
    out = cost(JointState(*[_t(f) for f in fields])).detach().numpy()
    # the reference: the numpy loop with no position margin on limits moved to the widened
    # activation bounds
    lo_a = np.maximum(np.minimum(lo + margin, free[0]), lo)
    hi_a = np.minimum(np.maximum(hi - margin, free[1]), hi)
    position = np.stack((lo_a, hi_a))
    expected = _np_bound_cost(
        fields, dict(limits, position=position), bw, lw, [0.0, *act[1:]], "FRACTION"
    )
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    assert lo_a[0] == lo[0] and np.isclose(lo_a[1], lo[1] + margin[1])
    assert hi_a[2] > hi[2] - margin[2]
    plain = _np_bound_cost(fields, limits, bw, lw, act, "FRACTION")
    assert (out < plain - 1e-9).any()  # the widened margin changed some steps' cost
    cost.config.free_position = None  # back to the task's margin
    np.testing.assert_allclose(cost(JointState(*[_t(f) for f in fields])), plain, rtol=1e-12)
    with pytest.raises(ValueError, match=r"free_position: expected shape \[2, 3\]"):
        cost.config.free_position = free[:, :2].tolist()
    with pytest.raises(ValueError, match="free_position: expected finite lower <= upper"):
        cost.config.free_position = free[::-1].tolist()
    assert cost.config.free_position is None  # a rejected value changed nothing


def test_bound_cost_zero_inside_positive_outside():
    rng = _rng(21)
    limits = _limits(3)
    cost = BoundCost.from_dict(
        {"linear_weight": [1, 1, 1, 1], "activation_distance": [0.1] * 4}, F64, joint_limits=limits
    )
    shrunk = {}
    for name, (lo, hi) in limits.items():
        margin = 0.1 * (hi - lo)
        shrunk[name] = (lo + margin, hi - margin)
    # strictly inside the activation bounds: exactly zero cost and zero gradient
    inside = [
        _t(lo + (hi - lo) * rng.uniform(0.001, 0.999, size=(5, 6, 3)), grad=True)
        for lo, hi in shrunk.values()
    ]
    out = cost(JointState(*inside))
    assert torch.equal(out, torch.zeros(5, 6, dtype=torch.float64))
    out.sum().backward()
    assert all(torch.equal(x.grad, torch.zeros_like(x)) for x in inside)
    # one entry just beyond one activation bound: positive cost at exactly that (b, h)
    for qi, (lo, hi) in enumerate(shrunk.values()):
        for side in (lo[1] - 1e-3, hi[1] + 1e-3):
            fields = [x.detach().clone() for x in inside]
            fields[qi][2, 4, 1] = side
            out = cost(JointState(*fields))
            assert out[2, 4] > 0
            out[2, 4] = 0
            assert torch.equal(out, torch.zeros_like(out))


def test_bound_cost_violation_metric_matches_manual_max():
    rng = _rng(22)
    fields = _random_state(rng, 4, 5, 3)
    fields[1][2] = 0.0  # trajectory 2 moves within the velocity limits
    limits = _limits(3)
    cost = BoundCost.from_dict({}, F64, joint_limits=limits)
    result = cost.violation(JointState(*[_t(f, grad=True) for f in fields]))
    assert set(result) == {"position", "velocity", "acceleration", "jerk"}
    for qi, name in enumerate(("position", "velocity", "acceleration", "jerk")):
        lo, hi = limits[name]
        for b in range(4):
            manual = 0.0
            for h in range(5):
                for d in range(3):
                    x = fields[qi][b, h, d]
                    manual = max(manual, lo[d] - x, x - hi[d])
            assert result[name][b].item() == pytest.approx(manual, abs=1e-12)
        assert not result[name].requires_grad
    assert result["velocity"][2].item() == 0.0


def test_bound_cost_gradcheck_float32_and_infinite_limits():
    rng = _rng(23)
    fields = _random_state(rng, 2, 3, 3)
    limits = _limits(3)
    cost = BoundCost.from_dict({"linear_weight": [0.5, 0.5, 0.5, 0.5]}, F64, joint_limits=limits)
    inputs = tuple(_t(f, grad=True) for f in fields)
    assert torch.autograd.gradcheck(lambda *x: cost(JointState(*x)), inputs)
    # a continuous joint: infinite position limits give no position cost and no NaN
    limits["position"][:, 0] = [-np.inf, np.inf]
    cost32 = BoundCost.from_dict({}, F32, joint_limits=limits)
    x = [_t(f * 10, F32, grad=True) for f in fields]
    x[0].data[:, :, 1:] = 0.0
    out = cost32(JointState(*x))
    assert out.dtype == torch.float32 and torch.isfinite(out).all()
    out.sum().backward()
    assert torch.equal(x[0].grad[:, :, 0], torch.zeros(2, 3))
    assert torch.isfinite(x[3].grad).all()


def test_bound_cost_accepts_limit_objects_and_lower_upper_mappings():
    limits = _limits(2)
    fields = _random_state(_rng(24), 2, 3, 2)
    state = JointState(*[_t(f) for f in fields])
    reference = BoundCost.from_dict({}, F64, joint_limits=limits)(state)
    as_object = SimpleNamespace(**{k: torch.as_tensor(v) for k, v in limits.items()})
    as_yaml = {k: {"lower": v[0].tolist(), "upper": v[1].tolist()} for k, v in limits.items()}
    for form in (as_object, as_yaml):
        torch.testing.assert_close(
            BoundCost.from_dict({}, F64, joint_limits=form)(state), reference
        )
    with pytest.raises(ValueError, match=r"jerk: expected keys \['lower', 'upper'\]"):
        BoundCost.from_dict({}, F64, joint_limits=dict(as_yaml, jerk={"low": [0, 0]}))
    with pytest.raises(TypeError, match="expected a mapping or an object with"):
        BoundCost.from_dict({}, F64, joint_limits=[1, 2])


def test_bound_cost_config_errors():
    limits = _limits(2)
    with pytest.raises(ValueError, match="FRACTION of the range must be <= 0.5"):
        BoundCostConfig.from_dict({"activation_distance": [0.6, 0, 0, 0]}, F64, joint_limits=limits)
    with pytest.raises(ValueError, match="position margin 1.5 exceeds half the smallest"):
        BoundCostConfig.from_dict(
            {"activation_mode": "absolute", "activation_distance": [1.5, 0, 0, 0]},
            F64,
            joint_limits=limits,
        )
    with pytest.raises(ValueError, match="bound_weight: expected 4 values, received 3"):
        BoundCostConfig.from_dict({"bound_weight": [1, 1, 1]}, F64, joint_limits=limits)
    with pytest.raises(ValueError, match="linear_weight: expected values >= 0"):
        BoundCostConfig.from_dict({"linear_weight": [1, -1, 1, 1]}, F64, joint_limits=limits)
    bad = dict(limits, velocity=np.array([[1.0, -1.0], [-1.0, 1.0]]))
    with pytest.raises(ValueError, match="velocity: lower limit above upper limit"):
        BoundCostConfig.from_dict({}, F64, joint_limits=bad)
    with pytest.raises(ValueError, match=r"jerk: expected shape \[2, D\]"):
        BoundCostConfig.from_dict({}, F64, joint_limits=dict(limits, jerk=[50.0, 50.0]))
    with pytest.raises(ValueError, match=r"missing \['velocity', 'acceleration', 'jerk'\]"):
        BoundCostConfig.from_dict({}, F64, joint_limits={"position": limits["position"]})
    with pytest.raises(ValueError, match="joint_limits: required"):
        BoundCostConfig.from_dict({}, F64)
    cost = BoundCost.from_dict({}, F64, joint_limits=limits)
    with pytest.raises(ValueError, match="state has 3 dof but joint_limits has 2"):
        cost(JointState.zeros((1, 2, 3), F64))
    with pytest.raises(TypeError, match="state must be a JointState"):
        cost(torch.zeros(1, 2, 2, dtype=torch.float64))


# --------------------------------------------------------------------------------------------------
# smoothness and stop costs


def test_smoothness_cost_matches_numpy_and_gradcheck():
    rng = _rng(30)
    fields = _random_state(rng, 3, 4, 2)
    jw = np.array([2.0, 0.25])
    cost = SmoothnessCost.from_dict(
        {
            "weight": 0.5,
            "acceleration_weight": 3.0,
            "jerk_weight": 0.01,
            "joint_weights": jw.tolist(),
        },
        F64,
    )
    out = cost(JointState(*[_t(f) for f in fields])).detach().numpy()
    expected = np.zeros((3, 4))
    for b in range(3):
        for h in range(4):
            for d in range(2):
                a, j = fields[2][b, h, d], fields[3][b, h, d]
                expected[b, h] += 0.5 * jw[d] * (3.0 * a * a + 0.01 * j * j)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    inputs = (_t(fields[2], grad=True), _t(fields[3], grad=True))
    p = _t(fields[0])
    assert torch.autograd.gradcheck(
        lambda a, j: cost(JointState(p, acceleration=a, jerk=j)), inputs
    )


def _np_stop_cost(vel, acc, n_steps, vmax, w, wv, wtv, wta):
    b_count, horizon, dof = vel.shape
    out = np.zeros((b_count, horizon))
    for b in range(b_count):
        for h in range(horizon):
            if horizon - 1 - h < n_steps:
                for d in range(dof):
                    lim = vmax[d] * (horizon - 1 - h) / n_steps
                    out[b, h] += w * wv * max(abs(vel[b, h, d]) - lim, 0.0) ** 2
        out[b, -1] += w * (wtv * (vel[b, -1] ** 2).sum() + wta * (acc[b, -1] ** 2).sum())
    return out


@pytest.mark.parametrize("n_steps,horizon", [(3, 6), (8, 5), (1, 4)])
def test_stop_cost_matches_numpy_loop(n_steps, horizon):
    rng = _rng(31)
    fields = _random_state(rng, 3, horizon, 2)
    vmax = np.array([1.5, 0.5])
    opts = {
        "n_steps": n_steps,
        "weight": 2.0,
        "velocity_weight": 3.0,
        "terminal_velocity_weight": 0.5,
        "terminal_acceleration_weight": 0.1,
        "max_velocity": vmax.tolist(),
    }
    cost = StopCost.from_dict(opts, F64)
    out = cost(JointState(*[_t(f) for f in fields])).detach().numpy()
    expected = _np_stop_cost(fields[1], fields[2], n_steps, vmax, 2.0, 3.0, 0.5, 0.1)
    assert np.all(out[:, : max(horizon - n_steps, 0)] == 0.0)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)


def test_stop_cost_defaults_from_limits_gradcheck_and_errors():
    rng = _rng(32)
    fields = _random_state(rng, 2, 5, 3)
    limits = _limits(3)
    limits["velocity"][0] = [-1.0, -3.0, -0.5]
    cost = StopCost.from_dict(
        {"n_steps": 3, "terminal_acceleration_weight": 1.0}, F64, joint_limits=limits
    )
    assert cost.config.max_velocity.tolist() == [2.0, 3.0, 2.0]
    scalar = StopCost.from_dict({"n_steps": 3, "max_velocity": 2.0}, F64)
    out = scalar(JointState(*[_t(f) for f in fields])).detach().numpy()
    expected = _np_stop_cost(fields[1], fields[2], 3, [2.0] * 3, 1.0, 1.0, 1.0, 0.0)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    p = _t(fields[0])
    inputs = (_t(fields[1], grad=True), _t(fields[2], grad=True))
    assert torch.autograd.gradcheck(lambda v, a: cost(JointState(p, v, a)), inputs)
    # a trajectory at rest at the end costs nothing
    rest = [f.copy() for f in fields]
    rest[1][:, -3:] = 0.0
    rest[2][:, -1] = 0.0
    assert cost(JointState(*[_t(f) for f in rest])).abs().max().item() == 0.0
    with pytest.raises(ValueError, match="max_velocity: required"):
        StopCost.from_dict({}, F64)
    with pytest.raises(ValueError, match="n_steps: expected an integer >= 1"):
        StopCost.from_dict({"n_steps": 0, "max_velocity": 1.0}, F64)
    limits["velocity"][1] = np.inf
    with pytest.raises(ValueError, match="give a finite max_velocity"):
        StopCost.from_dict({}, F64, joint_limits=limits)


# --------------------------------------------------------------------------------------------------
# registry and shared behaviour

_TASK_YAML = """
cost:
  pose_cost:
    terminal_weight: [10.0, 2.0]
    run_weight: [0.1, 0.1]
    run_weight_ramp: true
  cspace_cost:
    enabled: false
  bound_cost:
    bound_weight: [100.0, 10.0, 1.0, 0.001]
    activation_distance: [0.1, 0.1, 0.1, 0.1]
  smooth_cost:
    jerk_weight: 0.0001
  stop_cost:
    n_steps: 2
  null_space_cost:
  primitive_collision_cost:
    weight: 10.0
  self_collision_cost:
  tracking_cost:
    velocity_weight: 0.5
"""


@pytest.mark.parametrize("tensor_args", [F32, F64], ids=["float32", "float64"])
def test_build_costs_from_yaml_all_costs_run(tensor_args):
    rng = _rng(40)
    cost_dict = yaml.safe_load(_TASK_YAML)["cost"]
    costs = build_costs(
        cost_dict,
        _limits(3),
        tensor_args,
        retract_config=[0.0, 0.1, 0.2],
        cspace_weights=[1.0, 1.0, 0.5],
    )
    assert list(costs) == list(COST_REGISTRY)
    assert {k: type(v) for k, v in costs.items()} == COST_REGISTRY
    assert not costs["cspace_cost"].enabled
    assert costs["null_space_cost"].config.cspace_weights.tolist() == [1.0, 1.0, 0.5]
    b_count, horizon = 3, 6
    fields = [_t(f, tensor_args, grad=True) for f in _random_state(rng, b_count, horizon, 3)]
    state = JointState(*fields)
    ee_pos = _t(rng.normal(size=(b_count, horizon, 3)), tensor_args, grad=True)
    ee_quat = _t(_unit_quats(rng, b_count, horizon), tensor_args, grad=True)
    goal = Pose(_t(rng.normal(size=(1, 3)), tensor_args), _t(_unit_quats(rng, 1), tensor_args))
    outputs = {
        "pose_cost": costs["pose_cost"](ee_pos, ee_quat, goal),
        "cspace_cost": costs["cspace_cost"](state, fields[0][:1, 0].detach()),
        **{
            k: costs[k](state)
            for k in ("bound_cost", "smooth_cost", "stop_cost", "null_space_cost")
        },
        "tracking_cost": costs["tracking_cost"](
            state, JointState(*(f[:1].detach() for f in fields))
        ),
    }
    # without an attached world or sphere pairs the collision terms are zero
    spheres = _t(rng.normal(size=(b_count, horizon, 5, 4)), tensor_args, grad=True)
    for name in ("primitive_collision_cost", "self_collision_cost"):
        value = costs[name](spheres)
        assert torch.equal(value, torch.zeros_like(value)), name
    for name, out in outputs.items():
        assert out.shape == (b_count, horizon) and out.dtype == tensor_args.dtype, name
        assert torch.isfinite(out).all(), name
    assert torch.equal(outputs["cspace_cost"], torch.zeros_like(outputs["cspace_cost"]))
    sum(o.sum() for o in outputs.values()).backward()
    assert all(torch.isfinite(x.grad).all() for x in (*fields, ee_pos, ee_quat))


def test_build_costs_validation_errors():
    with pytest.raises(
        ValueError,
        match=r"unknown cost section\(s\) \['pose'\]; known sections: "
        r"\['pose_cost', 'cspace_cost', 'bound_cost', 'smooth_cost', 'stop_cost', "
        r"'null_space_cost', 'primitive_collision_cost', 'self_collision_cost', "
        r"'tracking_cost'\]",
    ):
        build_costs({"pose": {}})
    with pytest.raises(ValueError, match=r"pose_cost: unknown key\(s\) \['weights'\]; known keys"):
        build_costs({"pose_cost": {"weights": [1, 1]}})
    with pytest.raises(ValueError, match="smooth_cost.weight: expected a weight >= 0"):
        build_costs({"smooth_cost": {"weight": -1}})
    with pytest.raises(ValueError, match="pose_cost.run_weight: expected 2 values, received 3"):
        build_costs({"pose_cost": {"run_weight": [1, 1, 1]}})
    with pytest.raises(ValueError, match=r"position_norm: expected one of \['L2', 'SQUARED_L2'\]"):
        build_costs({"pose_cost": {"position_norm": "L1"}})
    with pytest.raises(TypeError, match="smooth_cost.jerk_weight: expected a number"):
        build_costs({"smooth_cost": {"jerk_weight": "big"}})
    with pytest.raises(TypeError, match="cspace_cost.run_weight_ramp: expected true or false"):
        build_costs({"cspace_cost": {"run_weight_ramp": "yes"}})
    with pytest.raises(ValueError, match=r"terminal_weight\[0\]: expected a finite number"):
        PoseCostConfig.from_dict({"terminal_weight": [float("nan"), 1.0]})
    with pytest.raises(TypeError, match="stop_cost: expected a mapping of options"):
        build_costs({"stop_cost": [1, 2]})
    with pytest.raises(TypeError, match="cost_dict expected a mapping"):
        build_costs([("pose_cost", {})])
    assert build_costs(None) == {}


@pytest.mark.parametrize("goals", [1, 6])
def test_quat_angle_error_matches_rotation_matrices(goals):
    """Geodesic error of one goal (the [4, 4] product path) and of per-row goals (the
    component path) against the angle of R1^T R2 from float64 rotation matrices, and the
    gradient of both paths by finite differences."""
    from curobo_lite.types import quat_to_matrix
    from curobo_lite.types.math import quat_angle_error

    gen = torch.Generator().manual_seed(goals)
    q1 = torch.nn.functional.normalize(
        torch.randn(6, 5, 4, generator=gen, dtype=torch.float64), dim=-1
    )
    q2 = torch.nn.functional.normalize(
        torch.randn(goals, 1, 4, generator=gen, dtype=torch.float64), dim=-1
    )
    relative = quat_to_matrix(q1).transpose(-1, -2) @ quat_to_matrix(q2)
    cosine = ((relative.diagonal(dim1=-2, dim2=-1).sum(-1) - 1.0) / 2.0).clamp(-1.0, 1.0)
    torch.testing.assert_close(quat_angle_error(q1, q2, eps=0.0), torch.arccos(cosine))
    assert torch.autograd.gradcheck(
        lambda a, b: quat_angle_error(a, b), (q1.requires_grad_(), q2.requires_grad_())
    )


def test_bound_cost_writes_only_the_gradients_that_are_needed():
    """Position needs a gradient and velocity, active and beyond its bound, does not: the
    kernel writes the position's gradient and leaves the velocity's one-element placeholder
    untouched (it once wrote every active quantity's gradient whenever any was needed, past the
    placeholder's end for larger inputs: heap corruption in IK with the default bound weights)."""
    from curobo_lite.kernels.bound_cost_kernels import BoundCostParams, bound_cost

    lower = torch.full((4, 1), -1.0, dtype=torch.float64)
    upper = torch.full((4, 1), 1.0, dtype=torch.float64)
    params = BoundCostParams.build(lower, upper, [3.0, 5.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])
    position = torch.full((1, 1, 1), 1.5, dtype=torch.float64, requires_grad=True)
    velocity = torch.full((1, 1, 1), -2.0, dtype=torch.float64)
    zeros = torch.zeros(1, 1, 1, dtype=torch.float64)
    out = bound_cost(position, velocity, zeros, zeros, params)
    # value against the formula: 3 * 0.5^2 + 5 * 1^2
    assert out.item() == pytest.approx(3.0 * 0.25 + 5.0)
    saved_position_grad, saved_velocity_grad = out.grad_fn.saved_tensors[:2]
    assert saved_velocity_grad.shape == (1, 1, 1)
    assert saved_velocity_grad.item() == 0.0
    out.sum().backward()
    assert position.grad.item() == pytest.approx(2.0 * 3.0 * 0.5)
    assert saved_position_grad.item() == pytest.approx(2.0 * 3.0 * 0.5)
