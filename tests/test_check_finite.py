"""The kernels' ``check_finite`` debug option (issue #34, item 4).

``tensor_step`` and ``Kinematics.forward`` propagate NaN/inf from their inputs by default (as
torch ops do, without a device sync); with ``check_finite=True`` or
``CUROBO_LITE_CHECK_FINITE=1`` they raise an ``InputValueError`` naming the argument and the
index of the first bad value, which the tests plant themselves.
"""

from __future__ import annotations

import math

import pytest
import torch

from curobo_lite.kernels.tensor_step import tensor_step
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import InputValueError


def _step_inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 5, 3, generator=g), torch.randn(2, 3, generator=g)


@pytest.mark.parametrize(
    "where, index",
    [("act", (1, 2, 0)), ("start_position", (0, 2))],
)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_tensor_step_propagates_by_default_and_names_the_input_on_request(where, index, bad):
    act, start = _step_inputs()
    dt = torch.full((5,), 0.02)
    values = {"act": act, "start_position": start}
    values[where][index] = bad
    position, velocity, *_ = tensor_step(act, start, None, None, dt, "ACCELERATION")
    # NaN in, NaN (or inf) out: nothing raised, the affected outputs are not finite
    assert not bool(torch.isfinite(position).all() & torch.isfinite(velocity).all())
    with pytest.raises(InputValueError) as err:
        tensor_step(act, start, None, None, dt, "ACCELERATION", check_finite=True)
    message = str(err.value)
    assert message.startswith(f"{where}: expected finite values"), message
    assert f"at index {list(index)}" in message and str(bad) in message


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0, 1e-30, 5e-324])
def test_tensor_step_always_rejects_a_bad_traj_dt(bad):
    # a step length is a setting, not data: checked with or without check_finite; a subnormal
    # one (found by the widened fuzzer) made finite inputs give inf velocities
    act, start = _step_inputs()
    act, start = act.double(), start.double()
    dt = torch.full((5,), 0.02, dtype=torch.float64)
    dt[3] = bad
    with pytest.raises(InputValueError, match="traj_dt: expected positive finite entries"):
        tensor_step(act, start, None, None, dt, "VELOCITY")
    if math.isfinite(bad):
        expected = "^traj_dt: expected (a positive|0 or a magnitude)"
        with pytest.raises(InputValueError, match=expected):
            tensor_step(act, start, None, None, bad, "VELOCITY")


def test_tensor_step_finite_inputs_pass_the_check_unchanged():
    act, start = _step_inputs()
    plain = tensor_step(act, start, None, None, 0.02, "ACCELERATION")
    plain = [t.clone() for t in plain]
    checked = tensor_step(act, start, None, None, 0.02, "ACCELERATION", check_finite=True)
    for a, b in zip(plain, checked, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_kinematics_forward_check_finite():
    kinematics = Kinematics(RobotConfig.load("planar3"))
    q = torch.zeros(4, 3)
    q[2, 1] = math.nan
    state = kinematics.forward(q)
    assert bool(state.ee_position[2].isnan().any()) and bool(state.ee_position[0].isfinite().all())
    with pytest.raises(InputValueError, match=r"^q: expected finite values .*at index \[2, 1\]"):
        kinematics.forward(q, check_finite=True)
    ok = kinematics.forward(q[:2], check_finite=True)
    assert bool(ok.ee_position.isfinite().all())


def test_environment_variable_turns_the_checks_on(monkeypatch):
    kinematics = Kinematics(RobotConfig.load("planar3"))
    q = torch.full((1, 3), math.inf)
    act, start = _step_inputs()
    act[0, 0, 0] = math.nan
    monkeypatch.setenv("CUROBO_LITE_CHECK_FINITE", "1")
    with pytest.raises(InputValueError, match="^q: "):
        kinematics.forward(q)
    with pytest.raises(InputValueError, match="^act: "):
        tensor_step(act, start, None, None, 0.02, "ACCELERATION")
    # an explicit argument wins over the environment
    kinematics.forward(q, check_finite=False)
    monkeypatch.setenv("CUROBO_LITE_CHECK_FINITE", "0")
    tensor_step(act, start, None, None, 0.02, "ACCELERATION")
