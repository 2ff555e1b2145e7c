"""ReactivePlanner carrying an object: ``attach_objects_to_robot`` reaches MotionGen, the MPC
and the background planner (thread or process), ``detach_object_from_robot`` lets go.

Judged independently: the box's place by a numpy URDF forward kinematics (test_attach's), the
MPC's spheres against that box, and a goal that only the held box blocks (the box would sit
in a plate under the hand; the hand itself stays 2.6 cm above it): refused while the box is
held, planned (and reached, by forward kinematics) once it is let go.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_attach import BOX_DIMS, BOX_IN_HAND, _hand, _pose_list, _world
from test_reactive import FEW, _assert_at_goal

from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import ReactivePlanner
from curobo_lite.wrap.base.attach import ATTACHED_LINK, solver_kinematics

#: the hand this far above the plate's top: the held box (5.3 to 15.3 cm along the hand's z)
#: would reach 1.3 cm into it, the fingers (about 11.5 cm) stay above
HAND_ABOVE_PLATE = 0.14


def _steps_to_a_plan(planner: ReactivePlanner, state: JointState) -> None:
    planner.step(state)
    if planner.plan_pending:
        assert planner.wait_for_plan(120.0)
        planner.step(state)


@pytest.mark.parametrize("worker", [None, "thread", "process"])
def test_a_held_box_blocks_a_goal_until_it_is_let_go(worker):
    options = {"mpc": FEW}
    if worker is not None:
        options.update(background_planning=True, background_worker=worker)
    planner = ReactivePlanner.from_config("franka", None, **options)
    try:
        robot = planner.mpc.robot_config
        q = robot.retract_config[None].clone()
        names = list(robot.joint_names)
        hand = _hand(q[0], names)
        assert hand[2, 2] < -0.99  # the hand points down at the retract pose
        plate_top = hand[2, 3] - 0.30
        plate = {
            "dims": [0.3, 0.3, 0.02],  # clear of the arm's base column
            "pose": [hand[0, 3], hand[1, 3], plate_top - 0.01, 1.0, 0.0, 0.0, 0.0],
        }
        planner.update_world(_world(q[0], names, {"plate": plate}))
        state = JointState.from_position(q)
        planner.attach_objects_to_robot(state, ["box"])
        assert set(planner.attached) == {ATTACHED_LINK}
        # the MPC carries the box: its spheres reach the box's centre (numpy FK)
        box_centre = torch.as_tensor((hand @ BOX_IN_HAND)[:3, 3], dtype=q.dtype)
        for kinematics in solver_kinematics(planner.mpc, depth=8):
            spheres = kinematics.forward(q).link_spheres[0]
            begin, end = kinematics.reserved_spheres(ATTACHED_LINK)
            held = spheres[begin:end]
            held = held[held[:, 3] > 0]
            assert held.shape[0] > 0
            inside = (held[:, :3] - box_centre).norm(dim=-1) < held[:, 3]
            assert bool(inside.any())
            assert float((held[:, :3] - box_centre).abs().max()) < max(BOX_DIMS)
        goal_matrix = hand.copy()
        goal_matrix[2, 3] = plate_top + HAND_ABOVE_PLATE
        goal = Pose.from_list(_pose_list(goal_matrix))
        planner.set_goal(goal)
        _steps_to_a_plan(planner, state)
        assert planner.last_plan is not None and not planner.last_plan.success
        # let go, and take the box off the hand's way: the same goal is planned and reached
        planner.detach_object_from_robot()
        assert planner.attached == {}
        away = np.eye(4)
        away[:3, 3] = [-0.5, 0.6, 0.2]
        planner.move_obstacle("box", _pose_list(away))
        planner.set_goal(goal)
        _steps_to_a_plan(planner, state)
        assert planner.last_plan.success
        end = planner.last_plan.interpolated_plan.position[-1]
        _assert_at_goal(planner, end, _pose_list(goal_matrix))
    finally:
        planner.close()
