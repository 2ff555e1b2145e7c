"""Inverse kinematics on sampled goals, written as cuRobo's examples/ik_example.py is.

Ported from cuRobo by replacing ``curobo.`` with ``curobo_lite.`` in the imports; the robot is
``franka_curobo.yml``, a robot file in cuRobo's layout.
Run: ``python examples/curobo/ik_example.py``.
"""

import os
import time

import torch

from curobo_lite.types.base import TensorDeviceType
from curobo_lite.types.math import Pose
from curobo_lite.util_file import join_path
from curobo_lite.wrap.reacher.ik_solver import IKSolver, IKSolverConfig

ROBOT_FILE = join_path(os.path.dirname(os.path.abspath(__file__)), "franka_curobo.yml")


def demo_basic_ik(robot_file=ROBOT_FILE, n_goals=16):
    tensor_args = TensorDeviceType()
    ik_config = IKSolverConfig.load_from_robot_config(
        robot_file,
        None,
        rotation_threshold=0.05,
        position_threshold=0.005,
        num_seeds=20,
        self_collision_check=True,
        self_collision_opt=True,
        tensor_args=tensor_args,
        use_cuda_graph=True,
    )
    ik_solver = IKSolver(ik_config)

    q_sample = ik_solver.sample_configs(n_goals)
    kin_state = ik_solver.fk(q_sample)
    goal = Pose(kin_state.ee_position, kin_state.ee_quaternion)

    st_time = time.time()
    result = ik_solver.solve_batch(goal)
    print(
        "Success, Solve Time(s), Position Error (mm):",
        torch.count_nonzero(result.success).item() / len(q_sample),
        round(time.time() - st_time, 3),
        round(result.position_error.max().item() * 1000, 3),
    )
    return q_sample, goal, result


if __name__ == "__main__":
    demo_basic_ik()
