"""Motion generation with a table under the robot, written as cuRobo's quick start is.

Ported from cuRobo by replacing ``curobo.`` with ``curobo_lite.`` in the imports; the robot is
``franka_curobo.yml``, a robot file in cuRobo's layout. Run: ``make demo-curobo``.
"""

import os

from curobo_lite.geom.types import Cuboid, WorldConfig
from curobo_lite.types.base import TensorDeviceType
from curobo_lite.types.math import Pose
from curobo_lite.types.robot import JointState
from curobo_lite.util_file import join_path
from curobo_lite.wrap.reacher.motion_gen import MotionGen, MotionGenConfig, MotionGenPlanConfig

ROBOT_FILE = join_path(os.path.dirname(os.path.abspath(__file__)), "franka_curobo.yml")

# top face 1 cm below the robot's base
TABLE = Cuboid(name="table", dims=[2.0, 2.0, 0.2], pose=[0.4, 0.0, -0.11, 1, 0, 0, 0])
# x y z qw qx qy qz: 45 cm ahead, 20 cm to the left, 20 cm above the table, pointing down
GOAL = [0.45, 0.2, 0.2, 0.0, 1.0, 0.0, 0.0]


def demo_motion_gen(robot_file=ROBOT_FILE, goal=GOAL):
    tensor_args = TensorDeviceType()
    world_config = WorldConfig(cuboid=[TABLE])
    motion_gen_config = MotionGenConfig.load_from_robot_config(
        robot_file,
        world_config,
        tensor_args,
        interpolation_dt=0.02,
        num_trajopt_seeds=4,
        collision_cache={"obb": 10},
    )
    motion_gen = MotionGen(motion_gen_config)
    motion_gen.warmup()

    retract_cfg = motion_gen.get_retract_config()
    start_state = JointState.from_position(
        retract_cfg.view(1, -1), joint_names=motion_gen.joint_names
    )
    goal_pose = Pose.from_list(goal, tensor_args)
    result = motion_gen.plan_single(start_state, goal_pose, MotionGenPlanConfig(max_attempts=3))
    traj = result.get_interpolated_plan()
    print(
        "Trajectory Generated:",
        result.success.item(),
        result.status.value,
        "motion time (s):",
        round(result.motion_time.item(), 3),
        "samples:",
        None if traj is None else traj.position.shape[0],
        "every",
        result.interpolation_dt,
        "s",
    )
    return world_config, goal_pose, result


if __name__ == "__main__":
    demo_motion_gen()
