"""Dynamics model: YAML config, dt schedule, filter, trajectories vs the independent reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from step_reference import reference_step

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout.dynamics_model import (
    JointStateFilter,
    JointStateFilterConfig,
    KinematicModel,
    KinematicModelConfig,
    TimeTrajConfig,
)
from curobo_lite.types import JointState, TensorDeviceType

F64 = TensorDeviceType(dtype=torch.float64)


@pytest.fixture(scope="module")
def franka64() -> RobotConfig:
    return RobotConfig.load("franka").to(F64)


def make_model(robot, **model) -> KinematicModel:
    model.setdefault("horizon", 8)
    return KinematicModel(KinematicModelConfig.from_dict(model, robot, F64))


def random_start(batch: int, dof: int, seed: int = 0) -> JointState:
    g = torch.Generator().manual_seed(seed)
    p, v, a = (torch.randn(batch, dof, generator=g, dtype=torch.float64) * s for s in (1, 0.3, 0.1))
    return JointState(p, v, a)


CASES = [
    ({"control_space": "POSITION"}, "POSITION_BACKWARD"),
    ({"control_space": "POSITION", "state_finite_difference_mode": "CENTRAL"}, "POSITION_CENTRAL"),
    ({"control_space": "POSITION", "teleport_mode": True}, "POSITION_TELEPORT"),
    ({"control_space": "VELOCITY"}, "VELOCITY"),
    ({"control_space": "ACCELERATION"}, "ACCELERATION"),
    ({"control_space": "JERK"}, "JERK"),
]


@pytest.mark.parametrize("model_cfg,mode", CASES, ids=[c[1] for c in CASES])
def test_trajectory_matches_reference_and_fk(franka64, model_cfg, mode):
    dt_params = {"base_dt": 0.03, "base_ratio": 1.0, "max_dt": 0.03}
    if mode != "POSITION_CENTRAL":
        dt_params = {"base_dt": 0.02, "base_ratio": 0.5, "max_dt": 0.1}
    model = make_model(franka64, dt_traj_params=dt_params, **model_cfg)
    start = random_start(3, 7)
    act = torch.randn(3, 8, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    out = model.forward(start, act)
    want = reference_step(
        act, start.position, start.velocity, start.acceleration, model.traj_dt, mode
    )
    for got, ref in zip(
        (
            out.state_seq.position,
            out.state_seq.velocity,
            out.state_seq.acceleration,
            out.state_seq.jerk,
        ),
        want,
    ):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-8)
    fk = Kinematics(franka64).forward(out.state_seq.position.reshape(-1, 7))
    torch.testing.assert_close(out.ee_position, fk.ee_position.reshape(3, 8, 3))
    torch.testing.assert_close(out.ee_quaternion, fk.ee_quaternion.reshape(3, 8, 4))


def test_dt_schedule_blends_base_to_max():
    dt = TimeTrajConfig(base_dt=0.02, base_ratio=0.5, max_dt=0.1).get_dt_array(10, F64)
    expected = [0.02] * 5 + [0.02 + 0.08 * k / 5 for k in range(1, 6)]
    np.testing.assert_allclose(dt.numpy(), expected, rtol=1e-12)
    uniform = TimeTrajConfig(base_dt=0.05).get_dt_array(4, F64)
    np.testing.assert_allclose(uniform.numpy(), [0.05] * 4)


def test_update_traj_dt(franka64):
    model = make_model(franka64, control_space="ACCELERATION")
    model.update_traj_dt(0.05)
    np.testing.assert_allclose(model.traj_dt.numpy(), [0.05] * 8)
    custom = torch.linspace(0.01, 0.08, 8, dtype=torch.float64)
    model.update_traj_dt(custom)
    torch.testing.assert_close(model.traj_dt, custom)
    with pytest.raises(ValueError, match=r"dt: expected shape \[8\]"):
        model.update_traj_dt(torch.ones(3, dtype=torch.float64))


def test_action_bounds_follow_control_space(franka64):
    limits = franka64.joint_limits
    for space, expected in (
        ("POSITION", limits.position),
        ("VELOCITY", limits.velocity * 0.5),
        ("ACCELERATION", limits.acceleration * 0.5),
        ("JERK", limits.jerk * 0.5),
    ):
        model = make_model(franka64, control_space=space, vel_scale=0.5)
        if space == "POSITION":
            expected = limits.position  # position bounds are not scaled
        torch.testing.assert_close(model.action_bound_lows, expected[0])
        torch.testing.assert_close(model.action_bound_highs, expected[1])
    position_model = make_model(franka64, control_space="POSITION")
    torch.testing.assert_close(position_model.init_action_mean[3], franka64.retract_config)
    assert torch.count_nonzero(make_model(franka64).init_action_mean) == 0


def test_batch_size_changes_keep_results_right(franka64):
    model = make_model(franka64, control_space="JERK")
    fresh = make_model(franka64, control_space="JERK")
    g = torch.Generator().manual_seed(3)
    for batch in (4, 9, 2, 4):
        start = random_start(batch, 7, seed=batch)
        act = torch.randn(batch, 8, 7, dtype=torch.float64, generator=g)
        got = model.forward(start, act).state_seq.position.clone()
        want = fresh.get_state_from_action(start, act).position
        torch.testing.assert_close(got, want)
        fresh._buffers = None  # the reference model always starts from fresh buffers


def test_start_state_index_selects_rows(franka64):
    model = make_model(franka64, control_space="VELOCITY")
    start = random_start(2, 7)
    act = torch.randn(6, 8, 7, dtype=torch.float64)
    idx = torch.tensor([0, 0, 0, 1, 1, 1])
    out = model.get_state_from_action(start, act, idx)
    want = reference_step(
        act,
        start.position,
        start.velocity,
        start.acceleration,
        model.traj_dt,
        "VELOCITY",
        idx.numpy(),
    )
    np.testing.assert_allclose(out.velocity.numpy(), want[1], rtol=1e-12, atol=1e-12)


def test_robot_command_and_next_state(franka64):
    model = make_model(franka64, control_space="ACCELERATION")
    start = random_start(1, 7)
    act = torch.randn(1, 8, 7, dtype=torch.float64)
    command = model.get_robot_command(start, act, shift_steps=2)
    want = reference_step(
        act, start.position, start.velocity, start.acceleration, model.traj_dt, "ACCELERATION"
    )
    np.testing.assert_allclose(command.position.numpy(), want[0][:, 2], rtol=1e-12)
    assert command.position.shape == (1, 7) and not command.position.requires_grad
    nxt = model.get_next_state(start, act[:, 0], dt=0.02)
    v1 = start.velocity + act[:, 0] * 0.02
    torch.testing.assert_close(nxt.velocity, v1)
    torch.testing.assert_close(nxt.position, start.position + v1 * 0.02)
    with pytest.raises(ValueError, match="shift_steps"):
        model.get_robot_command(start, act, shift_steps=8)


def test_robot_command_reuses_its_buffers(franka64):
    """MPC alternates rollouts [B, H, D] with commands [1, H, D]: a command of an unchanged
    shape integrates into the same buffer, is still the reference state, and leaves the last
    rollout's trajectory intact."""
    model = make_model(franka64, control_space="JERK")
    g = torch.Generator().manual_seed(11)
    start = random_start(1, 7, seed=4)
    rollout_act = torch.randn(5, 8, 7, dtype=torch.float64, generator=g)
    rows = torch.zeros(5, dtype=torch.int64)  # every particle starts from the one state
    rollout = model.get_state_from_action(start, rollout_act, rows)
    rollout_ptr, rollout_before = rollout.position.data_ptr(), rollout.position.clone()
    pointers = set()
    for step in range(3):
        act = torch.randn(1, 8, 7, dtype=torch.float64, generator=g)
        command = model.get_robot_command(start, act, shift_steps=1 + step)
        want = reference_step(
            act, start.position, start.velocity, start.acceleration, model.traj_dt, "JERK"
        )
        for i, name in enumerate(("position", "velocity", "acceleration", "jerk")):
            np.testing.assert_allclose(
                getattr(command, name).numpy(), want[i][:, 1 + step], rtol=1e-12, atol=1e-12
            )
        pointers.add(model._command_buffers.position.data_ptr())
        again = model.get_state_from_action(start, rollout_act, rows)
        assert again.position.data_ptr() == rollout_ptr  # the rollout buffer stays too
    assert len(pointers) == 1
    assert rollout_ptr not in pointers
    torch.testing.assert_close(rollout.position, rollout_before, rtol=0, atol=0)


