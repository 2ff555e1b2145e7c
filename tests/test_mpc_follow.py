"""MpcSolver.follow: the tracking cost against its formula, the reference sampled in place at the
horizon's times (numpy interpolation as the reference), a followed plan tracked to its end, and
named errors that leave the solver as it was."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.rollout import TaskConfig
from curobo_lite.rollout.cost import TrackingCost
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver, RobotWorld

F64 = TensorDeviceType(dtype=torch.float64)


def _solver(**overrides) -> MpcSolver:
    return MpcSolver.from_config(robot="franka", **{"num_particles": 100, **overrides})


def _joint_plan(start: torch.Tensor, end: torch.Tensor, duration: float, dt: float) -> JointState:
    """A quintic (minimum-jerk) joint motion at rest at both ends, ``[T, D]``."""
    t = torch.arange(0.0, duration + 1e-9, dt, dtype=start.dtype, device=start.device) / duration
    s = 10 * t**3 - 15 * t**4 + 6 * t**5
    ds = (30 * t**2 - 60 * t**3 + 30 * t**4) / duration
    dds = (60 * t - 180 * t**2 + 120 * t**3) / duration**2
    delta = end - start
    return JointState(start + s[:, None] * delta, ds[:, None] * delta, dds[:, None] * delta)


def test_tracking_cost_matches_its_formula_and_gradcheck():
    rng = np.random.default_rng(3)
    B, H, D = 4, 6, 3
    state = JointState(*(torch.tensor(rng.normal(size=(B, H, D))) for _ in range(2)))
    reference = JointState(*(torch.tensor(rng.normal(size=(1, H, D))) for _ in range(2)))
    options = {
        "weight": 2.0,
        "position_weight": 3.0,
        "velocity_weight": 0.5,
        "terminal_weight": 4.0,
        "run_weight_decay": 0.5,
        "cspace_weights": [1.0, 2.0, 0.5],
    }
    cost = TrackingCost.from_dict(options, F64)
    value = cost(state, reference)
    # the formula, step by step
    c = np.array(options["cspace_weights"])
    expected = np.zeros((B, H))
    for b in range(B):
        for h in range(H):
            w = options["terminal_weight"] if h == H - 1 else 1.0 - 0.5 * h / (H - 1)
            dq = state.position[b, h].numpy() - reference.position[0, h].numpy()
            dv = state.velocity[b, h].numpy() - reference.velocity[0, h].numpy()
            expected[b, h] = 2.0 * w * (c * (3.0 * dq**2 + 0.5 * dv**2)).sum()
    np.testing.assert_allclose(value.numpy(), expected, rtol=1e-12)
    position = state.position.clone().requires_grad_(True)
    velocity = state.velocity.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda p, v: cost(JointState(p, v), reference), (position, velocity)
    )
    with pytest.raises(ValueError, match=r"reference.position expected shape \[1 or 4, 6, 3\]"):
        cost(state, JointState(reference.position[:, :5]))
    with pytest.raises(ValueError, match=r"run_weight_decay: expected a number in \[0, 1\]"):
        TrackingCost.from_dict({"run_weight_decay": 1.5}, F64)


def test_follow_writes_the_plan_at_the_horizon_times_in_place():
    mpc = _solver()
    retract = mpc.robot_config.retract_config[None].clone()
    plan = _joint_plan(retract[0], retract[0] + 0.3, 1.0, 0.01)
    mpc.follow(plan, 0.01)
    traj_dt = mpc.dynamics_model.traj_dt.numpy()
    offsets = np.concatenate(([0.0], np.cumsum(traj_dt[1:])))
    times = np.arange(plan.position.shape[0]) * 0.01
    state = JointState.from_position(retract)
    addresses, keys = set(), set()
    for k in range(3):
        result = mpc.step(state)
        reference = mpc.rollout.reference
        addresses.add(reference.position.data_ptr())
        keys.add(mpc.rollout.graph_key())
        # the reference of step k: the plan at k * control_dt + offsets, held at its end
        at = np.clip(k * mpc.control_dt + offsets, 0.0, times[-1])
        for d in range(plan.dof):
            np.testing.assert_allclose(
                reference.position[0, :, d].numpy(),
                np.interp(at, times, plan.position[:, d].numpy()),
                atol=1e-5,
            )
        assert result.metrics["tracking_error"] == pytest.approx(
            float((state.position[0] - reference.position[0, 0]).norm()), abs=1e-6
        )
        state = result.action
    # another plan of another length: same buffers, same capture key
    mpc.follow(_joint_plan(retract[0], retract[0] - 0.2, 0.5, 0.01), 0.01)
    mpc.step(state)
    assert mpc.rollout.reference.position.data_ptr() in addresses and len(addresses) == 1
    assert len(keys) == 1


def test_a_followed_plan_is_tracked_to_its_end_and_its_pose():
    mpc = _solver()
    retract = mpc.robot_config.retract_config[None].clone()
    end = retract[0] + torch.tensor([0.4, 0.3, -0.3, 0.4, 0.2, 0.3, -0.4])
    plan = _joint_plan(retract[0], end, 1.2, 0.01)
    mpc.follow(plan, 0.01)  # the goal: the plan's last pose
    fk = mpc.kinematics.forward(end[None])
    state = JointState.from_position(retract)
    worst = 0.0
    for _ in range(100):
        result = mpc.step(state)
        worst = max(worst, result.metrics["tracking_error"])
        state = result.action
    assert worst < 0.05, worst
    assert float((state.position[0] - end).abs().max()) < 0.02
    position_error, rotation_error = mpc.pose_error(state)
    reached = mpc.kinematics.forward(state.position)
    assert float((reached.ee_position - fk.ee_position).norm()) == pytest.approx(
        position_error, abs=1e-6
    )
    assert position_error < 0.01 and rotation_error < 0.05


def test_update_goal_alone_stops_following_and_an_unfollowed_task_steps_as_before():
    with_tracking = _solver(seed=5)
    task = TaskConfig.load("particle_mpc")
    task.cost = {k: v for k, v in task.cost.items() if k != "tracking_cost"}
    task.mpc = {k: v for k, v in task.mpc.items() if k != "follow_activation_distance"}
    without = MpcSolver.from_config(robot="franka", task=task, num_particles=100, seed=5)
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    retract = with_tracking.robot_config.retract_config[None].clone()
    with_tracking.follow(_joint_plan(retract[0], retract[0] + 0.2, 0.5, 0.01), 0.01)
    with_tracking.update_goal(goal)
    assert with_tracking.following is None and with_tracking.rollout.reference is None
    without.update_goal(goal)
    a = b = JointState.from_position(retract)
    for _ in range(3):
        a = with_tracking.step(a).action
        b = without.step(b).action
    assert torch.equal(a.position, b.position)
    with pytest.raises(ValueError, match="follow: the task has no tracking_cost section"):
        without.follow(JointState.from_position(retract), 0.01)


def test_follow_errors_name_the_argument_and_change_nothing():
    mpc = _solver()
    retract = mpc.robot_config.retract_config[None].clone()
    plan = _joint_plan(retract[0], retract[0] + 0.2, 0.5, 0.01)
    mpc.follow(plan, 0.01)
    kept, goal = mpc.following, mpc.goal.goal_pose.position.clone()
    bad_nan = plan.clone()
    bad_nan.position[3, 2] = float("nan")
    outside = plan.clone()
    outside.position[:, 0] = 5.0
    two_poses = Pose(torch.zeros(2, 3), torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 2))
    for args, kwargs, match in (
        ((plan, 0.0), {}, "dt: expected seconds > 0"),
        ((plan, float("nan")), {}, "dt: expected a finite number"),
        ((plan, None), {}, "dt: expected the seconds between the plan's 51 states"),
        ((plan, 0.01), {"speed": 0.0}, r"speed: expected a number in \(0, 1\]"),
        ((JointState.from_position(plan.position[:, :6]), 0.01), {}, "plan: expected position"),
        ((bad_nan, 0.01), {}, "plan: position contains NaN"),
        ((outside, 0.01), {}, r"plan.position\[0\]: outside the joint limits"),
        ((plan, 0.01), {"goal": two_poses}, "goal: expected batch 1, received 2"),
    ):
        with pytest.raises(ValueError, match=match):
            mpc.follow(*args, **kwargs)
        assert mpc.following is kept
        assert torch.equal(mpc.goal.goal_pose.position, goal)
    mpc.follow(None)
    assert mpc.following is None and mpc.rollout.reference is None
    assert torch.equal(mpc.goal.goal_pose.position, goal)  # the goal stays


def test_the_viewer_draws_the_followed_plans_hand_path():
    pytest.importorskip("viser", reason="the viewer needs viser: pip install '.[viz]'")
    from curobo_lite.robot import Kinematics
    from curobo_lite.viz import Viewer

    mpc = _solver(num_particles=32)
    retract = mpc.robot_config.retract_config[None].clone()
    plan = _joint_plan(retract[0], retract[0] + 0.3, 0.5, 0.01)
    mpc.follow(plan, 0.01)
    with Viewer(mpc.robot_config, port=0) as viewer:
        view = viewer.mpc_callback(mpc, max_rate_hz=1e6, num_traces=2)
        mpc.step(JointState.from_position(retract))
        view(0)
        points = viewer.server.scene.get_handle_by_name("/mpc/plan").points  # [T - 1, 2, 3]
    # the plan's hand path by the torch forward kinematics (not the Warp one the view uses)
    hand = Kinematics(mpc.robot_config, backend="torch").forward(plan.position).ee_position
    np.testing.assert_allclose(points[:, 0], hand[:-1].detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(points[-1, 1], hand[-1].detach().numpy(), atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_a_followed_plan_replays_from_the_cuda_graph_as_it_runs_eagerly():
    """The reference is written in place each step: the captured plan update (use_cuda_graph)
    reads every step's samples and a second plan's, so its commands equal the eager ones."""
    cuda = TensorDeviceType(device=torch.device("cuda"))
    solvers = []
    for graph in (False, True):
        task = TaskConfig.load("particle_mpc")
        task.mpc = dict(task.mpc, use_cuda_graph=graph)
        solvers.append(
            MpcSolver.from_config(robot="franka", task=task, tensor_args=cuda, num_particles=100)
        )
    retract = solvers[0].robot_config.retract_config[None].clone()
    plans = [
        _joint_plan(retract[0], retract[0] + 0.3, 0.5, 0.01).to(cuda),
        _joint_plan(retract[0], retract[0] - 0.2, 0.4, 0.01).to(cuda),
    ]
    states = [JointState.from_position(retract).to(cuda) for _ in solvers]
    for k in range(12):
        for i, solver in enumerate(solvers):
            if k in (0, 6):
                solver.follow(plans[k // 6], 0.01)
            states[i] = solver.step(states[i]).action
        torch.testing.assert_close(states[1].position, states[0].position, atol=1e-4, rtol=0)


def test_a_plan_ending_at_a_joint_limit_a_few_mm_above_an_obstacle_is_tracked_to_its_end():
    # a grasp-like end: joint 5 at its lower limit, the arm 3 mm above a block. The task's
    # margins (5 % of each joint's range from its limits, 1 cm from obstacles while following)
    # held the arm 0.2 rad and 5 cm short of such an end; the plan's own span and clearance
    # (over the horizon ahead) now bound them
    checker = RobotWorld.from_config("franka", None)
    retract = checker.kinematics.robot_config.retract_config.clone()
    low = checker.kinematics.robot_config.joint_limits.position[0]
    end = retract.clone()
    end[4] = low[4]
    end[1] += 0.35
    end[3] += 0.2
    plan = _joint_plan(retract, end, 3.0, 0.01)
    spheres = checker.get_world_spheres(end[None])[0]
    hand = checker.kinematics.forward(end[None]).ee_position[0]
    near = ((spheres[:, :2] - hand[:2]).norm(dim=-1) < 0.08) & (spheres[:, 3] > 0)
    top = float((spheres[near, 2] - spheres[near, 3]).min()) - 0.003
    block = [float(hand[0]), float(hand[1]), top - 0.05, 1.0, 0.0, 0.0, 0.0]
    world = WorldConfig.from_dict({"cuboid": {"block": {"dims": [0.12, 0.12, 0.1], "pose": block}}})
    checker.update_world(world)
    plan_clearance = checker.collision_distance(plan.position)
    assert float(plan_clearance.min()) == pytest.approx(0.003, abs=2e-4)  # the case as built
    mpc = _solver(world=world, seed=0)
    mpc.follow(plan, 0.01)
    collision = mpc.rollout.costs["primitive_collision_cost"].config
    assert collision.activation_distance > 0.006  # the close end is beyond the first horizon
    state = JointState.from_position(retract[None].clone())
    executed = []
    for _ in range(200):
        state = mpc.step(state).action
        executed.append(state.position[0])
    assert float((state.position[0] - end).abs().max()) < 0.04
    reached = checker.kinematics.forward(state.position)
    target = checker.kinematics.forward(end[None])
    assert float((reached.ee_position - target.ee_position).norm()) < 0.01
    assert float(checker.collision_distance(torch.stack(executed)).min()) >= 0.0  # no contact
    # at the end: the margin is the plan's end clearance (rounded down to 0.5 mm)
    assert 0.0025 <= collision.activation_distance <= float(plan_clearance[-1]) + 1e-4
    mpc.follow(None)  # stops following: the task's margins again
    assert mpc.rollout.costs["bound_cost"].config.free_position is None
    margin = mpc.rollout.costs["primitive_collision_cost"].config.activation_distance
    assert margin == pytest.approx(0.04)
