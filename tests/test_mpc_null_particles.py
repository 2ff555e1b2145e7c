"""MPPI rolls its zero-action copies out once when the rollout is deterministic: the same
updates as rolling out every particle (an independent run of the same seed with every particle
rolled out is the reference), and one rollout row for all the copies."""

from __future__ import annotations

import torch

from curobo_lite.opt import Mppi, MppiConfig, RolloutResult
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver

F64 = TensorDeviceType(dtype=torch.float64)


class QuadraticRollout:
    """Two problems, ``cost[b, h] = (p + 1) * |a[b, h] - c_p|^2`` (``p``: the row's problem);
    records the batch of every call."""

    def __init__(self, horizon: int = 6, dof: int = 3, deterministic: bool | None = None):
        self.action_horizon, self.d_action, self.tensor_args = horizon, dof, F64
        self.action_bound_lows = torch.full((dof,), -5.0, dtype=torch.float64)
        self.action_bound_highs = torch.full((dof,), 5.0, dtype=torch.float64)
        self.centers = torch.tensor([[0.5, -0.2, 0.1], [-1.0, 0.3, 0.7]], dtype=torch.float64)
        self.batches: list[int] = []
        if deterministic is not None:
            self.deterministic_rollout = deterministic

    def rollout_fn(self, act: torch.Tensor) -> RolloutResult:
        self.batches.append(act.shape[0])
        rows = act.view(2, act.shape[0] // 2, *act.shape[1:])
        weights = torch.tensor([1.0, 2.0], dtype=torch.float64)[:, None, None]
        costs = (weights * (rows - self.centers[:, None, None]).square().sum(-1)).reshape(
            act.shape[0], -1
        )
        return RolloutResult(costs, costs.sum(-1))


def _run(rollout: QuadraticRollout, store: bool = False):
    config = MppiConfig.from_dict(
        {
            "n_problems": 2,
            "num_particles": 50,
            "null_act_frac": 0.2,  # the mean and 9 zero-action copies per problem
            "n_iters": 3,
            "seed": 3,
            "store_rollouts": store,
        }
    )
    mppi = Mppi(config, rollout)
    mppi.optimize()
    mppi.shift(1)
    return mppi.optimize(), mppi


def test_copies_rolled_out_once_same_updates():
    once, mppi = _run(QuadraticRollout(deterministic=True))
    every, reference = _run(QuadraticRollout(deterministic=False))
    assert torch.equal(once.action, every.action)
    assert torch.equal(once.best_cost, every.best_cost)
    assert torch.equal(mppi.cov_action, reference.cov_action)
    torch.testing.assert_close(
        once.debug["weighted_cost_history"], every.debug["weighted_cost_history"]
    )
    # 2 problems x (50 particles - 8 copies left out)
    assert mppi.rollout.batches == [84] * 6
    assert reference.rollout.batches == [100] * 6


def test_every_particle_without_the_declaration_or_with_stored_rollouts():
    undeclared = QuadraticRollout()
    _run(undeclared)
    assert undeclared.batches == [100] * 6
    stored = QuadraticRollout(deterministic=True)
    result, _ = _run(stored, store=True)
    assert stored.batches == [100] * 6
    assert result.debug["rollouts"][0]["cost"].shape == (2, 50)


def test_mpc_steps_equal_with_and_without_the_copies():
    """The MPC's commands over 12 steps of the bundled task (40 deterministic particles, 38
    copies left out) are bitwise those of rolling out all 400."""
    tensor_args = TensorDeviceType()
    commands = []
    for deterministic in (True, False):
        solver = MpcSolver.from_config("franka", "particle_mpc", tensor_args)
        solver.rollout.deterministic_rollout = deterministic
        robot = solver.robot_config
        fk = solver.kinematics.forward(robot.retract_config[None] + 0.3)
        solver.update_goal(Pose(fk.ee_position, fk.ee_quaternion))
        state = JointState.from_position(robot.retract_config[None].clone())
        positions = []
        for _ in range(12):
            result = solver.step(state)
            state = result.action
            positions.append(state.position.clone())
        commands.append(torch.cat(positions))
    assert torch.equal(commands[0], commands[1])
    assert (commands[0][-1] - commands[0][0]).abs().max() > 1e-3  # it moved
