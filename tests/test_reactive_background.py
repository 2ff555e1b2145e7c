"""ReactivePlanner with ``background_planning``: plans made on a worker thread while the MPC
keeps stepping, checked against the world of the moment before they are followed.

Judged independently: the robot's spheres along the plans and the executed motion against the
true boxes with coal's exact signed distance, the boxes read from the world files; goals by
forward kinematics.
"""

from __future__ import annotations

import pytest
import torch
from test_reactive import FEW, WALL, _assert_at_goal, _bundled, _clearance

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.sim import IdealTracker
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, MpcSolver, ReactivePlanner, ReactivePlannerConfig
from curobo_lite.wrap.reactive.background_process import ProcessPlanner

GOAL = [0.4, -0.3, 0.45, 0.0, 1.0, 0.0, 0.0]  # moving_post's goal, beyond the post's new place
MOVED = [0.42, -0.08, 0.33, 1.0, 0.0, 0.0, 0.0]  # the post onto the way (test_reactive's)


def _start(planner: ReactivePlanner) -> IdealTracker:
    return IdealTracker(
        JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    )


@pytest.mark.parametrize("worker", ["thread", "process"])
def test_a_plan_made_for_a_world_moved_meanwhile_is_checked_and_replanned(worker):
    world = _bundled("moving_post")
    planner = ReactivePlanner.from_config(
        "franka", world, background_planning=True, background_worker=worker, mpc=FEW
    )
    try:
        assert planner.motion_gen.world_collision is planner.mpc.world_collision
        if worker == "thread":  # the worker plans on a world of its own
            assert planner._background.motion_gen.world_collision is not planner.world_collision
        tracker = _start(planner)
        start = tracker.state.position.clone()
        planner.set_goal(Pose.from_list(GOAL))
        first = planner.step(tracker.state)
        # the step asked for a plan and returned: the MPC holds where the robot is
        assert first.replanned and first.replan_reason == "goal"
        assert first.plan_pending and not first.following and first.plan_status is None
        tracker.step(first.action)
        assert float((tracker.state.position - start).abs().max()) < 0.02
        # the world changes while the worker plans in its snapshot of the old one
        planner.move_obstacle("post", MOVED)
        assert planner.wait_for_plan(120.0)
        boxes = [
            (MOVED, world["cuboid"]["post"]["dims"]),
            (world["cuboid"]["stand"]["pose"], world["cuboid"]["stand"]["dims"]),
        ]
        second = planner.step(tracker.state)
        stale = planner.last_plan
        assert stale.success
        # the plan of the old world runs into the moved post (coal): it is not followed
        assert _clearance(planner, stale.interpolated_plan.position, boxes[:1]) < 0.0
        assert second.replanned and second.replan_reason == "blocked" and second.plan_pending
        positions = [tracker.step(second.action).position[0]]
        for _ in range(400):
            result = planner.step(tracker.state)
            positions.append(tracker.step(result.action).position[0])
            p, r = planner.mpc.pose_error(tracker.state)
            if p <= 0.008 and r <= 0.04 and float(tracker.state.velocity.abs().max()) < 0.05:
                break
        positions = torch.stack(positions)
        assert planner.last_plan is not stale and planner.last_plan.success
        assert _clearance(planner, planner.last_plan.interpolated_plan.position, boxes) >= 0.0
        assert _clearance(planner, positions, boxes) >= 0.0
        _assert_at_goal(planner, positions[-1], GOAL)
    finally:
        planner.close()


def test_a_new_goal_while_a_plan_is_made_drops_the_stale_one():
    planner = ReactivePlanner.from_config(
        "franka", {"cuboid": {"wall": WALL}}, background_planning=True, mpc=FEW
    )
    try:
        tracker = _start(planner)
        planner.set_goal(Pose.from_list([0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]))
        tracker.step(planner.step(tracker.state).action)
        second_goal = [0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0]
        planner.set_goal(Pose.from_list(second_goal))
        result = planner.step(tracker.state)
        assert result.replan_reason == "goal" and result.plan_pending
        tracker.step(result.action)
        assert planner.wait_for_plan(120.0)
        result = planner.step(tracker.state)
        assert result.following and not result.plan_pending and planner.replans == 2
        # the plan followed ends at the second goal (forward kinematics of its last sample)
        _assert_at_goal(planner, planner.plan.position[-1], second_goal)
    finally:
        planner.close()
    assert planner._background._process.poll() == 0  # the planning process ended
    replans = planner.replans
    with pytest.raises(ValueError, match="step: the planner was closed"):
        planner.step(tracker.state)
    assert planner.replans == replans


def test_background_planning_needs_a_planner_with_a_world_of_its_own():
    motion_gen = MotionGen.from_config("franka", {"cuboid": {"wall": WALL}})
    mpc = MpcSolver.from_config("franka", "particle_mpc", world=motion_gen.world_collision)
    on = ReactivePlannerConfig.from_dict({"background_planning": True})
    with pytest.raises(ValueError, match="background: expected a MotionGen or ProcessPlanner"):
        ReactivePlanner(on, motion_gen, mpc)
    with pytest.raises(ValueError, match="background: expected a MotionGen with a world of its"):
        ReactivePlanner(on, motion_gen, mpc, background=motion_gen)
    with pytest.raises(TypeError, match="reactive.background_planning: expected true/false"):
        ReactivePlannerConfig.from_dict({"background_planning": "yes"})


def test_a_planning_process_that_cannot_build_its_planner_raises_its_error():
    robot = RobotConfig.load("franka")
    with pytest.raises(ValueError, match="not_an_option"):
        ProcessPlanner(robot, WorldConfig(), TensorDeviceType(), {"not_an_option": 1})
    if torch.cuda.is_available():  # on a GPU the planner thread is the one to use
        cuda = TensorDeviceType(device=torch.device("cuda"))
        with pytest.raises(ValueError, match="tensor_args: expected a CPU device"):
            ProcessPlanner(robot, WorldConfig(), cuda, {})
