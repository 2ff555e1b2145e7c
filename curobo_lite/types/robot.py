"""cuRobo's ``curobo.types.robot`` names: :class:`JointState` and :class:`RobotConfig`.

``RobotConfig.from_dict(load_yaml(file)["robot_cfg"])`` reads a cuRobo robot file (either
layout) as cuRobo's does. This module sits in ``types`` only for cuRobo's import path: it
re-exports :class:`curobo_lite.robot.RobotConfig`, so it belongs to the top layer (nothing in
the package imports it; see ``tests/test_layers.py``).
"""

from curobo_lite.robot.config import RobotConfig
from curobo_lite.types.state import JointState

__all__ = ["JointState", "RobotConfig"]
