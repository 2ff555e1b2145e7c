"""The ground every solver stands on: :class:`RobotWorld` (collision checks of configurations
against the world and the robot itself, spheres and exact meshes), held objects
(:mod:`~curobo_lite.wrap.base.attach`), the named offenders of a failed check, and the
one-call-at-a-time guard of every solver. Imports no other part of ``wrap``."""

from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.base.robot_world import RobotWorld

__all__ = ["Offender", "PoseCostMetric", "RobotWorld"]
