"""Full-turn joints in the IK's ranking (:func:`curobo_lite.wrap.ik.ranking.nearest_turns`): a
UR5e's ``+-2 pi`` joints end at the whole-turn equivalent nearest the ranking configuration.

References: hand-computed values for the wrapping near the limits, the forward kinematics (the
pose of a wrapped solution is the goal's) and ``RobotWorld.validate`` (still valid)."""

from __future__ import annotations

import math

import pytest
import torch

from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import IKSolver, MotionGen, RobotWorld
from curobo_lite.wrap.ik.ranking import full_turn_joints, nearest_turns

TURN = 2.0 * math.pi


def test_which_joints_turn_fully():
    ur5e = IKSolver.from_config("ur5e")
    franka = IKSolver.from_config("franka")
    assert full_turn_joints(ur5e.rollout.dynamics_model.kinematics).all()
    assert not full_turn_joints(franka.rollout.dynamics_model.kinematics).any()


def test_nearest_turns_by_hand():
    low = torch.tensor([-TURN, -TURN, -3.0, -TURN])
    high = torch.tensor([TURN, TURN, 3.0, 1.0])
    full = torch.tensor([True, True, False, True])
    reference = torch.tensor([[0.1, 5.9, 0.0, 0.5]])
    q = torch.tensor([[[5.0, -0.2, 2.9, -5.0]]])
    got = nearest_turns(q, reference, full, low, high)
    # 5.0 -> 5.0 - 2 pi (nearest 0.1); -0.2 -> -0.2 + 2 pi (nearest 5.9); joint 2 is not a full
    # turn; -5.0 + 2 pi = 1.28 is nearest 0.5 but past the limit 1.0: stays at -5.0
    expected = torch.tensor([[[5.0 - TURN, -0.2 + TURN, 2.9, -5.0]]])
    assert torch.allclose(got, expected, atol=1e-6)
    # at the range's edge the nearest value lies past the limit: one turn back, within it
    edge = nearest_turns(
        torch.tensor([[[-6.0, 0.0, 0.0, 0.0]]]), torch.tensor([[6.2, 0, 0, 0]]), full, low, high
    )
    assert abs(float(edge[0, 0, 0]) - (-6.0 + TURN)) < 1e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_ur5e_solutions_lie_within_half_a_turn_of_the_ranking_configuration(seed):
    generator = torch.Generator().manual_seed(seed)
    checker = RobotWorld.from_config("ur5e", "table")
    low, high = checker.kinematics.robot_config.joint_limits.position
    found = []
    while len(found) < 2:
        q = low + (high - low) * torch.rand(64, 6, generator=generator)
        found += list(q[checker.validate(q)])
    start, goal_q = found[0], found[1]
    fk = checker.kinematics.forward(goal_q[None], spheres=False)
    goal = Pose(fk.ee_position, fk.ee_quaternion)
    ik = IKSolver.from_config("ur5e", "table", dls_iterations=16)
    result = ik.solve_batch(goal, rank_config=start[None])
    assert bool(result.success[0])
    solutions = result.distinct_solutions[0]
    # every full-turn joint within half a turn of the start, unless a limit forbids it
    gap = (solutions - start).abs()
    shifted = solutions - torch.sign(solutions - start) * TURN
    blocked = (shifted < low) | (shifted > high)
    assert ((gap <= math.pi + 1e-4) | blocked).all()
    # the same pose and valid
    state = checker.kinematics.forward(solutions, spheres=False)
    assert (state.ee_position - fk.ee_position).norm(dim=-1).max() < 0.005
    assert checker.validate(solutions).all()


def test_ur5e_plan_from_a_wound_start_takes_no_extra_turns():
    """The sweep case of benchmarks/user_sweep.py that planned a 12.5 s motion (IK ended three
    joints a turn away from the start): the plan's joint travel stays under a turn per joint."""
    start = torch.tensor([[-0.12, 4.98, -0.56, 1.66, -1.9, -1.24]])
    goal_q = torch.tensor([[1.27, 4.0, 5.95, 3.99, 5.97, -0.45]])
    motion_gen = MotionGen.from_config("ur5e", "bookshelf")
    fk = motion_gen.checker.kinematics.forward(goal_q, spheres=False)
    result = motion_gen.plan_single(
        JointState.from_position(start), Pose(fk.ee_position, fk.ee_quaternion)
    )
    assert result.success
    path = result.interpolated_plan.position
    travel = (path[1:] - path[:-1]).abs().sum(0)
    assert travel.max() < math.pi
    end = motion_gen.checker.kinematics.forward(path[-1:], spheres=False)
    assert (end.ee_position - fk.ee_position).norm() < 0.005