def test_joint_state_filter_is_exponential():
    filt = JointStateFilter(
        JointStateFilterConfig.from_dict(
            {"enable": True, "filter_coeff": {"position": 0.25, "velocity": 0.5}}
        )
    )
    a = JointState(torch.ones(1, 3), torch.ones(1, 3))
    b = JointState(torch.full((1, 3), 5.0), torch.full((1, 3), 3.0))
    first = filt.filter_joint_state(a)
    torch.testing.assert_close(first.position, a.position)  # first sample passes through
    second = filt.filter_joint_state(b)
    torch.testing.assert_close(second.position, torch.full((1, 3), 0.25 * 5 + 0.75 * 1))
    torch.testing.assert_close(second.velocity, torch.full((1, 3), 0.5 * 3 + 0.5 * 1))
    filt.reset()
    torch.testing.assert_close(filt.filter_joint_state(b).position, b.position)


@pytest.mark.parametrize(
    "model_cfg,words",
    [
        ({"horizon": 8, "bogus": 1}, ["model", "unknown", "bogus"]),
        ({"horizon": 8, "control_space": "TORQUE"}, ["control_space", "TORQUE"]),
        ({"horizon": 1}, ["horizon", "at least 2", "1"]),
        (
            {"horizon": 4, "control_space": "POSITION", "state_finite_difference_mode": "CENTRAL"},
            ["horizon", "at least 5"],
        ),
        ({"horizon": 8, "teleport_mode": True}, ["teleport_mode", "POSITION"]),
        ({"horizon": 8, "dt_traj_params": {"base_dt": -0.1}}, ["base_dt", "-0.1"]),
        ({"horizon": 8, "dt_traj_params": {"base_dt": 0.1, "max_dt": 0.05}}, ["max_dt", "0.05"]),
        ({"horizon": 8, "dt_traj_params": {"step": 0.1}}, ["dt_traj_params", "step"]),
        (
            {"horizon": 8, "state_filter_cfg": {"filter_coeff": {"position": 1.5}}},
            ["filter_coeff.position", "1.5"],
        ),
        ({"horizon": 8, "vel_scale": 2.0}, ["vel_scale", "2.0"]),
    ],
)
def test_bad_model_config(franka64, model_cfg, words):
    with pytest.raises(ValueError) as info:
        KinematicModelConfig.from_dict(model_cfg, franka64, F64)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_bad_rollout_inputs(franka64):
    model = make_model(franka64)
    start = random_start(2, 7)
    with pytest.raises(ValueError, match=r"act_seq: expected shape \[B, 8, 7\]"):
        model.forward(start, torch.zeros(2, 5, 7, dtype=torch.float64))
    with pytest.raises(TypeError, match="act_seq.*float64.*float32"):
        model.forward(start, torch.zeros(2, 8, 7))
    with pytest.raises(ValueError, match=r"start_state.*\[B, 7\]"):
        model.forward(random_start(2, 6), torch.zeros(2, 8, 7, dtype=torch.float64))


@pytest.mark.parametrize("enable", [-2, float("nan"), "yes"])
def test_state_filter_enable_must_be_a_bool(franka64, enable):
    # found by `make fuzz`: any value was taken for a truth value
    with pytest.raises(TypeError, match="state_filter_cfg.enable: expected true or false"):
        KinematicModelConfig.from_dict(
            {"horizon": 8, "state_filter_cfg": {"enable": enable}}, franka64, F64
        )
