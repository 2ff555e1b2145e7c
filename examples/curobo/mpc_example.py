"""A model-predictive control loop, written as cuRobo's examples/mpc_example.py is.

Ported from cuRobo by replacing ``curobo.`` with ``curobo_lite.`` in the imports; the robot is
``franka_curobo.yml``, a robot file in cuRobo's layout. The loop feeds each command back as the
measured state (a perfect tracker). Run: ``python examples/curobo/mpc_example.py``.
"""

import os
import time

import numpy as np

from curobo_lite.rollout.rollout_base import Goal
from curobo_lite.types.base import TensorDeviceType
from curobo_lite.types.math import Pose
from curobo_lite.types.robot import JointState
from curobo_lite.util_file import join_path
from curobo_lite.wrap.reacher.mpc import MpcSolver, MpcSolverConfig

ROBOT_FILE = join_path(os.path.dirname(os.path.abspath(__file__)), "franka_curobo.yml")


def demo_full_config_mpc(robot_file=ROBOT_FILE, max_steps=600):
    tensor_args = TensorDeviceType()
    mpc_config = MpcSolverConfig.load_from_robot_config(
        robot_file, None, tensor_args, store_rollouts=False, step_dt=0.03
    )
    mpc = MpcSolver(mpc_config)

    retract_cfg = mpc.rollout_fn.dynamics_model.retract_config.unsqueeze(0)
    joint_names = mpc.joint_names
    # the goal: the end effector where the retract configuration + 0.3 rad on every joint has it
    state = mpc.rollout_fn.compute_kinematics(
        JointState.from_position(retract_cfg + 0.3, joint_names=joint_names)
    )
    retract_pose = Pose(state.ee_pos_seq, quaternion=state.ee_quat_seq)
    start_state = JointState.from_position(retract_cfg.clone(), joint_names=joint_names)

    goal = Goal(
        current_state=start_state,
        goal_state=JointState.from_position(retract_cfg, joint_names=joint_names),
        goal_pose=retract_pose,
    )
    goal_buffer = mpc.setup_solve_single(goal, 1)
    mpc.update_goal(goal_buffer)

    converged = False
    tstep = 0
    traj_list = []
    mpc_time = []
    current_state = start_state
    while not converged:
        st_time = time.time()
        result = mpc.step(current_state, max_attempts=2)
        mpc_time.append(time.time() - st_time)
        current_state.copy_(result.js_action)
        traj_list.append(current_state.position.clone())
        tstep += 1
        if result.metrics.pose_error.item() < 0.01:
            converged = True
        if tstep >= max_steps:
            break
    print(
        "MPC (converged, error, steps, mean step time (ms)):",
        converged,
        round(result.metrics.pose_error.item(), 4),
        tstep,
        round(float(np.mean(mpc_time)) * 1000, 2),
    )
    return retract_pose, current_state, traj_list, converged


if __name__ == "__main__":
    demo_full_config_mpc()
