"""Issue #30 item 3 with MuJoCo as the plant: the ReactivePlanner (MotionGen plans, MPC tracks)
drives a Franka that is 20 % heavier than its model, behind a 10 ms command latency, to a
side-facing goal 6 cm inside the middle cubby of the bundled ``cubbies`` scene. Judged by
MuJoCo alone: its contact detection on the robot's spheres and the obstacle boxes (no contact
at any physics step) and its own forward kinematics of the hand (goal held within 1 cm /
0.05 rad). ``benchmarks/closed_loop_mujoco.py`` runs every bundled scene."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

mujoco = pytest.importorskip("mujoco", reason="the 'sim' extra (mujoco) is not installed")

from curobo_lite.sim import MujocoPlant, run_closed_loop  # noqa: E402
from curobo_lite.types import JointState, Pose  # noqa: E402
from curobo_lite.wrap import ReactivePlanner  # noqa: E402

C = math.sqrt(0.5)
GOAL = [0.66, 0.0, 0.55, C, 0.0, C, 0.0]  # the hand points into the middle cubby, 6 cm deep


def _hand_error(plant: MujocoPlant, goal: list[float]) -> tuple[float, float]:
    """Position (m) and rotation (rad) error of MuJoCo's own end-effector body to ``goal``."""
    body = mujoco.mj_name2id(plant.model, mujoco.mjtObj.mjOBJ_BODY, plant.robot_config.ee_link)
    mujoco.mj_forward(plant.model, plant.data)
    position = plant.data.xpos[body]
    rotation = plant.data.xmat[body].reshape(3, 3)
    target = np.zeros(9)
    mujoco.mju_quat2Mat(target, np.asarray(goal[3:], dtype=np.float64))
    relative = rotation.T @ target.reshape(3, 3)
    angle = math.acos(max(-1.0, min(1.0, (np.trace(relative) - 1.0) / 2.0)))
    return float(np.linalg.norm(position - np.asarray(goal[:3]))), angle


@pytest.mark.slow
def test_side_facing_cubby_goal_with_mass_error_and_latency_touches_nothing():
    torch.set_num_threads(1)
    # plans followed at half speed: a heavier arm lags a faster one (the benchmark's setting)
    planner = ReactivePlanner.from_config("franka", "cubbies", plan_speed=0.5)
    robot = planner.mpc.robot_config
    start = JointState.from_position(robot.retract_config[None].clone())
    case = {"mass_scale": 1.2, "command_latency": 0.01}
    plant = MujocoPlant(robot, planner.world_collision.world, {"control_dt": 0.02, **case}, start)
    record = run_closed_loop(
        planner, plant, Pose.from_list(GOAL), 300, latency_compensation=case["command_latency"]
    )
    assert planner.replans >= 1  # it planned (MPC alone stops in front of the cubby)
    assert int(record.contact_count.max()) == 0, "MuJoCo saw a robot-obstacle contact"
    assert float(record.max_penetration.max()) == 0.0
    position_error, rotation_error = _hand_error(plant, GOAL)
    assert position_error < 0.01 and rotation_error < 0.05, (position_error, rotation_error)
    # held, not passing through: the last 0.2 s within the tolerance too
    assert float(record.position_error[-10:].max()) < 0.01
