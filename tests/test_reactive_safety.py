"""Reactive control near obstacles: a narrow follow margin keeps the task's cost at contact (the
smooth hinge by hand on an analytic box distance as the reference), and a robot held at rest off
a finished plan's end is replanned from where it is (the new plan's end judged by forward
kinematics against the goal)."""

from __future__ import annotations

import math

import pytest
import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver, ReactivePlanner, RobotWorld


def _hinge_cost(weight: float, margin: float, distance: float) -> float:
    """The smooth hinge of ``margin - distance`` times ``weight`` (cuRobo's activation)."""
    x = margin - distance
    if x <= 0.0:
        return 0.0
    if margin > 0.0 and x < margin:
        return weight * x * x / (2.0 * margin)
    return weight * (x - 0.5 * margin)


def test_a_narrow_follow_margin_keeps_the_task_cost_at_contact_and_steepens_penetration():
    mpc = MpcSolver.from_config(robot="franka", world=WorldConfig(), num_particles=50)
    cost = mpc.rollout.costs["primitive_collision_cost"]
    task_weight, task_margin = cost.config.weight, cost.config.activation_distance
    # a plan at rest 8 mm above a block under the hand: the block's top 8 mm below the
    # lowest sphere near the hand
    retract = mpc.robot_config.retract_config.clone()
    checker = RobotWorld.from_config("franka", None)
    spheres = checker.get_world_spheres(retract[None])[0]
    hand = checker.kinematics.forward(retract[None]).ee_position[0]
    near = ((spheres[:, :2] - hand[:2]).norm(dim=-1) < 0.08) & (spheres[:, 3] > 0)
    top = float((spheres[near, 2] - spheres[near, 3]).min()) - 0.008
    x, y = float(hand[0]), float(hand[1])
    block = {"dims": [0.12, 0.12, 0.1], "pose": [x, y, top - 0.05, 1, 0, 0, 0]}
    world = WorldConfig.from_dict({"cuboid": {"block": block}})
    mpc.update_world(world)
    checker.update_world(world)
    clearance = float(checker.collision_distance(retract[None]).min())
    assert clearance == pytest.approx(0.008, abs=2e-4)  # the case as built
    plan = JointState.from_position(retract[None].expand(2, -1).clone())
    mpc.follow(plan, 0.01)
    margin = cost.config.activation_distance
    assert margin == pytest.approx(math.floor(clearance / 5e-4) * 5e-4, abs=1e-6)
    # probe spheres of 2 cm above the block's centre: touching, 5 mm in, 1 mm clear
    probes = [0.0, -0.005, 0.001]
    link_spheres = torch.tensor([[[[x, y, top + 0.02 + d, 0.02] for d in probes]]])
    per_sphere = [
        float(cost(link_spheres[:, :, k : k + 1].to(**mpc.tensor_args.as_kwargs())))
        for k in range(len(probes))
    ]
    gain = min(task_margin / margin, 8.0)
    for value, distance in zip(per_sphere, probes):
        assert value == pytest.approx(_hinge_cost(task_weight * gain, margin, distance), rel=1e-3)
    # the contact costs what the task's margin made it cost (8 mm: within the gain's cap)
    assert per_sphere[0] == pytest.approx(0.5 * task_weight * task_margin, rel=1e-3)
    assert per_sphere[1] > _hinge_cost(task_weight, task_margin, -0.005)
    mpc.follow(None)  # the task's margin and weight again
    assert cost.config.weight == task_weight
    assert cost.config.activation_distance == task_margin


@pytest.fixture(scope="module")
def planner() -> ReactivePlanner:
    # retry_interval 1: the checks after a plan run from the next step on
    return ReactivePlanner.from_config("franka", None, retry_interval=1, mpc={"num_particles": 50})


def test_a_robot_at_rest_off_a_finished_plan_is_replanned_from_where_it_is(planner):
    config = planner.mpc.robot_config
    retract = config.retract_config[None].clone()
    target = retract.clone()
    target[0, 0] += 0.4
    fk = planner.mpc.kinematics.forward(target, spheres=False)
    goal = Pose(fk.ee_position.clone(), fk.ee_quaternion.clone())
    planner.set_goal(goal)
    first = planner.step(JointState.from_position(retract))
    assert first.replan_reason == "goal" and first.following
    tracked = planner.mpc.following
    end = tracked.position[-1:].clone()
    tracked.time = tracked.duration + 1.0  # the plan is over
    off = end.clone()
    off[0, 1] -= 0.1  # 0.1 rad off the plan's end
    near = JointState.from_position(end + 0.01)  # at rest near the end: the MPC settles it
    assert planner.step(near).replan_reason == ""
    planner.mpc.following.time = planner.mpc.following.duration + 1.0
    moving = JointState(off, torch.full_like(off, 0.2), torch.zeros_like(off))
    assert planner.step(moving).replan_reason == ""  # still moving: not stalled
    planner.mpc.following.time = planner.mpc.following.duration + 1.0
    stalled = planner.step(JointState.from_position(off))
    assert stalled.replan_reason == "stalled" and stalled.following
    plan = planner.mpc.following.position
    torch.testing.assert_close(plan[:1], off, atol=1e-4, rtol=0.0)  # from where it is
    reached = planner.mpc.kinematics.forward(plan[-1:], spheres=False)
    assert float((reached.ee_position - goal.position).norm()) < 0.01  # FK of the plan's end
    with pytest.raises(ValueError, match="stall_deviation"):
        ReactivePlanner.from_config("franka", None, stall_deviation=-1.0)


def test_the_mean_closes_the_error_to_the_plan_critically_damped_and_only_brakes_far_off():
    from curobo_lite.types import TensorDeviceType
    from curobo_lite.wrap.mpc.tracking import FEEDBACK_RATE, FEEDBACK_REACH, TrackedPlan

    f64 = TensorDeviceType(dtype=torch.float64)
    traj_dt = torch.full((30,), 0.02, dtype=torch.float64)
    plan = JointState.from_position(torch.zeros(2, 7, dtype=torch.float64))
    tracked = TrackedPlan.from_plan(plan, 0.01, 7, f64, traj_dt)
    generator = torch.Generator().manual_seed(0)
    error = torch.randn(7, generator=generator, dtype=torch.float64)
    rate = torch.randn(7, generator=generator, dtype=torch.float64) * 0.3
    reference = torch.zeros(7, dtype=torch.float64)

    def error_at(t: float, e0: torch.Tensor, de0: torch.Tensor) -> torch.Tensor:
        w = FEEDBACK_RATE
        return (e0 + (de0 + w * e0) * t) * math.exp(-w * t)

    for scale, kept in ((0.03, 1.0), (0.3, 0.0)):  # within the reach; far off: braking only
        e0 = error / error.norm() * scale
        start = JointState(e0[None], rate[None], torch.zeros(1, 7, dtype=torch.float64))
        got = tracked.correction(start, reference, reference)
        h = 1e-4  # the second derivative by central differences
        for k, t in enumerate(tracked.offsets.tolist()):
            e = [error_at(t + d, e0 * kept, rate) for d in (-h, 0.0, h)]
            want = (e[0] - 2 * e[1] + e[2]) / h**2
            torch.testing.assert_close(got[k], want, atol=1e-4, rtol=1e-5)
    assert FEEDBACK_REACH[0] >= 0.03 and FEEDBACK_REACH[1] <= 0.3  # the cases as built
