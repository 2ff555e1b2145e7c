"""Solver inputs outside the robot's limits and zero goal quaternions (issue #34, item 2).

TrajOptSolver starts, IKSolver seed configurations and MpcSolver states outside the position
limits are rejected up front with an error naming the argument, the joint, its value and its
limits (MotionGen reports them as ``INVALID_START_STATE_JOINT_LIMITS``, through the same
check); a zero goal quaternion is rejected naming the argument the caller passed.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
import torch

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import InputValueError, JointState, Pose
from curobo_lite.wrap import IKSolver, MotionGen, MpcSolver, TrajOptSolver
from curobo_lite.wrap.ik.config import DEFAULT_IK_LBFGS
from curobo_lite.wrap.motion.config import MotionGenStatus


@cache
def robot() -> RobotConfig:
    return RobotConfig.load("planar3")


@cache
def trajopt() -> TrajOptSolver:
    return TrajOptSolver.from_config(robot(), num_seeds=2)


@cache
def ik() -> IKSolver:
    return IKSolver.from_config(robot(), num_seeds=4, lbfgs={**DEFAULT_IK_LBFGS, "n_iters": 5})


def reachable_goal() -> Pose:
    state = Kinematics(robot()).forward(torch.tensor([[0.3, 0.4, -0.2]]))
    return Pose(state.ee_position, state.ee_quaternion)


def limits(joint: int) -> tuple[float, float]:
    low, high = robot().joint_limits.position
    return float(low[joint]), float(high[joint])


def expect_named(err: pytest.ExceptionInfo, argument: str, joint: int, value: float) -> None:
    """The message names the argument, the joint, the value and both limits (read here from
    the robot's own limits, not from the solver)."""
    message = str(err.value)
    name = robot().joint_names[joint]
    low, high = limits(joint)
    assert message.startswith(f"{argument}: outside the joint limits"), message
    assert f"{name} = {value:.4g} rad" in message, message
    assert f"[{low:.4g}, {high:.4g}] rad" in message, message


@pytest.mark.parametrize("joint, offset", [(0, 50.0), (1, -50.0), (2, 0.01)])
def test_trajopt_rejects_a_start_outside_the_limits(joint, offset):
    q = robot().retract_config.clone()[None]
    low, high = limits(joint)
    q[0, joint] = (high if offset > 0 else low) + offset
    start = JointState.from_position(q)
    for call in (
        lambda: trajopt().solve_pose(start, reachable_goal()),
        lambda: trajopt().solve_joint(start, JointState.from_position(robot().retract_config)),
    ):
        with pytest.raises(InputValueError) as err:
            call()
        expect_named(err, "start_state.position", joint, float(q[0, joint]))


def test_trajopt_start_on_the_limit_is_accepted():
    q = robot().retract_config.clone()[None]
    q[0, 0] = limits(0)[1]  # exactly on the limit: inside
    result = trajopt().solve_joint(
        JointState.from_position(q), JointState.from_position(robot().retract_config[None])
    )
    assert result.success.shape == (1,)


def test_ik_rejects_a_seed_outside_the_limits():
    seeds = robot().retract_config.repeat(1, 2, 1).clone()  # [S=1, k=2, D]
    seeds[0, 1, 2] = limits(2)[0] - 3.0
    with pytest.raises(InputValueError) as err:
        ik().solve_batch(reachable_goal(), seed_config=seeds)
    expect_named(err, "seed_config[0, 1]", 2, float(seeds[0, 1, 2]))
    with pytest.raises(InputValueError) as err:
        ik().solve_single(reachable_goal(), seed_config=seeds[0, 1:])
    expect_named(err, "seed_config", 2, float(seeds[0, 1, 2]))


def test_ik_seed_inside_the_limits_is_still_used():
    # the first seed is the goal's own configuration: it solves at once
    q = torch.tensor([[0.3, 0.4, -0.2]])
    result = ik().solve_single(reachable_goal(), seed_config=q)
    assert bool(result.success[0])
    assert float(result.position_error[0]) < 1e-3


@cache
def mpc(**mpc_options) -> MpcSolver:
    from curobo_lite.rollout import TaskConfig

    task = TaskConfig.load("particle_mpc")
    task.mpc = {**(task.mpc or {}), **mpc_options}
    solver = MpcSolver.from_config(robot(), task, num_particles=16)
    return solver


def test_mpc_rejects_a_state_outside_the_limits_beyond_the_tolerance():
    solver = mpc()
    solver.update_goal(reachable_goal())
    tolerance = solver.config.limit_tolerance
    assert tolerance == 0.05
    q = robot().retract_config.clone()[None]
    q[0, 1] = limits(1)[1] + 2 * tolerance
    with pytest.raises(InputValueError) as err:
        solver.step(JointState.from_position(q))
    expect_named(err, "current_state.position", 1, float(q[0, 1]))
    assert "mpc.clamp_to_limits" in str(err.value)
    # an overshoot within the tolerance is the controller's to bring back
    q[0, 1] = limits(1)[1] + 0.5 * tolerance
    result = solver.step(JointState.from_position(q))
    assert bool(torch.isfinite(result.action.position).all())


def test_mpc_clamp_option_plans_from_the_clamped_state():
    solver = mpc(clamp_to_limits=True)
    solver.update_goal(reachable_goal())
    q = robot().retract_config.clone()[None]
    q[0, 0] = limits(0)[1] + 50.0
    result = solver.step(JointState.from_position(q))
    # the command starts from the limit, so it stays near it: within one step's travel
    high = limits(0)[1]
    step = float(solver.dynamics_model.traj_dt[1]) * float(robot().joint_limits.velocity[1, 0])
    assert abs(float(result.action.position[0, 0]) - high) <= step + 1e-5


def test_mpc_option_values_are_checked():
    with pytest.raises(
        Exception, match=r"mpc.limit_tolerance: expected a number >= 0, received -1.0"
    ):
        mpc(limit_tolerance=-1.0)
    with pytest.raises(Exception, match="mpc.clamp_to_limits: expected true/false"):
        mpc(clamp_to_limits="yes")


def test_motion_gen_reports_the_same_joint_through_the_shared_check():
    motion_gen = MotionGen.from_config(robot(), num_ik_seeds=4, num_trajopt_seeds=2)
    q = robot().retract_config.clone()[None]
    q[0, 2] = limits(2)[1] + 1.0
    result = motion_gen.plan_single(JointState.from_position(q), reachable_goal())
    assert result.status is MotionGenStatus.INVALID_START_STATE_JOINT_LIMITS
    assert result.offenders[0].link == robot().joint_names[2]
    with pytest.raises(InputValueError) as err:
        trajopt().solve_pose(JointState.from_position(q), reachable_goal())
    assert result.offenders[0].message in str(err.value)


ZERO = torch.zeros(1, 4)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda goal: ik().solve_single(goal), "goal_pose"),
        (lambda goal: ik().solve_batch(goal), "goal_pose"),
        (
            lambda goal: trajopt().solve_pose(
                JointState.from_position(robot().retract_config[None]), goal
            ),
            "goal_pose",
        ),
        (lambda goal: mpc().update_goal(goal), "goal"),
    ],
)
def test_zero_goal_quaternion_names_the_argument(call, argument):
    goal = Pose(reachable_goal().position, ZERO.clone())
    with pytest.raises(InputValueError, match=rf"^{re.escape(argument)}\.quaternion: .*zero norm"):
        call(goal)


def test_zero_goal_quaternion_names_the_cli_option():
    import argparse

    from curobo_lite.types import TensorDeviceType
    from curobo_lite.wrap.cli.args import goal_pose

    args = argparse.Namespace(goal=[0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    with pytest.raises(InputValueError, match=r"^--goal: .*zero norm"):
        goal_pose(args, TensorDeviceType())
