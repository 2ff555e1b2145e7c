"""Recorded Warp launches: the fused MPPI rollout records each row chunk's launches once per
set of arguments and replays them; a replay must follow every change of what they read (values
written in place, tensors replaced, constants rebuilt, other batches). Each rollout is compared
with the modular path (``_assert_equal_rollouts``, whose reference is tested in its own files),
and the count of recordings shows that the replays, not fresh recordings, were compared."""

from __future__ import annotations

import pytest
import torch
from test_fused_rollout import GOAL, _actions, _assert_equal_rollouts, _reacher, _start

from curobo_lite.kernels.launch import recorded_cpu_launches
from curobo_lite.rollout import Goal
from curobo_lite.types import JointState, Pose


@pytest.mark.parametrize("shared", [False, True])
def test_replayed_rollouts_follow_changed_inputs(shared):
    reacher = _reacher(world=True)
    reacher.cpu_overlap = shared  # True: row chunks shared with the helper thread
    start = _start(reacher)
    reacher.update_params(Goal(goal_pose=Pose.from_list(GOAL, reacher.tensor_args)), start)
    recorded = reacher._fused._recorded
    actions = _actions(reacher)
    _assert_equal_rollouts(reacher, actions)
    assert len(recorded) == 1
    # new values in the same tensors: the actions, the start state (written in place)
    actions.copy_(_actions(reacher, seed=1))
    _assert_equal_rollouts(reacher, actions)
    moved = JointState(start.position - 0.3, -start.velocity, torch.zeros_like(start.position))
    reacher.update_start_state(moved)
    _assert_equal_rollouts(reacher, actions)
    # an obstacle moved: the world pass is built every call
    reacher.world_collision.update_obstacle_pose("ball", [0.3, -0.1, 0.5, 1.0, 0.0, 0.0, 0.0])
    _assert_equal_rollouts(reacher, actions)
    assert len(recorded) == 1  # all of the above replayed the first recording
    # a new goal pose and a reconfigured cost (the constants rebuilt)
    reacher.update_params(Goal(goal_pose=Pose.from_list([0.3, -0.3, 0.5, 0, 1, 0, 0])))
    _assert_equal_rollouts(reacher, actions)
    reacher.costs["bound_cost"].config.weight = 3.0 * reacher.costs["bound_cost"].config.weight
    terms = _assert_equal_rollouts(reacher, actions)
    assert float(terms["bound_cost"].max()) > 0.0
    # actions in another tensor, then another batch
    _assert_equal_rollouts(reacher, _actions(reacher, seed=2))
    _assert_equal_rollouts(reacher, _actions(reacher, batch=80, seed=3))
    assert 1 < len(recorded) <= 8  # bounded


def test_recorded_launches_run_only_when_replayed():
    reacher = _reacher(world=False)
    kinematics = reacher.dynamics_model.kinematics
    q = _actions(reacher, batch=3).reshape(-1, reacher.robot_config.dof)[:50] * 0.2
    out = kinematics.allocate_outputs(q.shape[0], spheres=False)
    out.link_position.fill_(float("nan"))
    with recorded_cpu_launches() as launches:
        kinematics.forward_rows(q, out, (0, q.shape[0]), spheres=False)
    assert len(launches) == 1
    assert bool(out.link_position.isnan().all())  # recorded, not run
    expected = kinematics.forward(q, spheres=False)
    q_values = q.clone()
    q.mul_(-1.0)  # replays read the values at their addresses when they run
    launches[0].launch()
    assert not bool(out.link_position.isnan().any())
    moved = kinematics.forward(-q_values, spheres=False)
    torch.testing.assert_close(out.link_position, moved.link_position)
    assert not torch.allclose(out.link_position, expected.link_position)
