"""Robot model: robot files (YAML / URDF), validated configuration, batched kinematics."""

from curobo_lite.robot.collision_config import RobotCollisionConfig
from curobo_lite.robot.config import (
    RobotConfig,
    available_robots,
    resolve_robot_file,
    robot_config_dirs,
)
from curobo_lite.robot.joints import JointLimits, JointSpec, MimicSpec
from curobo_lite.robot.kinematics import Kinematics, KinematicsBuffers, KinematicsState
from curobo_lite.robot.urdf import URDFWarning

__all__ = [
    "JointLimits",
    "JointSpec",
    "Kinematics",
    "KinematicsBuffers",
    "KinematicsState",
    "MimicSpec",
    "RobotCollisionConfig",
    "RobotConfig",
    "URDFWarning",
    "available_robots",
    "resolve_robot_file",
    "robot_config_dirs",
]
