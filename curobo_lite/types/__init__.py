"""Core value types: devices, joint states, poses."""

from curobo_lite.types import errors
from curobo_lite.types.base import TensorDeviceType, check_data_device, check_dtype_device
from curobo_lite.types.errors import *  # noqa: F403 (exactly errors.__all__)
from curobo_lite.types.math import (
    Pose,
    check_pose,
    matrix_to_quat,
    quat_angle_error,
    quat_conjugate,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    rpy_to_matrix,
)
from curobo_lite.types.state import JointState, StateType, check_joint_state

__all__ = [
    "JointState",
    "Pose",
    "StateType",
    "check_data_device",
    "check_dtype_device",
    "check_joint_state",
    "check_pose",
    "TensorDeviceType",
    "matrix_to_quat",
    "quat_angle_error",
    "quat_conjugate",
    "quat_multiply",
    "quat_rotate",
    "quat_to_matrix",
    "rpy_to_matrix",
]
__all__ += errors.__all__
