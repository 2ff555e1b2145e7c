"""Plants for running controllers in closed loop.

:class:`IdealTracker` is a robot that follows every command exactly; :class:`MujocoPlant`
simulates the robot's rigid-body dynamics among the obstacles in MuJoCo (the optional ``sim``
extra: ``pip install 'curobo_lite[sim]'``), behind a computed-torque joint controller.
:func:`run_closed_loop` runs an :class:`~curobo_lite.wrap.MpcSolver` against either and records
what happened.
"""

from curobo_lite.sim.closed_loop import ClosedLoopRecord, IdealTracker, run_closed_loop
from curobo_lite.sim.mujoco_plant import (
    ContactReport,
    MujocoPlant,
    MujocoPlantConfig,
    build_mujoco_spec,
)

__all__ = [
    "ClosedLoopRecord",
    "ContactReport",
    "IdealTracker",
    "MujocoPlant",
    "MujocoPlantConfig",
    "build_mujoco_spec",
    "run_closed_loop",
]
